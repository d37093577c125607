"""Dataset adapters: the OmniGAIA sample and irregular copies of it, each other format, bad files."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from omnilab.bench import (
    DatasetError,
    DatasetLoad,
    Task,
    UnknownDatasetError,
    dataset_names,
    get_dataset,
    load_dataset,
    register_dataset,
)
from omnilab.config import get_settings

TEST_DATA = Path(__file__).resolve().parents[1] / "data"


def by_id(loaded: DatasetLoad) -> dict[str, Task]:
    return {t.id: t for t in loaded.tasks}


def test_every_sample_item_loads_with_its_fields_mapped(
    sample_path: Path, sample_items: list[dict[str, Any]]
) -> None:
    loaded = load_dataset("omnigaia", sample_path)
    assert len(loaded.tasks) == len(sample_items) == 24
    assert loaded.skipped == [] and loaded.notes == []
    for item, task in zip(sample_items, loaded.tasks, strict=True):
        assert task.id == str(item["id"])
        assert task.dataset == "omnigaia"
        assert task.question == item["question"]
        assert task.answers.label == item["answer"]
        assert task.metadata.level == item["Level"]
        assert task.metadata.category == item["category"]
        assert task.metadata.task_type == item["task_type"]
        assert task.metadata.required_tools == tuple(item["required_external_tools"])
        # Steps are strings, structured {step, action, tool, evidence} objects, or one string.
        solution = item["annotated_solution"]
        if isinstance(solution, list):
            steps = [
                s if isinstance(s, str) else json.dumps(s, ensure_ascii=False) for s in solution
            ]
            assert task.metadata.solution == tuple(steps)
        else:
            assert task.metadata.solution == solution
        assert task.metadata.attributes["total_steps"] == str(item["total_steps"])
        assert task.original == item
        inputs = item["omni_modal_input"]
        assert [(f.id, f.kind, f.given) for f in task.files] == [
            (i["id"], i["type"], i["path"]) for i in inputs
        ]
        assert all(f.path == sample_path.parent / f.given for f in task.files)
    first = loaded.tasks[0]
    assert first.modalities == "video"
    assert first.file("video_hLJ_RCSKF8o").kind == "video"
    assert {t.modalities for t in loaded.tasks} == {"video", "audio+image"}


def test_media_missing_is_reported_per_task_and_found_media_is_not(
    sample_path: Path, sample_items: list[dict[str, Any]], tmp_path: Path
) -> None:
    loaded = load_dataset("omnigaia", sample_path)
    assert set(loaded.missing_media) == {str(i["id"]) for i in sample_items}
    # Place every file of the first task under a media root: only that task is complete.
    first = sample_items[0]
    for entry in first["omni_modal_input"]:
        target = tmp_path / entry["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"\0")
    rooted = load_dataset("omnigaia", sample_path, media_root=tmp_path)
    assert str(first["id"]) not in rooted.missing_media
    assert len(rooted.missing_media) == 23
    second = rooted.missing_media[str(sample_items[1]["id"])]
    assert [f.given for f in second] == [e["path"] for e in sample_items[1]["omni_modal_input"]]
    assert all(f.path.is_relative_to(tmp_path) for f in second)


def test_media_root_comes_from_settings(
    sample_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_BENCH__MEDIA_ROOTS", json.dumps({"omnigaia": str(tmp_path)}))
    get_settings.cache_clear()
    loaded = load_dataset("omnigaia", sample_path)
    assert loaded.media_root == tmp_path
    assert loaded.tasks[0].files[0].path == tmp_path / loaded.tasks[0].files[0].given


def test_irregular_omnigaia_items_still_load_and_keep_unknowns(
    sample_items: list[dict[str, Any]], tmp_path: Path
) -> None:
    items = copy.deepcopy(sample_items[:6])
    del items[0]["Level"]
    items[1]["task_type"] = "audio only (new)"
    items[1]["category"] = "Space"
    items[2]["answer"] = 42
    del items[3]["omni_modal_input"]
    items[4]["required_external_tools"] = "Web Search"
    items[4]["sources"] = ["a plain string source"]
    items[4]["Level"] = 3
    items[5]["omni_modal_input"] = ["images/bare_path.jpg", {"type": "hologram", "path": "x.bin"}]
    del items[5]["annotated_solution"]
    path = tmp_path / "irregular.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    loaded = load_dataset("omnigaia", path)
    assert len(loaded.tasks) == 6 and loaded.skipped == []
    t = loaded.tasks
    assert t[0].metadata.level is None and t[0].original == items[0]
    assert (t[1].metadata.task_type, t[1].metadata.category) == ("audio only (new)", "Space")
    assert t[2].answers.label == "42" and t[2].original["answer"] == 42
    assert t[3].files == () and t[3].modalities == "none" and t[3].id not in loaded.missing_media
    assert t[4].metadata.required_tools == ("web_search",) and t[4].metadata.level == "3"
    assert [(f.kind, f.id) for f in t[5].files] == [
        ("image", "bare_path"),
        ("document", "hologram_1"),
    ]
    assert t[5].metadata.solution is None


def test_items_without_question_or_answer_are_skipped_and_counted(
    sample_items: list[dict[str, Any]], tmp_path: Path
) -> None:
    items: list[Any] = copy.deepcopy(sample_items[:5])
    del items[0]["question"]
    items[1]["question"] = "   "
    items[2]["answer"] = None
    del items[3]["answer"]
    items.append("not an object")
    path = tmp_path / "gaps.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    loaded = load_dataset("omnigaia", path)
    assert [t.id for t in loaded.tasks] == [str(sample_items[4]["id"])]
    assert loaded.skip_counts == {"no question": 2, "no answer": 2, "not an object": 1}
    assert loaded.skipped[0].item_id == str(sample_items[0]["id"]) and loaded.skipped[0].index == 0


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("bad.json", "this is not JSON {", "is not valid JSON (line 1, column 1: Expecting value)"),
        ("bad.txt", '{"question": "a", "answer": "b"}\n{"question": oops}\n', "line 2"),
        ("empty.json", "  \n", "is empty"),
        ("number.json", "42", "holds a JSON int, not a list of items"),
        ("binary.json", b"\xff\xfe\x00garbage", "is not UTF-8 text"),
        ("missing.json", None, "does not exist"),
    ],
)
def test_bad_files_are_one_line_dataset_errors(
    tmp_path: Path, name: str, text: str | bytes | None, expected: str
) -> None:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError) as err:
        load_dataset("omnigaia", path)
    message = str(err.value)
    assert expected in message and "\n" not in message
    assert message.endswith("check --data (the omnigaia dataset file)") or "does not" in message


def test_fixture_files_that_are_not_json(bench_data: Path) -> None:
    with pytest.raises(DatasetError, match=r"not_json.json is not valid JSON"):
        load_dataset("jsonl", bench_data / "not_json.json")
    with pytest.raises(DatasetError, match=r"neither JSON nor JSON Lines \(line 2: "):
        load_dataset("jsonl", bench_data / "broken.jsonl")


def test_omni_deepsearch_categories_by_modality_and_audio_type(
    bench_data: Path, tmp_path: Path
) -> None:
    (tmp_path / "audio").mkdir()
    (tmp_path / "audio" / "ds1.wav").write_bytes(b"\0")
    loaded = load_dataset("omni-deepsearch", bench_data / "deepsearch.jsonl", media_root=tmp_path)
    tasks = by_id(loaded)
    assert list(tasks) == ["ds1", "ds2", "ds3", "ds4"]
    assert loaded.skip_counts == {"no question": 1, "no answer": 1}
    expected = {
        "ds1": ("single/speech", "single", "speech"),
        "ds2": ("image/music", "image", "music"),
        "ds3": ("multi/3 clips", "multi", None),
        "ds4": ("video/ambient", "video", "ambient"),
    }
    for task_id, (category, modality, audio) in expected.items():
        meta = tasks[task_id].metadata
        assert (meta.category, meta.get("retrieval_modality"), meta.get("audio_type")) == (
            category,
            modality,
            audio,
        )
    assert tasks["ds2"].answers.label == "Alash"
    assert tasks["ds2"].answers.aliases == ("Alash Ensemble",)
    assert [f.kind for f in tasks["ds3"].files] == ["audio"] * 3
    assert set(loaded.missing_media) == {"ds2", "ds3", "ds4"}


def test_omniagent_question_types(bench_data: Path) -> None:
    loaded = load_dataset("omniagent", bench_data / "omniagent.jsonl")
    tasks = by_id(loaded)
    assert loaded.skip_counts == {"bad spans": 1}
    assert loaded.skipped[0].item_id == "oa7" and loaded.skipped[0].index == 7
    assert tasks["oa1"].answers.label == "B"
    assert tasks["oa1"].answers.aliases == ("B. green", "green")
    assert tasks["oa1"].metadata.options == {"A": "red", "B": "green", "C": "blue", "D": "black"}
    assert tasks["oa2"].answers.label == "B"  # "dog" is the second plain option
    assert tasks["oa3"].metadata.spans == ((10.5, 20.0), (35.0, 40.0))
    assert tasks["oa4"].answers.label == "7"
    assert tasks["oa4"].metadata.attributes == {"question_type": "NUM", "duration": "1616.1"}
    assert tasks["oa5"].metadata.get("unit") == "m"  # "How long is the table, in metres?"
    assert tasks["oa5"].metadata.task_type == "SIZE"
    assert tasks["oa8"].metadata.task_type == "FF"
    assert tasks["oa1"].files[0].kind == "video" and tasks["oa1"].files[0].given == "videos/v1.mp4"


def test_omniagent_type_variants_map_to_base_types(bench_data: Path) -> None:
    """RL-training items: ``MCQ_LongVR-Short`` is an MCQ with its sub-type kept, and so on."""
    loaded = load_dataset("omniagent", bench_data / "omniagent_rl.jsonl")
    assert not loaded.skipped and not loaded.warnings
    types = [(t.metadata.task_type, t.metadata.get("question_subtype")) for t in loaded.tasks]
    assert types == [
        ("MCQ", "LongVR-Short"),
        ("MCQ", "Holmes"),
        ("TR", "LongVALE-Short"),
        ("TR", "MultiHop"),
        ("SIZE", "VSI"),
    ]
    mcq, holmes, tr, multihop, size = loaded.tasks
    assert mcq.answers.label == "B" and mcq.metadata.options is not None
    assert list(mcq.metadata.options) == ["A", "B", "C", "D"]
    assert holmes.answers.label == "F" and len(holmes.metadata.options or {}) == 6
    assert tr.metadata.spans == ((72.405, 79.9230839002),)
    assert multihop.metadata.spans == ((101.0, 111.0), (178.0, 179.0))
    assert size.answers.label == "39.5"
    assert size.metadata.attributes == {
        "question_type": "SIZE",
        "question_subtype": "VSI",
        "duration": "92.234",
        "fps": "30.0",
        "has_audio": "false",
        "source": "VSI-train",
        "unit": "m2",
    }
    assert mcq.original["extra_info"]["error_reason"] == "LOGIC_WRONG_ANSWER"


def test_omniagent_eval_items_keep_domain_and_units(bench_data: Path) -> None:
    loaded = load_dataset("omniagent", bench_data / "omniagent_eval.jsonl")
    assert len(loaded.tasks) == 5 and not loaded.warnings
    first, _, _, distance, count = loaded.tasks
    assert first.metadata.category == "Film"
    assert distance.metadata.get("unit") == "m"
    assert count.metadata.get("unit") is None


def test_a_file_loaded_with_the_wrong_adapter_warns(bench_data: Path) -> None:
    # An OmniAgent file read as OmniGAIA: questions and answers load, but without media.
    loaded = load_dataset("omnigaia", bench_data / "omniagent_eval.jsonl")
    assert len(loaded.tasks) == 5 and all(not t.files for t in loaded.tasks)
    assert loaded.warnings == [
        "5 of 5 items have no omni_modal_input, which omnigaia items carry; is the file in "
        "another format?",
        "the items look like omniagent items",
    ]
    # And the other way round.
    sample = TEST_DATA / "omnigaia_sample.json"
    wrong = load_dataset("omniagent", sample)
    assert wrong.warnings[-1] == "the items look like omnigaia items"
    assert any("no video or video_path" in w for w in wrong.warnings)
    # The right adapter is quiet.
    assert not load_dataset("omnigaia", sample).warnings


def test_mcq_options_answers_and_media(bench_data: Path) -> None:
    loaded = load_dataset("mcq", bench_data / "mcq.json")
    tasks = by_id(loaded)
    assert list(tasks) == ["m1", "m2", "m3"]
    assert loaded.skip_counts == {"no options": 1, "answer not an option": 1}
    assert [(f.kind, f.given) for f in tasks["m1"].files] == [
        ("image", "img/cat.png"),
        ("audio", "aud/meow.wav"),
    ]
    assert tasks["m1"].modalities == "audio+image"
    assert tasks["m1"].metadata.attributes == {"benchmark": "OmniBench"}
    assert tasks["m2"].answers.label == "B" and tasks["m2"].files[0].id == "clip"
    assert tasks["m3"].metadata.options == {"A": "one", "B": "two", "C": "three"}
    assert tasks["m3"].answers.label == "C"


def test_generic_jsonl(bench_data: Path) -> None:
    loaded = load_dataset("jsonl", bench_data / "generic.jsonl")
    tasks = by_id(loaded)
    assert list(tasks) == ["g1", "2", "g1#2"]
    assert loaded.notes == ["item 6: id 'g1' repeats; loaded as 'g1#2'"]
    assert loaded.skip_counts == {"not an object": 1, "no question": 1, "no answer": 1}
    g1 = tasks["g1"]
    assert g1.answers.all == ("12.5 km", "12.5 kilometres")
    assert [(f.kind, f.id) for f in g1.files] == [("image", "map"), ("audio", "narration")]
    assert g1.metadata.required_tools == ("web_search", "code_executor")
    assert g1.metadata.get("required_tools") == "code_executor+web_search"
    assert g1.metadata.level == "2"
    second = tasks["2"]
    assert second.answers.all == ("yes", "Yes", "y")
    assert second.metadata.attributes == {"source": "demo", "difficulty": "3"}
    assert tasks["g1#2"].metadata.spans == ((1.0, 2.0),)


def test_registry_names_unknown_names_and_plugins(tmp_path: Path) -> None:
    assert dataset_names()[:5] == ["omnigaia", "omni-deepsearch", "omniagent", "mcq", "jsonl"]
    with pytest.raises(
        UnknownDatasetError, match="unknown dataset 'gaia'; known datasets: omnigaia"
    ):
        get_dataset("gaia")
    generic = get_dataset("jsonl")
    register_dataset("my-bench", generic)
    path = tmp_path / "one.jsonl"
    path.write_text('{"question": "q?", "answer": "a"}\n', encoding="utf-8")
    try:
        assert load_dataset("my-bench", path).tasks[0].answers.label == "a"
    finally:
        from omnilab.bench.datasets import DATASETS

        DATASETS.unregister("my-bench")


def test_importing_the_harness_loads_no_adapter() -> None:
    code = (
        "import sys, omnilab.bench; "
        "print(sorted(m for m in sys.modules if m.startswith('omnilab.bench.datasets.')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # The package's names load on first use; at most the shared helpers may be there.
    assert proc.stdout.strip() in ("[]", "['omnilab.bench.datasets._common']")


def test_data_check_prints_the_wrong_format_warning(bench_data: Path) -> None:
    from typer.testing import CliRunner

    from omnilab.cli.main import app

    path = bench_data / "omniagent_eval.jsonl"
    result = CliRunner().invoke(app, ["data", "check", "omnigaia", "--data", str(path)])
    assert result.exit_code == 0, result.output
    assert "warning:" in result.output and "look like omniagent items" in result.output
    as_json = CliRunner().invoke(app, ["data", "check", "omnigaia", "--data", str(path), "--json"])
    assert json.loads(as_json.output)["warnings"][-1] == "the items look like omniagent items"


def test_eval_plan_notes_the_wrong_format_warning(bench_data: Path, tmp_path: Path) -> None:
    from omnilab.bench.runner import new_config, plan_run

    config = new_config(
        "omnigaia",
        bench_data / "omniagent_eval.jsonl",
        agent="tir",
        model="scripted:x",
        scorer="answer_set",
    )
    plan = plan_run(config, tmp_path / "run")
    assert "warning: the items look like omniagent items" in plan.notes

"""Reproduction presets (``--protocol``): their settings on the wire, in run.json and in the
header; what differs from a preset; media found by file name under the media root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.bench import load_dataset
from omnilab.bench.errors import BenchError
from omnilab.bench.protocols import differences, get_protocol, merge_options, protocol_names
from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import new_config
from omnilab.bench.scoring.judging import REFERENCE_RULES
from omnilab.cli.main import app
from omnilab.media import synth
from omnilab.models.fake_server import FakeOpenAIServer, reply_text
from omnilab.trajectory import read_trajectory

runner = CliRunner()


def omnigaia_file(folder: Path, n: int = 2) -> Path:
    image = folder / "media" / "images" / "pic.png"
    image.parent.mkdir(parents=True)
    synth.make_image(image, text="hi", size=(64, 48))
    items = [
        {
            "id": i,
            "question": f"What is written? ({i})",
            "answer": "hi",
            "omni_modal_input": [{"type": "image", "path": "images/pic.png"}],
            "Level": "Easy",
        }
        for i in range(n)
    ]
    path = folder / "omnigaia.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def test_the_presets_load_and_name_their_source() -> None:
    assert {"omnigaia-paper", "omniatlas-paper"} <= set(protocol_names())
    # The other scaffolds' presets name their own sources (tests/bench/test_presets_*).
    for name in ("omnigaia-paper", "omniatlas-paper"):
        preset = get_protocol(name)
        assert "RUC-NLPIR/OmniGAIA" in preset.source and preset.missing_media == "drop"
    # Every way the base agent still differs from the release is named with its reason (issue
    # 43: the preset was called complete while 17 differences went unnamed); OmniAtlas keeps
    # one gap.
    assert get_protocol("omnigaia-paper").open_gaps == [] and get_protocol("omniatlas-paper").gaps
    paper = get_protocol("omnigaia-paper")
    assert paper.scoring_rules == REFERENCE_RULES
    assert paper.agent_options["generate"]["temperature"] == 0.6
    with pytest.raises(BenchError, match="no protocol preset 'nope'"):
        get_protocol("nope")


def test_user_options_win_and_differences_are_listed(tmp_path: Path) -> None:
    data = omnigaia_file(tmp_path)
    config = new_config(
        "omnigaia",
        data,
        agent="tir",
        model="scripted:x",
        agent_options={"generate": {"temperature": 0.0}},
        judges=["scripted:j"],
        protocol="omnigaia-paper",
    )
    generate = config.agent_options["generate"]
    assert generate["temperature"] == 0.0 and generate["top_p"] == 0.95  # merged key by key
    assert config.scoring_rules == REFERENCE_RULES and config.protocol == "omnigaia-paper"
    diff = differences(
        get_protocol("omnigaia-paper"),
        dataset="omnigaia",
        agent=config.agent,
        agent_options=config.agent_options,
        budgets=config.budgets,
        scorer=config.scorer,
        scoring_rules=config.scoring_rules,
        missing_media=config.missing_media,
    )
    assert config.missing_media == "drop"  # the preset's
    assert diff == [
        "agent_options.generate.temperature: 0.0 (preset 0.6)",
        "search: local (preset serper: --search serper)",  # web.search_provider's default
    ]
    assert merge_options({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}}) == {"a": {"b": 3, "c": 2}}


def test_eval_with_a_preset_on_the_wire_and_in_the_header(tmp_path: Path) -> None:
    data = omnigaia_file(tmp_path)
    out = tmp_path / "run"
    with (
        FakeOpenAIServer(default=reply_text("<answer>hi</answer>")) as agent,
        FakeOpenAIServer(default=reply_text("Correct")) as judge,
    ):
        result = runner.invoke(
            app,
            [
                "eval", "omnigaia", "--data", str(data), "--model",
                f"vllm:agent@{agent.base_url}", "--judge", f"vllm:judge@{judge.base_url}",
                "--protocol", "omnigaia-paper", "-O", 'generate={"temperature": 0.1}',
                "--out", str(out), "--no-progress",
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        body = agent.body(0)
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.1, 0.95, 20480)
    assert (body["top_k"], body["repetition_penalty"]) == (20, 1.05)
    assert "protocol: omnigaia-paper: OmniGAIA base agent" in result.output
    assert "differs from the preset: agent_options.generate.temperature: 0.1 (preset 0.6)" in (
        result.output
    )
    assert "not reproduced yet" not in result.output
    assert "differs from the preset: search: local (preset serper: --search serper)" in (
        result.output
    )
    stored = RunDir(out).read_config()
    assert stored.protocol == "omnigaia-paper" and stored.scoring_rules == REFERENCE_RULES
    assert stored.missing_media == "drop"  # the preset's choice
    assert stored.task_timeout_s == 36000  # the release's item_timeout, not bench.task_timeout_s
    assert stored.header is not None and stored.header["protocol_differs"]
    # a judge other than the release's DeepSeek-V3.2 is a listed difference
    assert "differs from the preset: judge: vllm:judge@" in result.output


def test_the_judge_model_is_a_difference_unless_it_is_the_releases() -> None:
    preset = get_protocol("omnigaia-paper")
    assert preset.judge == "deepseek-v3.2"

    def judged(*judges: str) -> list[str]:
        found = differences(
            preset,
            dataset="omnigaia",
            agent="tir",
            agent_options=preset.agent_options,
            budgets=preset.budgets,
            scorer="omnigaia",
            scoring_rules=preset.scoring_rules,
            search="serper",
            missing_media="drop",
            judges=list(judges),
        )
        return [d for d in found if d.startswith("judge:")]

    assert judged("openai:DeepSeek-V3.2@http://x/v1") == []
    assert judged("vllm:qwen3-32b@http://x/v1") == [
        "judge: vllm:qwen3-32b@http://x/v1 (preset deepseek-v3.2: --judge MODEL serving it)"
    ]
    assert judged() == ["judge: none (preset deepseek-v3.2: --judge MODEL serving it)"]


def test_an_explicit_timeout_wins_over_the_presets(tmp_path: Path) -> None:
    data = omnigaia_file(tmp_path, n=1)
    script = tmp_path / "m.json"
    script.write_text(json.dumps(["<answer>hi</answer>"]))
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "eval", "omnigaia", "--data", str(data), "--model", f"scripted:{script}",
            "--scorer", "answer_set", "--protocol", "omnigaia-paper", "--timeout", "60",
            "--out", str(out), "--no-progress",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert RunDir(out).read_config().task_timeout_s == 60


def test_without_a_preset_the_header_says_so(tmp_path: Path) -> None:
    data = omnigaia_file(tmp_path, n=1)
    script = tmp_path / "m.json"
    script.write_text(json.dumps(["<answer>hi</answer>"]))
    result = runner.invoke(
        app,
        [
            "eval", "omnigaia", "--data", str(data), "--model", f"scripted:{script}",
            "--scorer", "answer_set", "--out", str(tmp_path / "run"), "--no-progress",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "protocol: none (omnilab's defaults; not a reproduction preset)" in result.output
    assert "warning: web_search runs on the small bundled offline corpus" in result.output


def test_protocols_command_lists_and_shows() -> None:
    listed = runner.invoke(app, ["protocols"])
    assert listed.exit_code == 0 and "omnigaia-paper" in listed.output
    shown = runner.invoke(app, ["protocols", "omnigaia-paper"])
    assert "agent_options.generate.temperature = 0.6" in shown.output
    assert 'scoring_rules.verdict = "reference"' in shown.output
    assert "missing_media = drop" in shown.output and "not reproduced yet" not in shown.output
    assert "task_timeout_s = 36000 (unless --timeout)" in shown.output
    assert "judge = deepseek-v3.2" in shown.output and 'rules = "release"' in shown.output
    atlas = runner.invoke(app, ["protocols", "omniatlas-paper"])
    assert "not reproduced yet media inside tool messages" in atlas.output


def test_media_are_found_by_file_name_under_the_media_root(tmp_path: Path) -> None:
    # OmniGAIA item 59 names its image without the sub-folder it sits in.
    image = tmp_path / "media" / "images" / "000000217710.jpg"
    image.parent.mkdir(parents=True)
    synth.make_image(image, text="x", size=(32, 32))
    twin_a, twin_b = tmp_path / "media" / "a" / "dup.wav", tmp_path / "media" / "b" / "dup.wav"
    for twin in (twin_a, twin_b):
        twin.parent.mkdir(parents=True)
        twin.write_bytes(b"RIFF")
    item = {
        "id": 59,
        "question": "q",
        "answer": "a",
        "omni_modal_input": [
            {"type": "image", "path": "000000217710.jpg"},
            {"type": "audio", "path": "dup.wav"},
        ],
    }
    data = tmp_path / "d.json"
    data.write_text(json.dumps([item]), encoding="utf-8")
    loaded = load_dataset("omnigaia", data, media_root=tmp_path / "media")
    (task,) = loaded.tasks
    assert task.files[0].path == image
    assert any("using" in n and "same file name" in n for n in loaded.notes)
    assert any("2 files have its name" in n for n in loaded.notes)  # ambiguous: not guessed
    assert [f.path.name for f in loaded.missing_media["59"]] == ["dup.wav"]


@pytest.mark.parametrize("choice", ["fail", "drop"])
def test_a_task_with_missing_media_fails_or_runs_without_them(tmp_path: Path, choice: str) -> None:
    # Finding 9: the reference runs a task whose media are missing with what is there.
    data = omnigaia_file(tmp_path, n=2)
    items = json.loads(data.read_text(encoding="utf-8"))
    items[1]["omni_modal_input"].append({"type": "audio", "path": "audios/gone.wav"})
    data.write_text(json.dumps(items), encoding="utf-8")
    script = tmp_path / "m.json"
    script.write_text(json.dumps({"outputs": ["<answer>hi</answer>"], "repeat": True}))
    out = tmp_path / "run"
    args = [
        "eval", "omnigaia", "--data", str(data), "--model", f"scripted:{script}",
        "--scorer", "answer_set", "--out", str(out), "--no-progress", "--missing-media", choice,
    ]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    by_id = {r.task_id: r for r in RunDir(out).results()}
    assert by_id["0"].error is None and "dropped_media" not in by_id["0"].stats
    if choice == "fail":
        assert by_id["1"].error_kind == "missing_media" and "gone.wav" in (by_id["1"].error or "")
    else:
        assert by_id["1"].error is None and by_id["1"].judged is True
        assert by_id["1"].stats["dropped_media"] == 1.0
        traj = read_trajectory(RunDir(out).trajectory_file("1"))
        assert [f.path.name for f in traj.run_start.inputs] == ["pic.png"]  # type: ignore[union-attr]
    assert RunDir(out).read_config().missing_media == choice
    other = "drop" if choice == "fail" else "fail"
    again = runner.invoke(app, ["eval", "--out", str(out), "--resume", "--missing-media", other])
    assert again.exit_code != 0 and "missing_media" in str(again.exception)  # changes results
    bad = runner.invoke(app, [*args[:-1], "maybe"])
    assert bad.exit_code != 0 and "--missing-media is fail or drop" in str(bad.exception)


@pytest.mark.parametrize("name", ["omniagent-paper", "agent-omni-paper", "omnigaia-paper"])
def test_protocols_names_each_remaining_gap_with_its_reason(name: str) -> None:
    preset = get_protocol(name)
    assert all(gap.reason for gap in preset.gaps), [g.finding for g in preset.gaps if not g.reason]
    listed = runner.invoke(app, ["protocols"])
    assert listed.exit_code == 0, listed.output
    block = listed.output.split(f"{name}:", 1)[1].split("\n\n", 1)[0]
    for gap in preset.gaps:
        assert f"- {gap.finding}: {gap.reason[:40]}" in " ".join(block.split())
    shown = runner.invoke(app, ["protocols", name])
    assert shown.exit_code == 0 and all(
        f"why: {g.reason[:40]}" in shown.output for g in preset.gaps
    )
    # the released code is public: no preset may say otherwise
    text = json.dumps(preset.model_dump()).lower()
    assert "not released" not in text and "is not in the release" not in text

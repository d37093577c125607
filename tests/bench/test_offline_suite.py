"""The offline suite: generated tasks whose answers can be read back from their own media."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.bench import load_dataset
from omnilab.bench.offline_suite import SUITE_FILE, build_suite, suite_items
from omnilab.bench.rescore import default_scorer, make_scorer
from omnilab.bench.run_dir import RunDir
from omnilab.cli.main import app
from omnilab.media.probe import probe


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_suite(tmp_path_factory.mktemp("suite"))


def test_the_suite_has_twenty_or_more_tasks_in_several_families(suite: Path) -> None:
    items = suite_items()
    assert len(items) >= 20
    assert len({i.id for i in items}) == len(items)
    families = Counter(i.family for i in items)
    assert len(families) >= 6 and min(families.values()) >= 3
    records = [json.loads(line) for line in suite.read_text().splitlines()]
    assert [r["id"] for r in records] == [i.id for i in items]


def test_media_are_real_files_of_the_announced_kind(suite: Path) -> None:
    loaded = load_dataset("offline-suite", suite.parent)
    assert len(loaded.tasks) == len(suite_items()) and not loaded.skipped
    for task in loaded.tasks:
        (file,) = task.files
        info = probe(file.path)
        assert info.kind == file.kind, task.id
    # Building again reuses what is there (same files, untouched).
    before = {p.name: p.stat().st_mtime_ns for p in suite.parent.iterdir()}
    build_suite(suite.parent)
    assert {p.name: p.stat().st_mtime_ns for p in suite.parent.iterdir()} == before


@pytest.mark.slow
def test_the_answers_are_in_the_media(suite: Path) -> None:
    """Each task's label is what the offline perception reads from its file (OCR, shots, events)."""
    pytest.importorskip("rapidocr")
    from omnilab.perception import digest

    by_id = {t.id: t for t in load_dataset("offline-suite", suite).tasks}
    for task_id in ("screen-word-1", "screen-number-2", "image-word-3", "last-slide-2"):
        task = by_id[task_id]
        text = digest([task.files[0].path]).to_markdown().lower()
        assert task.answers.label.lower() in text, (task_id, text)
    shots = digest([by_id["slide-count-3"].files[0].path]).to_markdown()
    assert "Shots (4)" in shots
    events = digest([by_id["silence-2"].files[0].path]).to_markdown()
    assert events.index("silence") < events.index("music"), events


def test_scored_by_the_reply_without_answer_tags(suite: Path) -> None:
    import asyncio

    assert default_scorer("offline-suite") == "answer_in_reply"
    scorer = make_scorer("answer_in_reply")
    tasks = {t.id: t for t in load_dataset("offline-suite", suite).tasks}
    count, word = tasks["slide-count-2"], tasks["screen-word-1"]

    def right(task: object, reply: str) -> bool:
        return asyncio.run(scorer.score(task, reply)).correct  # type: ignore[arg-type]

    assert right(count, "three") and right(count, "<answer>3</answer>")
    assert right(count, "The video shows 3 slides.")
    assert not right(count, "4") and not right(count, "13 slides") and not right(count, "3.5")
    assert right(word, 'The word that is shown on screen in the video is "SUNFLOWER".')
    assert not right(word, "sunflowers")
    # A reply that lists everything is not an answer.
    assert not right(word, " ".join(["harbor", "velvet", "sunflower"] + ["word"] * 30))
    # Nor one that names the wrong choice beside the right one.
    tone_first = tasks["silence-1"]
    assert right(tone_first, "The first part is a sound.")
    assert not right(tone_first, "It is either silence or a sound.")
    assert not right(tone_first, "silence")


def test_eval_offline_suite_end_to_end(suite: Path, tmp_path: Path) -> None:
    script = tmp_path / "reply.json"
    script.write_text(json.dumps({"outputs": ["sunflower"], "repeat": True}))
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "offline-suite",
            "--data",
            str(suite.parent),
            "--model",
            f"scripted:{script}",
            "--tools",
            "",
            "--agent-option",
            "mode=evidence",
            "--ids",
            "screen-word-1,screen-word-2",
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    results = {r.task_id: r for r in RunDir(out).results()}
    assert results["screen-word-1"].score is not None and results["screen-word-1"].score.correct
    assert results["screen-word-2"].score is not None and not results["screen-word-2"].score.correct
    assert (suite.parent / SUITE_FILE).is_file()


def test_data_check_needs_no_data_for_the_suite(
    suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44.19: ``omnilab data check offline-suite`` takes the suite as ``eval`` does."""
    import omnilab.bench.offline_suite as offline

    monkeypatch.setattr(offline, "default_folder", lambda: suite.parent)
    from omnilab.cli.main import app

    shown = CliRunner().invoke(app, ["data", "check", "offline-suite"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, (shown.output, shown.exception)
    assert f"{len(suite_items())} tasks loaded" in shown.output
    missing = CliRunner().invoke(app, ["data", "check", "jsonl"])
    assert missing.exit_code != 0 and "needs its file" in str(missing.exception)

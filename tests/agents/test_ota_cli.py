"""``omnilab ask --agent ota`` shows each turn live and saves a v2 trajectory; ``omnilab eval
omniagent --agent ota`` scores MCQ, TR, NUM and SIZE by OmniAgent's eq. 2, per question type and
per source, and resumes; an end-to-end run with the embedded ``local:smollm2``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_ota import answer, frames, span, turn
from typer.testing import CliRunner

from omnilab.config import get_settings
from omnilab.media import synth
from omnilab.trajectory import StepNote, read_trajectory

runner = CliRunner()


@pytest.fixture(scope="session")
def clip8(media_dir: Path) -> Path:
    return synth.make_video(media_dir / "ota8.mp4", duration=8.0, fps=5, size=(160, 120))


def cli(*args: str | Path, exits: tuple[int, ...] = (0,)) -> str:
    from omnilab.cli.main import app

    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert result.exit_code in exits, (result.output, result.exception)
    return result.output


def script(path: Path, replies: list[str]) -> str:
    path.write_text(json.dumps(replies), encoding="utf-8")
    return f"scripted:{path}"


def test_ask_shows_each_turn_live_and_saves_the_purged_contexts(
    tmp_path: Path, clip8: Path
) -> None:
    model = script(
        tmp_path / "s.json",
        [
            turn(frames(0, 4, 2), observation="[Frames 0.00s-4.00s (num=2)] a counter"),
            turn(span("get_audio", 0, 4), confidence=0.5),
            turn(answer("It says 20."), confidence=0.92),
        ],
    )
    out = cli(
        "ask", clip8, "When does the speaker mention the budget?", "--agent", "ota",
        "--model", model, "--out", tmp_path / "run", "-O", "max_frames_len=8",
    )  # fmt: skip
    assert "agent ota (mode native)" in out
    assert "turn 1: get_frames 0.00s-4.00s num=2 | confidence 0.30" in out
    assert "observation: [Frames 0.00s-4.00s (num=2)] a counter" in out
    assert "turn 3: answer" in out and "It says 20." in out
    saved = read_trajectory(tmp_path / "run" / "trajectory.jsonl")
    assert saved.header.schema_version >= 2
    assert saved.status == "answered" and saved.answer == "It says 20."
    start = saved.run_start
    assert start is not None and start.config["max_frames_len"] == 8
    contexts = saved.contexts()
    assert len(contexts) == 3 and all(c.exact for c in contexts)
    last = contexts[-1].messages
    assert "[MEDIA OMITTED - Refer to your Observation]" in last[-3].text
    assert [p.type for p in last[-1].content if p.type != "text"] == ["audio"]
    notes = [e for e in saved.events if isinstance(e, StepNote)]
    assert [n.data["confidence"] for n in notes] == [0.3, 0.5, 0.92]


def test_eval_scores_each_question_type_and_groups_by_source(
    tmp_path: Path, clip8: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "media"
    for folder in ("Video-MME", "LongVALE", "VSI-Bench"):
        (root / "videos" / folder).mkdir(parents=True)
        shutil.copy(clip8, root / "videos" / folder / "v.mp4")
    items = [
        {"id": "mcq", "video": "videos/Video-MME/v.mp4", "question_type": "MCQ",
         "question": "What is shown?", "options": ["A. a cat", "B. a counter"], "answer": "B"},
        {"id": "tr", "video": "videos/LongVALE/v.mp4", "question_type": "TR",
         "question": "When does the tone rise?", "options": [], "answer": "[[2.0, 6.0]]"},
        {"id": "num", "video": "videos/VSI-Bench/v.mp4", "question_type": "NUM",
         "question": "How many beeps?", "options": [], "answer": "3"},
        {"id": "size", "video": "videos/VSI-Bench/v.mp4", "question_type": "SIZE",
         "question": "How long is the room (in meters)?", "options": [], "answer": "10"},
    ]  # fmt: skip
    data = tmp_path / "eval.jsonl"
    data.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    model = script(
        tmp_path / "agent.json",
        [
            turn(frames(0, 8, 4)),
            turn(answer("B"), 0.95),
            turn(answer("[[3.0, 6.0]]"), 0.95),
            turn(answer("3"), 0.95),
            turn(span("get_audio", 0, 8)),
            turn(answer("11"), 0.95),
        ],
    )
    monkeypatch.setenv("OMNILAB_BENCH__RUNS_DIR", str(tmp_path / "runs"))
    get_settings.cache_clear()
    out = tmp_path / "eval"
    cli(
        "eval", "omniagent", "--data", data, "--media-root", root, "--agent", "ota",
        "--model", model, "--out", out, "--concurrency", "1", "--no-cache", "--no-progress",
    )  # fmt: skip
    results = {
        r["task_id"]: r
        for r in (json.loads(x) for x in (out / "results.jsonl").read_text().splitlines())
    }
    values = {k: r["score"]["value"] for k, r in results.items()}
    assert values == pytest.approx({"mcq": 1.0, "tr": 0.75, "num": 1.0, "size": 0.8})
    assert results["mcq"]["prediction"] == "B"
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["groups"]["question_type"]) == {"MCQ", "TR", "NUM", "SIZE"}
    assert set(metrics["groups"]["source"]) == {"Video-MME", "LongVALE", "VSI-Bench"}
    assert metrics["groups"]["source"]["VSI-Bench"]["total"] == 2
    figures = {f["name"]: f["value"] for f in metrics["figures"]}
    assert figures["mean IoU (TR)"] == pytest.approx(0.75)
    assert figures["mean MRA (SIZE)"] == pytest.approx(0.8)
    # a rerun with --resume skips finished tasks: the script has no steps left for them
    (tmp_path / "agent.json").write_text("[]", encoding="utf-8")  # no replies left
    cli("eval", "omniagent", "--out", out, "--resume", "--no-progress")
    assert len((out / "results.jsonl").read_text().splitlines()) == 4


@pytest.mark.slow
def test_end_to_end_with_the_embedded_smollm2(
    tmp_path: Path, clip8: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("llama_cpp")
    monkeypatch.setenv("OMNILAB_MODELS__LOCAL_N_CTX", "8192")
    get_settings.cache_clear()
    out = cli(
        "ask", clip8, "What is shown?", "--agent", "ota", "--model", "local:smollm2",
        "--out", tmp_path / "run", "--json", "-O", "max_steps=1", "-O", "dynamic_steps=false",
        "-O", "max_frames_len=2", "-O", "max_audio_len=2", "-O", "max_clip_len=2",
        "-O", 'generate={"max_tokens": 96}', exits=(0, 3),  # answered, or ran without an answer
    )  # fmt: skip
    summary = json.loads(out)
    saved = read_trajectory(Path(summary["trajectory"]))
    assert saved.run_end is not None and saved.status in ("answered", "no_answer")
    assert summary["exit_code"] == (0 if saved.status == "answered" else 3)
    start = saved.run_start
    assert start is not None and start.config["grammar"] is True
    assert start.config["conversions"]["frames"] == "ocr"
    (call,) = saved.model_calls  # one turn: the final step
    (note,) = [e for e in saved.events if isinstance(e, StepNote)]
    sent = call.sent
    assert sent is not None and sent.config.response_format is not None  # the grammar
    text = call.output.text  # type: ignore[union-attr]
    assert text.lstrip().startswith("{")  # held to the schema (a reply cut by max_tokens
    # is the only way out of it, and reads as INVALID_JSON)
    code = (note.data["error"] or {}).get("code")
    assert (saved.status, code) in (("answered", None), ("no_answer", "FINAL_STEP"))
    (context,) = saved.contexts()
    assert context.exact and context.messages[0].role == "system"

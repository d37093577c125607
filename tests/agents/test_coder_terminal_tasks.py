"""TerminalBench-O-style tasks: each shipped task graded on a correct and a wrong solution, the
gates, the matching metrics, an LLM-judged dimension, and a coder run through omnilab eval."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import av
import pytest
from agentkit import scripted
from coderkit import sandbox_level  # noqa: F401 (autouse)
from PIL import Image
from typer.testing import CliRunner

from omnilab.bench.datasets import load_dataset
from omnilab.bench.datasets.terminal_tasks import build_tasks, task_specs
from omnilab.bench.scoring.code_x_metrics import hungarian, segment_iou
from omnilab.bench.scoring.code_x_tasks import Dimension, Grade, TaskSpec, grade
from omnilab.cli.main import app
from omnilab.media import synth
from omnilab.models.providers import scripted as s

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tasks(tmp_path_factory.mktemp("terminal"))


def run_grade(task_id: str, ws: Path) -> Grade:
    return asyncio.run(grade(task_specs()[task_id], ws))


def put(ws: Path, name: str, data: str | bytes) -> None:
    path = ws / "output" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def test_the_suite_loads_as_five_tasks(suite: Path) -> None:
    loaded = load_dataset("terminal-tasks", suite)
    ids = [t.id for t in loaded.tasks]
    assert ids == ["shot-cuts", "slides-srt", "slide-catalog", "contact-sheet", "tone-onset"]
    assert not loaded.missing_media and all(t.dataset == "terminal-tasks" for t in loaded.tasks)
    catalog = loaded.tasks[2]
    assert [f.path.name for f in catalog.files][-2:] == ["categories.txt", "manifest.json"]
    assert "reply <answer>done</answer>" in catalog.question
    assert "Quarterly" not in catalog.question  # the hidden reference is not in the question


def test_shot_cuts(tmp_path: Path) -> None:
    good = {
        "shots": [
            {"id": f"shot{i}", "start": a, "end": b}
            for i, (a, b) in enumerate([(0, 2.0), (2.0, 5.0), (5.0, 7.5)], 1)
        ]
    }
    put(tmp_path / "ok", "shots.json", json.dumps(good))
    synth.make_video(tmp_path / "ok" / "output" / "shot2.mp4", duration=3.0, audio=False)
    result = run_grade("shot-cuts", tmp_path / "ok")
    assert result.passed and result.score == pytest.approx(100.0, abs=1.5)
    # Boundaries a second off: no gate fails, the score drops below the pass mark.
    off = {
        "shots": [
            {"id": "a", "start": 0, "end": 1.0},
            {"id": "b", "start": 1.0, "end": 6.0},
            {"id": "c", "start": 6.0, "end": 7.5},
        ]
    }
    put(tmp_path / "off", "shots.json", json.dumps(off))
    synth.make_video(tmp_path / "off" / "output" / "shot2.mp4", duration=5.0, audio=False)
    result = run_grade("shot-cuts", tmp_path / "off")
    assert not result.passed and 0 < result.score < 70 and all(result.gates.values())
    # The clip missing: a gate fails and the score is 0 whatever else is right.
    put(tmp_path / "noclip", "shots.json", json.dumps(good))
    result = run_grade("shot-cuts", tmp_path / "noclip")
    assert result.score == 0.0 and not result.passed and not all(result.gates.values())


def test_slides_srt(tmp_path: Path) -> None:
    srt = "1\n00:00:00,000 --> 00:00:02,000\nWELCOME\n\n2\n00:00:02,000 --> 00:00:04,500\nPLAN AHEAD\n\n3\n00:00:04,500 --> 00:00:06,500\nTHANK YOU\n"
    put(tmp_path / "ok", "slides.srt", srt)
    assert run_grade("slides-srt", tmp_path / "ok").score == pytest.approx(100.0)
    put(tmp_path / "bad", "slides.srt", "1\n00:00:00,000 --> 00:00:06,500\nHELLO EVERYONE\n")
    result = run_grade("slides-srt", tmp_path / "bad")
    assert not result.passed and result.score < 40


def _catalog(ws: Path, rows: list[tuple[str, str, str]]) -> None:
    (ws / "inputs").mkdir(parents=True, exist_ok=True)
    (ws / "inputs" / "manifest.json").write_text(
        json.dumps({"slides": [{"file": f"slide{i}.png"} for i in (1, 2, 3)]})
    )
    put(
        ws,
        "catalog.json",
        json.dumps({"slides": [{"file": f, "title": t, "category": c} for f, t, c in rows]}),
    )


def test_slide_catalog_gates(tmp_path: Path) -> None:
    right = [
        ("slide1.png", "Quarterly Results", "results"),
        ("slide2.png", "Agenda", "agenda"),
        ("slide3.png", "Summary and Next Steps", "summary"),
    ]
    _catalog(tmp_path / "ok", right)
    assert run_grade("slide-catalog", tmp_path / "ok").score == pytest.approx(100.0)
    _catalog(
        tmp_path / "vocab", [*right[:2], ("slide3.png", "Summary and Next Steps", "conclusion")]
    )
    result = run_grade("slide-catalog", tmp_path / "vocab")
    assert result.score == 0.0 and any("outside the vocabulary" in n for n in result.notes)
    _catalog(tmp_path / "ids", [*right[:2], ("slide4.png", "Summary and Next Steps", "summary")])
    result = run_grade("slide-catalog", tmp_path / "ids")
    assert result.score == 0.0 and any("differ" in n for n in result.notes)
    _catalog(tmp_path / "titles", [(f, "Slide", c) for f, _, c in right])
    result = run_grade("slide-catalog", tmp_path / "titles")
    assert all(result.gates.values()) and result.score == pytest.approx(50.0)


def _sheet(video: Path, times: list[float]) -> bytes:
    frames = {}
    with av.open(str(video)) as c:
        for frame in c.decode(video=0):
            frames[round(float(frame.time or 0) * 25)] = frame.to_image()
    sheet = Image.new("RGB", (480, 240))
    for n, t in enumerate(times):
        sheet.paste(frames[round(t * 25)].resize((160, 120)), ((n % 3) * 160, (n // 3) * 120))
    out = Path(video.parent / "sheet.png")
    sheet.save(out)
    return out.read_bytes()


def test_contact_sheet(tmp_path: Path, suite: Path) -> None:
    video = suite.parent / "contact-sheet" / "clip.mp4"
    times = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]
    put(tmp_path / "ok", "sheet.png", _sheet(video, times))
    put(
        tmp_path / "ok",
        "sheet.json",
        json.dumps({"tiles": [{"index": i, "time": t} for i, t in enumerate(times)]}),
    )
    assert run_grade("contact-sheet", tmp_path / "ok").score == pytest.approx(100.0)
    late = [t + 0.5 for t in times[:-1]] + [5.9]  # whole seconds: the wrong frames
    put(tmp_path / "bad", "sheet.png", _sheet(video, late))
    put(
        tmp_path / "bad",
        "sheet.json",
        json.dumps({"tiles": [{"index": i, "time": t} for i, t in enumerate(late)]}),
    )
    result = run_grade("contact-sheet", tmp_path / "bad")
    assert not result.passed and result.score == pytest.approx(0.0)


def test_tone_onset_and_links_are_not_followed(tmp_path: Path) -> None:
    put(tmp_path / "ok", "onset.json", json.dumps({"tone_start": 2.37, "frequency_hz": 661.0}))
    assert run_grade("tone-onset", tmp_path / "ok").score == pytest.approx(100.0)
    put(tmp_path / "decoy", "onset.json", json.dumps({"tone_start": 0.8, "frequency_hz": 660}))
    result = run_grade("tone-onset", tmp_path / "decoy")
    assert not result.passed and result.score == pytest.approx(40.0)
    # An output that is a link (to a file the agent could not write) counts as missing.
    secret = tmp_path / "elsewhere.json"
    secret.write_text(json.dumps({"tone_start": 2.35, "frequency_hz": 660}))
    (tmp_path / "link" / "output").mkdir(parents=True)
    (tmp_path / "link" / "output" / "onset.json").symlink_to(secret)
    assert run_grade("tone-onset", tmp_path / "link").score == 0.0


def test_hungarian_and_tolerant_iou() -> None:
    table = [[0.1, 0.9, 0.3], [0.8, 0.7, 0.1], [0.2, 0.3, 0.6], [0.5, 0.5, 0.5]]
    pairs = hungarian(table)
    best = max(
        sum(table[r][c] for r, c in zip(rows, range(3), strict=True))
        for rows in itertools.permutations(range(4), 3)
    )
    assert sum(table[r][c] for r, c in pairs) == pytest.approx(best) and len(pairs) == 3
    # Boundaries within ±2 s count as exact; order of the predictions does not matter.
    iou, _ = segment_iou([(31.5, 60.0), (0.0, 9.0)], [(0.0, 10.0), (30.0, 60.0)])
    assert iou == pytest.approx(1.0)
    assert segment_iou([(0.0, 10.0)], [(0.0, 10.0), (30.0, 60.0)])[0] == pytest.approx(0.5)


def test_llm_judged_dimension(tmp_path: Path) -> None:
    judge, adapter = scripted([s.text("Clear and complete.\nScore: 8")])
    spec = TaskSpec(
        instruction="Summarise the talk in output/summary.txt.",
        outputs=["output/summary.txt"],
        dimensions=[
            Dimension(
                name="summary quality",
                weight=1.0,
                kind="judge",
                file="output/summary.txt",
                rubric="Mentions all three slides.",
            )
        ],
    )
    put(tmp_path, "summary.txt", "Welcome, plan ahead, thank you.")
    result = asyncio.run(grade(spec, tmp_path, judge=judge))
    assert result.metrics["summary quality"] == 0.8 and result.passed
    sent = adapter.requests[0][0][0].text
    assert "Mentions all three slides." in sent and "Welcome, plan ahead" in sent
    with pytest.raises(ValueError, match="pass --judge"):
        asyncio.run(grade(spec, tmp_path))


def _step(keystrokes: str) -> s.OutputStep:
    return s.tool_call("execute_commands", {"analysis": "a", "plan": "p", "keystrokes": keystrokes})


def test_coder_solves_a_task_through_eval(tmp_path: Path, suite: Path) -> None:
    solve = (
        "mkdir -p output && python3 - <<'EOF'\n"
        "import json, wave, numpy as np\n"
        "w = wave.open('inputs/signal.wav'); r = w.getframerate()\n"
        "x = np.frombuffer(w.readframes(w.getnframes()), '<i2') / 32768\n"
        "win = r // 100; e = np.sqrt((x[: len(x) // win * win].reshape(-1, win) ** 2).mean(1))\n"
        "loud = np.flatnonzero(e > 0.1); runs = np.split(loud, np.flatnonzero(np.diff(loud) > 1) + 1)\n"
        "tone = max(runs, key=len); start = tone[0] * win / r\n"
        "seg = x[int(start * r): int(start * r) + r // 2]; f = np.fft.rfftfreq(len(seg), 1 / r)\n"
        "hz = float(f[np.argmax(np.abs(np.fft.rfft(seg)))])\n"
        "json.dump({'tone_start': start, 'frequency_hz': hz}, open('output/onset.json', 'w'))\n"
        "EOF\ncat output/onset.json"
    )
    script = [_step(solve), s.tool_call("task_complete", {}, text="<answer>done</answer>")]
    path = tmp_path / "agent.json"
    path.write_text(json.dumps([step.model_dump(mode="json") for step in script]))
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "terminal-tasks",
            "--data",
            str(suite),
            "--ids",
            "tone-onset",
            "--agent",
            "coder",
            "--model",
            f"scripted:{path}",
            "--out",
            str(out),
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert record["score"]["scorer"] == "terminal-tasks"
    assert record["score"]["correct"] is True and record["score"]["value"] == pytest.approx(1.0)
    onset = json.loads((out / "workspaces" / "tone-onset" / "output" / "onset.json").read_text())
    assert onset["tone_start"] == pytest.approx(2.35, abs=0.02)

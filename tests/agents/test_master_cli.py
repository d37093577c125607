"""The ``master`` agent through ``omnilab ask`` (live notes, roles from flags and omnilab.toml)
and ``omnilab eval mcq`` (options reach the master, per-round figures in the metrics, resume)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.config import get_settings
from omnilab.trajectory import read_trajectory

runner = CliRunner()


def script(path: Path, steps: object) -> str:
    path.write_text(json.dumps(steps), encoding="utf-8")
    return f"scripted:{path}"


def cli(*args: str | Path, env: dict[str, str] | None = None) -> str:
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200", **(env or {})})
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


PLAN = {
    "user_intent": "the meeting time",
    "agent_instructions": [{"agent_name": "text_agent", "questions": ["When is the meeting?"]}],
}


def decided(answer: str, final: bool) -> dict[str, object]:
    return {"final_answer": answer, "is_final": final, "suggestions_for_next_round": ["none"]}


@pytest.fixture(autouse=True)
def _runs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_AGENTS__RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.chdir(tmp_path)  # no omnilab.toml of the repository's
    get_settings.cache_clear()


def test_ask_shows_each_round_live(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("The meeting is at noon.", encoding="utf-8")
    master = script(
        tmp_path / "master.json",
        [json.dumps(PLAN), json.dumps(decided("maybe noon", False)), json.dumps(PLAN),
         json.dumps(decided("At noon.", True))],
    )  # fmt: skip
    text = script(
        tmp_path / "text.json",
        [json.dumps({"description": "a note about a meeting"}), json.dumps({"answers": ["noon"]}),
         json.dumps({"answers": ["12:00"]})],
    )  # fmt: skip
    out = cli(
        "ask", notes, "When is the meeting?", "--agent", "master", "--model", master,
        "--role", f"text={text}", "--out", tmp_path / "run",
    )  # fmt: skip
    lines = out.splitlines()
    assert lines[1] == "agent master" and f"models: agent={master}, text={text}" in out
    assert any("perception:" in line and "a note about a meeting" in line for line in lines)
    assert any(
        "reasoning:" in line and "text_agent: When is the meeting?" in line for line in lines
    )
    assert any("answers:" in line and "When is the meeting? -> noon" in line for line in lines)
    assert any("decision:" in line and "round 1: not final: maybe noon" in line for line in lines)
    assert any("decision:" in line and "round 2: final: At noon." in line for line in lines)
    assert "At noon." in out and "answered as text" in out
    saved = read_trajectory(tmp_path / "run" / "trajectory.jsonl")
    assert saved.run_end is not None and saved.run_end.stats == {"rounds": 2, "stopped_early": 1}


def test_roles_come_from_omnilab_toml_and_flags_win(tmp_path: Path) -> None:
    one = script(tmp_path / "a.json", {"outputs": [json.dumps(decided("x", True))], "repeat": True})
    toml = tmp_path / "omnilab.toml"
    toml.write_text(f'[agents.roles]\nmaster = "{one}"\ntext = "scripted:unused.json"\n')
    text = script(tmp_path / "t.json", [json.dumps({"answers": ["fine"]})])
    master = script(
        tmp_path / "m.json", [json.dumps(PLAN), json.dumps(decided("From the flags.", True))]
    )
    out = cli(
        "ask", "Is it fine?", "--agent", "master", "--model", one, "--role", f"text={text}",
        "--role", f"master={master}", "--json", "--out", tmp_path / "run",
        env={"OMNILAB_CONFIG": str(toml)},
    )  # fmt: skip
    assert json.loads(out)["answer"] == "From the flags."
    toml.write_text(f'[agents.roles]\nmaster = "{master}"\ntext = "{text}"\n')
    get_settings.cache_clear()
    import omnilab

    master = script(
        tmp_path / "m.json", [json.dumps(PLAN), json.dumps(decided("From the file.", True))]
    )
    text = script(tmp_path / "t.json", [json.dumps({"answers": ["fine"]})])
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMNILAB_CONFIG", str(toml))
        get_settings.cache_clear()
        result = omnilab.ask([], "Is it fine?", agent="master", model=one, run_dir=tmp_path / "r2")
    assert result.answer == "From the file."
    start = result.trajectory.run_start
    assert start is not None and start.models["master"] == master and start.models["text"] == text


def test_eval_mcq_reports_rounds_and_early_stops(tmp_path: Path) -> None:
    items = [
        {"id": f"q{i}", "question": f"Which colour is {i}?", "options": ["A. red", "B. blue"],
         "answer": "B"}
        for i in range(3)
    ]  # fmt: skip
    data = tmp_path / "mcq.jsonl"
    data.write_text("\n".join(json.dumps(i) for i in items), encoding="utf-8")
    one = {"user_intent": "colour", "agent_instructions": [
        {"agent_name": "text_agent", "questions": ["Which colour: A. red or B. blue?"]}]}  # fmt: skip
    answers = {"answers": ["blue"]}
    # Task 1 stops at round 1; task 2 goes on to round 2 (the cap, -O max_rounds=2); task 3 as 1.
    steps = [one, answers, decided("The answer is B", True),
             one, answers, decided("The answer is A", False), one, answers,
             decided("The answer is B", True)]  # fmt: skip
    model = script(
        tmp_path / "pool.json", {"outputs": [json.dumps(s) for s in steps], "repeat": True}
    )
    out = tmp_path / "eval"
    cli(
        "eval", "mcq", "--data", data, "--agent", "master", "--model", model, "-O",
        "max_rounds=2", "--out", out, "--no-progress", "-c", "1", "--no-cache",
    )  # fmt: skip
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == 3 and all(r["judged"] for r in results), results
    by_id = {r["task_id"]: r["stats"] for r in results}
    assert by_id == {
        "q0": {"rounds": 1, "stopped_early": 1},
        "q1": {"rounds": 2, "stopped_early": 0},
        "q2": {"rounds": 1, "stopped_early": 1},
    }
    traj = next(p for p in sorted(out.rglob("*.jsonl")) if "traj" in str(p))
    reasoning = next(
        e for e in read_trajectory(traj).events if e.kind == "message" and e.message.role == "user"
    )
    assert "Choices:" in reasoning.message.text and "B. blue" in reasoning.message.text
    shown = cli("metrics", out)
    assert "rounds (mean)" in shown and "1.33" in shown and "stopped_early (mean)" in shown
    assert "0.67" in shown
    again = cli(
        "eval", "mcq", "--data", data, "--out", out, "--resume", "--no-progress"
    )  # resumes: nothing left to run, the same results
    assert len((out / "results.jsonl").read_text().splitlines()) == 3, again


def test_eval_omnigaia_runs_the_pool_on_the_tasks_media(tmp_path: Path) -> None:
    from omnilab.media.synth import make_image

    photo = make_image(tmp_path / "photo.png")
    items = [
        {"id": "g1", "question": "What colour is the car?", "answer": "blue", "Level": "Easy",
         "category": "Art", "omni_modal_input": [{"type": "image", "id": "image_1",
                                                 "path": str(photo)}]}
    ]  # fmt: skip
    data = tmp_path / "gaia.json"
    data.write_text(json.dumps(items), encoding="utf-8")
    plan = {"user_intent": "colour", "agent_instructions": [
        {"agent_name": "image_agent", "questions": ["What colour is the car?"]}]}  # fmt: skip
    steps = [{"description": "a car"}, plan, {"answers": ["blue"]}, decided("blue", True)]
    model = script(tmp_path / "pool.json", [json.dumps(s) for s in steps])
    judge = script(tmp_path / "judge.json", {"outputs": ["Correct"], "repeat": True})
    out = tmp_path / "eval"
    cli(
        "eval", "omnigaia", "--data", data, "--agent", "master", "--model", model, "--judge",
        judge, "--out", out, "--no-progress", "--no-cache",
    )  # fmt: skip
    [result] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert result["judged"] and result["prediction"] == "blue"
    assert result["model_calls"] == 4 and result["stats"]["rounds"] == 1
    traj = next(p for p in sorted(out.rglob("*.jsonl")) if "traj" in str(p))
    roles = [c.role for c in read_trajectory(traj).model_calls]
    assert roles == ["image", "master", "image", "master"]

"""The scaffold of docs/agents.md, taken verbatim from the page, runs through ``omnilab ask
--agent react`` and ``omnilab eval ... --agent react`` with nothing but its registration."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnilab.agents import register_agent
from omnilab.agents.registry import agent_names
from omnilab.cli.main import app
from omnilab.config import get_settings
from omnilab.trajectory import read_trajectory

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def example_source() -> str:
    page = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- example: react_agent.py -->\n```python\n(.*?)\n```", page, re.DOTALL)
    assert found is not None, "docs/agents.md lost its example scaffold"
    return found.group(1) + "\n"


@pytest.fixture()
def react(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The example written as its own module and registered, as a user would."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "react_agent.py").write_text(example_source(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("OMNILAB_AGENTS__RUNS_DIR", str(tmp_path / "runs"))
    get_settings.cache_clear()
    register_agent("react", "react_agent:ReactAgent")
    yield "react"
    sys.modules.pop("react_agent", None)


def script(path: Path, steps: object) -> str:
    path.write_text(json.dumps(steps), encoding="utf-8")
    return f"scripted:{path}"


def cli(*args: str | Path) -> str:
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_the_example_is_under_100_lines() -> None:
    assert len(example_source().splitlines()) < 100


def test_example_runs_through_omnilab_ask(react: str, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("Six boxes hold seven apples each.", encoding="utf-8")
    model = script(
        tmp_path / "ask.json",
        [
            # Two calls in one reply: the second is refused (one call per turn).
            {
                "output": {
                    "message": {
                        "role": "assistant",
                        "tool_calls": [
                            {"name": "calculate", "arguments": {"a": 6, "op": "*", "b": 7}},
                            {"name": "finish", "arguments": {"answer": "too early"}},
                        ],
                    }
                }
            },
            {"tool_call": {"name": "calculate", "arguments": {"a": 6, "op": "*", "b": 7}}},
            {"tool_call": {"name": "finish", "arguments": {"answer": "42"}}},
        ],
    )
    out = cli(
        "ask", notes, "How many apples?", "--agent", react, "-O", "max_calculations=1",
        "--model", model, "--json", "--out", tmp_path / "run",
    )  # fmt: skip
    summary = json.loads(out)
    assert summary["answer"] == "42" and summary["status"] == "answered"
    saved = read_trajectory(Path(summary["trajectory"]))
    start = saved.run_start
    assert start is not None and start.agent == "react"
    assert start.config == {"max_calculations": 1}
    codes = [r.result.error.code if r.result.error else "ok" for r in saved.tool_results]
    # one call per turn; the calculator's budget of 1 spent; finish (terminal) ends the run
    assert codes == ["ok", "TOO_MANY_CALLS", "TOOL_BUDGET", "ok"]
    assert saved.tool_results[0].result.text == "42"
    assert [c.role for c in saved.model_calls] == ["agent"] * 3
    assert len({c.context_id for c in saved.model_calls}) == 1


def test_example_runs_through_omnilab_eval(react: str, tmp_path: Path, image_file: Path) -> None:
    items = [
        {
            "id": f"q{i}",
            "question": f"What colour is thing {i}?",
            "answer": "blue",
            "Level": "Easy",
            "category": "Art",
            "omni_modal_input": [{"type": "image", "id": "image_1", "path": str(image_file)}],
        }
        for i in range(3)
    ]
    data = tmp_path / "tasks.json"
    data.write_text(json.dumps(items), encoding="utf-8")
    model = script(
        tmp_path / "agent.json",
        {"outputs": [{"tool_call": {"name": "finish", "arguments": {"answer": "blue"}}}], "repeat": True},
    )  # fmt: skip
    judge = script(tmp_path / "judge.json", {"outputs": ["Correct"], "repeat": True})
    out = tmp_path / "eval"
    cli(
        "eval", "omnigaia", "--data", data, "--agent", react, "--model", model,
        "--judge", judge, "--out", out, "--no-progress", "--media-root", image_file.parent,
    )  # fmt: skip
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == 3 and all(r["prediction"] == "blue" for r in results), results
    trajectories = sorted(out.rglob("*.jsonl"))
    agents = {read_trajectory(p).run_start.agent for p in trajectories if "traj" in str(p)}  # type: ignore[union-attr]
    assert agents == {"react"}


def test_registration_is_all_it_takes(react: str) -> None:
    assert "react" in agent_names()


def test_the_python_api_is_generic(react: str, tmp_path: Path) -> None:
    import omnilab
    from omnilab.agents import AgentConfigError

    notes = tmp_path / "notes.txt"
    notes.write_text("two and two", encoding="utf-8")
    model = script(
        tmp_path / "api.json",
        [
            {"tool_call": {"name": "calculate", "arguments": {"a": 2, "op": "+", "b": 2}}},
            {"tool_call": {"name": "calculate", "arguments": {"a": 2, "op": "+", "b": 2}}},
            "<answer>4</answer>",
        ],
    )
    result = omnilab.ask(
        [str(notes)],
        "What is two and two?",
        model=model,
        agent=react,
        agent_options={"max_calculations": 1},
        roles={"checker": model},
        run_dir=str(tmp_path / "api-run"),
    )
    assert result.answer == "4" and result.status == "answered"
    start = result.trajectory.run_start
    assert start is not None and start.models == {"agent": model, "checker": model}
    assert result.trajectory.tool_results[1].result.error is not None  # the budget of 1
    with pytest.raises(AgentConfigError, match="does not take these options"):
        omnilab.ask([notes], "q?", model=model, agent=react, agent_options={"mode": "native"})
    with pytest.raises(AgentConfigError, match="does not take these options"):
        omnilab.ask([notes], "q?", model=model, agent=react, mode="native")

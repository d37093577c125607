"""``omnilab explore`` as a user runs it: scripted model files, a new run, a resume, mistakes."""

from __future__ import annotations

import json
from pathlib import Path

from explore_kit import dataset
from typer.testing import CliRunner

from omnilab.bench.run_dir import RunDir
from omnilab.cli.main import app
from omnilab.trajectory import read_trajectory

runner = CliRunner()


def _verdicts(*keep: bool) -> str:
    listed = [{"candidate": i, "keep": k, "score": float(k)} for i, k in enumerate(keep, 1)]
    return json.dumps({"verdicts": listed})


def _scripts(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The dataset, an agent that answers 41 then 42, a verifier keeping the second branch."""
    agent = tmp_path / "agent.json"
    agent.write_text(json.dumps(["<answer>41</answer>", "<answer>42</answer>"]))
    verifier = tmp_path / "verifier.json"
    verifier.write_text(json.dumps([_verdicts(False, True)]))
    return dataset(tmp_path), agent, verifier


def test_explore_command_runs_resumes_and_explains_mistakes(tmp_path: Path) -> None:
    data, agent, verifier = _scripts(tmp_path)
    out = tmp_path / "run"
    args = ["explore", "jsonl", "--data", data, "--model", f"scripted:{agent}"]
    args += ["--verifier", f"scripted:{verifier}", "--branches", "2", "--sequential", "--out", out]
    args += ["--role", f"perception=scripted:{verifier}"]
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    assert "1 of 1 with a successful path" in result.output
    assert sorted(p.name for p in (out / "branches" / "t1").iterdir()) == [
        "r.0.jsonl",
        "r.1.jsonl",
        "tree.jsonl",
    ]
    main = read_trajectory(RunDir(out).trajectory_file("t1", 0))
    assert main.answer == "42"
    assert RunDir(out).read_config().roles == {
        "perception": f"scripted:{verifier}",
        "verifier": f"scripted:{verifier}",
    }
    # A resume needs nothing but the folder and runs nothing again.
    again = runner.invoke(app, ["explore", "--out", str(out), "--resume"])
    assert again.exit_code == 0, again.output
    assert "0 tasks explored now, 1 done before" in again.output
    # Mistakes: one line each.
    for bad, message in [
        (["explore", "jsonl", "--data", str(data)], "--out DIR"),
        (["explore", "jsonl", "--data", str(data), "--out", str(tmp_path / "x")], "--verifier"),
        (["explore", "jsonl", *map(str, args[2:])], "already holds a run"),
        (
            [*map(str, args[:-2]), "--role", "verifier=x:y", "--out", str(tmp_path / "z")],
            "not as a role",
        ),
    ]:
        failed = runner.invoke(app, bad)
        assert failed.exit_code != 0
        assert message in str(failed.exception) + failed.output


def test_explore_runs_on_the_processes_backend_like_locally(tmp_path: Path) -> None:
    # The exploring agent (scaffold, answers, scorer check) pickles for worker processes; the
    # branches and journal land in the same run folder as with the local backend.
    data, agent, verifier = _scripts(tmp_path)
    found = {}
    for backend in ("local", "processes"):
        out = tmp_path / backend
        args = ["explore", "jsonl", "--data", data, "--model", f"scripted:{agent}"]
        args += ["--verifier", f"scripted:{verifier}", "--branches", "2", "--sequential"]
        args += ["--out", out, "--backend", backend]
        result = runner.invoke(app, [str(a) for a in args])
        assert result.exit_code == 0, result.output
        assert RunDir(out).read_config().backend == backend
        found[backend] = (
            read_trajectory(RunDir(out).trajectory_file("t1", 0)).answer,
            sorted(p.name for p in (out / "branches" / "t1").iterdir()),
        )
    assert found["processes"] == found["local"] == ("42", ["r.0.jsonl", "r.1.jsonl", "tree.jsonl"])

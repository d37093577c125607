"""Issue 44.16: the report's run wall time apart from the summed task time, pass@k for a
``--samples K`` run, and a comparison index naming each run's agent and model."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.trajectory import read_trajectory


def _cards(html: str) -> dict[str, str]:
    found = re.findall(r'<div class="k">([^<]*)</div><div class="v">([^<]*)</div>', html)
    return dict(found)


def test_wall_time_is_the_runs_and_task_time_is_summed(tmp_path: Path) -> None:
    data = tmp_path / "tasks.jsonl"
    rows = [{"id": f"t{i}", "question": "2+2?", "answer": "4"} for i in range(3)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = tmp_path / "m.json"
    model.write_text(json.dumps({"outputs": ["<answer>4</answer>"], "repeat": True}))
    run, report = tmp_path / "run", tmp_path / "report"
    args = ["eval", "jsonl", "--data", str(data), "--model", f"scripted:{model}", "--samples", "2"]
    done = CliRunner().invoke(app, [*args, "--out", str(run), "--no-progress"])
    assert done.exit_code == 0, (done.output, done.exception)
    assert "pass@2" in done.output
    shown = CliRunner().invoke(app, ["report", str(run), "--out", str(report)])
    assert shown.exit_code == 0, (shown.output, shown.exception)
    cards = _cards((report / "index.html").read_text(encoding="utf-8"))
    spans = [read_trajectory(f) for f in (run / "trajectories").glob("*.jsonl")]
    starts = [t.run_start.timestamp for t in spans if t.run_start is not None]
    ends = [t.run_end.timestamp for t in spans if t.run_end is not None]
    assert cards["Wall time"] == f"{max(ends) - min(starts):,.1f} s"
    summed = sum(json.loads(line)["wall_s"] for line in (run / "results.jsonl").open())
    assert cards["Task time (summed)"] == f"{summed:,.1f} s"
    assert cards["pass@2"] == "100.0%" and cards["pass@1"] == "100.0%"


def test_the_comparison_index_names_agent_and_model(report_ab: Path) -> None:
    html = (report_ab / "index.html").read_text(encoding="utf-8")
    assert "<th>agent</th><th>model</th>" in html
    assert html.count("<td>scripted:synthetic</td>") == 2

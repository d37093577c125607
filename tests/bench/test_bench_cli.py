"""``omnilab data check`` and ``omnilab data show``; user errors as one line, exit status 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from omnilab.cli.main import app

runner = CliRunner()


def ok(*args: str | Path) -> str:
    # A wide console, so that rich does not fold long paths across lines.
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "250"})
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def fails(*args: str | Path) -> str:
    """Run a command that must fail as a user error in a real process; its one-line message."""
    proc = subprocess.run(
        [sys.executable, "-m", "omnilab", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0].removeprefix("error: ")


def test_check_reports_tasks_skips_and_missing_media(bench_data: Path, tmp_path: Path) -> None:
    (tmp_path / "audio").mkdir()
    (tmp_path / "audio" / "ds1.wav").write_bytes(b"\0")
    out = ok(
        "data",
        "check",
        "omni-deepsearch",
        "--data",
        bench_data / "deepsearch.jsonl",
        "--media-root",
        tmp_path,
    )
    assert "omni-deepsearch: 4 tasks loaded" in out
    assert "2 items skipped; 3 tasks miss 5 media files" in out
    assert "no question" in out and "ds5" in out and "no answer" in out
    assert "ds3" in out and str(tmp_path / "audio" / "b.wav") in out
    assert str(tmp_path / "audio" / "ds1.wav") not in out


def test_check_as_json(sample_path: Path) -> None:
    report = json.loads(ok("data", "check", "omnigaia", "--data", sample_path, "--json"))
    assert report["tasks"] == 24 and report["skipped"] == {}
    assert len(report["missing_media"]) == 24
    assert report["missing_media"]["3"] == [
        str(sample_path.parent / "videos/hLJ_RCSKF8o.mp4"),
        str(sample_path.parent / "videos/_PlD2UUpQgI.mp4"),
    ]


def test_show_lists_the_first_tasks(bench_data: Path, sample_path: Path) -> None:
    out = ok("data", "show", "omnigaia", "--data", sample_path, "--limit", "2")
    assert "2 of 24 tasks shown" in out and "video_hLJ_RCSKF8o" in out and "2 years" in out
    mcq = ok("data", "show", "mcq", "--data", bench_data / "mcq.json")
    assert "C. three" in mcq and "3 of 3 tasks shown" in mcq
    lines = ok(
        "data",
        "show",
        "omniagent",
        "--data",
        bench_data / "omniagent.jsonl",
        "--json",
        "--limit",
        "3",
    ).splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["oa1", "oa2", "oa3"]
    assert "original" not in json.loads(lines[0])


def test_user_errors_are_one_line(bench_data: Path) -> None:
    message = fails("data", "check", "omnigaia", "--data", bench_data / "not_json.json")
    assert "not_json.json is not valid JSON (line 1, column 1: Expecting value)" in message
    unknown = fails("data", "show", "gaia", "--data", bench_data / "mcq.json")
    assert unknown.startswith("unknown dataset 'gaia'; known datasets: omnigaia, ")

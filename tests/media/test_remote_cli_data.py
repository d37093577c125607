"""``omnilab data check|show`` and ``omnilab export rl`` with the dataset and its media in a
bucket (moto's S3 server on 127.0.0.1): the URL forms ``eval`` takes, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from remote_stores import s3_store
from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.errors import OmnilabError
from omnilab.media import remote, synth


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "_BACKOFF_S", 0.0)


def _local(tmp_path: Path) -> Path:
    local = tmp_path / "local"
    (local / "videos").mkdir(parents=True)
    rows = []
    for i in range(2):
        synth.make_video(
            local / "videos" / f"v{i}.mp4", duration=0.5, fps=4, size=(32, 24), audio=False
        )
        rows.append(
            {"id": f"q{i}", "question": f"Clip {i}?", "files": [f"videos/v{i}.mp4"], "answer": "b"}
        )
    (local / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return local


def _upload(s3: object, local: Path, bucket: str) -> None:
    s3.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        key = path.relative_to(local).as_posix()
        s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())  # type: ignore[attr-defined]


def test_data_check_show_and_export_rl_take_urls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    local = _local(tmp_path)
    runner = CliRunner()
    with s3_store(monkeypatch) as s3:
        _upload(s3, local, "bench")
        checked = runner.invoke(
            app, ["data", "check", "jsonl", "--data", "s3://bench/tasks.jsonl", "--json"]
        )
        shown = runner.invoke(
            app, ["data", "show", "jsonl", "--data", "s3://bench/tasks.jsonl", "--json"]
        )
        # The media root as a URL of its own, the dataset a local file.
        rooted = runner.invoke(
            app,
            [
                "data",
                "check",
                "jsonl",
                "--data",
                str(local / "tasks.jsonl"),
                "--media-root",
                "s3://bench/",
                "--json",
            ],
        )
        out = tmp_path / "rows.jsonl"
        exported = runner.invoke(
            app,
            [
                "export",
                "rl",
                "s3://bench/tasks.jsonl",
                "--dataset",
                "jsonl",
                "--format",
                "omniagent",
                "--out",
                str(out),
            ],
        )
    assert checked.exit_code == 0, checked.output
    report = json.loads(checked.output)
    assert report["tasks"] == 2 and report["missing_media"] == {}
    assert report["path"] == "s3://bench/tasks.jsonl" and report["media_root"] == "s3://bench/"
    assert shown.exit_code == 0, shown.output
    tasks = [json.loads(line) for line in shown.output.splitlines()]
    assert [f["url"] for t in tasks for f in t["files"]] == [
        "s3://bench/videos/v0.mp4",
        "s3://bench/videos/v1.mp4",
    ]
    assert rooted.exit_code == 0, rooted.output
    assert json.loads(rooted.output)["tasks"] == 2
    assert json.loads(rooted.output)["path"] == str(local / "tasks.jsonl")
    assert json.loads(rooted.output)["media_root"] == "s3://bench/"
    assert exported.exit_code == 0, exported.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2
    # The media were fetched to be probed: the rows carry the clip's real length and rate.
    assert all(abs(r["duration_seconds"] - 0.5) < 0.2 and r["fps"] == 4 for r in rows), rows
    # The rows name the objects (a trainer on another machine reads them there), not the copies
    # fetched into this machine's media cache.
    assert [r["video"] for r in rows] == ["s3://bench/videos/v0.mp4", "s3://bench/videos/v1.mp4"]


def test_a_missing_object_or_outside_url_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    local = _local(tmp_path)
    (local / "outside.jsonl").write_text(
        json.dumps({"id": "x", "question": "?", "files": ["s3://other/v.mp4"], "answer": "b"})
    )
    runner = CliRunner()
    with s3_store(monkeypatch) as s3:
        _upload(s3, local, "bench")
        missing = runner.invoke(
            app, ["data", "check", "jsonl", "--data", "s3://bench/nothing.jsonl"]
        )
        outside = runner.invoke(
            app, ["data", "show", "jsonl", "--data", "s3://bench/outside.jsonl"]
        )
        exported = runner.invoke(
            app,
            [
                *("export", "rl", "s3://bench/nothing.jsonl", "--dataset", "jsonl"),
                *("-f", "verl", "--out", str(tmp_path / "rows.parquet")),
            ],
        )
    # The CLI's main() prints an OmnilabError as one line "error: ..." with status 1.
    messages = []
    for result in (missing, outside, exported):
        assert isinstance(result.exception, OmnilabError), result.output
        assert "\n" not in str(result.exception)
        messages.append(str(result.exception))
    assert messages[0] == "cannot read --data: s3://bench/nothing.jsonl does not exist"
    assert "s3://other/v.mp4 is not beneath the media root s3://bench/" in messages[1]
    assert messages[2] == messages[0]

"""Inputs at URLs under the options a local dataset has: ``--missing-media drop`` drops an
input whose object does not exist as it drops a missing local file, ``bench.media_roots`` may
name a URL, and ``export rl`` rows name the objects' URLs (not the copies in the cache)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from remote_stores import http_store, s3_store
from test_remote_eval import _bench, _no_secret_under, _upload

from omnilab.bench.datasets import load_dataset
from omnilab.bench.remote_stage import stage_task
from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import evaluate, new_config
from omnilab.config import get_settings
from omnilab.media import remote
from omnilab.sandbox import _plan
from omnilab.train.rl import rl_rows
from omnilab.trajectory import read_trajectory


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "_BACKOFF_S", 0.0)


def test_missing_media_drop_drops_an_input_whose_object_does_not_exist(tmp_path: Path) -> None:
    local, model = _bench(tmp_path, 3)
    with http_store() as store:
        for path in local.rglob("*"):
            if path.is_file() and path.name != "v1.mp4":
                store.objects[path.relative_to(local).as_posix()] = path.read_bytes()
        store.denied.add("audios/a2.wav")
        config = new_config(
            "jsonl", store.url("tasks.jsonl"), agent="tir", model=model, missing_media="drop"
        )
        asyncio.run(evaluate(config, tmp_path / "run", concurrency=2))
    (local / "videos" / "v0.mp4").unlink()  # a missing local file, dropped the same way
    local_config = new_config(
        "jsonl", local / "tasks.jsonl", agent="tir", model=model, missing_media="drop"
    )
    asyncio.run(evaluate(local_config, tmp_path / "run-local", concurrency=2))
    by_id = {r.task_id: r for r in RunDir(tmp_path / "run").results()}
    local_q0 = next(r for r in RunDir(tmp_path / "run-local").results() if r.task_id == "q0")
    # q1's video is not in the store: the task runs with its audio, reported as q0's missing
    # local video is in a local run.
    assert by_id["q1"].error is None and by_id["q1"].judged is True
    assert by_id["q1"].stats["dropped_media"] == 1.0 == local_q0.stats["dropped_media"]
    start = read_trajectory(RunDir(tmp_path / "run").trajectory_file("q1")).run_start
    assert start is not None and [f.url for f in start.inputs] == [f"{store.base}/audios/a1.wav"]
    assert "dropped_media" not in by_id["q0"].stats
    # Denied is no missing file: that task still fails, in one line.
    assert by_id["q2"].error_kind == "media"
    assert by_id["q2"].error == (
        f"cannot fetch input a2: {store.base}/audios/a2.wav: access denied (HTTP 403)"
    )
    _no_secret_under(tmp_path / "run")


def test_a_media_root_setting_may_be_a_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    local, _ = _bench(tmp_path, 2)
    monkeypatch.setenv("OMNILAB_BENCH__MEDIA_ROOTS", json.dumps({"jsonl": "s3://bench/"}))
    get_settings.cache_clear()
    try:
        with s3_store(monkeypatch) as s3:
            _upload(s3, local, "bench")
            loaded = load_dataset("jsonl", local / "tasks.jsonl")
            staged = stage_task(loaded.tasks[1])
        folders = _plan._data_folders()
    finally:
        get_settings.cache_clear()
    assert loaded.media_url == "s3://bench/"
    assert [f.url for f in loaded.tasks[0].files] == [
        "s3://bench/videos/v0.mp4",
        "s3://bench/audios/a0.wav",
    ]
    assert staged.files[0].path.read_bytes() == (local / "videos" / "v1.mp4").read_bytes()
    # No folder of this machine's is made of the URL (the sandbox masks the media roots).
    assert not [f for f in folders if "s3:" in str(f) or f.name == "bench"]


def test_export_rl_rows_name_urls_without_their_query(tmp_path: Path) -> None:
    local, _ = _bench(tmp_path, 1)
    with http_store() as store:
        for path in local.rglob("*"):
            if path.is_file():
                store.objects[path.relative_to(local).as_posix()] = path.read_bytes()
        loaded = load_dataset("jsonl", store.url("tasks.jsonl"), media_root=store.url("", "s=SIG"))
        tasks = [stage_task(t) for t in loaded.tasks]
    (row,) = rl_rows(tasks, "verl")
    assert row["videos"] == [f"{store.base}/videos/v0.mp4"]
    assert row["audios"] == [f"{store.base}/audios/a0.wav"]
    assert row["extra_info"]["video"] == f"{store.base}/videos/v0.mp4"
    assert row["extra_info"]["duration_seconds"] > 0  # probed from the fetched copy
    assert "SIG" not in json.dumps(row)

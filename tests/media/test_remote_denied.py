"""Access denied by the store itself (moto's S3 server enforcing IAM on 127.0.0.1, a user whose
policy allows one bucket but one object in it): one line with kind DENIED, no retry, the run
goes on, and neither the user's key id nor its secret appears under the run folder."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from remote_stores import s3_auth, s3_store
from test_remote_eval import _bench, _no_secret_under, _outcome, _upload

from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import evaluate, new_config
from omnilab.media import remote
from omnilab.media.cache import MediaCache
from omnilab.media.errors import MediaError, MediaErrorCode

POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:ListBucket"],
            "Resource": ["arn:aws:s3:::bench", "arn:aws:s3:::bench/*"],
        },
        {"Effect": "Deny", "Action": "s3:*", "Resource": "arn:aws:s3:::bench/audios/a2.wav"},
    ],
}


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "_BACKOFF_S", 0.0)


def _under(folder: Path, secrets: tuple[str, ...]) -> list[str]:
    return [
        f"{secret} in {path}"
        for path in folder.rglob("*")
        if path.is_file()
        for secret in secrets
        if secret.encode() in path.read_bytes()
    ]


def test_a_denied_bucket_or_object_is_one_denied_line_without_retries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = MediaCache(tmp_path / "media", max_bytes=1 << 30)
    with s3_store(monkeypatch) as s3:
        s3.create_bucket(Bucket="bench")
        s3.create_bucket(Bucket="closed")
        for bucket, key in (("bench", "videos/v0.mp4"), ("bench", "audios/a2.wav")):
            s3.put_object(Bucket=bucket, Key=key, Body=b"allowed bytes")
        s3.put_object(Bucket="closed", Key="v.mp4", Body=b"closed bytes")
        sleeps: list[float] = []
        monkeypatch.setattr(remote.time, "sleep", sleeps.append)
        with s3_auth(monkeypatch, POLICY) as (key_id, secret):
            got = remote.fetch("s3://bench/videos/v0.mp4", cache=cache)
            errors = []
            for url in ("s3://closed/v.mp4", "s3://bench/audios/a2.wav"):
                for attempt in (1, 2):  # a first fetch (one GET), then one looked up first
                    with pytest.raises(MediaError) as err:
                        remote.fetch(url, cache=cache)
                    errors.append((url, attempt, err.value.code, str(err.value)))
    assert got.path.read_bytes() == b"allowed bytes"
    assert errors == [
        (url, attempt, MediaErrorCode.DENIED, f"{url}: access denied (HTTP 403)")
        for url in ("s3://closed/v.mp4", "s3://bench/audios/a2.wav")
        for attempt in (1, 2)
    ]
    assert sleeps == []  # denied is final: no backoff, no retry
    assert cache.stats().entries == 1
    assert not _under(tmp_path, (key_id, secret))


def test_an_eval_with_a_denied_input_fails_that_task_in_one_line_and_goes_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    local, model = _bench(tmp_path, 3)
    config = new_config("jsonl", local / "tasks.jsonl", agent="tir", model=model)
    asyncio.run(evaluate(config, tmp_path / "run-local", concurrency=2))
    with s3_store(monkeypatch) as s3:
        _upload(s3, local, "bench")
        with s3_auth(monkeypatch, POLICY) as (key_id, secret):
            at_url = new_config("jsonl", "s3://bench/tasks.jsonl", agent="tir", model=model)
            asyncio.run(evaluate(at_url, tmp_path / "run", concurrency=2))
    by_id = {r.task_id: r for r in RunDir(tmp_path / "run").results()}
    assert by_id["q2"].error_kind == "media"
    assert (
        by_id["q2"].error
        == "cannot fetch input a2: s3://bench/audios/a2.wav: access denied (HTTP 403)"
    )
    # The other tasks ran, with the results of a local run.
    local_rows = {row[0]: row for row in _outcome(tmp_path / "run-local")}
    assert [row for row in _outcome(tmp_path / "run") if row[0] != "q2"] == [
        local_rows["q0"],
        local_rows["q1"],
    ]
    assert not _under(tmp_path / "run", (key_id, secret))
    _no_secret_under(tmp_path / "run")

"""Credentials and endpoints by bucket (``[remote.buckets]``, issue 46) against moto's S3 server
enforcing IAM on 127.0.0.1: two buckets readable by two different users, each bucket's keys in
the environment variables its settings name, its endpoint in its settings (the environment has
no AWS endpoint and no AWS keys); a wrong key is one DENIED line; no key id or secret under the
run folder or in a log line; worker processes read buckets with the driver's settings."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from remote_stores import enforced_auth, iam_user, read_policy, s3_store
from test_remote_eval import _bench, _outcome

from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import evaluate, new_config
from omnilab.config import get_settings
from omnilab.errors import OmnilabError
from omnilab.media import remote
from omnilab.media.cache import MediaCache
from omnilab.media.errors import MediaError, MediaErrorCode


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "_BACKOFF_S", 0.0)


BUCKETS = """
[remote.buckets."s3://alpha"]
endpoint_url = "{endpoint}"
region = "us-east-1"
key_id_env = "ALPHA_KEY_ID"
secret_env = "ALPHA_SECRET"

[remote.buckets."s3://beta"]
endpoint_url = "{endpoint}"
region = "us-east-1"
key_id_env = "BETA_KEY_ID"
secret_env = "BETA_SECRET"
"""


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@contextmanager
def two_readers(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    alpha: dict[str, bytes],
    beta: dict[str, bytes],
) -> Iterator[dict[str, tuple[str, str]]]:
    """Buckets ``alpha`` and ``beta`` holding these objects on an IAM-enforcing moto server,
    each readable by its own user only; the config names each bucket's endpoint and key
    variables, the environment holds the keys and no AWS setting."""
    with s3_store(monkeypatch) as s3:
        endpoint = s3.meta.endpoint_url
        for bucket, objects in (("alpha", alpha), ("beta", beta)):
            s3.create_bucket(Bucket=bucket)
            for key, body in objects.items():
                s3.put_object(Bucket=bucket, Key=key, Body=body)
        keys = {name: iam_user(endpoint, read_policy(name)) for name in ("alpha", "beta")}
        for name, (key_id, secret) in keys.items():
            monkeypatch.setenv(f"{name.upper()}_KEY_ID", key_id)
            monkeypatch.setenv(f"{name.upper()}_SECRET", secret)
        for var in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
        (tmp_path / "no-config.toml").write_text(BUCKETS.format(endpoint=endpoint))
        get_settings.cache_clear()
        with enforced_auth(endpoint):
            yield keys


SMALL = ({"a.bin": b"alpha bytes"}, {"b.bin": b"beta bytes b", "c.bin": b"beta bytes c"})


def _secrets(keys: dict[str, tuple[str, str]]) -> list[str]:
    return [value for pair in keys.values() for value in pair]


def _found_under(folder: Path, secrets: list[str]) -> list[str]:
    return [
        f"{secret[:4]}... in {path}"
        for path in folder.rglob("*")
        if path.is_file()
        for secret in secrets
        if secret.encode() in path.read_bytes()
    ]


def test_each_bucket_is_read_with_its_own_keys_at_its_own_endpoint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="omnilab")
    cache = MediaCache(tmp_path / "media", max_bytes=1 << 30)
    with two_readers(monkeypatch, tmp_path, *SMALL) as keys:
        a = remote.fetch("s3://alpha/a.bin", cache=cache)
        b = remote.fetch("s3://beta/b.bin", cache=cache)
        assert (a.path.read_bytes(), b.path.read_bytes()) == (b"alpha bytes", b"beta bytes b")
        # beta's settings now name alpha's keys: the store itself refuses, in one line.
        monkeypatch.setenv("BETA_KEY_ID", keys["alpha"][0])
        monkeypatch.setenv("BETA_SECRET", keys["alpha"][1])
        with pytest.raises(MediaError) as denied:
            remote.fetch("s3://beta/c.bin", cache=cache)
        # and alpha's user reads alpha still (its filesystem is not beta's)
        again = remote.fetch("s3://alpha/a.bin", cache=cache)
    assert again.path.read_bytes() == b"alpha bytes"
    assert denied.value.code is MediaErrorCode.DENIED
    assert str(denied.value) == "s3://beta/c.bin: access denied (HTTP 403)"
    assert not _found_under(tmp_path, _secrets(keys))
    assert not [s for s in _secrets(keys) if s in caplog.text]


def test_without_bucket_settings_the_standard_chain_has_no_keys_here(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The control of the test above: the same objects with no [remote.buckets] are not read
    (the environment has neither an endpoint nor keys), so the settings did the work."""
    cache = MediaCache(tmp_path / "media", max_bytes=1 << 30)
    with two_readers(monkeypatch, tmp_path, *SMALL):
        (tmp_path / "no-config.toml").write_text("")
        get_settings.cache_clear()
        with pytest.raises(MediaError) as err:
            remote.fetch("s3://alpha/a.bin", cache=cache)
    assert err.value.code is MediaErrorCode.DENIED
    assert str(err.value) == (
        "s3://alpha/a.bin: no credentials found (set them the store's usual way: AWS environment "
        "or profile, Google application default credentials, Azure environment; or by bucket in "
        "[remote.buckets] of omnilab.toml)"
    )


@pytest.mark.slow
def test_worker_processes_read_both_buckets_with_the_drivers_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from omnilab.bench.backends import get_backend

    caplog.set_level(logging.DEBUG, logger="omnilab")
    local, model = _bench(tmp_path, 2)
    # Each task's audio lies in the other bucket (beta), named by its full URL.
    rows = [json.loads(line) for line in (local / "tasks.jsonl").read_text().splitlines()]
    for row in rows:
        row["files"][1] = f"s3://beta/{row['files'][1]}"
    (local / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    files = _files(local)
    alpha = {k: v for k, v in files.items() if not k.startswith("audios/")}
    beta = {k: v for k, v in files.items() if k.startswith("audios/")}
    with two_readers(monkeypatch, tmp_path, alpha, beta) as keys:
        config = new_config(
            "jsonl",
            "s3://alpha/tasks.jsonl",
            agent="tir",
            model=model,
            allow_outside_media_root=True,
        )
        # The workers' own config file says nothing: what they read, they read with the
        # settings the driver sent them.
        (tmp_path / "no-config.toml").write_text("")
        asyncio.run(
            evaluate(config, tmp_path / "run", concurrency=2, backend=get_backend("processes"))
        )
    by_id = {r.task_id: r for r in RunDir(tmp_path / "run").results()}
    assert {t: (r.judged, r.error) for t, r in by_id.items()} == {
        "q0": (True, None),
        "q1": (True, None),
    }
    assert [row[0] for row in _outcome(tmp_path / "run")] == ["q0", "q1"]
    assert not _found_under(tmp_path / "run", _secrets(keys))
    assert not [s for s in _secrets(keys) if s in caplog.text]


def test_a_buckets_settings_win_over_the_aws_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from remote_stores import free_port

    cache = MediaCache(tmp_path / "media", max_bytes=1 << 30)
    with two_readers(monkeypatch, tmp_path, *SMALL) as keys:
        # The environment points elsewhere (nothing listens there) with other keys.
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", keys["beta"][0])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", keys["beta"][1])
        got = remote.fetch("s3://alpha/a.bin", cache=cache)
    assert got.path.read_bytes() == b"alpha bytes"


def test_a_bucket_read_with_a_named_aws_profile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = MediaCache(tmp_path / "media", max_bytes=1 << 30)
    with two_readers(monkeypatch, tmp_path, *SMALL) as keys:
        endpoint = get_settings().remote.buckets["s3://alpha"].endpoint_url
        credentials = tmp_path / "aws-credentials"
        credentials.write_text(
            f"[alpha-reader]\naws_access_key_id = {keys['alpha'][0]}\n"
            f"aws_secret_access_key = {keys['alpha'][1]}\n"
        )
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", keys["beta"][0])  # the profile wins over these
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", keys["beta"][1])
        (tmp_path / "no-config.toml").write_text(
            f'[remote.buckets."s3://alpha"]\nendpoint_url = "{endpoint}"\n'
            'region = "us-east-1"\nprofile = "alpha-reader"\n'
        )
        get_settings.cache_clear()
        got = remote.fetch("s3://alpha/a.bin", cache=cache)
    assert got.path.read_bytes() == b"alpha bytes"


def test_an_http_host_gets_its_bearer_token_and_no_other_host_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from remote_stores import http_store

    token = "bearer-token-value-0123"
    cache = MediaCache(tmp_path / "media", max_bytes=1 << 30)
    with http_store() as private, http_store() as other:
        private.token = token
        private.objects["v.mp4"] = b"private bytes"
        other.objects["w.mp4"] = b"other bytes"
        private.redirects["moved.mp4"] = other.url("w.mp4")
        (tmp_path / "no-config.toml").write_text(
            f'[remote.buckets."{private.base}"]\nbearer_token_env = "PRIVATE_TOKEN"\n'
        )
        get_settings.cache_clear()
        with pytest.raises(OmnilabError) as unset:
            remote.fetch(private.url("v.mp4"), cache=cache)
        monkeypatch.setenv("PRIVATE_TOKEN", token)
        got = remote.fetch(private.url("v.mp4"), cache=cache)
        moved = remote.fetch(private.url("moved.mp4"), cache=cache)  # to another origin
        (tmp_path / "no-config.toml").write_text("")
        get_settings.cache_clear()
        with pytest.raises(MediaError) as without:
            remote.fetch(private.url("v2.mp4"), cache=cache)
    assert str(unset.value).startswith(f"{private.base}: environment variable PRIVATE_TOKEN")
    assert got.path.read_bytes() == b"private bytes"
    assert moved.path.read_bytes() == b"other bytes"
    assert f"Bearer {token}" in private.authorizations
    assert set(other.authorizations) == {""}  # the redirect's target got no token
    assert without.value.code is MediaErrorCode.DENIED
    assert token not in str(unset.value) + str(without.value)
    assert not _found_under(tmp_path, [token])

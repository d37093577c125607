"""``s3://`` objects are read with botocore's own client, not s3fs (issue 46's cold overhead:
importing s3fs and aiohttp cost a cold fetch ~0.2 s more than the AWS client's whole run).

What that must keep: a fetch in a fresh process imports none of s3fs, aiohttp, fsspec or
aiobotocore; a bucket's settings (``[remote.buckets]``) reach the client as they reached s3fs
(endpoint, region, the keys from the variables they name, a profile that wins over the
environment's keys, unsigned requests for an anonymous bucket); one client per settings and
credential environment per process, made once however many tasks ask at the same time;
botocore's errors are classified as s3fs's were (an unreachable endpoint retried, then one
line; a throttled request's status)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from remote_stores import free_port, s3_store

from omnilab._remote_sections import BucketSettings
from omnilab.errors import OmnilabError
from omnilab.media import _remote_fs, _remote_s3, remote
from omnilab.media.cache import MediaCache
from omnilab.media.errors import MediaError, MediaErrorCode

botocore = pytest.importorskip("botocore")

_FRESH_FETCH = """
import sys, tempfile
from pathlib import Path
from omnilab.media.cache import MediaCache
from omnilab.media.remote import fetch
got = fetch(sys.argv[1], cache=MediaCache(Path(tempfile.mkdtemp()) / "m", max_bytes=1 << 30))
print(got.path.read_bytes().decode())
print(" ".join(m for m in ("s3fs", "aiohttp", "fsspec", "aiobotocore") if m in sys.modules))
"""


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "_BACKOFF_S", 0.0)


@pytest.fixture
def buckets() -> Iterator[None]:
    """Bucket settings installed by the test (as a run's worker is given its driver's) are
    dropped afterwards."""
    try:
        yield
    finally:
        _remote_fs.use_buckets(None)


def _credentials(client: Any) -> tuple[str, str, str | None]:
    creds = client._request_signer._credentials.get_frozen_credentials()
    return creds.access_key, creds.secret_key, creds.token


def test_a_cold_s3_fetch_in_a_fresh_process_imports_no_s3fs_aiohttp_or_fsspec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with s3_store(monkeypatch) as s3:
        s3.create_bucket(Bucket="media")
        s3.put_object(Bucket="media", Key="a.txt", Body=b"fetched bytes")
        proc = subprocess.run(
            [sys.executable, "-c", _FRESH_FETCH, "s3://media/a.txt"],
            capture_output=True,
            text=True,
            check=False,
            env=os.environ.copy(),
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["fetched bytes", ""]


@pytest.mark.usefixtures("buckets")
def test_a_buckets_settings_reach_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "environment-key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "environment-secret")
    monkeypatch.setenv("LAB_KEY_ID", "lab-key-id")
    monkeypatch.setenv("LAB_SECRET", "lab-secret")
    monkeypatch.setenv("LAB_TOKEN", "lab-session-token")
    lab_settings = BucketSettings(
        endpoint_url="http://127.0.0.1:9000",
        region="eu-west-1",
        key_id_env="LAB_KEY_ID",
        secret_env="LAB_SECRET",
        session_token_env="LAB_TOKEN",
    )
    _remote_fs.use_buckets(
        {"s3://lab": lab_settings, "s3://lab/public": BucketSettings(anonymous=True)}
    )
    lab = _remote_s3.s3_client("s3://lab/videos/v.mp4")
    assert lab.meta.endpoint_url == "http://127.0.0.1:9000"
    assert lab.meta.region_name == "eu-west-1"
    assert _credentials(lab) == ("lab-key-id", "lab-secret", "lab-session-token")
    public = _remote_s3.s3_client("s3://lab/public/v.mp4")
    assert public is not lab
    assert public.meta.config.signature_version is botocore.UNSIGNED
    # A bucket without settings: the standard chain (here the environment's keys).
    other = _remote_s3.s3_client("s3://elsewhere/v.mp4")
    assert _credentials(other) == ("environment-key-id", "environment-secret", None)


@pytest.mark.usefixtures("buckets")
def test_a_buckets_profile_wins_over_the_environments_keys(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    credentials = tmp_path / "credentials"
    credentials.write_text(
        "[reader]\naws_access_key_id = profile-key-id\naws_secret_access_key = profile-secret\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "environment-key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "environment-secret")
    _remote_fs.use_buckets({"s3://lab": BucketSettings(profile="reader", region="us-east-1")})
    client = _remote_s3.s3_client("s3://lab/v.mp4")
    assert _credentials(client) == ("profile-key-id", "profile-secret", None)


def test_one_client_per_settings_and_environment_made_once_for_concurrent_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key-one")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-one")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setattr(_remote_s3, "_CLIENTS", {})
    made: list[Any] = []
    real = _remote_s3._make

    def slow_make(found: Any) -> Any:
        time.sleep(0.05)  # a window for a second thread to make its own
        client = real(found)
        made.append(client)
        return client

    monkeypatch.setattr(_remote_s3, "_make", slow_make)
    got: list[Any] = []
    threads = [
        threading.Thread(target=lambda i=i: got.append(_remote_s3.s3_client(f"s3://b{i}/x")))
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and all(c is made[0] for c in got)
    # Other keys in the environment: another client, with them.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key-two")
    again = _remote_s3.s3_client("s3://b0/x")
    assert again is not made[0] and _credentials(again)[0] == "key-two"


def test_an_unreachable_s3_endpoint_is_retried_then_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-value")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", sleeps.append)  # fetch's backoff and botocore's
    cache = MediaCache(tmp_path / "media", max_bytes=1 << 30)
    with pytest.raises(MediaError) as err:
        remote.fetch("s3://media/v.mp4?X-Amz-Signature=SECRET", cache=cache)
    assert err.value.code is MediaErrorCode.UNREACHABLE
    assert str(err.value) == (
        "s3://media/v.mp4: unreachable after 5 tries (EndpointConnectionError)"
    )
    assert len(sleeps) >= 4  # fetch's own backoff between its tries


def test_botocore_errors_are_classified_as_s3fs_errors_were() -> None:
    from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

    slow_down = ClientError(
        {"Error": {"Code": "SlowDown"}, "ResponseMetadata": {"HTTPStatusCode": 503}}, "GetObject"
    )
    assert _remote_fs.status_of(slow_down) == 503
    assert _remote_fs.transient(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"))
    assert _remote_fs.transient(ReadTimeoutError(endpoint_url="http://127.0.0.1:1"))
    assert not _remote_fs.transient(slow_down)


def test_without_botocore_an_s3_url_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import builtins

    real_import = builtins.__import__

    def no_botocore(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("botocore"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_remote_s3, "_CLIENTS", {})
    monkeypatch.setattr(builtins, "__import__", no_botocore)
    with pytest.raises(OmnilabError) as err:
        remote.fetch("s3://media/a.mp4", cache=MediaCache(tmp_path / "m", max_bytes=1 << 20))
    assert str(err.value) == "reading s3:// URLs needs botocore: pip install 'omnilab[s3]'"

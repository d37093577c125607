"""``s3://`` objects, read with botocore's own synchronous S3 client (not s3fs).

Why not through fsspec's s3fs, as the other stores are (measured for issue 46, in fresh
processes): importing s3fs and making its client cost 0.47-0.49 s wall (aiohttp ~0.1 s of it,
building SSL contexts at import; aiobotocore's session; s3fs's client ~0.12 s), against
0.25-0.30 s for botocore's session and S3 client, which is most of a cold fetch of 50 small
videos; and each of s3fs's requests went through fsspec's event-loop thread. botocore is what
s3fs's aiobotocore runs on: the same credential chain (environment, profile, SSO, instance
roles), the same ``AWS_ENDPOINT_URL``/``AWS_ENDPOINT_URL_S3`` handling, the same errors
(``ClientError`` with the HTTP status, ``EndpointConnectionError``, ``NoCredentialsError``).

One client per bucket settings (``[remote.buckets]``) and credential environment serves the
process (botocore's clients are thread-safe; making one is not, so it is made under a lock).
A bucket's settings map to the client as they did to s3fs: ``endpoint_url``, ``region``,
``profile`` (which then wins over the AWS environment's keys), ``anonymous`` (unsigned
requests), and the keys from the environment variables the settings name, read here and
handed to the client only.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import TYPE_CHECKING, Any

from omnilab.errors import OmnilabError
from omnilab.media._remote_fs import (
    bucket_env,
    bucket_settings,
    missing_package,
    settings_ident,
)
from omnilab.media._remote_get import described, first_range, range_into

if TYPE_CHECKING:
    from omnilab._remote_sections import BucketSettings

__all__ = ["S3Object", "client_options", "s3_client"]

# Connections kept per client: concurrent tasks (8 in the benchmark) times a large object's
# parallel ranges (4); botocore's default, 10, dropped the rest after each request.
_POOL = 32
# botocore's "standard" retries (3 attempts, jittered backoff) for throttling and 5xx; fetch's
# own retries (omnilab.media.remote._call) come on top, as they did over s3fs's.
_RETRIES = {"mode": "standard", "total_max_attempts": 3}

_LOCK = threading.Lock()
_CLIENTS: dict[tuple[int, str, str], Any] = {}


class S3Object:
    """One ``s3://bucket/key`` object: its look-up and its reads (see :mod:`._remote_get`)."""

    ranged = True
    """One GET gives the object's version with its bytes, and ranges stream into a file."""

    def __init__(self, url: str) -> None:
        self._found = bucket_settings(url)
        if self._found is not None:  # an unset variable is one line now, not a retried call
            key, settings = self._found
            for name in settings.credentials():
                bucket_env(key, name)
        self._ident = settings_ident(self._found)
        # s3fs's split_path: s3://bucket/key (a trailing slash dropped, ?versionId= not read)
        rest = url.partition("://")[2].strip("/")
        self.bucket, _, key_part = rest.partition("/")
        self.key = key_part.partition("?versionId=")[0]

    def client(self) -> Any:
        """The process's botocore client for this object's bucket settings (made on first
        use, inside the caller's retries: a credential chain's error is classified there)."""
        ident = (os.getpid(), *self._ident)  # a forked child makes its own: no shared sockets
        with _LOCK:
            made = _CLIENTS.get(ident)
            if made is None:
                made = _make(self._found)
                _CLIENTS[ident] = made
        return made

    def info(self) -> dict[str, Any]:
        return described(self.client().head_object(Bucket=self.bucket, Key=self.key))

    def read(self, start: int | None = None, end: int | None = None) -> bytes:
        given = {} if start is None or end is None else {"Range": f"bytes={start}-{end - 1}"}
        resp = self.client().get_object(Bucket=self.bucket, Key=self.key, **given)
        with contextlib.closing(resp["Body"]) as body:
            return bytes(body.read())

    def first_range(self, end: int) -> tuple[dict[str, Any], bytes] | None:
        return first_range(self.client(), self.bucket, self.key, end)

    def range_into(self, start: int, end: int, fd: int) -> int:
        return range_into(self.client(), self.bucket, self.key, start, end, fd)


def s3_client(url: str) -> Any:
    """The botocore S3 client that reads ``url`` in this process."""
    return S3Object(url).client()


def client_options(found: tuple[str, BucketSettings] | None) -> tuple[str | None, dict[str, Any]]:
    """The AWS profile and the client's arguments (``endpoint_url``, ``region_name``, the keys,
    ``unsigned``) for a bucket's settings; the keys read from the variables they name."""
    if found is None:
        return None, {}
    key, b = found
    options: dict[str, Any] = {}
    if b.endpoint_url:
        options["endpoint_url"] = b.endpoint_url
    if b.region:
        options["region_name"] = b.region
    if b.anonymous:
        options["unsigned"] = True
    if b.key_id_env and b.secret_env:
        options["aws_access_key_id"] = bucket_env(key, b.key_id_env)
        options["aws_secret_access_key"] = bucket_env(key, b.secret_env)
    if b.session_token_env:
        options["aws_session_token"] = bucket_env(key, b.session_token_env)
    return b.profile, options


def _make(found: tuple[str, BucketSettings] | None) -> Any:
    try:
        from botocore import UNSIGNED
        from botocore.config import Config
        from botocore.session import Session
    except ImportError:
        raise OmnilabError(missing_package("s3", "botocore")) from None
    profile, options = client_options(found)
    config: dict[str, Any] = {"max_pool_connections": _POOL, "retries": _RETRIES}
    if options.pop("unsigned", False):
        config["signature_version"] = UNSIGNED
    # A session's own profile: the environment's keys are then not read (as s3fs did).
    session = Session(profile=profile)
    return session.create_client("s3", config=Config(**config), **options)

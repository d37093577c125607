"""Object stores on 127.0.0.1 for the remote-input tests: moto's S3 server (the real S3 wire
protocol) and a small HTTP server with byte ranges, ETags, and switches for failures."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib import request as urllib_request

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class HttpStore:
    """Objects by path; every GET is logged as (path, start, end)."""

    base: str
    objects: dict[str, bytes] = field(default_factory=dict)
    gets: list[tuple[str, int, int]] = field(default_factory=list)
    fail_from: int | None = None
    """When set, GETs of ranges starting at or past this byte answer 500."""
    denied: set[str] = field(default_factory=set)
    token: str | None = None
    """When set, a request without ``Authorization: Bearer <token>`` answers 401."""
    authorizations: list[str] = field(default_factory=list)
    """The ``Authorization`` header of every request ("" when none came)."""
    redirects: dict[str, str] = field(default_factory=dict)
    """Paths answered with a 302 to this URL."""

    def url(self, path: str, query: str = "") -> str:
        return f"{self.base}/{path}" + (f"?{query}" if query else "")


_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


def _handler(store: HttpStore) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _object(self) -> tuple[str, bytes] | None:
            path = self.path.split("?", 1)[0].lstrip("/")
            given = self.headers.get("Authorization", "")
            store.authorizations.append(given)
            if path in store.redirects:
                self.send_response(302)
                self.send_header("Location", store.redirects[path])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if store.token is not None and given != f"Bearer {store.token}":
                self.send_error(401)
                return None
            if path in store.denied:
                self.send_error(403)
                return None
            data = store.objects.get(path)
            if data is None:
                self.send_error(404)
                return None
            return path, data

        def _headers(self, data: bytes) -> None:
            self.send_header("ETag", f'"{hashlib.md5(data).hexdigest()}"')
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Type", "application/octet-stream")

        def do_HEAD(self) -> None:
            found = self._object()
            if found is None:
                return
            self.send_response(200)
            self._headers(found[1])
            self.send_header("Content-Length", str(len(found[1])))
            self.end_headers()

        def do_GET(self) -> None:
            found = self._object()
            if found is None:
                return
            path, data = found
            start, end = 0, len(data)
            m = _RANGE.fullmatch(self.headers.get("Range", ""))
            if m:
                start = int(m.group(1))
                end = min(len(data), int(m.group(2)) + 1 if m.group(2) else len(data))
            if store.fail_from is not None and start >= store.fail_from:
                self.send_error(500)
                return
            store.gets.append((path, start, end))
            body = data[start:end]
            self.send_response(206 if m else 200)
            self._headers(data)
            if m:
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextmanager
def http_store() -> Iterator[HttpStore]:
    port = free_port()
    store = HttpStore(f"http://127.0.0.1:{port}")
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(store))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield store
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def s3_store(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto's S3 server on loopback; yields a boto3 client for it (the AWS env points at it)."""
    boto3 = pytest.importorskip("boto3")
    server_mod = pytest.importorskip("moto.server")
    pytest.importorskip("botocore")  # what reads s3:// (omnilab.media._remote_s3)
    port = free_port()
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for key, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing-key-id",
        "AWS_SECRET_ACCESS_KEY": "testing-secret-value-0123",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    try:
        yield boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    finally:
        server.stop()


def iam_user(endpoint: str, policy: dict[str, Any]) -> tuple[str, str]:
    """A new IAM user of moto's server whose only rights are ``policy``: its key id and secret
    (made before auth is switched on: :func:`enforced_auth`)."""
    boto3 = pytest.importorskip("boto3")
    iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1")
    # moto's state outlives one server in this process: a user of this test's own.
    user = f"reader-{uuid.uuid4().hex[:12]}"
    iam.create_user(UserName=user)
    iam.put_user_policy(UserName=user, PolicyName="reader", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=user)["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


def read_policy(*buckets: str) -> dict[str, Any]:
    """Reading (get, list) ``buckets`` and nothing else."""
    resources = [f"arn:aws:s3:::{b}{tail}" for b in buckets for tail in ("", "/*")]
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": resources}
        ],
    }


@contextmanager
def enforced_auth(endpoint: str) -> Iterator[None]:
    """moto's server at ``endpoint`` enforcing IAM while the block runs.

    Auth is switched on through moto's ``/moto-api/reset-auth`` (no unauthenticated request
    left) and off again afterwards (the server runs in this process: its setting is global)."""

    def reset(count: str) -> None:
        request = urllib_request.Request(
            f"{endpoint}/moto-api/reset-auth",
            data=count.encode(),
            method="POST",
            headers={"Content-Type": "text/plain"},  # a form body would be parsed away
        )
        with urllib_request.urlopen(request, timeout=10) as response:
            assert response.status == 200

    reset("0")
    try:
        yield
    finally:
        reset("inf")


@contextmanager
def s3_auth(monkeypatch: pytest.MonkeyPatch, policy: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """moto's server (from :func:`s3_store`) enforcing IAM from now on, the AWS environment
    pointing at a new user whose only rights are ``policy``; yields its key id and secret."""
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    key_id, secret = iam_user(endpoint, policy)
    with enforced_auth(endpoint):
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", key_id)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
        yield key_id, secret

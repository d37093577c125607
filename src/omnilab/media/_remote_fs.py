"""The store side of :mod:`omnilab.media.remote`: one fsspec filesystem per scheme and
credential environment, and what a store's exception says (its HTTP status, whether it is worth
another try). No message here holds a URL's query or user info."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from omnilab._urls import REMOTE_SCHEMES, public_url
from omnilab.errors import OmnilabError

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = ["filesystem", "status_of", "transient"]

_EXTRA = {"s3fs": "s3", "gcsfs": "gcs", "adlfs": "azure", "aiohttp": "http"}


def filesystem(url: str) -> tuple[AbstractFileSystem, str]:
    scheme = url.partition("://")[0].lower()
    package = REMOTE_SCHEMES.get(scheme)
    if package is None:
        raise OmnilabError(f"not a URL omnilab reads: {public_url(url)}")
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise OmnilabError(_missing(scheme, package)) from None
    # Making a store's client costs most of a small fetch (S3: ~0.6 s of service models), so
    # one filesystem per scheme serves the process, made anew when the credential environment
    # changes (fsspec's own instance cache would not notice that). The object's listing cache
    # is dropped before each look-up, so a changed object is seen.
    ident = (scheme, _credential_fingerprint())
    with _FS_LOCK:
        fs = _FILESYSTEMS.get(ident)
    if fs is None:
        try:
            fs, path = url_to_fs(url, skip_instance_cache=True)
        except ImportError:
            raise OmnilabError(_missing(scheme, package)) from None
        with _FS_LOCK:
            _FILESYSTEMS[ident] = fs
    else:
        path = fs._strip_protocol(url)  # what url_to_fs gives (HTTP keeps the whole URL)
    with contextlib.suppress(Exception):
        fs.invalidate_cache(str(path))
    return fs, str(path)


def _missing(scheme: str, package: str) -> str:
    return f"reading {scheme}:// URLs needs {package}: pip install 'omnilab[{_EXTRA[package]}]'"


_FILESYSTEMS: dict[tuple[str, str], AbstractFileSystem] = {}
_FS_LOCK = threading.Lock()
_CREDENTIAL_PREFIXES = (
    "AWS_",
    "GOOGLE_",
    "GCE_",
    "CLOUDSDK_",
    "AZURE_",
    "HTTP_PROXY",
    "HTTPS_PROXY",
)


def _credential_fingerprint() -> str:
    """A hash of the environment that selects endpoints and credentials (never the values)."""
    h = hashlib.sha256()
    for key in sorted(os.environ):
        if key.upper().startswith(_CREDENTIAL_PREFIXES):
            h.update(f"{key}\0{os.environ[key]}\0".encode())
    return h.hexdigest()


def transient(exc: BaseException) -> bool:
    """A connection refused, reset or timed out anywhere in the chain (worth another try)."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return False
        name = type(seen).__name__
        if (
            isinstance(seen, (ConnectionError, TimeoutError))
            or "Connect" in name
            or "Timeout" in name
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def status_of(exc: BaseException) -> int | None:
    """The HTTP status behind ``exc`` or the errors it was raised from, if any says one."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return None
        for attr in ("status", "status_code"):
            value = getattr(seen, attr, None)
            if isinstance(value, int) and 100 <= value < 600:
                return value
        response = getattr(seen, "response", None)
        if isinstance(response, Mapping):  # botocore's ClientError
            meta = response.get("ResponseMetadata", {})
            value = meta.get("HTTPStatusCode") if isinstance(meta, Mapping) else None
            if isinstance(value, int):
                return value
        seen = seen.__cause__ or seen.__context__
    return None

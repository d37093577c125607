"""The store side of :mod:`omnilab.media.remote`: bucket settings (``[remote.buckets]``) and
the credential environment, which every store's client is made from; one fsspec filesystem per
scheme, bucket settings and credential environment (``https://``, ``gs://``, ``az://``;
``s3://`` is read with botocore's own client, :mod:`._remote_s3`); and what a store's exception
says (its HTTP status, whether it is worth another try). No message here holds a URL's query or
user info, nor any credential: a bucket's settings name environment variables, whose values go
to the store's client and nowhere else."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from omnilab._config_files import config_layers
from omnilab._urls import REMOTE_SCHEMES, public_url, store_of
from omnilab.errors import OmnilabError

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from omnilab._remote_sections import BucketSettings

__all__ = [
    "bucket_env",
    "bucket_settings",
    "credential_fingerprint",
    "filesystem",
    "missing_package",
    "settings_ident",
    "status_of",
    "transient",
    "use_buckets",
]

_EXTRA = {"botocore": "s3", "gcsfs": "gcs", "adlfs": "azure", "aiohttp": "http"}


def use_buckets(buckets: Mapping[str, BucketSettings] | None) -> None:
    """Read buckets with ``buckets`` in this process instead of ``remote.buckets`` of its own
    settings (a run's worker gets its driver's); ``None`` goes back to the settings."""
    global _INSTALLED
    with _FS_LOCK:
        _INSTALLED = dict(buckets) if buckets is not None else None


def bucket_settings(url: str) -> tuple[str, BucketSettings] | None:
    """The key and settings of the longest ``remote.buckets`` key that holds ``url`` (the same
    store, bucket, and path prefix), if any."""
    scheme, _, rest = url.partition("://")
    store = store_of(scheme)
    if store is None:
        return None
    buckets = _buckets()
    if store in ("http", "https"):
        rest = public_url(url).partition("://")[2]  # host lower case, no user info or query
    rest = rest.split("?", 1)[0].split("#", 1)[0]
    best: tuple[str, BucketSettings] | None = None
    for key, settings in buckets.items():
        key_scheme, _, key_rest = key.partition("://")
        if store_of(key_scheme) != store:
            continue
        holds = rest == key_rest or rest.startswith(key_rest + "/")
        if holds and (best is None or len(key_rest) > len(best[0].partition("://")[2])):
            best = (key, settings)
    return best


def _buckets() -> Mapping[str, BucketSettings]:
    if _INSTALLED is not None:
        return _INSTALLED
    if "omnilab.config" not in sys.modules and not _remote_configured():
        return {}  # a process that only fetches skips the settings' ~0.1 s (issue 46)
    from omnilab.config import get_settings  # loaded only where remote.* may be set

    return get_settings().remote.buckets


def _remote_configured() -> bool:
    """Whether a config file or an ``OMNILAB_REMOTE*`` variable may set ``remote.*``."""
    if any(name.upper().startswith("OMNILAB_REMOTE") for name in os.environ):
        return True
    try:
        layers = config_layers()
    except OmnilabError:
        return True  # the settings say what is wrong
    return any(str(k).lower() == "remote" for layer in layers for k in layer.data)


def filesystem(url: str) -> tuple[AbstractFileSystem, str]:
    """The fsspec filesystem that reads ``url`` (not ``s3://``: :mod:`._remote_s3`) and the
    path of the object in it."""
    scheme = url.partition("://")[0].lower()
    package = REMOTE_SCHEMES.get(scheme)
    if package is None:
        raise OmnilabError(f"not a URL omnilab reads: {public_url(url)}")
    if store_of(scheme) == "s3":
        raise ValueError("s3:// objects are read with botocore's client (omnilab.media._remote_s3)")
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise OmnilabError(missing_package(scheme, package)) from None
    found = bucket_settings(url)
    # Making a store's client costs most of a small fetch, so one filesystem per scheme and
    # bucket settings serves the process, made anew when the credential environment changes
    # (fsspec's own instance cache would not notice that). The object's listing cache is
    # dropped before each look-up, so a changed object is seen.
    ident = (scheme, *settings_ident(found))
    # Made under the lock: concurrent tasks' first fetches would otherwise each make a client.
    with _FS_LOCK:
        fs = _FILESYSTEMS.get(ident)
        if fs is None:
            options = _options(found) if found is not None else {}
            try:
                fs, path = url_to_fs(url, skip_instance_cache=True, **options)
            except ImportError:
                raise OmnilabError(missing_package(scheme, package)) from None
            _FILESYSTEMS[ident] = fs
        else:
            path = fs._strip_protocol(url)  # what url_to_fs gives (HTTP keeps the whole URL)
    with contextlib.suppress(Exception):
        fs.invalidate_cache(str(path))
    return fs, str(path)


def settings_ident(found: tuple[str, BucketSettings] | None) -> tuple[str, str]:
    """What a store's client is kept under: the bucket's key and settings, and a hash of the
    credential environment (so a changed key or endpoint in the environment makes a new one)."""
    names = found[1].credentials() if found is not None else []
    settings = found[0] + "\0" + found[1].model_dump_json() if found is not None else ""
    return settings, credential_fingerprint(names)


def _options(found: tuple[str, BucketSettings]) -> dict[str, Any]:
    """The store client's arguments for a bucket's settings (gcsfs, adlfs, HTTP)."""
    key, b = found
    store = store_of(key.partition("://")[0])
    env = {name: bucket_env(key, name) for name in b.credentials()}
    options: dict[str, Any] = {}
    if store == "gs":
        if b.endpoint_url:
            options["endpoint_url"] = b.endpoint_url
        if b.anonymous:
            options["token"] = "anon"  # noqa: S105 (gcsfs's word for no credentials)
        elif b.token_file is not None:
            options["token"] = str(b.token_file.expanduser())
    elif store == "az":
        if b.account_name:
            options["account_name"] = b.account_name
        if b.account_key_env:
            options["account_key"] = env[b.account_key_env]
        if b.anonymous:
            options["anon"] = True
    elif b.bearer_token_env:  # http, https: aiohttp drops it on a redirect to another origin
        headers = {"Authorization": f"Bearer {env[b.bearer_token_env]}"}
        options["client_kwargs"] = {"headers": headers}
    return options


def bucket_env(key: str, name: str) -> str:
    """The value of ``name``, a variable bucket ``key``'s settings name; one line when unset."""
    value = os.environ.get(name)
    if not value:
        raise OmnilabError(
            f"{key}: environment variable {name} is not set (remote.buckets names it for this "
            "bucket's key)"
        )
    return value


def missing_package(scheme: str, package: str) -> str:
    return f"reading {scheme}:// URLs needs {package}: pip install 'omnilab[{_EXTRA[package]}]'"


_FILESYSTEMS: dict[tuple[str, ...], AbstractFileSystem] = {}
_FS_LOCK = threading.Lock()
_INSTALLED: dict[str, BucketSettings] | None = None
_CREDENTIAL_PREFIXES = (
    "AWS_",
    "GOOGLE_",
    "GCE_",
    "CLOUDSDK_",
    "AZURE_",
    "HTTP_PROXY",
    "HTTPS_PROXY",
)


def credential_fingerprint(names: list[str]) -> str:
    """A hash of the environment that selects endpoints and credentials, with the variables
    ``names`` (a bucket's keys): never the values themselves."""
    h = hashlib.sha256()
    for key in sorted(os.environ):
        if key.upper().startswith(_CREDENTIAL_PREFIXES) or key in names:
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

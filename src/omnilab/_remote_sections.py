"""The ``[remote]`` settings section: how each object-store bucket is reached (endpoint, region,
profile, anonymous access, and credentials by the name of the environment variable holding
them). Import it from :mod:`omnilab.config`.

No secret value is ever held here: a bucket names the variables its keys are in, so that the
file can be shown, copied to the workers of a run and checked into a repository. A value that
looks like a key where a name belongs is refused, and no error line here repeats a value.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from omnilab._urls import store_of

__all__ = ["BucketSettings", "RemoteSettings", "bucket_key", "looks_secret"]

# The fields each store takes (besides anonymous).
_FIELDS = {
    "s3": {"endpoint_url", "region", "profile", "key_id_env", "secret_env", "session_token_env"},
    "gs": {"endpoint_url", "token_file"},
    "az": {"account_name", "account_key_env"},
    "http": {"bearer_token_env"},
    "https": {"bearer_token_env"},
}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_KEY_ID = re.compile(r"(AKIA|ASIA|AIDA|AROA)[A-Z0-9]{12,}")


def bucket_key(key: str) -> str:
    """``key`` in its canonical form (``s3://bucket`` or ``s3://bucket/prefix``, the scheme as
    written, lower case, no trailing slash); :class:`ValueError` naming what is wrong."""
    scheme, sep, rest = key.partition("://")
    if not sep or store_of(scheme) is None:
        raise ValueError(
            "a bucket is named scheme://bucket with scheme s3, gs or az, or https://host "
            '(e.g. "s3://my-bucket")'
        )
    if "?" in rest or "#" in rest or "@" in rest.partition("/")[0]:
        raise ValueError("a bucket key has no query, fragment or user info")
    bucket, _, prefix = rest.strip("/").partition("/")
    if not bucket:
        raise ValueError("a bucket key names its bucket (scheme://bucket)")
    if scheme.lower() in ("http", "https"):
        bucket = bucket.lower()  # a host (and port), as public_url writes it
    return f"{scheme.lower()}://{bucket}" + (f"/{prefix.strip('/')}" if prefix else "")


def looks_secret(text: str) -> bool:
    """Whether ``text`` looks like a key or token itself (an AWS key id, a long random-looking
    string, a PEM block) rather than a name."""
    if _KEY_ID.search(text) or "-----BEGIN" in text:
        return True
    classes = sum(any(test(c) for c in text) for test in (str.islower, str.isupper, str.isdigit))
    return len(text) >= 24 and classes == 3 and not text.startswith(("http://", "https://"))


class BucketSettings(BaseModel):
    """How one bucket is reached; unset fields fall back to the store's standard chain."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoint_url: str | None = None
    """S3/GCS: the store's endpoint (an S3-compatible server, ``http://minio:9000``)."""

    region: str | None = None
    """S3: the bucket's region."""

    profile: str | None = None
    """S3: the AWS profile (``~/.aws/credentials``) whose keys read the bucket."""

    anonymous: bool = False
    """Read without credentials (a public bucket)."""

    key_id_env: str | None = None
    """S3: the environment variable holding the access key id."""

    secret_env: str | None = None
    """S3: the environment variable holding the secret access key."""

    session_token_env: str | None = None
    """S3: the environment variable holding a session token (temporary credentials)."""

    token_file: Path | None = None
    """GCS: a service-account JSON file."""

    account_name: str | None = None
    """Azure: the storage account."""

    account_key_env: str | None = None
    """Azure: the environment variable holding the account key."""

    bearer_token_env: str | None = None
    """HTTP(S): the environment variable holding a token sent as ``Authorization: Bearer``
    to this host (and path prefix) only."""

    @field_validator(
        "key_id_env", "secret_env", "session_token_env", "account_key_env", "bearer_token_env"
    )
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if looks_secret(value):
            raise ValueError(
                "this looks like a key itself: name the environment variable that holds it"
            )
        if not _ENV_NAME.fullmatch(value):
            raise ValueError("not an environment variable name")
        return value

    @field_validator("region", "profile", "account_name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if looks_secret(value):
            raise ValueError(
                "this looks like a secret: a bucket's keys go in environment variables named "
                "by key_id_env, secret_env, session_token_env or account_key_env"
            )
        if not re.fullmatch(r"[\w.+@-]{1,128}", value):
            raise ValueError("not a name (letters, digits and . _ + @ - only)")
        return value

    @field_validator("endpoint_url")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if "@" in value or _KEY_ID.search(value):
            raise ValueError(
                "an endpoint carries no user info (keys go in the environment variables named "
                "by the *_env fields)"
            )
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("an endpoint is an http:// or https:// URL")
        if parts.query or parts.fragment:
            raise ValueError("an endpoint carries no query or fragment")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _consistent(self) -> BucketSettings:
        keys = (self.key_id_env, self.secret_env)
        if (keys[0] is None) != (keys[1] is None):
            raise ValueError("key_id_env and secret_env go together")
        if self.session_token_env is not None and keys[0] is None:
            raise ValueError("session_token_env needs key_id_env and secret_env")
        if self.anonymous and (self.credentials() or self.profile or self.token_file):
            raise ValueError("anonymous reads take no credentials")
        if self.account_key_env is not None and self.account_name is None:
            raise ValueError("account_key_env needs account_name")
        if keys[0] is not None and self.profile is not None:
            raise ValueError("give a profile or key_id_env and secret_env, not both")
        return self

    def credentials(self) -> list[str]:
        """The environment variables this bucket's keys are read from."""
        names = (self.key_id_env, self.secret_env, self.session_token_env, self.account_key_env)
        return [n for n in (*names, self.bearer_token_env) if n is not None]


class RemoteSettings(BaseModel):
    """Object stores that inputs at URLs are read from (``docs/evaluation.md``)."""

    buckets: dict[str, BucketSettings] = Field(default_factory=dict)
    """Settings by bucket, ``[remote.buckets."s3://my-bucket"]`` (or ``"s3://bucket/prefix"``;
    the longest key that holds a URL wins): ``endpoint_url``, ``region``, ``profile``,
    ``anonymous``, and keys only by the name of the environment variable holding them
    (S3: ``key_id_env``, ``secret_env``, ``session_token_env``; GCS: ``token_file``, a
    service-account JSON file; Azure: ``account_name`` with ``account_key_env``), or by host,
``[remote.buckets."https://host"]`` with ``bearer_token_env``. A bucket
    without a key uses the store's standard chain (AWS env/profile, Google ADC, Azure env).
    Only a trusted config may set it."""

    @field_validator("buckets", mode="before")
    @classmethod
    def _keys(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for key, settings in value.items():
            canonical = bucket_key(str(key))
            store = store_of(canonical.partition("://")[0])
            given = settings if isinstance(settings, dict) else {}
            wrong = sorted(
                name
                for name, v in given.items()
                if name in BucketSettings.model_fields
                and name != "anonymous"
                and v is not None
                and store is not None
                and name not in _FIELDS[store]
            )
            if wrong:
                raise ValueError(f"{canonical}: {', '.join(wrong)} is not a setting of {store}://")
            if canonical in out:
                raise ValueError(f"{canonical} is given twice")
            out[canonical] = settings
        return out

"""Which API key a model's requests carry: a key goes only where it belongs.

A provider's own key (its environment variable, or ``models.api_keys.PROVIDER``) is sent only to
that provider's own host (the scheme, host and port of its default base URL). Any other base URL
gets a key only when the user configured one for that URL: ``models.api_keys."URL"`` (the key
itself) or ``models.api_key_env."URL"`` (the environment variable holding it). A URL entry covers
base URLs with the same scheme, host and port whose path starts with the entry's path; the
longest such entry wins. So a typo'd or third-party URL in a model name, or one a client of
``omnilab serve`` chose, never receives the user's OpenAI key.
"""

from __future__ import annotations

import os
from typing import NamedTuple
from urllib.parse import urlsplit

from omnilab.config import ModelSettings
from omnilab.models.provider import Provider

__all__ = ["Origin", "api_key", "key_hint", "own_host", "url_origin"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


class Origin(NamedTuple):
    """The scheme, lower-case host and port of a URL: the unit a key is bound to."""

    scheme: str
    host: str
    port: int | None


def url_origin(url: str) -> Origin | None:
    """The origin of ``url``; ``None`` for something that is not an absolute URL."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    return Origin(scheme, parts.hostname.lower(), port or _DEFAULT_PORTS.get(scheme))


def _path(url: str) -> str:
    return urlsplit(url.strip()).path.rstrip("/") + "/"


def own_host(provider: Provider, base_url: str | None) -> bool:
    """Whether ``base_url`` (``None``: the provider's default) is the provider's own host."""
    if base_url is None:
        return True
    if provider.base_url is None:
        return False
    own = url_origin(provider.base_url)
    return own is not None and url_origin(base_url) == own


def _url_entry(base_url: str, settings: ModelSettings) -> str | None:
    """The key configured for ``base_url`` itself (longest matching URL entry), if any."""
    origin, path = url_origin(base_url), _path(base_url)
    best: tuple[int, int, str] | None = None
    # Environment-variable entries rank before literal keys of equal length (env wins, as for
    # providers' keys).
    candidates: list[tuple[str, int, str | None]] = [
        (url, 1, os.environ.get(var) or None) for url, var in settings.api_key_env.items()
    ]
    candidates += [(url, 0, s.get_secret_value() or None) for url, s in settings.api_keys.items()]
    for url, rank, value in candidates:
        if value is None or "://" not in url or url_origin(url) != origin:
            continue
        if not path.startswith(_path(url)):
            continue
        score = (len(_path(url)), rank, value)
        if best is None or score[:2] > best[:2]:
            best = score
    return best[2] if best else None


def api_key(provider: Provider, base_url: str | None, settings: ModelSettings) -> str | None:
    """The key requests to ``base_url`` (``None``: the provider's default) may carry."""
    if base_url is not None:
        configured = _url_entry(base_url, settings)
        if configured is not None:
            return configured
    if not own_host(provider, base_url):
        return None
    for var in provider.key_env:
        value = os.environ.get(var)
        if value:
            return value
    secret = settings.api_keys.get(provider.name)
    return secret.get_secret_value() if secret is not None else None


def key_hint(provider: Provider, base_url: str | None) -> str:
    """Where a key for this provider at ``base_url`` is read from, for one-line errors."""
    if not own_host(provider, base_url) and base_url is not None:
        url = base_url.rstrip("/")
        return (
            f'models.api_keys."{url}" = "KEY", or models.api_key_env."{url}" = "VARIABLE" in '
            f"omnilab.toml (the provider's own key goes only to its own host)"
        )
    if not provider.key_env:
        return ""
    return f"{' or '.join(provider.key_env)}, or models.api_keys.{provider.name} in omnilab.toml"

"""What the remote search providers share: API keys from the environment, one JSON request with
a total deadline, and errors a model can act on (never carrying the key)."""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any, ClassVar

from pydantic import SecretStr

from omnilab.config import get_settings
from omnilab.tools.web.errors import WebError, WebErrorCode
from omnilab.tools.web.types import SearchHit

__all__ = ["RemoteProvider", "redact", "strip_tags"]

_TAG = re.compile(r"<[^>]+>")
_BODY_EXCERPT = 200


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``***``."""
    return text.replace(secret, "***") if secret else text


def strip_tags(text: str) -> str:
    """Snippets of some APIs carry ``<strong>`` highlights; the model reads plain text."""
    import html

    return html.unescape(_TAG.sub("", text)).strip()


class RemoteProvider:
    """Base of the HTTP providers: base URL and timeout from settings, key looked up per call.

    The key is read when a search runs, not when the provider is made, so a tool list can be built
    without keys and only the call that needs one fails (``MISSING_KEY`` naming the variable).
    """

    name: ClassVar[str]
    key_env: ClassVar[str | None] = None
    url_setting: ClassVar[str]
    """Attribute of :class:`~omnilab.config.WebSettings` holding the default base URL."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        timeout_s: float | None = None,
    ) -> None:
        web = get_settings().web
        self.base_url = str(base_url or getattr(web, self.url_setting) or "").rstrip("/")
        self._api_key = SecretStr(api_key) if isinstance(api_key, str) else api_key
        self.timeout_s = timeout_s if timeout_s is not None else web.timeout_s

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    def hits(
        self,
        results: list[dict[str, Any]],
        top_k: int,
        *,
        url: str = "url",
        snippet: str = "content",
        dates: tuple[str, ...] = (),
        html: bool = False,
    ) -> list[SearchHit]:
        """Map an API's result records to hits: the keys differ by provider, the rules do not.

        Records without a URL are skipped; ``dates`` are tried in order; ``html`` strips the
        markup some APIs put in titles and snippets.
        """

        def text(value: object) -> str:
            raw = str(value or "")
            return strip_tags(raw) if html else raw

        return [
            SearchHit(
                title=text(r.get("title")),
                url_or_id=str(r.get(url) or ""),
                snippet=text(r.get(snippet)),
                score=float(r["score"]) if isinstance(r.get("score"), int | float) else None,
                provider=self.name,
                date=next((str(r[d]) for d in dates if r.get(d)), None),
            )
            for r in results[:top_k]
            if r.get(url)
        ]

    @property
    def cache_id(self) -> str:
        """Identity of the result source for the search cache (never includes the key)."""
        return f"{self.name}@{self.base_url}"

    def api_key(self) -> str:
        """The key given at construction, else ``$key_env``; ``MISSING_KEY`` if neither is set."""
        if self._api_key is not None and self._api_key.get_secret_value():
            return self._api_key.get_secret_value()
        assert self.key_env is not None, f"{self.name} has no key variable"
        value = os.environ.get(self.key_env, "").strip()
        if not value:
            raise WebError(
                WebErrorCode.MISSING_KEY,
                f"{self.name} search needs an API key: set the environment variable "
                f"{self.key_env}, or use the offline provider with OMNILAB_WEB__SEARCH_PROVIDER=local",
            )
        return value

    async def request_json(
        self,
        method: str,
        path: str,
        *,
        headers: dict[str, str] | None = None,
        params: dict[str, str | int] | None = None,
        json_body: dict[str, Any] | None = None,
        secret: str | None = None,
    ) -> Any:
        """Send one request to ``base_url + path`` and decode its JSON body.

        Every failure is a :class:`WebError` (``TIMEOUT``, ``HTTP_ERROR`` with the status,
        ``NETWORK_ERROR``, ``BAD_RESPONSE``); ``secret`` is scrubbed from every message.
        """
        import httpx2  # imported here: nothing heavy at import time

        url = self.base_url + path
        try:
            async with asyncio.timeout(self.timeout_s):
                async with httpx2.AsyncClient(timeout=self.timeout_s) as client:
                    response = await client.request(
                        method, url, headers=headers, params=params, json=json_body
                    )
        except (TimeoutError, httpx2.TimeoutException):
            raise WebError(
                WebErrorCode.TIMEOUT,
                f"{self.name} search got no answer within {self.timeout_s:g} s; try again later",
            ) from None
        except (httpx2.HTTPError, httpx2.InvalidURL) as e:
            raise WebError(
                WebErrorCode.NETWORK_ERROR,
                redact(f"{self.name} search cannot reach {self.base_url}: {e}", secret),
            ) from None
        if response.status_code >= 400:
            raise WebError(
                WebErrorCode.HTTP_ERROR,
                redact(self._status_message(response.status_code, response.text), secret),
            )
        try:
            return response.json()
        except ValueError:
            raise WebError(
                WebErrorCode.BAD_RESPONSE,
                f"{self.name} search answered with something that is not JSON "
                f"(content-type {response.headers.get('content-type', 'unknown')})",
            ) from None

    def _status_message(self, status: int, body: str) -> str:
        if status in (401, 403) and self.key_env:
            hint = f"; check the key in {self.key_env}"
        elif status == 429:
            hint = "; rate limited or out of credits, wait before searching again"
        else:
            hint = ""
        excerpt = " ".join(body.split())[:_BODY_EXCERPT]
        detail = f" ({excerpt})" if excerpt else ""
        return f"{self.name} search failed with HTTP {status}{hint}{detail}"

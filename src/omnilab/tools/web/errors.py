"""The one error type of web search and browsing.

A model reads these through a tool result, so each message says what failed and what to do next
(set an environment variable, try another URL, ask for a later page), in one line.
"""

from __future__ import annotations

from enum import StrEnum

from omnilab.errors import OmnilabError

__all__ = ["WebError", "WebErrorCode"]


class WebErrorCode(StrEnum):
    """Stable codes: agents, tools and tests match on these, never on message text."""

    MISSING_KEY = "MISSING_KEY"
    """A search provider needs an API key that is not set (the message names the variable)."""
    MISSING_CONFIG = "MISSING_CONFIG"
    """A provider needs a setting that is not set, e.g. the SearXNG base URL."""
    UNKNOWN_PROVIDER = "UNKNOWN_PROVIDER"
    INVALID_ARGS = "INVALID_ARGS"
    INVALID_URL = "INVALID_URL"
    """Not a URL page_browser may open: another scheme (file://, ftp://), or no host."""
    REFUSED = "REFUSED"
    """A loopback, private or link-local address while those are not allowed."""
    TIMEOUT = "TIMEOUT"
    TOO_LARGE = "TOO_LARGE"
    TOO_MANY_REDIRECTS = "TOO_MANY_REDIRECTS"
    UNSUPPORTED_TYPE = "UNSUPPORTED_TYPE"
    """A response that is not HTML or text (an image, a PDF, an archive)."""
    NO_TEXT = "NO_TEXT"
    """An HTML page with no readable text (often one that needs JavaScript)."""
    HTTP_ERROR = "HTTP_ERROR"
    NETWORK_ERROR = "NETWORK_ERROR"
    BAD_RESPONSE = "BAD_RESPONSE"
    """A search API answered with something that is not the JSON it documents."""
    NOT_FOUND = "NOT_FOUND"
    """A ``corpus://`` document id that the local index does not hold."""
    NO_INDEX = "NO_INDEX"
    """A folder that holds no usable search index (missing, or built by another version)."""
    BAD_CORPUS = "BAD_CORPUS"
    """A corpus the index builder cannot read (bad JSONL line, duplicate id, no documents)."""


class WebError(OmnilabError):
    """A web request that cannot be served, with a stable ``code`` and a one-line message.

    The ``@tool`` wrapper turns it into ``ToolResult.fail(code, message)``; the CLI prints it as
    one line. Messages never contain API keys.
    """

    def __init__(self, code: WebErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"WebError({self.code.value}, {self.message!r})"

"""Errors of the model layer.

Adapters raise :class:`ProviderError` with a :class:`ErrorKind`; the :class:`~omnilab.models.Model`
wrapper retries the transient kinds and turns the last failure into a :class:`ModelError` whose
one-line message names the model and says what to do. Secrets never appear in messages:
:func:`redact` scrubs them before an error leaves the layer.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from omnilab.errors import OmnilabError

__all__ = [
    "ErrorKind",
    "ModelConfigError",
    "ModelError",
    "ProviderError",
    "kind_for_status",
    "redact",
]


class ErrorKind(StrEnum):
    """Why a call failed; stable values for events, tests and agents."""

    RATE_LIMIT = "rate_limit"
    SERVER = "server"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    BAD_REQUEST = "bad_request"
    UNSUPPORTED_MEDIA = "unsupported_media"
    AUTH = "auth"
    NOT_FOUND = "not_found"
    BAD_RESPONSE = "bad_response"
    MEDIA = "media"
    EXHAUSTED = "exhausted"
    CONTEXT_LENGTH = "context_length"
    """The prompt (plus the tokens asked for) does not fit the model's context window."""
    CRASH = "crash"
    """The embedded runtime's process died (SIGILL, SIGSEGV, killed for memory)."""

    @property
    def retryable(self) -> bool:
        """Whether trying again later may succeed."""
        return self in _RETRYABLE


_RETRYABLE = frozenset(
    {ErrorKind.RATE_LIMIT, ErrorKind.SERVER, ErrorKind.TIMEOUT, ErrorKind.CONNECTION}
)

_ADVICE = {
    ErrorKind.RATE_LIMIT: "wait, lower models.concurrency, or raise models.max_attempts",
    ErrorKind.SERVER: "the server failed; check its logs or try again later",
    ErrorKind.TIMEOUT: "raise models.timeout_s, ask for fewer tokens, or check the server load",
    ErrorKind.CONNECTION: "is the server running? check the URL after '@' in the model name",
    ErrorKind.BAD_REQUEST: "the server rejected the request; check the model name and settings",
    ErrorKind.UNSUPPORTED_MEDIA: (
        "send only media the model accepts, or correct its flags in models.capabilities"
    ),
    ErrorKind.AUTH: "check the API key (see `omnilab models` for the variable it is read from)",
    ErrorKind.NOT_FOUND: "check the model name and the base URL (it usually ends in /v1)",
    ErrorKind.BAD_RESPONSE: (
        "the endpoint did not answer like an OpenAI-compatible chat server; check the URL"
    ),
    ErrorKind.MEDIA: "check the file and the time range or crop box of the media part",
    ErrorKind.EXHAUSTED: "the scripted model has no outputs left; add outputs to its script",
    ErrorKind.CONTEXT_LENGTH: (
        "shorten the conversation, ask for fewer tokens, or serve the model with a longer context"
    ),
    ErrorKind.CRASH: "reinstall the embedded runtime (see `omnilab doctor`)",
}


def kind_for_status(status: int) -> ErrorKind:
    """The error kind of an HTTP status code."""
    if status == 429:
        return ErrorKind.RATE_LIMIT
    if status == 408:
        return ErrorKind.TIMEOUT
    if status >= 500:
        return ErrorKind.SERVER
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 404:
        return ErrorKind.NOT_FOUND
    return ErrorKind.BAD_REQUEST


class ProviderError(Exception):
    """A failed attempt, raised by adapters; the wrapper decides whether to retry."""

    def __init__(
        self,
        kind: ErrorKind,
        detail: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        advice: str | None = None,
        sent: bool = True,
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.status = status
        self.retry_after = retry_after
        self.advice = advice
        """What to do, when the adapter knows better than the advice of ``kind``."""
        self.sent = sent
        """``False`` when the adapter refused the request before sending it (media the
        model's flags say it does not take): the input was wrong, not the model."""

    def __str__(self) -> str:
        status = f"HTTP {self.status}: " if self.status is not None else ""
        return f"{status}{self.detail}"


class ModelError(OmnilabError):
    """A model call failed for good (after retries); the message is one actionable line."""

    model_failure = True

    def __init__(
        self,
        model: str,
        detail: str,
        *,
        kind: ErrorKind | None = None,
        status: int | None = None,
        attempts: int = 1,
        advice: str | None = None,
        sent: bool = True,
    ) -> None:
        self.model = model
        if not sent:  # refused before sending (media the model does not take): the input, exit 1
            self.model_failure = False
        self.kind = kind
        self.status = status
        self.attempts = attempts
        tried = f" after {attempts} attempts" if attempts > 1 else ""
        todo = advice if advice is not None else (_ADVICE[kind] if kind is not None else "")
        line = f"model {model}: {_one_line(detail)}{tried}"
        super().__init__(f"{line}; {todo}" if todo else line)


class ModelConfigError(ModelError):
    """The model cannot be set up: bad name, unknown provider, missing key or extra."""

    model_failure = False  # what the user named or set up, not the model, is wrong

    def __init__(self, model: str, detail: str, *, advice: str = "") -> None:
        super().__init__(model, detail, advice=advice)


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (and its first 8+ characters, as servers echo prefixes) masked."""
    for secret in secrets:
        if len(secret) < 4:
            continue  # too short to be a real key; masking would mangle ordinary words
        text = text.replace(secret, "***")
        if len(secret) >= 12:
            text = text.replace(secret[:8], "***")
    return text

"""ASR through any OpenAI-compatible ``POST {base_url}/audio/transcriptions`` endpoint.

Works with OpenAI (``whisper-1``, ``gpt-4o-transcribe``), vLLM and whisper servers. Each piece
is sent as a 16 kHz PCM WAV; ``verbose_json`` is asked for (segment and word times) and plain
``json`` (text only: one segment spanning the piece) is used when the server refuses it. Uses the
standard library only, so the backend needs no extra package.
"""

from __future__ import annotations

import io
import json
import os
import urllib.error
import urllib.request
import uuid
import wave
from typing import Any

import numpy as np
from numpy.typing import NDArray

from omnilab.config import get_settings
from omnilab.models.keys import url_origin
from omnilab.perception.errors import BackendUnavailableError, PerceptionError
from omnilab.perception.types import Segment, Word

__all__ = ["OpenAITranscriber", "wav_bytes"]

_OPENAI = url_origin("https://api.openai.com/v1")


def wav_bytes(samples: NDArray[np.float32], sample_rate: int) -> bytes:
    """``samples`` as a mono 16-bit PCM WAV file in memory."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes((np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes())
    return buf.getvalue()


def _multipart(fields: list[tuple[str, str]], audio: bytes) -> tuple[bytes, str]:
    boundary = f"omnilab-{uuid.uuid4().hex}"
    parts: list[bytes] = []
    for name, value in fields:
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="audio.wav"\r\n'
        "Content-Type: audio/wav\r\n\r\n".encode()
        + audio
        + b"\r\n"
    )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


class OpenAITranscriber:
    """Client of an OpenAI-compatible transcription endpoint (settings ``perception.openai_*``)."""

    def __init__(self) -> None:
        s = get_settings().perception
        self.url = s.openai_base_url.rstrip("/") + "/audio/transcriptions"
        self.model = s.openai_model
        self.timeout = s.openai_timeout
        key = s.openai_api_key.get_secret_value() if s.openai_api_key else None
        openai_itself = url_origin(self.url) == _OPENAI
        # $OPENAI_API_KEY goes only to OpenAI itself; another endpoint gets the key configured
        # with it (perception.openai_api_key), else none (docs/models.md).
        env_key = os.environ.get("OPENAI_API_KEY") if openai_itself else None
        self._key = key or env_key or None
        if self._key is None and openai_itself:
            raise BackendUnavailableError(
                "ASR backend 'openai' needs an API key: set OPENAI_API_KEY (or "
                "perception.openai_api_key), or point perception.openai_base_url at your own server"
            )

    def transcribe(
        self, samples: NDArray[np.float32], *, sample_rate: int, language: str | None
    ) -> list[Segment]:
        """Send one piece; returns its segments (with words when the server gives them)."""
        audio = wav_bytes(samples, sample_rate)
        fields = [("model", self.model)]
        if language:
            fields.append(("language", language))
        verbose = [
            ("response_format", "verbose_json"),
            ("timestamp_granularities[]", "segment"),
            ("timestamp_granularities[]", "word"),
        ]
        try:
            reply = self._post(fields + verbose, audio)
        except _RejectedError:
            # Some servers (and gpt-4o-transcribe) only answer plain json: text without times.
            reply = self._post([*fields, ("response_format", "json")], audio)
        return _parse(reply, samples.size / sample_rate)

    def _post(self, fields: list[tuple[str, str]], audio: bytes) -> dict[str, Any]:
        body, content_type = _multipart(fields, audio)
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")  # noqa: S310 (URL comes from settings)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                data: dict[str, Any] = json.loads(response.read())
                return data
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode("utf-8", "replace").replace("\n", " ")
            if e.code in (400, 422) and "response_format" in str(fields):
                raise _RejectedError from e
            if e.code in (401, 403) and self._key is None:
                raise PerceptionError(
                    f"transcription endpoint {self.url} needs an API key (HTTP {e.code}); set "
                    "perception.openai_api_key (OPENAI_API_KEY goes only to api.openai.com)"
                ) from e
            if e.code in (401, 403):
                raise PerceptionError(
                    f"transcription endpoint {self.url} rejected the API key (HTTP {e.code}); "
                    "check OPENAI_API_KEY or perception.openai_api_key"
                ) from e
            raise PerceptionError(
                f"transcription endpoint {self.url} failed with HTTP {e.code}: {detail}"
            ) from e
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise PerceptionError(
                f"transcription endpoint {self.url} is unreachable ({reason}); "
                "check perception.openai_base_url"
            ) from e
        except json.JSONDecodeError as e:
            raise PerceptionError(f"transcription endpoint {self.url} did not answer JSON") from e


class _RejectedError(Exception):
    """The server refused ``verbose_json``; retry with plain ``json``."""


def _parse(reply: dict[str, Any], length: float) -> list[Segment]:
    words = [
        Word(text=str(w["word"]).strip(), start=float(w["start"]), end=float(w["end"]))
        for w in reply.get("words") or []
        if str(w.get("word", "")).strip()
    ]
    raw = reply.get("segments") or []
    if not raw:
        text = str(reply.get("text", "")).strip()
        return [Segment(start=0.0, end=length, text=text, words=words)] if text else []
    out: list[Segment] = []
    for s in raw:
        start, end = float(s["start"]), float(s["end"])
        inside = [w for w in words if start <= (w.start + w.end) / 2 <= end]
        logprob = s.get("avg_logprob")
        out.append(
            Segment(
                start=start,
                end=end,
                text=str(s.get("text", "")).strip(),
                confidence=float(np.exp(logprob)) if logprob is not None else None,
                words=inside,
            )
        )
    return out

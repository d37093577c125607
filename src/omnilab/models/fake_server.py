"""A fake OpenAI-compatible chat server on 127.0.0.1, for tests and benchmarks.

It records every request and answers with queued replies (text, tool calls, reasoning, usage),
HTTP errors with ``Retry-After``, non-JSON bodies or delays; with nothing queued it answers
``default`` (a short text). Standard library only, one thread per connection.

    with FakeOpenAIServer() as server:
        server.push(reply_error(429, retry_after=0.1), reply_text("hi"))
        model = get_model(f"vllm:test@{server.base_url}")
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeOpenAIServer",
    "FakeReply",
    "RecordedRequest",
    "reply_error",
    "reply_raw",
    "reply_text",
    "reply_tool_calls",
    "token_logprobs",
]


@dataclass(frozen=True)
class FakeReply:
    """One queued answer: status, headers and a body (a dict is sent as JSON)."""

    status: int = 200
    body: dict[str, Any] | str = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """Seconds to wait before answering (on top of the server's ``latency_s``)."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names in lower case (HTTP names are case-insensitive; clients differ)."""
    body: Any
    """The JSON body, or the raw text if it was not JSON (``None`` when bodies are not kept)."""
    raw: bytes = b""
    """The body's bytes as received (empty when bodies are not kept)."""
    size: int = 0
    """Length of the body in bytes."""
    chunked: bool = False
    """Whether the body came in chunked transfer encoding rather than with a length."""


def _completion(
    message: dict[str, Any],
    finish: str,
    usage: dict[str, Any],
    logprobs: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
    if logprobs is not None:
        choice["logprobs"] = {"content": logprobs}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake",
        "choices": [choice],
        "usage": usage,
    }


def token_logprobs(
    *tokens: tuple[str, float], top: list[list[tuple[str, float]]] | None = None
) -> list[dict[str, Any]]:
    """``logprobs.content`` as OpenAI sends it: ``(token, logprob)`` per token and, if given,
    the alternatives of each token in ``top``."""
    alternatives = top or [[] for _ in tokens]
    return [
        {
            "token": token,
            "logprob": logprob,
            "bytes": list(token.encode()),
            "top_logprobs": [
                {"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alts
            ],
        }
        for (token, logprob), alts in zip(tokens, alternatives, strict=True)
    ]


def _usage(prompt: int, completion: int, reasoning: int, cached: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def reply_text(
    text: str | None,
    *,
    reasoning_content: str | None = None,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    reasoning_tokens: int = 0,
    cached_tokens: int = 0,
    finish_reason: str = "stop",
    delay_s: float = 0.0,
    logprobs: list[dict[str, Any]] | None = None,
) -> FakeReply:
    """A chat completion answering ``text`` (with optional ``reasoning_content`` and
    ``logprobs``, e.g. from :func:`token_logprobs`)."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    usage = _usage(prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
    body = _completion(message, finish_reason, usage, logprobs)
    return FakeReply(body=body, delay_s=delay_s)


def reply_tool_calls(
    *calls: tuple[str, dict[str, Any] | str],
    text: str | None = None,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
) -> FakeReply:
    """A chat completion with native tool calls ``(name, arguments)``; string arguments are sent
    as they are (to test malformed JSON)."""
    wire = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for i, (name, args) in enumerate(calls)
    ]
    message = {"role": "assistant", "content": text, "tool_calls": wire}
    usage = _usage(prompt_tokens, completion_tokens, 0, 0)
    return FakeReply(body=_completion(message, "tool_calls", usage))


def reply_error(
    status: int, message: str = "fake error", *, retry_after: float | None = None
) -> FakeReply:
    """An OpenAI-style error body with ``status`` (and a ``Retry-After`` header if given)."""
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    body = {"error": {"message": message, "type": "fake", "code": status}}
    return FakeReply(status=status, body=body, headers=headers)


def reply_raw(body: str, *, status: int = 200, content_type: str = "text/html") -> FakeReply:
    """A body sent verbatim (e.g. an HTML error page from a proxy)."""
    return FakeReply(status=status, body=body, headers={"Content-Type": content_type})


class FakeOpenAIServer:
    """An OpenAI-compatible ``/v1/chat/completions`` server in a background thread."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        default: FakeReply | None = None,
        keep_bodies: bool = True,
    ) -> None:
        self.latency_s = latency_s
        self.keep_bodies = keep_bodies
        """Keep each request's body; off (benchmarks with large media bodies), only sizes."""
        self.default = default or reply_text("ok")
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        """Chat requests being answered now."""
        self.peak_in_flight = 0
        """The most chat requests that were being answered at once."""
        self._queue: list[FakeReply] = []
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        if self._httpd is None:
            raise RuntimeError("the fake server is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The requests made to ``/v1/chat/completions``."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def body(self, index: int = -1) -> dict[str, Any]:
        """The JSON body of chat request ``index`` (default: the last one)."""
        body = self.chat_requests[index].body
        if not isinstance(body, dict):
            raise AssertionError(f"chat request {index} had no JSON object body: {body!r:.200}")
        return body

    def push(self, *replies: FakeReply) -> None:
        """Queue replies; each request takes the next one."""
        with self._lock:
            self._queue.extend(replies)

    def _next(self, request: RecordedRequest) -> FakeReply:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            return self._queue.pop(0) if self._queue else self.default

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def __enter__(self) -> FakeOpenAIServer:
        server = self
        handler = type("Handler", (_Handler,), {"server_ref": server})
        httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd = httpd
        # A short poll interval makes shutdown (each test's teardown) quick.
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.02,), name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # benchmarks open dozens of connections at once


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like a real server behind a client pool
    # Headers and body go out in separate writes; with Nagle's algorithm on, the body waits for
    # the client's delayed ACK (~40 ms) on a kept-alive connection.
    disable_nagle_algorithm = True
    server_ref: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines on stderr."""

    def do_POST(self) -> None:
        chunked = self.headers.get("Transfer-Encoding", "").lower() == "chunked"
        data, size = self._read_body(chunked, keep=self.server_ref.keep_bodies)
        body: Any = None
        if self.server_ref.keep_bodies:
            text = data.decode("utf-8", errors="replace")
            try:
                body = json.loads(text)
            except ValueError:
                body = text
        recorded = RecordedRequest(
            "POST",
            self.path,
            {k.lower(): v for k, v in self.headers.items()},
            body,
            raw=data,
            size=size,
            chunked=chunked,
        )
        reply = self.server_ref._next(recorded)
        try:
            wait = self.server_ref.latency_s + reply.delay_s
            if wait > 0:
                time.sleep(wait)
        finally:
            # Counted as answered before the reply goes out: the client may send its next
            # request as soon as it reads this one.
            self.server_ref._done()
        self._send(reply)

    def _read_body(self, chunked: bool, *, keep: bool) -> tuple[bytes, int]:
        """The request body (empty unless ``keep``) and its length, read a piece at a time."""
        got: list[bytes] = []
        size = 0

        def read(n: int) -> None:
            nonlocal size
            while n > 0:
                piece = self.rfile.read(min(n, 1 << 20))
                if not piece:
                    return
                n -= len(piece)
                size += len(piece)
                if keep:
                    got.append(piece)

        if not chunked:
            read(int(self.headers.get("Content-Length", "0")))
            return b"".join(got), size
        while True:
            line = self.rfile.readline().split(b";", 1)[0].strip()
            n = int(line or b"0", 16)
            if n == 0:
                self.rfile.readline()  # the empty line after the last chunk
                return b"".join(got), size
            read(n)
            self.rfile.readline()  # the chunk's closing CRLF

    def do_GET(self) -> None:
        recorded = RecordedRequest(
            "GET", self.path, {k.lower(): v for k, v in self.headers.items()}, None
        )
        with self.server_ref._lock:
            self.server_ref.requests.append(recorded)
        self._send(FakeReply(body={"object": "list", "data": [{"id": "fake", "object": "model"}]}))

    def _send(self, reply: FakeReply) -> None:
        if isinstance(reply.body, str):
            payload = reply.body.encode()
            content_type = "text/plain"
        else:
            payload = json.dumps(reply.body).encode()
            content_type = "application/json"
        headers = {"Content-Type": content_type, **reply.headers}
        try:
            self.send_response(reply.status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to answer

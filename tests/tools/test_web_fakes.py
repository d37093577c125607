"""A fake web server on 127.0.0.1 for the web tool tests (this module holds no tests).

Routes map a path to a :class:`Reply` or to a function of the :class:`Seen` request; every
request is recorded, so tests can check what was sent (headers, query, body) and count calls.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    """One request the server received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    """What to answer: status, headers, body; ``delay`` before answering, ``repeat`` the body."""

    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    repeat: int = 1
    content_length: bool = True

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Reply:
        return cls(status, json.dumps(data), {"Content-Type": "application/json"})

    @classmethod
    def html(cls, html: str, status: int = 200) -> Reply:
        return cls(status, html, {"Content-Type": "text/html; charset=utf-8"})


Route = Reply | Callable[[Seen], Reply]


class FakeWeb:
    """``with FakeWeb() as web: web.routes["/x"] = Reply(...); web.url + "/x"``."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.seen: list[Seen] = []
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # A short poll interval keeps shutdown (and so each test's teardown) fast.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> FakeWeb:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()  # wakes handlers that are still waiting out a delay
        self._server.shutdown()
        self._server.server_close()

    def requests_to(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                seen = Seen(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                )
                fake.seen.append(seen)
                route = fake.routes.get(parts.path, Reply(404, "not found"))
                reply = route(seen) if callable(route) else route
                if reply.delay and fake._stop.wait(reply.delay):
                    return
                body = reply.body.encode() if isinstance(reply.body, str) else reply.body
                try:
                    self.send_response(reply.status)
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    if reply.content_length:
                        self.send_header("Content-Length", str(len(body) * reply.repeat))
                    self.end_headers()
                    for _ in range(reply.repeat):
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading, as it should for huge pages

            do_GET = do_POST = _serve  # noqa: N815

        return Handler

"""The persistent interpreter's loop, run inside the sandbox (never in the harness).

The harness passes this file's text to ``python -I -c`` inside the sandbox. Requests arrive on
descriptor 3 and replies leave on descriptor 4, each a 4-byte big-endian length and a JSON
object; standard output and error stay the program's own, read by the harness directly.
Standard library only: this must not import omnilab.

Request: ``{"code": str, "cpu": float}``. Reply: ``{"value": str | None, "error": str | None,
"limit": "cpu limit" | "memory limit" | None}``.
"""

from __future__ import annotations

import ast
import builtins
import io
import json
import linecache
import os
import signal
import struct
import sys
import traceback
from pathlib import Path
from typing import Any

_REQUESTS, _REPLIES = 3, 4


class CpuLimitExceeded(BaseException):
    """Raised in the running code when its CPU time runs out (a BaseException, so that
    ``except Exception`` in model-written code does not swallow it)."""


def _read_exact(n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = os.read(_REQUESTS, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _receive() -> dict[str, Any] | None:
    header = _read_exact(4)
    if header is None:
        return None
    body = _read_exact(struct.unpack(">I", header)[0])
    return None if body is None else dict(json.loads(body))


def _reply(message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    data = struct.pack(">I", len(body)) + body
    while data:
        data = data[os.write(_REPLIES, data) :]


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


_in_cell = False


def _on_cpu_limit(signum: int, frame: object) -> None:
    # Outside a cell (between calls, while replying) the signal is ignored: the loop must live.
    if _in_cell:
        raise CpuLimitExceeded("CPU time limit of this call exceeded")


def _set_cpu_budget(seconds: float) -> None:
    """Arms (or, with 0, disarms) a timer on this process's CPU time (user + system): SIGPROF
    when it runs out. Finer than RLIMIT_CPU (whole seconds, counted over the process's life)."""
    signal.setitimer(signal.ITIMER_PROF, seconds)


def _run_cell(code: str, name: str, namespace: dict[str, Any]) -> Any:
    """Runs the block once; the value of a final expression statement is returned, not
    printed, and that expression is evaluated exactly once."""
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    tree = ast.parse(code, name, "exec")
    last = None
    final = tree.body[-1] if tree.body else None
    if isinstance(final, ast.Expr):
        tree.body.pop()
        last = ast.Expression(final.value)
    # This runs inside the sandbox's child process: the one place model code may be executed.
    exec(compile(tree, name, "exec"), namespace)  # noqa: S102
    if last is None:
        return None
    return eval(compile(last, name, "eval"), namespace)  # noqa: S307


def _format_error(exc: BaseException) -> str:
    tb = exc.__traceback__
    # Drop this driver's frames: the traceback starts in the model's own code.
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell-"):
        tb = tb.tb_next
    if isinstance(exc, SyntaxError):
        return "".join(traceback.format_exception_only(type(exc), exc))
    if isinstance(exc, CpuLimitExceeded):
        # The signal handler's own frame is noise: end where the model's code was running.
        frames = [f for f in traceback.extract_tb(tb) if f.name != _on_cpu_limit.__name__]
        stack = "".join(traceback.StackSummary.from_list(frames).format())
        only = "".join(traceback.format_exception_only(type(exc), exc))
        return f"Traceback (most recent call last):\n{stack}{only}"
    return "".join(traceback.format_exception(type(exc), exc, tb))


def main() -> None:
    """Serves requests until the harness closes the request pipe."""
    global _in_cell
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 32_000
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(line_buffering=True)
    # Like a script in the workspace: its own modules import; cwd is the workspace.
    sys.path.insert(0, str(Path.cwd()))
    sys.argv = [""]
    signal.signal(signal.SIGPROF, _on_cpu_limit)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    count = 0
    while True:
        request = _receive()
        if request is None:
            return
        count += 1
        value: str | None = None
        error: str | None = None
        hit: str | None = None
        _set_cpu_budget(float(request.get("cpu") or 60.0))
        try:
            _in_cell = True
            result = _run_cell(str(request["code"]), f"<cell-{count}>", namespace)
            if result is not None:
                namespace["_"] = result
                value = _shorten(repr(result), limit)
        except CpuLimitExceeded as exc:
            error, hit = _format_error(exc), "cpu limit"
        except MemoryError as exc:
            error, hit = _format_error(exc), "memory limit"
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the session goes on
            error = _format_error(exc)
        finally:
            _in_cell = False
            _set_cpu_budget(0)
            sys.stdout.flush()
            sys.stderr.flush()
        _reply({"value": value, "error": error and _shorten(error, limit), "limit": hit})


if __name__ == "__main__":
    main()

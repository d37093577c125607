"""The embedded runtime (llama.cpp) in a worker process, and what its death means.

llama.cpp runs in :mod:`~omnilab.models.providers.local_worker`, one process per loaded model
file and window, so that a build for another CPU (SIGILL), a native crash (SIGSEGV) or the
kernel's out-of-memory kill ends one call with a :class:`RuntimeCrashError` that names the cause and
the fix, instead of ending omnilab. A SIGILL is remembered for the installed library (its files'
identity), so later calls fail at once without starting a process that would die the same way.
:func:`probe` runs one token of generation in a fresh process: ``omnilab doctor`` and the demo
use it.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = [
    "LocalWorker",
    "RuntimeCrashError",
    "RuntimeProbe",
    "portable_cmake_args",
    "preflight",
    "probe",
    "reinstall_command",
    "runtime_library",
    "worker_for",
]

# On x86-64 the portable build targets AVX2/FMA/F16C (every x86-64 CPU since 2013-2015, every
# cloud VM); anything newer (AVX-512, AMX) is what a native build picks up and another CPU traps.
_X86_BASELINE = "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
_X86_OLD = "-DGGML_NATIVE=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF"
_GENERIC = "-DGGML_NATIVE=OFF"


def _cpu_flags() -> set[str]:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.partition(":")[2].split())
    return set()


def portable_cmake_args() -> str:
    """``CMAKE_ARGS`` for a llama.cpp build that runs on any CPU of this machine's kind: the
    AVX2/FMA/F16C baseline on x86-64 (plain x86-64 on a CPU without them), generic elsewhere."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return _GENERIC
    flags = _cpu_flags()
    return _X86_BASELINE if not flags or {"avx2", "fma", "f16c"} <= flags else _X86_OLD


def reinstall_command() -> str:
    """The command that replaces the installed llama-cpp-python with a portable build, past a
    wheel pip cached from an earlier (native) build."""
    return (
        f'CMAKE_ARGS="{portable_cmake_args()}" pip install --force-reinstall --no-deps '
        "--no-cache-dir llama-cpp-python"
    )


def runtime_library() -> Path | None:
    """The folder of llama-cpp-python's native libraries, found without loading them (the
    folder ``LLAMA_CPP_LIB_PATH`` names, when set: llama-cpp-python loads those instead)."""
    spec = importlib.util.find_spec("llama_cpp")
    override = os.environ.get("LLAMA_CPP_LIB_PATH")
    if spec is not None and override and Path(override).is_dir():
        return Path(override)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        lib = Path(folder) / "lib"
        if lib.is_dir():
            return lib
    return None


def _library_identity() -> tuple[tuple[str, int, int], ...]:
    lib = runtime_library()
    if lib is None:
        return ()
    files = sorted(p for p in lib.iterdir() if ".so" in p.name or p.suffix == ".dylib")
    return tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files)


_WORKER_SCRIPT = Path(__file__).with_name("local_worker.py")

# Library identities whose build died of SIGILL in this process: deterministic, so not retried.
_ILLEGAL: dict[tuple[tuple[str, int, int], ...], str] = {}


class RuntimeCrashError(Exception):
    """The worker process died: ``detail`` says how, ``advice`` what to do (one line each)."""

    def __init__(self, returncode: int | None, last_words: str = "") -> None:
        self.returncode = returncode
        self.detail, self.advice = _explain(returncode, last_words)
        super().__init__(f"{self.detail}; {self.advice}")


def _explain(code: int | None, last_words: str) -> tuple[str, str]:
    said = f" (its last words: {last_words})" if last_words else ""
    reinstall = f"reinstall it for any CPU: {reinstall_command()}"
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if name == "SIGILL":
            return (
                "the embedded runtime (llama.cpp) died of SIGILL, an illegal instruction: "
                "llama-cpp-python was compiled for another CPU (a native build)",
                reinstall,
            )
        if name == "SIGKILL":
            return (
                f"the embedded runtime (llama.cpp) was killed (SIGKILL), most likely out of "
                f"memory{said}",
                "free memory, lower models.local_n_ctx, or use a smaller model",
            )
        return (
            f"the embedded runtime (llama.cpp) crashed with {name}{said}",
            f"{reinstall}; if it persists, the model file may be damaged",
        )
    return (
        f"the embedded runtime (llama.cpp) exited unexpectedly (code {code}){said}",
        f"check the installation (pip install 'omnilab[local]'), or {reinstall}",
    )


def _last_line(stream: IO[bytes]) -> str:
    stream.seek(0, 2)
    size = stream.tell()
    stream.seek(max(0, size - 4096))
    lines = [ln.strip() for ln in stream.read().decode(errors="replace").splitlines()]
    last = next((ln for ln in reversed(lines) if ln), "")
    return last if len(last) <= 160 else last[:159] + "…"


class LocalWorker:
    """One worker process: started on the first call, started again after it died."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: IO[bytes] | None = None
        self._lock = threading.Lock()

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request and wait for its reply (blocking; one call at a time).

        Raises :class:`RuntimeCrashError` when the process dies before answering.
        """
        identity = _library_identity()
        if identity in _ILLEGAL:
            raise RuntimeCrashError(-signal.SIGILL)
        with self._lock:
            proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
            except (OSError, ValueError):  # the pipe closed under us: the process is gone
                line = ""
            if line:
                reply: dict[str, Any] = json.loads(line)
                return reply
            code = proc.wait()
            last = _last_line(self._stderr) if self._stderr is not None else ""
            self._discard()
        if code == -signal.SIGILL:
            _ILLEGAL[identity] = last
        raise RuntimeCrashError(code, last)

    def _start(self) -> subprocess.Popen[str]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._discard()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the process
        self._proc = subprocess.Popen(
            # Run as a script (-P: its folder not on sys.path): the worker needs only the
            # standard library and llama.cpp, not omnilab's imports (seconds on a busy CPU).
            [sys.executable, "-P", str(_WORKER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
            # Ctrl-C is the harness's to handle (workers are closed at exit); a worker also ends
            # by itself when its input closes, which happens when this process dies.
            start_new_session=True,
        )
        return self._proc

    def _discard(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError, ValueError):
                if proc.stdin is not None:
                    proc.stdin.close()
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def close(self) -> None:
        """End the process and free its resources."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
        with self._lock:
            self._discard()


_WORKERS: dict[tuple[Path, int, int | None], LocalWorker] = {}
_WORKERS_LOCK = threading.Lock()


def worker_for(path: Path, n_ctx: int, threads: int | None) -> LocalWorker:
    """The worker shared by every adapter of this model file and window in this process."""
    key = (path, n_ctx, threads)
    with _WORKERS_LOCK:
        if key not in _WORKERS:
            if not _WORKERS:
                atexit.register(_close_all)
            _WORKERS[key] = LocalWorker()
        return _WORKERS[key]


def _close_all() -> None:
    for worker in list(_WORKERS.values()):
        worker.close()


@dataclass(frozen=True)
class RuntimeProbe:
    """One token of generation tried in a fresh worker process."""

    ok: bool
    detail: str
    """What happened, one line (how the process died when it failed)."""
    advice: str
    """What to do when it failed (the reinstall command for a crash); empty when it worked."""
    seconds: float
    library: str | None
    """The folder of the native libraries that were tried."""


def probe(path: Path, *, n_ctx: int = 512, threads: int | None = None) -> RuntimeProbe:
    """Load ``path`` and generate one token in a worker process of its own."""
    began = time.monotonic()
    lib = runtime_library()
    worker = LocalWorker()
    request = {
        "load": {"path": str(path), "n_ctx": n_ctx, "threads": threads, "logits_all": False},
        "chat": [{"role": "user", "content": "Say hello"}],
        "schema": None,
        "params": {"max_tokens": 1, "temperature": 0.0},
    }
    ok, detail, advice = True, "one token generated", ""
    try:
        reply = worker.call(request)
        if "result" not in reply:
            ok, detail = False, f"llama.cpp refused to run it: {reply.get('message')}"
            advice = "check the model file; pip install --force-reinstall 'omnilab[local]'"
    except RuntimeCrashError as crash:
        ok, detail, advice = False, crash.detail, crash.advice
    finally:
        worker.close()
    return RuntimeProbe(ok, detail, advice, time.monotonic() - began, str(lib) if lib else None)


def preflight(name: str) -> RuntimeProbe | None:
    """Probe the ``local:`` model ``name`` before a run that would otherwise meet a broken
    runtime in its first step; raises :class:`~omnilab.models.errors.ModelError` (one line, kind
    ``crash``) when it cannot generate. ``None`` for other providers, or when the model or the
    runtime is not installed (making the model reports that)."""
    from omnilab.models.errors import ErrorKind, ModelError
    from omnilab.models.providers.local_files import resolve_gguf

    provider, _, model = name.partition(":")
    if provider != "local" or runtime_library() is None:
        return None
    path = resolve_gguf(model)
    if path is None:
        return None
    found = probe(path)
    if not found.ok:
        raise ModelError(name, found.detail, kind=ErrorKind.CRASH, advice=found.advice)
    return found

"""Trajectory files: versioned JSONL written one line per event, and read back.

The first line is a header (``format``, ``schema_version``, ``run_id``, ``created``); every
further line is one :data:`~omnilab.trajectory.events.Event` (model calls encoded as
:mod:`omnilab.trajectory.codec` says: each context's messages once, media by path and hash).
Files of schema 1 and 2 are read. Each line is handed to the operating
system before :meth:`TrajectoryWriter.emit` returns, so a run whose process is killed leaves every
event it emitted, at worst followed by one cut-off line, which :func:`read_trajectory` reports and
skips. A writer made with ``linger_s`` (the evaluation runner's) instead hands its lines over at
most ``linger_s`` seconds after they were emitted, and all of them on close: a killed process
loses at most that last stretch of the runs it had in flight. The file is synced to disk on
close (unless the caller syncs it later itself, as the evaluation runner does in the
background); ``durable=True`` syncs every line too, which only matters if the whole machine may
go down mid-run (it costs milliseconds per event on most disks).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal, Self

from pydantic import BaseModel, Field, ValidationError

from omnilab import _wsread
from omnilab._atomic import make_folders
from omnilab._ids import new_id
from omnilab.errors import OmnilabError
from omnilab.models.events import ModelCallEvent
from omnilab.models.types import Message, ToolCall, Usage
from omnilab.trajectory import linger
from omnilab.trajectory.codec import EventDecoder, EventEncoder
from omnilab.trajectory.contexts import CallContext, call_contexts, conversation, with_reasoning
from omnilab.trajectory.events import (
    SCHEMA_VERSION,
    AnswerEvent,
    Event,
    RunEnd,
    RunStart,
    RunStatus,
    ToolResultEvent,
)

__all__ = [
    "Trajectory",
    "TrajectoryError",
    "TrajectoryHeader",
    "TrajectoryWriter",
    "read_lines",
    "read_trajectory",
]

FORMAT: Literal["omnilab-trajectory"] = "omnilab-trajectory"
READABLE_VERSIONS = (1, 2)
_BUFFER = 1 << 16


class TrajectoryError(OmnilabError):
    """A file that is not a readable trajectory (one line saying why)."""


class TrajectoryHeader(BaseModel):
    """The first line of a trajectory file."""

    format: Literal["omnilab-trajectory"] = FORMAT
    schema_version: int = SCHEMA_VERSION
    run_id: str
    created: str
    """When the file was started, ISO 8601 in UTC."""


class TrajectoryWriter:
    """Appends events to a JSONL file, each written through to the OS before :meth:`emit` returns
    (or, with ``linger_s``, within that many seconds).

    Usable as a :class:`~omnilab.models.Model` sink (``sink=writer``) and as a context manager.
    An existing file at ``path`` is replaced: a trajectory belongs to one run. Media held inline
    in events are written to the folder ``<path without .jsonl>.media`` beside it.
    """

    def __init__(
        self,
        path: Path,
        *,
        run_id: str | None = None,
        durable: bool = False,
        opened: IO[str] | None = None,
        linger_s: float | None = None,
    ) -> None:
        """``opened``: ``path`` already opened for writing text (emptied) by the caller, who
        may have made it elsewhere (the evaluation runner opens it in a worker thread).
        ``linger_s``: buffer lines and hand them to the OS within that many seconds (from a
        background thread) and on :meth:`flush` and :meth:`close`, instead of one write per
        event; not with ``durable``."""
        if linger_s is not None and (durable or not linger_s > 0):
            raise ValueError("linger_s must be a positive number of seconds, without durable")
        self.path = Path(path)
        self.durable = durable
        self.linger_s = linger_s
        self._pending: list[str] = []
        self._scheduled = False
        self._error: OSError | None = None  # a failed background write, raised on next use
        self.run_id = run_id or new_id()
        self.header = TrajectoryHeader(
            run_id=self.run_id, created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        )
        self._encoder = EventEncoder(self.path.with_suffix(".media"))
        # A lingering writer makes its file on its first flush, off the caller's thread.
        self._file: IO[str] | None = (
            opened if opened is not None or linger_s is not None else self._open()
        )
        self._closed = False
        if linger_s is not None:
            linger.lingering(self.path, self)
        # Model sinks may be called from worker threads (tools run in threads): one line at a time.
        self._lock = threading.Lock()
        self._write(self.header.model_dump_json())

    def emit(self, event: Event) -> None:
        """Append ``event`` as one line (synced to disk as well when ``durable``)."""
        with self._lock:  # the encoder keeps each context's last messages: one event at a time
            line = self._encoder.encode(event)
        self._write(line)

    def __call__(self, event: Event) -> None:
        """:meth:`emit`, so the writer can be passed wherever an event sink is expected."""
        self.emit(event)

    def _open(self) -> IO[str]:
        # The buffer size given: no terminal check and no block-size lookup, two system calls
        # fewer per file (a run makes a thousand).
        # O_NOFOLLOW: a link planted at the name is refused, never written through.
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o644)
        except FileNotFoundError:  # the run's folder, made once (0700)
            make_folders(self.path.parent)
            fd = os.open(self.path, flags, 0o644)
        return open(fd, "w", buffering=_BUFFER, encoding="utf-8")  # noqa: PTH123 - a descriptor

    def _write(self, line: str) -> None:
        with self._lock:
            if self._closed:
                raise ValueError(f"trajectory writer for {self.path} is closed")
            if self._error is not None:
                raise self._error
            linger_s = self.linger_s
            if linger_s is not None:
                self._pending.append(line + "\n")
                if self._scheduled:
                    return
                self._scheduled = True
            else:
                # One write per line: a kill can cut the last line short but never interleave
                # two.
                assert self._file is not None
                self._file.write(line + "\n")
                self._file.flush()
                if self.durable:
                    os.fsync(self._file.fileno())
                return
        linger.schedule(self, linger_s)

    def flush(self) -> None:
        """Hand every buffered line to the operating system now (only a lingering writer
        buffers any); a no-op once closed."""
        with self._lock:
            self._scheduled = False
            self._flush_pending()

    def _flush_pending(self) -> None:
        # Called holding the lock. All buffered lines in one write: a kill can still cut only
        # the last line short.
        if not self._pending or self._closed:
            return
        data = "".join(self._pending)
        self._pending.clear()
        try:
            if self._file is None:
                self._file = self._open()
            self._file.write(data)
            self._file.flush()
        except OSError as e:
            self._error = e
            raise

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def close(self, *, sync: bool = True) -> None:
        """Sync the file to disk (unless ``sync`` is false: the caller syncs it later) and close
        it; what was emitted is with the operating system either way."""
        with self._lock:
            if self._closed:
                return
            try:
                self._flush_pending()
                if self._error is not None:
                    raise self._error
                if sync and self._file is not None:
                    os.fsync(self._file.fileno())
            finally:
                self._closed = True
                if self._file is not None:
                    self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Trajectory(BaseModel):
    """A run read back from its events, with views the viewer, metrics and export share."""

    header: TrajectoryHeader
    events: list[Event] = Field(default_factory=list)
    path: Path | None = None
    truncated: bool = False
    """True when the last line was cut off (the run was killed while writing it)."""
    warnings: list[str] = Field(default_factory=list)
    """What the reader skipped and why."""

    @property
    def run_start(self) -> RunStart | None:
        """The run's first event, when it was written."""
        return next((e for e in self.events if isinstance(e, RunStart)), None)

    @property
    def run_end(self) -> RunEnd | None:
        """The run's last event; ``None`` for a run that did not finish."""
        return next((e for e in reversed(self.events) if isinstance(e, RunEnd)), None)

    @property
    def final(self) -> AnswerEvent | None:
        """The last answer event."""
        return next((e for e in reversed(self.events) if isinstance(e, AnswerEvent)), None)

    @property
    def answer(self) -> str | None:
        """The extracted final answer, or ``None`` when the run gave none."""
        final = self.final
        return final.answer if final is not None else None

    @property
    def status(self) -> RunStatus | Literal["incomplete"]:
        """How the run ended; ``incomplete`` when it has no end event (killed or still running)."""
        end = self.run_end
        return end.status if end is not None else "incomplete"

    @property
    def model_calls(self) -> list[ModelCallEvent]:
        """Every model call, in order (side calls by perception tools included)."""
        return [e for e in self.events if isinstance(e, ModelCallEvent)]

    @property
    def usage(self) -> Usage:
        """Tokens of the run: the end event's totals, else the sum over the model calls seen."""
        end = self.run_end
        if end is not None:
            return end.usage
        total = Usage()
        for call in self.model_calls:
            total = total + call.usage
        return total

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls of the conversation's assistant messages, in order."""
        return [c for m in self.messages() if m.role == "assistant" for c in m.tool_calls]

    @property
    def tool_results(self) -> list[ToolResultEvent]:
        """Every tool result, in order."""
        return [e for e in self.events if isinstance(e, ToolResultEvent)]

    def contexts(self) -> list[CallContext]:
        """Every model call with exactly the messages and tools it was sent, in order (the
        reply, with its reasoning and logprobs, is ``.output``). Schema-1 files give the agent's
        turns only, rebuilt from the conversation (``exact=False``)."""
        return call_contexts(self.events)

    def conversation(
        self, context_id: str | None = None, *, reasoning: bool = False
    ) -> list[Message]:
        """The message list of one context at the end of the run (default: the agent's main
        one); ``reasoning=True`` puts each reply's reasoning back as ``<think>...</think>``."""
        found = conversation(self.events, context_id)
        return with_reasoning(found, self.events) if reasoning else found

    def messages(self, *, model: str | None = None, reasoning: bool = False) -> list[Message]:
        """The agent's conversation (for training export and viewers): its main context as it
        stood at the end; for schema-1 files the turns rebuilt from message counts, of one
        ``model`` name when given. ``reasoning=True`` keeps each reply's reasoning as a
        ``<think>`` block before its text.
        """
        found = conversation(self.events, model=model)
        return with_reasoning(found, self.events) if reasoning else found


def _header(path: Path, first: bytes) -> TrajectoryHeader:
    try:
        raw = json.loads(first)
    except ValueError:
        raw = None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise TrajectoryError(f"{path} is not an omnilab trajectory (its first line is no header)")
    version = raw.get("schema_version")
    if version not in READABLE_VERSIONS:
        hint = (
            "it was written by a newer omnilab: upgrade omnilab to read it"
            if isinstance(version, int) and version > SCHEMA_VERSION
            else "this version is not supported"
        )
        raise TrajectoryError(
            f"{path} has trajectory schema version {version!r}, this omnilab reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}; {hint}"
        )
    try:
        return TrajectoryHeader.model_validate(raw)
    except ValidationError as e:
        raise TrajectoryError(f"{path} has a malformed header ({e.errors()[0]['msg']})") from None


_MAX_TRAJECTORY_BYTES = 64 * 1024**3
"""A trajectory file larger than this is refused (it is read whole)."""


def read_lines(path: Path) -> tuple[TrajectoryHeader, list[bytes]]:
    """A trajectory file's header and its lines (the header's first; the newline that ends the
    last line dropped), read as :func:`read_trajectory` reads them; raises
    :class:`TrajectoryError` for a missing, empty or foreign file or an unsupported schema."""
    p = Path(path)
    linger.flush_before_reading(p)
    try:
        # A FIFO never blocks; under a folder marked untrusted (another user's run folder read
        # by omnilab report / view) no link is followed on the way.
        data = _wsread.read_bytes(p, max_bytes=_MAX_TRAJECTORY_BYTES)
    except OSError as e:
        raise TrajectoryError(f"cannot read trajectory {p}: {e.strerror or e}") from None
    lines = data.split(b"\n")
    if lines and not lines[-1].strip():
        lines.pop()  # the newline that ends the last complete line
    if not lines:
        raise TrajectoryError(f"{p} is empty: the run wrote nothing (not even its header)")
    return _header(p, lines[0]), lines


def read_trajectory(path: Path) -> Trajectory:
    """Read a trajectory file; a cut-off last line is skipped and reported in ``warnings``.

    Raises :class:`TrajectoryError` for a missing, empty or foreign file, an unsupported schema
    version, or a damaged line before the last.
    """
    p = Path(path)
    header, lines = read_lines(p)
    events: list[Event] = []
    warnings: list[str] = []
    truncated = False
    decoder = EventDecoder()
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            events.append(decoder.decode(line))
        except (ValidationError, ValueError) as e:
            if number == len(lines):
                truncated = True
                warnings.append(
                    f"line {number} is incomplete (the run stopped while writing it) and was skipped"
                )
                break
            raise TrajectoryError(f"{p} line {number} is not a valid event: {_first(e)}") from None
    return Trajectory(header=header, events=events, path=p, truncated=truncated, warnings=warnings)


def _first(err: ValidationError | ValueError) -> str:
    if not isinstance(err, ValidationError):
        return str(err)
    first: dict[str, Any] = dict(err.errors()[0])
    where = ".".join(str(x) for x in first["loc"]) or "line"
    return f"{where}: {first['msg']}"

"""What every dataset adapter shares: reading JSON / JSON Lines, skipping bad items with a
reason, resolving media paths and checking which media files are missing.

An adapter is a :class:`RecordAdapter` with a ``convert`` function that turns one record into a
:class:`~omnilab.bench.task.Task` or raises :class:`SkipItem`. Nothing here runs at import.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from omnilab import _wsread
from omnilab._datapath import DataPath, DataPathError
from omnilab.bench.errors import DatasetError
from omnilab.bench.task import AnswerSet, FileKind, Task, TaskFile, guess_kind

__all__ = [
    "DatasetLoad",
    "ItemContext",
    "RecordAdapter",
    "SkipItem",
    "SkippedItem",
    "answer_set",
    "as_text",
    "media_file",
    "read_records",
    "require_question",
    "solution_steps",
    "tool_names",
]

# Wrappers some releases put around the item list instead of a bare JSON array.
_LIST_KEYS = ("data", "items", "tasks", "questions", "samples", "examples")


class SkipItem(Exception):  # noqa: N818 - a signal to the loader, not an error to report
    """Raised by a converter: this record cannot become a task. ``reason`` is short and stable
    (it is counted), ``detail`` says what exactly was wrong."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


class SkippedItem(BaseModel):
    """A record that was not loaded, and why."""

    index: int
    """Position in the file: 0-based item index (JSON) or 1-based line number (JSON Lines)."""
    item_id: str | None = None
    reason: str
    detail: str = ""


class DatasetLoad(BaseModel):
    """The result of loading one dataset file: tasks, skipped records, missing media."""

    dataset: str
    path: Path
    media_root: Path
    data_url: str | None = None
    """The URL the dataset file was fetched from (without query), when it was at one."""
    media_url: str | None = None
    """The media root when it is a URL (relative media paths became URLs beneath it)."""
    tasks: list[Task] = Field(default_factory=list)
    skipped: list[SkippedItem] = Field(default_factory=list)
    missing_media: dict[str, list[TaskFile]] = Field(default_factory=dict)
    """Task id -> input files not found on disk. Such tasks are still loaded."""
    notes: list[str] = Field(default_factory=list)
    """Things changed while loading (e.g. a repeated id made unique)."""
    warnings: list[str] = Field(default_factory=list)
    """Signs that the file may not be in this adapter's format (fields most items lack)."""

    @property
    def skip_counts(self) -> dict[str, int]:
        """Skipped records counted by reason, most frequent first."""
        return dict(Counter(s.reason for s in self.skipped).most_common())


@dataclass(frozen=True)
class ItemContext:
    """What a converter knows besides the record itself."""

    dataset: str
    index: int
    media_root: Path
    allow_outside: bool = False
    """``--allow-outside-media-root``: the user vouches for the dataset's paths (absolute ones
    and ``..`` are taken as written, opened like the user's own files)."""


OUTSIDE_HINT = "pass --allow-outside-media-root if you trust this dataset's paths"


def as_text(value: object) -> str | None:
    """A scalar as text (numbers keep their JSON spelling); ``None`` for null, empty or containers."""
    if value is None or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip()
    return text or None


def require_question(record: dict[str, Any], *keys: str) -> str:
    """The question text under the first of ``keys`` present; :class:`SkipItem` if none."""
    for key in keys or ("question",):
        text = as_text(record.get(key))
        if text:
            return text
    raise SkipItem("no question", f"none of {', '.join(keys or ('question',))} holds text")


def answer_set(value: object, aliases: object = None) -> AnswerSet:
    """The answers from a scalar label or a list (first = label); :class:`SkipItem` if empty.

    A dict (an unusual structured answer) is kept as its JSON text rather than dropped.
    """
    items: list[object] = list(value) if isinstance(value, list | tuple) else [value]
    if isinstance(aliases, list | tuple):
        items.extend(aliases)
    elif aliases is not None:
        items.append(aliases)
    texts: list[str] = []
    for item in items:
        text = json.dumps(item, ensure_ascii=False) if isinstance(item, dict) else as_text(item)
        if text:
            texts.append(text)
    if not texts:
        raise SkipItem("no answer", "the answer is missing or empty")
    return AnswerSet(label=texts[0], aliases=tuple(dict.fromkeys(texts[1:])))


def media_file(
    ctx: ItemContext, given: str, *, kind: str | None = None, file_id: str | None = None
) -> TaskFile:
    """A task file: ``given`` beneath the media root; unknown kinds are guessed from the name.

    An absolute path or a ``..`` escape raises :class:`DatasetError` (one line naming the item)
    unless ``ctx.allow_outside``; the file is then opened beneath the root through no link.
    """
    known: tuple[FileKind, ...] = ("video", "audio", "image", "text", "document")
    lowered = (kind or "").strip().lower()
    resolved_kind: FileKind = next((k for k in known if k == lowered), guess_kind(given))
    file_id = file_id or Path(given).stem
    if ctx.allow_outside:
        path = Path(given).expanduser()
        if not path.is_absolute():
            path = ctx.media_root / path
        return TaskFile(id=file_id, kind=resolved_kind, path=path, given=given)
    try:
        data = DataPath.beneath(ctx.media_root, given, item=f"{ctx.dataset} item {ctx.index}")
    except DataPathError as e:
        raise DatasetError(f"{e}; {OUTSIDE_HINT}") from None
    return TaskFile(
        id=file_id, kind=resolved_kind, path=data.shown(), given=given, root=Path(data.root)
    )


def solution_steps(value: object) -> str | tuple[str, ...] | None:
    """An annotated solution as text: one string, or one string per step.

    Structured steps (``{"step": 1, "action": ..., "tool": ...}``) become their JSON text, so
    nothing the annotators wrote is dropped.
    """
    if isinstance(value, list):
        steps = (
            json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else as_text(v)
            for v in value
        )
        return tuple(s for s in steps if s) or None
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return as_text(value)


def tool_names(value: object) -> tuple[str, ...]:
    """Tool names normalised to ``snake_case``, order kept, repeats dropped; a string is one tool."""
    raw = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    names = []
    for item in raw:
        text = as_text(item)
        if text:
            names.append(re.sub(r"[\s\-]+", "_", text.strip().lower()))
    return tuple(dict.fromkeys(names))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def read_records(path: Path, *, dataset: str) -> list[tuple[int, object]]:
    """The items of a JSON file (an array, or an object wrapping one) or a JSON Lines file.

    Returns ``(index, item)`` pairs; raises :class:`DatasetError` with one line when the file is
    missing or is neither JSON nor JSON Lines.
    """
    hint = f"check --data (the {dataset} dataset file)"
    if not path.exists():
        raise DatasetError(f"dataset file {path} does not exist; {hint}")
    if path.is_dir():
        raise DatasetError(f"{path} is a folder; {hint}")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise DatasetError(f"{path} is not UTF-8 text; {hint}") from None
    except OSError as e:
        raise DatasetError(f"cannot read {path}: {e.strerror or e}") from None
    if not text.strip():
        raise DatasetError(f"{path} is empty; {hint}")
    try:
        whole: object = json.loads(text)
    except json.JSONDecodeError as e:
        if path.suffix.lower() == ".json" or text.lstrip().startswith("["):
            raise DatasetError(
                f"{path} is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}); {hint}"
            ) from None
        return list(_json_lines(path, text, hint))
    if isinstance(whole, list):
        return list(enumerate(whole))
    if isinstance(whole, dict):
        for key in _LIST_KEYS:
            if isinstance(whole.get(key), list):
                return list(enumerate(whole[key]))
        return [(0, whole)]
    raise DatasetError(f"{path} holds a JSON {type(whole).__name__}, not a list of items; {hint}")


def _json_lines(path: Path, text: str, hint: str) -> Iterable[tuple[int, object]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as e:
            raise DatasetError(
                f"{path} is neither JSON nor JSON Lines (line {number}: {_one_line(e.msg)}); {hint}"
            ) from None


Converter = Callable[[dict[str, Any], ItemContext], Task]


@dataclass(frozen=True)
class RecordAdapter:
    """A dataset adapter made of a per-record converter; see the module docstring."""

    name: str
    description: str
    convert: Converter
    id_keys: tuple[str, ...] = ("id",)
    """Record keys tried, in order, for the id shown on skipped items."""
    expected_fields: tuple[tuple[str, ...], ...] = ()
    """Fields every item of this format carries, each as alternative spellings (any one will
    do). When most items lack one, the file is probably in another format: :meth:`load` says so
    in :attr:`DatasetLoad.warnings` rather than silently loading, e.g., questions without media."""

    def lacking(self, records: Sequence[dict[str, Any]]) -> dict[str, int]:
        """Expected fields that more than half of ``records`` lack, with how many lack each."""
        out: dict[str, int] = {}
        for names in self.expected_fields:
            absent = sum(1 for r in records if all(r.get(n) in (None, "", []) for n in names))
            if 2 * absent > len(records):
                out[" or ".join(names)] = absent
        return out

    def load(
        self,
        path: Path,
        *,
        media_root: Path | None = None,
        allow_outside_media_root: bool = False,
    ) -> DatasetLoad:
        """Read ``path``; media paths lie beneath ``media_root`` (default: its folder), else
        :class:`DatasetError`, unless ``allow_outside_media_root``."""
        path = Path(path).expanduser()
        root = Path(media_root).expanduser() if media_root is not None else path.parent
        root = Path(os.path.abspath(root))  # noqa: PTH100 - lexical, as DataPath's root
        if not allow_outside_media_root:
            # Every later read under the root (probe, decode, staging) follows no link.
            _wsread.mark_untrusted(root)
        result = DatasetLoad(dataset=self.name, path=path, media_root=root)
        seen: Counter[str] = Counter()
        by_name: dict[str, list[Path]] | None = None
        records = read_records(path, dataset=self.name)
        objects = [r for _, r in records if isinstance(r, dict)]
        for field, absent in self.lacking(objects).items():
            result.warnings.append(
                f"{absent} of {len(objects)} items have no {field}, which {self.name} items "
                "carry; is the file in another format?"
            )
        for index, record in records:
            if not isinstance(record, dict):
                kind = type(record).__name__
                result.skipped.append(
                    SkippedItem(index=index, reason="not an object", detail=f"a JSON {kind}")
                )
                continue
            item_id = next(
                (as_text(record.get(k)) for k in self.id_keys if as_text(record.get(k))), None
            )
            try:
                context = ItemContext(self.name, index, root, allow_outside_media_root)
                task = self.convert(record, context)
            except SkipItem as skip:
                result.skipped.append(
                    SkippedItem(
                        index=index, item_id=item_id, reason=skip.reason, detail=skip.detail
                    )
                )
                continue
            seen[task.id] += 1
            if seen[task.id] > 1:
                # Results are keyed by task id, so a repeat would overwrite its twin's result.
                new_id = f"{task.id}#{seen[task.id]}"
                result.notes.append(f"item {index}: id {task.id!r} repeats; loaded as {new_id!r}")
                task = task.model_copy(update={"id": new_id})
            missing = task.missing_files()
            if missing:
                if by_name is None:
                    by_name = _files_by_name(root)
                task, notes = _found_by_name(task, missing, by_name, index)
                result.notes.extend(notes)
                missing = task.missing_files()
            result.tasks.append(task)
            if missing:
                result.missing_media[task.id] = missing
        return result


def _files_by_name(root: Path) -> dict[str, list[Path]]:
    """Every file under ``root`` by its name (built once per load, on the first miss)."""
    found: dict[str, list[Path]] = {}
    if root.is_dir():
        for path in root.rglob("*"):
            # Regular files only, reached through no link (a planted link is no candidate).
            if _wsread.regular_file(path.relative_to(root), root=root):
                found.setdefault(path.name, []).append(path)
    return found


def _found_by_name(
    task: Task, missing: Sequence[TaskFile], by_name: dict[str, list[Path]], index: int
) -> tuple[Task, list[str]]:
    """``task`` with each missing file that exactly one file under the media root has the name
    of pointing there (OmniGAIA item 59 names ``000000217710.jpg`` without its sub-folder), and
    a note per file found so the resolution is on record."""
    notes: list[str] = []
    moved: dict[Path, Path] = {}
    for f in missing:
        candidates = by_name.get(f.path.name, [])
        if len(candidates) == 1:
            moved[f.path] = candidates[0]
            notes.append(
                f"item {index}: {f.given or f.path.name} not found there; using {candidates[0]} (same file name)"
            )
        elif len(candidates) > 1:
            notes.append(
                f"item {index}: {f.given or f.path.name} not found; {len(candidates)} files have "
                "its name under the media root, so none is picked"
            )
    if not moved:
        return task, notes
    files = tuple(
        f.model_copy(update={"path": moved[f.path]}) if f.path in moved else f for f in task.files
    )
    return task.model_copy(update={"files": files}), notes

"""The input files of one task or one question, and how tools refer to them.

A model never sees file-system paths it could misuse: every input gets a short id (``video_1``,
``audio_2``, or the id a benchmark assigns), the first user message lists each id with what the
file is (:meth:`InputSet.listing`), and tools accept only an id or a bare file name from that
list (:meth:`InputSet.resolve`). Anything else, a path above all, is refused with the valid ids.
"""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from omnilab import _wsread
from omnilab._datapath import DataPath
from omnilab._urls import is_remote, url_name
from omnilab.content import Audio, Document, Image, MediaContent, Video
from omnilab.errors import OmnilabError

if TYPE_CHECKING:
    from omnilab.media.probe import MediaInfo

__all__ = [
    "FileKind",
    "InputFile",
    "InputKindError",
    "InputMissingError",
    "InputNotFound",
    "InputSet",
    "InputUnreadableError",
    "guess_kind",
    "unique_ids",
]

FileKind = Literal["video", "audio", "image", "text", "document"]
"""What an input file holds; ``text`` files are plain-text documents."""

_TEXT_SUFFIXES = frozenset({".txt", ".md", ".csv", ".json", ".jsonl", ".srt", ".vtt"})
# Models copy ids out of questions that write them as <video_abc> (OmniGAIA does).
_BRACKETS = ("<", ">")


def guess_kind(path: str | Path) -> FileKind:
    """The kind of a file from its name: video, audio, image, text, else document."""
    name = Path(path).name.lower()
    guessed, _ = mimetypes.guess_type(name)
    major = (guessed or "").split("/")[0]
    if major in ("video", "audio", "image"):
        return major  # type: ignore[return-value]  # narrowed by the membership test
    if Path(name).suffix in _TEXT_SUFFIXES:
        return "text"
    return "document"


class InputFile(BaseModel):
    """One input file of a task."""

    model_config = ConfigDict(frozen=True)

    id: str
    """The name the question and the perception tools use (e.g. ``video_hLJ_RCSKF8o``)."""
    kind: FileKind
    path: Path
    """Where the file is expected: the dataset's path resolved against the media root."""
    given: str
    """The path exactly as the dataset (or the user) wrote it."""
    renamed_from: str | None = None
    """The id the dataset gave this file when another input of the task already had it (the
    file then got a suffixed id, see :func:`unique_ids`)."""
    url: str | None = None
    """Where the file is fetched from when it is at a URL (:mod:`omnilab.media.remote`): before
    the task runs, the URL as the dataset gave it; once fetched where the task runs (``path``
    is then the local copy), the URL without its query or user info (what may be recorded)."""
    version: str | None = None
    """The object's version the run recorded first (a resumed run refuses a changed object)."""
    root: Path | None = Field(default=None, exclude=True)
    """The folder the data declared ``path`` beneath (a dataset's media root): the file is then
    opened beneath it through no link (:attr:`source`). ``None``: the user's own file."""

    def model_post_init(self, context: Any, /) -> None:
        """A file beneath a declared root: every read under that root (probe, decode, staging)
        follows the no-link rules in this process."""
        if self.root is not None:
            _wsread.mark_untrusted(self.root)

    def __setstate__(self, state: dict[Any, Any]) -> None:
        # Unpickled in a worker process (the process and Ray backends): the rule comes along.
        super().__setstate__(state)
        if self.root is not None:
            _wsread.mark_untrusted(self.root)

    @property
    def source(self) -> DataPath | Path:
        """What to open: a :class:`~omnilab._datapath.DataPath` beneath :attr:`root` (for
        :mod:`omnilab._wsread` only), or the user's own :attr:`path`."""
        if self.root is None:
            return self.path
        rel = self.path.relative_to(self.root).as_posix()  # made as root / rel
        return DataPath.beneath(self.root, rel, item=f"input {self.id}")

    def probe(self) -> MediaInfo:
        """The file's media facts; an error names the id and file name, never the path (its
        message goes to the model)."""
        from omnilab.media.errors import MediaError, MediaErrorCode
        from omnilab.media.probe import probe

        if not self.path.exists():
            raise MediaError(
                MediaErrorCode.NOT_FOUND,
                f"{self.id} ({self.path.name}) is not available: its file is missing",
                path=self.path,
            )
        try:
            return probe(self.path)
        except MediaError as e:
            named = self.redact(e.message)
            if named == e.message:
                raise
            raise MediaError(e.code, named, path=e.path) from None

    def redact(self, text: str) -> str:
        """``text`` with this file's path replaced by its id and file name (for messages that
        go to a model, which must never see host paths)."""
        return text.replace(str(self.path), f"{self.id} ({self.path.name})")

    def content(self) -> MediaContent:
        """The file as a message content part (text files are sent as documents)."""
        if self.kind == "video":
            return Video(path=self.path)
        if self.kind == "audio":
            return Audio(path=self.path)
        if self.kind == "image":
            return Image(path=self.path)
        return Document(path=self.path)


def unique_ids(files: Sequence[InputFile]) -> list[InputFile]:
    """``files`` with ids unique within the task: the first file keeps a repeated id, the later
    ones get ``_1``, ``_2``, ... (the next suffix no other input has), in order, so the same
    files always get the same ids. Renamed files record the dataset's id in ``renamed_from``.

    Real data repeats ids (OmniGAIA item 304 names ``videos/X.mp4`` and ``videos/X_1.mp4`` both
    ``video_X``); the suffix follows the usual ``X``, ``X_1``, ``X_2`` file naming.
    """
    taken = {f.id for f in files}
    seen: set[str] = set()
    out: list[InputFile] = []
    for f in files:
        if f.id not in seen:
            seen.add(f.id)
            out.append(f)
            continue
        n = 1
        while f"{f.id}_{n}" in taken:
            n += 1
        new_id = f"{f.id}_{n}"
        taken.add(new_id)
        seen.add(new_id)
        out.append(f.model_copy(update={"id": new_id, "renamed_from": f.renamed_from or f.id}))
    return out


class InputNotFound(OmnilabError):  # noqa: N818  (the contract other modules code against)
    """A reference to an input that the task does not have; the message lists the valid ids."""

    code = "UNKNOWN_ID"


class InputKindError(InputNotFound):
    """A reference to an input of the wrong kind (e.g. an image id given to ``read_video``)."""

    code = "WRONG_KIND"


class InputMissingError(OmnilabError):
    """A path given as an input does not exist."""

    code = "NOT_FOUND"


class InputUnreadableError(OmnilabError):
    """An input cannot be decoded as the media its name or content says (a cut-short video, a
    text file named ``.mp4``)."""

    code = "UNREADABLE"


def _detect_kind(path: Path) -> FileKind:
    """Video, audio or image by content (probe); other files by name."""
    guessed = guess_kind(path)
    if guessed == "text":
        # FFmpeg reads some text formats as streams (tty art, subtitles): never media here.
        return guessed
    # Imported here: probing loads PyAV, which callers that only build sets from tasks never need.
    from omnilab.media.errors import MediaError
    from omnilab.media.probe import probe

    try:
        return probe(path).kind.value
    except MediaError:
        # A file named .mp4 that does not decode is still listed as a video, with its error.
        return guessed


def _fetched(url: str) -> tuple[Path, str]:
    """The local copy of the input at ``url`` and its public URL (one-line errors)."""
    # Imported here: the fetch layer loads the media package, which callers that only build
    # sets from local files never need.
    from omnilab.media.remote import fetch
    from omnilab.media.remote_named import named_copy

    got = fetch(url)
    return named_copy(got.path, url_name(got.url)), got.url


class InputSet:
    """The inputs of one task, addressable by id or file name only."""

    def __init__(self, files: Sequence[InputFile]) -> None:
        # A repeated id would make a tool call ambiguous: later files get a suffix.
        self._files = unique_ids(files)

    @classmethod
    def from_paths(cls, paths: Sequence[str | Path]) -> InputSet:
        """Inputs from paths as a user typed them, with ids ``video_1``, ``audio_1``, ``image_1``...

        The kind comes from the file's content (a ``.mp4`` holding only sound is audio); files
        that are not media are ``text`` or ``document`` by name. Raises
        :class:`InputMissingError` for a path that does not exist.
        """
        counts: dict[str, int] = {}
        files: list[InputFile] = []
        for given in paths:
            url: str | None = None
            if is_remote(given):
                # A URL (s3://, https://, ...) is fetched into the media cache first; only its
                # public form (no query, no user info) is kept, as ``given`` and ``url``.
                path, url = _fetched(str(given))
                given = url
            else:
                path = Path(given).expanduser()
            if url is None and _wsread.untrusted_root(path) is not None:
                # Named by data (a request, a dataset): kept beneath its root, never resolved
                # through a link, and checked by the no-follow rules.
                path = Path(os.path.abspath(path))  # noqa: PTH100 - lexical
            elif path.is_file():
                path = path.resolve()
            if not _wsread.regular_file(path):
                raise InputMissingError(f"input file not found: {given} (check the path)")
            kind = _detect_kind(path)
            counts[kind] = counts.get(kind, 0) + 1
            files.append(
                InputFile(
                    id=f"{kind}_{counts[kind]}", kind=kind, path=path, given=str(given), url=url
                )
            )
        return cls(files)

    def __iter__(self) -> Iterator[InputFile]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def __repr__(self) -> str:
        return f"InputSet({', '.join(f.id for f in self._files)})"

    def ids(self, kinds: Collection[FileKind] | None = None) -> list[str]:
        """The ids of the inputs (of ``kinds`` when given), in order."""
        return [f.id for f in self._files if kinds is None or f.kind in kinds]

    def resolve(self, ref: str, *, kinds: Collection[FileKind] | None = None) -> InputFile:
        """The input named ``ref``: an id, or the file name of exactly one input.

        Raises :class:`InputNotFound` (``UNKNOWN_ID``) for anything else, paths included, and
        :class:`InputKindError` (``WRONG_KIND``) when the input is not one of ``kinds``; both
        messages list the ids that would have worked.
        """
        name = ref.strip()
        if name.startswith(_BRACKETS[0]) and name.endswith(_BRACKETS[1]):
            name = name[1:-1].strip()
        found = self._lookup(ref, name)
        if kinds is not None and found.kind not in kinds:
            wanted = " or ".join(kinds)
            raise InputKindError(
                f"{found.id} ({found.path.name}) is {_article(found.kind)} {found.kind}, "
                f"not {_article(wanted)} {wanted}; {self._valid(kinds)}"
            )
        return found

    def _lookup(self, ref: str, name: str) -> InputFile:
        # Only names in this set are ever matched: the file system is never consulted, so no
        # reference can reach a file that is not an input, whatever it contains.
        for f in self._files:
            if f.id == name:
                return f
        if not name or "/" in name or "\\" in name or name in (".", ".."):
            raise InputNotFound(
                f"{ref!r} is not an input id: paths are not accepted, give an id or file name "
                f"from the input list; {self._valid(None)}"
            )
        by_name = [f for f in self._files if f.path.name == name]
        if len(by_name) == 1:
            return by_name[0]
        if len(by_name) > 1:
            ids = ", ".join(f.id for f in by_name)
            raise InputNotFound(f"{name!r} is the file name of several inputs ({ids}): use the id")
        raise InputNotFound(f"unknown input {ref!r}; {self._valid(None)}")

    def _valid(self, kinds: Collection[FileKind] | None) -> str:
        files = [f for f in self._files if kinds is None or f.kind in kinds]
        if not files:
            what = " or ".join(kinds) if kinds is not None else ""
            return f"this task has no {what + ' ' if what else ''}inputs"
        listed = ", ".join(f"{f.id} ({f.path.name})" for f in files)
        return f"valid ids: {listed}"

    def check_readable(self, *, allow: bool = False) -> list[str]:
        """Probe every video, audio and image input and decode the end of each video and audio
        (a file cut short keeps a header that says the full length): raise
        :class:`InputUnreadableError` (one line) when one does not decode, or with ``allow``
        return one line per such input (``clip.mp4: not a readable video [CORRUPT] ...``).
        Text and documents are read as bytes and never refused."""
        from omnilab.media.errors import MediaError

        problems = []
        for f in self._files:
            if f.kind not in ("video", "audio", "image"):
                continue
            try:
                _decodes_to_end(f)
            except MediaError as e:
                problems.append(f"{f.given}: not a readable {f.kind} [{e.code}] {e.message}")
        if problems and not allow:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise InputUnreadableError(
                f"{problems[0]}{more}; give a file that decodes (omnilab media probe FILE says "
                "what is wrong), or pass --allow-unreadable to run anyway"
            )
        return problems

    def listing(self) -> str:
        """A text block for the first user message: one line per input with id, kind and facts.

        Media files are probed (duration, picture size, whether a video has sound); a file that
        cannot be read is listed with the reason, so the model knows not to ask for it.
        """
        if not self._files:
            return "Input files: none."
        lines = ["Input files (refer to them by id in tool calls):"]
        lines.extend(f"- {_describe(f)}" for f in self._files)
        return "\n".join(lines)


_TAIL_S = 0.25
"""How far before the stated end the last check decodes (the last frame or sound)."""


def _decodes_to_end(f: InputFile) -> None:
    """Raise ``MediaError`` unless ``f`` probes and its last moment decodes."""
    info = f.probe()
    if info.duration is None or info.duration <= _TAIL_S:
        return
    at = info.duration - _TAIL_S
    if info.has_video:
        from omnilab.media.video import frames_at

        frames_at(f.path, [at])
    elif info.has_audio:
        from omnilab.media.audio import audio_segment

        audio_segment(f.path, at, info.duration)


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _describe(f: InputFile) -> str:
    from omnilab.media.errors import MediaError, fmt_s

    head = f"{f.id}: {f.kind}, file {f.path.name}"
    if f.renamed_from is not None:
        head += f" (the task gave it the id {f.renamed_from}, which an earlier input has)"
    if f.kind not in ("video", "audio", "image"):
        try:
            return f"{head}, {_size(f.path.stat().st_size)}"
        except OSError as e:
            return f"{head}, unreadable: {e.strerror or e}"
    try:
        info = f.probe()
    except MediaError as e:
        return f"{head}, unreadable [{e.code}]: {e.message}"
    facts = []
    if info.duration is not None and f.kind != "image":
        facts.append(f"duration {fmt_s(info.duration)}")
    if info.width and info.height:
        facts.append(f"size {info.width}x{info.height}")
    if f.kind == "video":
        facts.append("with audio" if info.has_audio else "no audio")
    return ", ".join([head, *facts])


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024**2:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024**2:.1f} MB"

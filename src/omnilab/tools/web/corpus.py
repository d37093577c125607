"""Reading a corpus for the local index: a folder of text/Markdown/HTML files or a JSONL file.

Folder documents are named by their path relative to the folder, without the suffix
(``codecs/h264.md`` is ``codecs/h264``); Markdown may start with a YAML front matter holding
``title`` and ``url``. JSONL lines are objects whose field names are configurable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnilab.tools.web.errors import WebError, WebErrorCode
from omnilab.tools.web.extract import html_to_markdown

__all__ = [
    "HTML_SUFFIXES",
    "TEXT_SUFFIXES",
    "Document",
    "JsonlFields",
    "read_corpus",
    "split_passages",
]

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown"})
HTML_SUFFIXES = frozenset({".html", ".htm"})
JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*\n", re.DOTALL)
_PARAGRAPH = re.compile(r"[^\n]*\S[^\n]*(?:\n[^\n]*\S[^\n]*)*")


@dataclass(frozen=True)
class Document:
    """One document of a corpus."""

    id: str
    title: str
    text: str
    url: str | None = None


@dataclass(frozen=True)
class JsonlFields:
    """Names of the JSONL fields holding each part of a document."""

    id: str = "id"
    title: str = "title"
    url: str = "url"
    text: str = "text"


def read_corpus(source: Path, *, fields: JsonlFields | None = None) -> Iterator[Document]:
    """Documents of ``source``: a folder (txt/md/html, recursively) or a JSONL file.

    Raises ``WebError(BAD_CORPUS)`` for a missing source, a bad JSONL line (with its number) or
    a duplicate id.
    """
    if not source.exists():
        raise WebError(WebErrorCode.BAD_CORPUS, f"corpus {source} does not exist")
    seen: set[str] = set()
    docs = _read_folder(source) if source.is_dir() else _read_file(source, fields or JsonlFields())
    for doc in docs:
        if doc.id in seen:
            raise WebError(WebErrorCode.BAD_CORPUS, f"corpus {source}: duplicate id {doc.id!r}")
        seen.add(doc.id)
        yield doc


def _read_file(path: Path, fields: JsonlFields) -> Iterator[Document]:
    if path.suffix.lower() in JSONL_SUFFIXES:
        yield from _read_jsonl(path, fields)
    elif path.suffix.lower() in TEXT_SUFFIXES | HTML_SUFFIXES:
        yield _read_document(path, path.stem)
    else:
        raise WebError(
            WebErrorCode.BAD_CORPUS,
            f"cannot index {path}: give a folder of .txt/.md/.html files or a .jsonl file",
        )


def _read_folder(root: Path) -> Iterator[Document]:
    # Sorted so that an index built twice from the same files is the same.
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        if path.suffix.lower() in TEXT_SUFFIXES | HTML_SUFFIXES:
            yield _read_document(path, rel.with_suffix("").as_posix())


def _read_document(path: Path, doc_id: str) -> Document:
    try:
        raw = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise WebError(WebErrorCode.BAD_CORPUS, f"cannot read {path}: {e.strerror or e}") from e
    if path.suffix.lower() in HTML_SUFFIXES:
        title, text = html_to_markdown(raw)
        return Document(id=doc_id, title=title or _humanize(path.stem), text=text)
    meta, text = _front_matter(raw)
    title = str(meta.get("title") or "") or _first_heading(text) or _humanize(path.stem)
    url = str(meta["url"]) if meta.get("url") else None
    return Document(id=doc_id, title=title, text=text.strip(), url=url)


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    import yaml

    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return {}, text  # not front matter after all: keep the text as it is
    return (meta, text[match.end() :]) if isinstance(meta, dict) else ({}, text)


def _first_heading(text: str) -> str:
    match = _HEADING.search(text)
    return match.group(1) if match else ""


def _humanize(stem: str) -> str:
    return stem.replace("_", " ").replace("-", " ").strip() or stem


def _read_jsonl(path: Path, fields: JsonlFields) -> Iterator[Document]:
    try:
        lines = path.open(encoding="utf-8", errors="replace")
    except OSError as e:
        raise WebError(WebErrorCode.BAD_CORPUS, f"cannot read {path}: {e.strerror or e}") from e
    with lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except ValueError as e:
                raise WebError(WebErrorCode.BAD_CORPUS, f"{where}: not valid JSON ({e})") from e
            if not isinstance(record, dict):
                raise WebError(WebErrorCode.BAD_CORPUS, f"{where}: expected a JSON object")
            text = record.get(fields.text)
            if not isinstance(text, str):
                raise WebError(
                    WebErrorCode.BAD_CORPUS,
                    f"{where}: no text field {fields.text!r} (choose it with --text-field)",
                )
            doc_id = str(record.get(fields.id) or number)
            title = str(record.get(fields.title) or "") or _first_heading(text) or doc_id
            url = record.get(fields.url)
            yield Document(id=doc_id, title=title, text=text.strip(), url=str(url) if url else None)


def split_passages(text: str, chunk_chars: int) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of passages of about ``chunk_chars`` characters.

    Paragraphs are packed whole while they fit; a paragraph longer than a passage is cut at
    whitespace. Retrieval then ranks passages, so a long document matches on its best part.
    """
    pieces: list[tuple[int, int]] = []
    for match in _PARAGRAPH.finditer(text):
        start, end = match.span()
        while end - start > chunk_chars:
            cut = text.rfind(" ", start + chunk_chars // 2, start + chunk_chars)
            cut = cut if cut > start else start + chunk_chars
            pieces.append((start, cut))
            start = cut
            while start < end and text[start].isspace():
                start += 1
        if start < end:
            pieces.append((start, end))
    passages: list[tuple[int, int]] = []
    for start, end in pieces:
        if passages and end - passages[-1][0] <= chunk_chars:
            passages[-1] = (passages[-1][0], end)
        else:
            passages.append((start, end))
    return passages

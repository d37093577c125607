"""ocr.py IMAGE: text lines found in IMAGE with a local OCR model (rapidocr), one per line."""

import importlib.util
import sys
from typing import Any

if len(sys.argv) != 2:
    sys.exit("usage: ocr.py IMAGE")
if importlib.util.find_spec("rapidocr") is None:
    sys.exit(
        "ocr.py: no local OCR here (needs rapidocr: pip install 'omnilab[perception]'); image_read the crop instead"
    )
from rapidocr import RapidOCR

result: Any = RapidOCR()(sys.argv[1])
texts = list(result.txts or ())
scores = list(result.scores or ())
for text, score in zip(texts, scores, strict=False):
    print(f"{score:.2f}\t{text}")
if not texts:
    print("(no text found)")

"""OCR with the ``tesseract`` program (when it is on PATH): word boxes grouped into lines."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess

from PIL import Image

from omnilab.config import get_settings
from omnilab.perception.errors import BackendUnavailableError, PerceptionError
from omnilab.perception.types import TextBox

__all__ = ["Tesseract"]

_TIMEOUT_S = 120
# Tesseract's language codes differ from ISO 639-1 for the languages people ask for most.
_LANG = {
    "en": "eng",
    "de": "deu",
    "fr": "fra",
    "es": "spa",
    "it": "ita",
    "pt": "por",
    "zh": "chi_sim",
}


class Tesseract:
    """Runs ``tesseract stdin stdout tsv`` once per image."""

    def __init__(self) -> None:
        exe = shutil.which("tesseract")
        if exe is None:
            raise BackendUnavailableError(
                "OCR backend 'tesseract' needs the tesseract program on PATH "
                "(e.g. apt-get install tesseract-ocr); the embedded default is 'rapidocr'"
            )
        self._exe = exe
        language = get_settings().perception.language or "en"
        self._lang = _LANG.get(language, language)

    def read(self, image: Image.Image) -> list[TextBox]:
        """Lines of text: tesseract's words joined per (block, paragraph, line)."""
        buf = io.BytesIO()
        image.convert("RGB").save(buf, format="PNG")
        try:
            done = subprocess.run(
                [self._exe, "stdin", "stdout", "-l", self._lang, "--psm", "11", "tsv"],
                input=buf.getvalue(),
                capture_output=True,
                timeout=_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise PerceptionError(f"tesseract took longer than {_TIMEOUT_S} s") from e
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise PerceptionError(f"tesseract failed: {reason[-1] if reason else 'no message'}")
        return _lines(done.stdout.decode("utf-8", "replace"))


def _lines(tsv: str) -> list[TextBox]:
    groups: dict[tuple[str, str, str, str], list[dict[str, str]]] = {}
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        if row.get("level") != "5" or not (row.get("text") or "").strip():
            continue
        key = (row["page_num"], row["block_num"], row["par_num"], row["line_num"])
        groups.setdefault(key, []).append(row)
    out: list[TextBox] = []
    for words in groups.values():
        left = min(int(w["left"]) for w in words)
        top = min(int(w["top"]) for w in words)
        right = max(int(w["left"]) + int(w["width"]) for w in words)
        bottom = max(int(w["top"]) + int(w["height"]) for w in words)
        confs = [float(w["conf"]) / 100.0 for w in words if float(w["conf"]) >= 0]
        out.append(
            TextBox(
                text=" ".join(w["text"].strip() for w in words),
                box=(float(left), float(top), float(right), float(bottom)),
                confidence=sum(confs) / len(confs) if confs else 0.0,
            )
        )
    return out

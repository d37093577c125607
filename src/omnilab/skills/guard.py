"""The prohibition filter of skill learning (Code-X H.2, Figure 13 "Hard prohibitions").

A learned guide must hold no copied phrases from the questions, no named entities, dates,
titles or answer strings of the sampled cases. The model is told so; this filter checks it:
every line of the guide that contains such a string from the tasks it learned from is dropped,
and the reason recorded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Forbidden", "GuardReport", "filter_guide"]

_WORDS = re.compile(r"[A-Za-z0-9']+")
_ENTITY = re.compile(r"\b(?:[A-Z][a-z0-9']+(?:\s+(?:of|the|de|and|&)\s+|\s+)){1,}[A-Z][a-z0-9']+\b")
_DATE = re.compile(
    r"\b(?:1[5-9]\d\d|20\d\d)\b|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\b",
    re.IGNORECASE,
)
_SHINGLE = 5  # words in a row that count as a copied phrase


def _norm(text: str) -> str:
    return " ".join(w.lower() for w in _WORDS.findall(text))


@dataclass
class Forbidden:
    """What the tasks make task-specific: question phrases, answers, entities, dates, names."""

    phrases: set[str] = field(default_factory=set)
    """Normalised runs of ``_SHINGLE`` words of the questions."""
    strings: set[str] = field(default_factory=set)
    """Normalised answers, named entities, dates and file names."""
    _pattern: tuple[int, re.Pattern[str]] | None = field(default=None, repr=False)

    def add_question(self, question: str) -> None:
        words = [w.lower() for w in _WORDS.findall(question)]
        for i in range(len(words) - _SHINGLE + 1):
            self.phrases.add(" ".join(words[i : i + _SHINGLE]))
        for match in _ENTITY.finditer(question):
            self.add_string(match.group(0))
        for match in _DATE.finditer(question):
            self.add_string(match.group(0))

    def add_string(self, text: str) -> None:
        norm = _norm(text)
        if len(norm) >= 3:  # shorter ("a", "12", "no") is too common to be one case's fact
            self.strings.add(norm)

    def add_strings(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.add_string(text)

    def redact(self, text: str) -> str:
        """``text`` with every forbidden string and copied question phrase replaced by
        ``[case-specific]`` (matched word by word, whatever the case and punctuation between)."""
        items = sorted(self.strings | self.phrases, key=len, reverse=True)
        if not items or not text:
            return text
        if self._pattern is None or self._pattern[0] != len(items):
            gap = r"[^A-Za-z0-9']+"
            alternatives = (gap.join(re.escape(w) for w in s.split()) for s in items)
            joined = "|".join(f"(?:{a})" for a in alternatives)
            regex = re.compile(rf"(?<![A-Za-z0-9'])(?:{joined})(?![A-Za-z0-9'])", re.IGNORECASE)
            self._pattern = (len(items), regex)
        return self._pattern[1].sub("[case-specific]", text)

    def violation(self, line: str) -> str | None:
        """What in ``line`` is task-specific, or ``None``."""
        norm = f" {_norm(line)} "
        for s in sorted(self.strings, key=len, reverse=True):
            if f" {s} " in norm:
                return f"case-specific string {s!r}"
        words = norm.split()
        for i in range(len(words) - _SHINGLE + 1):
            phrase = " ".join(words[i : i + _SHINGLE])
            if phrase in self.phrases:
                return f"phrase copied from a question {phrase!r}"
        return None


@dataclass
class GuardReport:
    """The guide as kept, and each dropped line with why."""

    guide: str
    dropped: list[tuple[str, str]] = field(default_factory=list)


def filter_guide(guide: str, forbidden: Forbidden) -> GuardReport:
    """``guide`` without the lines that carry task-specific facts."""
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    for line in guide.splitlines():
        why = forbidden.violation(line) if line.strip() else None
        if why is None:
            kept.append(line)
        else:
            dropped.append((line, why))
    return GuardReport("\n".join(kept).strip() + "\n", dropped)

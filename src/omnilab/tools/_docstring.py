"""Google-style docstring parsing: the summary and the ``Args:`` descriptions a tool schema needs."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["ParsedDoc", "parse_docstring"]

_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$")
# "name (type): text" or "name: text"
_ARG = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass
class ParsedDoc:
    description: str
    args: dict[str, str] = field(default_factory=dict)


def parse_docstring(doc: str | None) -> ParsedDoc:
    """Split a Google-style docstring into its description and per-argument texts."""
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    args: dict[str, list[str]] = {}
    section: str | None = None
    current: str | None = None
    arg_indent = 0
    for line in lines:
        header = _SECTION.match(line.strip()) if not line.startswith(" ") else None
        if header:
            section, current = header.group(1), None
            continue
        if section is None:
            description.append(line)
            continue
        if section not in ("Args", "Arguments", "Parameters") or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        match = _ARG.match(line.strip())
        if match and (current is None or indent <= arg_indent):
            current, arg_indent = match.group(1).lstrip("*"), indent
            args[current] = [match.group(2).strip()]
        elif current is not None:
            args[current].append(line.strip())
    # Lines of one paragraph are joined (docstrings wrap at code width); paragraphs stay apart.
    paragraphs = re.split(r"\n\s*\n", "\n".join(description).strip())
    return ParsedDoc(
        description="\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip()),
        args={name: " ".join(p for p in parts if p) for name, parts in args.items()},
    )

"""Untrusted text made inert before it reaches a terminal.

Model output, tool results, program output and web pages may hold escape sequences (ESC/CSI/OSC:
move the cursor, rewrite earlier lines, retitle the window, set the clipboard, make links) or
carriage returns and bidirectional overrides that make a line read differently than it is.
Every rendering of such text to a terminal goes through :func:`inert`, which shows each control
character as a visible escape (``ESC`` becomes the four characters ``\\x1b``) and keeps newline
and tab. Markup injection (``[bold]`` in rich markup) is a separate matter: callers escape it or
print with ``markup=False``.
"""

from __future__ import annotations

__all__ = ["inert", "inert_json"]

# C0 controls but newline and tab, DEL, C1 controls (0x9b is a one-byte CSI on some terminals),
# and the Unicode bidirectional embeddings, overrides and isolates.
_CONTROLS = [c for c in range(0x20) if c not in (0x09, 0x0A)] + list(range(0x7F, 0xA0))
_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]
_TABLE = {c: f"\\x{c:02x}" for c in _CONTROLS} | {c: f"\\u{c:04x}" for c in _BIDI}
# In JSON text these can only stand inside strings, where \uXXXX means the same character:
# C0 controls are escaped by every JSON encoder already; DEL, C1 and bidi ones are not.
_JSON_TABLE = {c: f"\\u{c:04x}" for c in [*range(0x7F, 0xA0), *_BIDI]}


def inert(text: str) -> str:
    """``text`` with every control character but newline and tab shown as a visible escape."""
    return text.translate(_TABLE)


def inert_json(text: str) -> str:
    """JSON ``text`` (``json.dumps(..., ensure_ascii=False)``, pydantic's ``model_dump_json``)
    with the control characters its encoder leaves raw written as ``\\uXXXX`` escapes: the
    same JSON value, nothing that acts on a terminal."""
    return text.translate(_JSON_TABLE)

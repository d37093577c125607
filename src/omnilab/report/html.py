"""HTML building blocks of the report: escaping, the page frame, the shared assets.

Every piece of text that reaches a page goes through :func:`esc` (model replies, tool results,
task ids and file names are untrusted); markup is only ever assembled from escaped pieces, so a
``<script>`` in a model reply renders as text. Pages load ``assets/report.css`` and
``assets/report.js`` by relative path: the report opens from disk with no network.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

from omnilab._atomic import write_atomic

__all__ = ["ASSETS", "esc", "json_block", "page", "write_assets"]

ASSETS = ("report.css", "report.js")
"""The files of ``omnilab/report/assets`` every report carries."""


def esc(value: object) -> str:
    """``value`` as text safe inside an element or a quoted attribute."""
    return html.escape(str(value), quote=True)


def json_block(value: Any, *, indent: int | None = 1, limit: int = 20_000) -> str:
    """A ``<pre>`` with ``value`` as JSON (cut at ``limit`` characters), escaped."""
    text = json.dumps(value, ensure_ascii=False, indent=indent, default=str)
    if len(text) > limit:
        text = text[:limit] + f"\n... ({len(text) - limit} more characters)"
    return f'<pre class="json">{esc(text)}</pre>'


def page(title: str, body: str, *, root: str = "") -> str:
    """A whole HTML page: ``root`` is the relative path back to the report folder (``../``
    for task pages), where ``assets/`` lies."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # No network: only local files (file: for browsers that give each file its own
        # origin) or the serving host may load, and no inline script runs.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'self\' file:; '
        "img-src 'self' file: data:; media-src 'self' file:; style-src 'self' file:; "
        "script-src 'self' file:\">"
        f"<title>{esc(title)}</title>"
        f'<link rel="stylesheet" href="{root}assets/report.css">'
        f'<script defer src="{root}assets/report.js"></script>'
        f"</head><body>\n{body}\n</body></html>\n"
    )


def write_assets(out: Path) -> None:
    """Copy the stylesheet and the script into ``out/assets``."""
    target = out / "assets"
    target.mkdir(parents=True, exist_ok=True)
    folder = resources.files("omnilab.report") / "assets"
    for name in ASSETS:
        # Replaced, never written through a link planted in the report folder.
        write_atomic(target / name, (folder / name).read_bytes(), sync=False)

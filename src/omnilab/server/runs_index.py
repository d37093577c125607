"""``omnilab serve``'s browser entry point: ``GET /v1/runs`` from a browser (one that asks for
HTML first) is a page linking each run's report; API clients still get the JSON list."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

__all__ = ["runs_page", "wants_html"]


def wants_html(accept: str) -> bool:
    """Whether an ``Accept`` header puts HTML before JSON (a browser's does; httpx's ``*/*``
    and an API client's ``application/json`` do not)."""
    kinds = [part.split(";", 1)[0].strip().lower() for part in accept.split(",")]
    html = kinds.index("text/html") if "text/html" in kinds else None
    json = kinds.index("application/json") if "application/json" in kinds else None
    return html is not None and (json is None or html < json)


def runs_page(names: Sequence[str]) -> str:
    """The index page: each run, newest first, linking its report and its trajectory."""
    items = "".join(
        f'<li><a href="/v1/runs/{escape(n)}/report/">{escape(n)}</a> '
        f'(<a href="/v1/runs/{escape(n)}/trajectory">trajectory</a>)</li>'
        for n in sorted(names, reverse=True)
    )
    body = f"<ul>{items}</ul>" if names else "<p>No runs yet: ask with POST /v1/ask.</p>"
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>omnilab runs</title>'
        f"</head><body><h1>omnilab runs ({len(names)})</h1>{body}</body></html>"
    )

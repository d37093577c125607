"""Main text of an HTML page as Markdown, with trafilatura (imported when first needed).

trafilatura drops navigation, footers and boilerplate and keeps headings, lists and tables. A page
it finds no article in (a bare page with a few lines) falls back to all of its visible text, so
small and unusual pages still read as something.
"""

from __future__ import annotations

import re

__all__ = ["html_title", "html_to_markdown"]

_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_SPACES = re.compile(r"\s+")


def html_title(html: str) -> str:
    """The text of ``<title>``, whitespace collapsed; empty when there is none."""
    import html as html_lib

    match = _TITLE.search(html[:200_000])
    return _SPACES.sub(" ", html_lib.unescape(match.group(1))).strip() if match else ""


def html_to_markdown(
    html: str, *, url: str | None = None, include_links: bool = False
) -> tuple[str, str]:
    """``(title, markdown)`` of an HTML document; ``markdown`` is empty when it has no text."""
    import trafilatura

    title = html_title(html)
    markdown = trafilatura.extract(
        html,
        url=url,
        output_format="markdown",
        include_tables=True,
        include_images=False,
        include_links=include_links,
        include_comments=False,
        favor_recall=True,
        with_metadata=False,
    )
    if not markdown or not markdown.strip():
        markdown = trafilatura.html2txt(html) or ""
    if not title:
        metadata = trafilatura.extract_metadata(html)
        title = (metadata.title or "") if metadata is not None else ""
    return title, markdown.strip()

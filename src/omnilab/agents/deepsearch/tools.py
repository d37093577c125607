"""The three search tools of Omni-DeepSearch with the exact Appendix D schemas, over any
:class:`~omnilab.tools.mediasearch.MediaSearch` provider, and the prompt's query-list rule.

``text_search`` searches web pages, ``image_search_by_text_query`` images, ``video_search``
videos; each takes ``query_list``. The D prompt says "Provide exactly ONE search query in the
`query_list`", so by default a call with zero or several queries is refused before it runs
(:func:`query_rule`) with an error saying how to call again, and it uses no search budget.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from typing import Any

from omnilab.content import Content, Text
from omnilab.models.types import ToolCall
from omnilab.tools.base import Tool, ToolResult, tool
from omnilab.tools.mediasearch import MediaSearch, SearchKind, render_results
from omnilab.tools.web.errors import WebError

__all__ = ["KIND_OF", "SEARCH_TOOLS", "d_schemas", "query_rule", "search_tools"]

KIND_OF: dict[str, SearchKind] = {
    "text_search": "web",
    "image_search_by_text_query": "image",
    "video_search": "video",
}
SEARCH_TOOLS = tuple(KIND_OF)

Notice = Callable[[str], str | None]
"""Called with a tool name after it ran; returns a line to append (the budget notice) or None."""


@cache
def d_schemas() -> dict[str, dict[str, Any]]:
    """The Appendix D function definitions by name (``tools_d.json``)."""
    text = resources.files(__package__).joinpath("tools_d.json").read_text(encoding="utf-8")
    data = json.loads(text)
    return {t["function"]["name"]: t["function"] for t in data["tools"]}


def query_rule(max_queries: int = 1) -> Callable[[ToolCall], ToolResult | None]:
    """A check refusing a search call whose ``query_list`` is not 1 to ``max_queries`` non-empty
    strings (D prompt: exactly one), with an error the model can act on."""
    exactly = "exactly one search query" if max_queries == 1 else f"1 to {max_queries} queries"

    def check(call: ToolCall) -> ToolResult | None:
        if call.name not in KIND_OF or call.parse_error is not None:
            return None
        queries = call.arguments.get("query_list")
        if isinstance(queries, str):
            queries = [queries]
        count = len(queries) if isinstance(queries, list) else -1
        clean = count > 0 and all(isinstance(q, str) and q.strip() for q in queries or [])
        if clean and count <= max_queries:
            return None
        got = f"{count} queries" if count >= 0 else repr(queries)
        return ToolResult.fail(
            "INVALID_ARGS",
            f"{call.name}: query_list must hold {exactly} (got {got}); this call was not run "
            f'and used no search. Call again like {{"query_list": ["your query"]}}',
        )

    return check


def _make(name: str, search: MediaSearch, *, images: bool, notice: Notice | None) -> Tool:
    schema = d_schemas()[name]
    kind = KIND_OF[name]

    @tool(name=name, description=schema["description"], parameters=schema["parameters"])
    async def run(query_list: list[str] | str) -> ToolResult:
        """Search and list the best results (pictures as images for vision models).

        Args:
            query_list: The search queries (the prompt asks for exactly one).
        """
        queries = [query_list] if isinstance(query_list, str) else list(query_list)
        parts: list[Content] = []
        found: list[dict[str, Any]] = []
        cached = True
        for query in queries:
            try:
                hits, hit_cache = await search.search(query, kind)
            except WebError as e:
                if len(queries) == 1:
                    raise
                parts.append(Text(text=f"Error [{e.code.value}] for {query!r}: {e.message}"))
                continue
            cached = cached and hit_cache
            if len(queries) > 1:
                parts.append(Text(text=f"Results for {query!r}:"))
            parts += await render_results(query, hits, images=images)
            found += [h.model_dump(mode="json", exclude_none=True) for h in hits]
        line = notice(name) if notice is not None else None
        if line:
            parts.append(Text(text=line))
        return ToolResult(
            content=parts,
            metadata={"provider": search.name, "kind": kind, "cached": cached, "hits": found},
        )

    return run


def search_tools(
    search: MediaSearch,
    *,
    images: bool,
    names: Mapping[str, bool] | None = None,
    notice: Notice | None = None,
) -> list[Tool]:
    """The D tools over ``search`` (those ``names`` leaves on, default all three) that the
    provider serves; ``images`` sends result pictures as image parts."""
    chosen = [n for n in SEARCH_TOOLS if (names or {}).get(n, True)]
    return [
        _make(n, search, images=images, notice=notice)
        for n in chosen
        if KIND_OF[n] in search.provider.kinds
    ]

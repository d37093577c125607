"""Which web search provider a run's ``web_search`` uses: ``--search`` of ``omnilab eval`` /
``omnilab ask`` for that run, else the setting ``web.search_provider``.

The choice travels as a context variable set around each task's agent run, so every scaffold that
builds ``web_search`` from the tool registry follows it without an option of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from omnilab.errors import OmnilabError

__all__ = ["SearchChoiceError", "check_search", "chosen_search", "search_origin", "use_search"]

_CHOSEN: ContextVar[str | None] = ContextVar("omnilab_search_provider", default=None)


class SearchChoiceError(OmnilabError):
    """A ``--search`` name that is no search provider."""


def check_search(name: str) -> str:
    """``name`` when it is a registered search provider, else a one-line error naming them."""
    from omnilab.tools.web.providers import provider_names

    names = provider_names()
    if name not in names:
        raise SearchChoiceError(
            f"unknown search provider {name!r} for --search; providers: {', '.join(names)} "
            "(local: the offline corpus or web.index_dir)"
        )
    return name


def chosen_search() -> str:
    """The provider ``web_search`` uses here: the run's choice, else ``web.search_provider``."""
    from omnilab.config import get_settings

    return _CHOSEN.get() or get_settings().web.search_provider


def search_origin(chosen: str | None) -> str:
    """``serper (--search)`` or ``local (web.search_provider)``: the provider and who chose it."""
    from omnilab.config import get_settings

    if chosen is not None:
        return f"{chosen} (--search)"
    return f"{get_settings().web.search_provider} (web.search_provider)"


@contextmanager
def use_search(provider: str | None) -> Iterator[None]:
    """``web_search`` tools built inside use ``provider`` (``None``: the setting)."""
    token = _CHOSEN.set(provider)
    try:
        yield
    finally:
        _CHOSEN.reset(token)

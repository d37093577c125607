"""Consoles and list options shared by the CLI commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console, JustifyMethod, OverflowMethod
from rich.style import Style
from rich.text import Text

from omnilab.terminal import inert

__all__ = ["InertConsole", "err_console", "inert_console", "out_console", "split_values"]


class InertConsole(Console):
    """A rich console that never sends a control character of the text it prints (a model's
    answer, a tool's output, an error quoting them) to the terminal: every string it renders
    goes through :func:`omnilab.terminal.inert` first (rich keeps ESC and CSI as they are)."""

    def render_str(
        self,
        text: str,
        *,
        style: str | Style = "",
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        emoji: bool | None = None,
        markup: bool | None = None,
        highlight: bool | None = None,
        highlighter: Callable[[str | Text], Text] | None = None,
    ) -> Text:
        return super().render_str(
            inert(text),
            style=style,
            justify=justify,
            overflow=overflow,
            emoji=emoji,
            markup=markup,
            highlight=highlight,
            highlighter=highlighter,
        )


def inert_console(**options: Any) -> Console:
    """A console for text that may come from a model, a tool or a web page."""
    return InertConsole(**options)


def out_console() -> Console:
    """Tables and JSON: stdout, no highlighting, long lines kept whole."""
    return InertConsole(highlight=False, soft_wrap=True)


def err_console() -> Console:
    """Progress, notes and warnings: stderr."""
    return InertConsole(stderr=True, highlight=False, soft_wrap=True)


def split_values(values: list[str] | None) -> list[str]:
    """Repeated and comma-separated values as one list: ``--level Easy,Hard --level Medium``."""
    return [v.strip() for item in values or [] for v in item.split(",") if v.strip()]

"""Consoles and list options shared by the CLI commands."""

from __future__ import annotations

from rich.console import Console

__all__ = ["err_console", "out_console", "split_values"]


def out_console() -> Console:
    """Tables and JSON: stdout, no highlighting, long lines kept whole."""
    return Console(highlight=False, soft_wrap=True)


def err_console() -> Console:
    """Progress, notes and warnings: stderr."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def split_values(values: list[str] | None) -> list[str]:
    """Repeated and comma-separated values as one list: ``--level Easy,Hard --level Medium``."""
    return [v.strip() for item in values or [] for v in item.split(",") if v.strip()]

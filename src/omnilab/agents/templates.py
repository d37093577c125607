"""Prompt templates: files under ``omnilab/agents/prompts/`` (or another package's ``prompts/``,
e.g. ``omnilab.train``), rendered strictly.

A template file starts with ``#`` comment lines naming its source; the rest is the prompt, with
``${name}`` placeholders (:class:`string.Template`). Rendering fails loudly when a placeholder
has no value or a value has no placeholder, so a typo never sends a half-filled prompt.
"""

from __future__ import annotations

import string
from functools import cache
from importlib import resources

__all__ = ["load_template", "render", "render_in", "template_names"]


@cache
def load_template(name: str, package: str = "omnilab.agents") -> string.Template:
    """The template in ``prompts/<name>.txt`` of ``package``, without its header comment."""
    path = resources.files(package).joinpath("prompts").joinpath(f"{name}.txt")
    lines = path.read_text(encoding="utf-8").splitlines()
    start = 0
    while start < len(lines) and lines[start].startswith("#"):
        start += 1
    return string.Template("\n".join(lines[start:]))


def template_names() -> list[str]:
    """The names of the shipped templates."""
    folder = resources.files("omnilab.agents").joinpath("prompts")
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))


def render(name: str, **values: object) -> str:
    """Template ``name`` filled with ``values``; ``KeyError``/``ValueError`` if they do not fit."""
    return render_in("omnilab.agents", name, **values)


def render_in(package: str, name: str, /, **values: object) -> str:
    """:func:`render` for a template in ``package``'s ``prompts/`` (e.g. ``omnilab.train``)."""
    template = load_template(name, package)
    unused = set(values) - set(template.get_identifiers())
    if unused:
        raise ValueError(f"template {name!r} has no placeholder for {', '.join(sorted(unused))}")
    return template.substitute(values)

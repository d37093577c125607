"""Attribute docstrings (a string literal right under a field) read from a class's source when
asked for.

pydantic's ``use_attribute_docstrings`` reads them when each class is built, by tokenizing its
module's source: 50-130 ms of every command's start-up for the settings and option classes.
Only help texts and the settings reference show them, so they are read here, on demand.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import textwrap

__all__ = ["attribute_docs", "field_doc"]

_NO_FIELDS = frozenset({"builtins", "pydantic", "pydantic_settings", "typing", "abc"})


@functools.cache
def attribute_docs(cls: type) -> dict[str, str]:
    """Each documented attribute of ``cls`` and of its bases (a subclass's docstring wins),
    whitespace kept as written."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.partition(".")[0] in _NO_FIELDS:
            continue  # pydantic's own classes and the builtins: no source worth reading
        docs |= _own_docs(klass)
    return docs


def field_doc(cls: type, name: str, description: str | None) -> str:
    """A field's description: ``description`` when it has one, else its attribute docstring,
    on one line."""
    return " ".join((description or attribute_docs(cls).get(name, "")).split())


def _own_docs(klass: type) -> dict[str, str]:
    try:
        source = textwrap.dedent(inspect.getsource(klass))
    except (OSError, TypeError):
        return {}
    tree = ast.parse(source)
    if not tree.body or not isinstance(tree.body[0], ast.ClassDef):
        return {}
    body = tree.body[0].body
    docs: dict[str, str] = {}
    for field, after in itertools.pairwise(body):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[field.target.id] = inspect.cleandoc(after.value.value)
    return docs

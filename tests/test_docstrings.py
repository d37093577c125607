"""Field docstrings read on demand (not at class build, which cost every command's start-up)."""

from __future__ import annotations

from pydantic import BaseModel

from omnilab._docstrings import attribute_docs, field_doc
from omnilab.agents.registry import describe_agent
from omnilab.cli.config import setting_rows


class Base(BaseModel):
    first: int = 1
    """The first one,
    over two lines."""

    second: str = ""
    """Overridden below."""

    undocumented: int = 0


class Child(Base):
    second: str = "x"
    """The child's own words."""


def test_docstrings_of_a_class_and_its_bases() -> None:
    docs = attribute_docs(Child)
    assert docs == {"first": "The first one,\nover two lines.", "second": "The child's own words."}
    assert field_doc(Child, "first", None) == "The first one, over two lines."
    assert field_doc(Child, "first", "given") == "given"
    assert field_doc(Child, "undocumented", None) == ""


def test_every_setting_and_agent_option_keeps_its_description() -> None:
    assert all(row.description for row in setting_rows())
    tir = {o.name: o.help for o in describe_agent("tir").options}
    assert tir["mode"].startswith("How media reach the model")

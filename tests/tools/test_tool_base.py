"""The @tool decorator: schema from signature and docstring, validation, errors never raised."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from omnilab.content import Image, Text
from omnilab.media import MediaError, MediaErrorCode
from omnilab.tools import Tool, ToolResult, tool


def run(t: Tool, args: Any) -> ToolResult:
    return asyncio.run(t(args))


@tool
def add(a: int, b: int = 2) -> int:
    """Add two integers.

    Longer explanation that stays in the description.

    Args:
        a: The first number.
        b (int): The second number,
            described over two lines.
    """
    return a + b


def test_schema_is_derived_from_signature_and_docstring() -> None:
    assert add.name == "add"
    assert (
        add.description == "Add two integers.\n\nLonger explanation that stays in the description."
    )
    assert add.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first number."},
            "b": {
                "type": "integer",
                "default": 2,
                "description": "The second number, described over two lines.",
            },
        },
        "required": ["a"],
        "additionalProperties": False,
    }
    assert add.spec.name == "add" and add.spec.parameters == add.parameters


def test_optional_argument_schema_has_no_null_branch() -> None:
    @tool
    def crop(ids: list[str], box: list[int] | None = None) -> str:
        """Crop.

        Args:
            ids: Image ids.
            box: Optional box.
        """
        return f"{ids} {box}"

    props = crop.parameters["properties"]
    assert props["box"] == {
        "type": "array",
        "items": {"type": "integer"},
        "description": "Optional box.",
    }
    assert crop.parameters["required"] == ["ids"]
    assert run(crop, {"ids": ["a"]}).text == "['a'] None"


def test_call_validates_and_returns_content() -> None:
    assert run(add, {"a": 1}).text == "3"
    assert run(add, '{"a": 1, "b": 5}').text == "6"
    assert run(add, {"a": "4"}).text == "6"  # lax coercion of numeric strings, as models send them


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({}, "missing required argument 'a'"),
        ({"a": "x"}, "argument 'a'"),
        ({"a": 1, "c": 3}, "unknown argument 'c'"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
    ],
)
def test_bad_arguments_become_invalid_args(args: Any, fragment: str) -> None:
    result = run(add, args)
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert fragment in result.error.message
    assert result.text.startswith("Error [INVALID_ARGS]: add:")


def test_media_errors_keep_their_code() -> None:
    @tool
    def read(t: float) -> str:
        """Read.

        Args:
            t: Time.
        """
        raise MediaError(
            MediaErrorCode.TS_OOB, f"t {t} s is past the end of v.mp4 (duration 3.0 s)"
        )

    result = run(read, {"t": 9})
    assert result.error is not None
    assert result.error.code == "TS_OOB"
    assert result.error.message == "t 9.0 s is past the end of v.mp4 (duration 3.0 s)"


def test_crash_becomes_tool_failed_with_traceback_in_metadata() -> None:
    @tool
    def boom(x: int) -> str:
        """Explode.

        Args:
            x: Anything.
        """
        return str(1 // x)

    result = run(boom, {"x": 0})
    assert result.error is not None and result.error.code == "TOOL_FAILED"
    assert "ZeroDivisionError" in result.error.message
    assert "Traceback" in result.metadata["traceback"]
    assert "Traceback" not in result.text  # the model sees one line


def test_async_tools_and_media_content(tmp_path: Path) -> None:
    picture = tmp_path / "p.png"
    picture.write_bytes(b"png")

    @tool(name="look")
    async def look_at(label: str) -> list[object]:
        """Look.

        Args:
            label: A caption.
        """
        await asyncio.sleep(0)
        return [label, Image(path=picture)]

    result = run(look_at, {"label": "hi"})
    assert look_at.name == "look"
    assert result.ok
    assert result.content == [Text(text="hi"), Image(path=picture)]


def test_structured_return_is_json_text() -> None:
    @tool
    def info(n: int) -> dict[str, int]:
        """Info.

        Args:
            n: A number.
        """
        return {"n": n, "double": 2 * n}

    assert '"double": 8' in run(info, {"n": 4}).text


def test_exact_schema_override_must_match_arguments() -> None:
    exact = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a"],
    }
    t = tool(parameters=exact)(add.fn)
    assert t.parameters == exact
    with pytest.raises(TypeError, match="do not match"):
        tool(parameters={"type": "object", "properties": {"z": {}}})(add.fn)


def _undocumented(a: int) -> int:
    """No args section."""
    return a


def _unannotated(a):  # type: ignore[no-untyped-def]
    """Has args.

    Args:
        a: Something.
    """
    return a


def _no_doc(a: int) -> int:
    return a


def _varargs(*a: int) -> int:
    """Var.

    Args:
        a: Many.
    """
    return 0


@pytest.mark.parametrize(
    ("fn", "fragment"),
    [
        (_undocumented, "not described"),
        (_unannotated, "type annotation"),
        (_no_doc, "docstring description"),
        (_varargs, r"\*args"),
    ],
)
def test_definition_errors_are_raised_at_once(fn: Any, fragment: str) -> None:
    with pytest.raises(TypeError, match=fragment):
        tool(fn)


def test_factory_closures_share_one_derived_schema() -> None:
    """Tools built per task from a factory reuse the schema derived the first time."""

    def factory(offset: int) -> Tool:
        @tool
        def shift(x: int) -> int:
            """Shift a number.

            Args:
                x: The number.
            """
            return x + offset

        return shift

    a, b = factory(1), factory(10)
    assert a._args_model is b._args_model
    assert a.parameters == b.parameters
    assert (run(a, {"x": 1}).text, run(b, {"x": 1}).text) == ("2", "11")

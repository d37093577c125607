"""Reasoning split and the conservative recovery of tool calls written as text."""

from __future__ import annotations

import pytest

from omnilab.models import ModelOutput, ToolSpec
from omnilab.models.parsing import (
    close_truncated_json,
    parse_arguments,
    postprocess,
    recover_tool_calls,
    split_reasoning,
)

SEARCH = ToolSpec(
    name="search",
    description="Search the web.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}, "k": {"type": "integer"}},
        "required": ["query"],
        "additionalProperties": False,
    },
)
CLOCK = ToolSpec(name="clock", description="The time.")
TOOLS = [SEARCH, CLOCK]


def test_hermes_blocks_become_recovered_calls_and_leave_the_prose() -> None:
    text = (
        "I will look it up.\n"
        '<tool_call>\n{"name": "search", "arguments": {"query": "cats"}}\n</tool_call>\n'
        '<tool_call>{"name": "clock", "arguments": {}}</tool_call>'
    )
    rest, calls = recover_tool_calls(text, TOOLS)
    assert rest == "I will look it up."
    assert [(c.name, c.arguments, c.recovered) for c in calls] == [
        ("search", {"query": "cats"}, True),
        ("clock", {}, True),
    ]
    assert calls[0].id != calls[1].id


def test_qwen36_xml_around_json_is_rebuilt_as_kira_does() -> None:
    # Dongping-Chen/OmniCoding kira/recovery.py: the arguments object written after the first
    # parameter's tag, the tag left open, `function=` without its `<`.
    text = (
        "Let me look.\n<tool_call>\nfunction=search>\n<parameter=query>\n"
        'cape lumen", "k": 3}\n</tool_call>'
    )
    rest, calls = recover_tool_calls(text, TOOLS)
    assert rest == "Let me look." and len(calls) == 1
    assert calls[0].name == "search" and calls[0].arguments == {"query": "cape lumen", "k": 3}
    assert calls[0].recovered
    closed = '<tool_call><function=search><parameter=query>x"}</parameter></function></tool_call>'
    assert recover_tool_calls(closed, TOOLS)[1][0].arguments == {"query": "x"}
    for doubtful in (
        '<tool_call>function=nope>\n<parameter=query>\nx"}\n</tool_call>',  # undeclared tool
        "<tool_call>function=search>\n<parameter=query>\nnot json at all\n</tool_call>",
        '<tool_call>function=search>\n<parameter=k>\n3"}\n</tool_call>',  # no required query
    ):
        assert recover_tool_calls(doubtful, TOOLS) == (doubtful, [])


def test_fenced_json_and_bare_object() -> None:
    fenced = 'Calling:\n```json\n{"name": "search", "parameters": {"query": "dogs"}}\n```'
    rest, calls = recover_tool_calls(fenced, TOOLS)
    assert rest == "Calling:"
    assert calls[0].arguments == {"query": "dogs"}

    rest, calls = recover_tool_calls(
        '  {"name": "search", "arguments": "{\\"query\\": \\"x\\"}"} ', TOOLS
    )
    assert rest == ""
    assert calls[0].arguments == {"query": "x"}  # arguments given as a JSON string


def test_truncated_call_is_closed_when_only_brackets_are_missing() -> None:
    text = '<tool_call>{"name": "search", "arguments": {"query": "cats", "k": 3}'
    _, calls = recover_tool_calls(text, TOOLS)
    assert calls[0].arguments == {"query": "cats", "k": 3}
    assert calls[0].recovered


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "search", "arguments": {"query": "ca',  # cut inside a string
        '<tool_call>{"name": "search", "arguments": {"query": "cats", "k": 1',  # number may be cut
        '<tool_call>{"name": "search", "arguments": {"query":',  # value missing
        '<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>',  # undeclared tool
        '<tool_call>{"name": "search", "arguments": {"k": 2}}</tool_call>',  # required missing
        '<tool_call>{"name": "search", "arguments": {"query": "a", "x": 1}}</tool_call>',  # extra key
        "The answer is {not json}.",
        'Here is some JSON data: {"name": "search", "arguments": {"query": "a"}} in a sentence.',
    ],
)
def test_doubtful_text_stays_text(text: str) -> None:
    rest, calls = recover_tool_calls(text, TOOLS)
    assert calls == []
    assert rest == text


def test_no_tools_declared_means_no_recovery() -> None:
    text = '<tool_call>{"name": "search", "arguments": {"query": "a"}}</tool_call>'
    assert recover_tool_calls(text, []) == (text, [])


@pytest.mark.parametrize(
    ("text", "answer", "reasoning"),
    [
        ("<think>add 2 and 2</think>4", "4", "add 2 and 2"),
        ("<think>\nstep one\n</think>\n\nThe answer.", "The answer.", "step one"),
        ("step one</think>The answer.", "The answer.", "step one"),  # template opened the block
        ("<think>cut off by the limit", "", "cut off by the limit"),
        ("no reasoning here", "no reasoning here", None),
    ],
)
def test_split_reasoning(text: str, answer: str, reasoning: str | None) -> None:
    assert split_reasoning(text) == (answer, reasoning)


@pytest.mark.parametrize(
    ("text", "closed"),
    [
        ('{"a": {"b": [1, 2]', '{"a": {"b": [1, 2]}}'),
        ('{"a": "x",', '{"a": "x"}'),
        ('{"a": true', '{"a": true}'),
        ('{"a": "x\\"', None),
        ('{"a": 12', None),
        ('{"a"', None),
        ('{"a": 1}}', None),
    ],
)
def test_close_truncated_json(text: str, closed: str | None) -> None:
    assert close_truncated_json(text) == closed


def test_parse_native_arguments() -> None:
    assert parse_arguments('{"q": "x"}') == ({"q": "x"}, False, None)
    assert parse_arguments('{"q": "x"') == ({"q": "x"}, True, None)
    assert parse_arguments("") == ({}, False, None)
    args, repaired, problem = parse_arguments('{"q": "unfinished')
    assert (args, repaired) == ({}, False)
    assert problem is not None and "not valid JSON" in problem
    assert parse_arguments("[1, 2]")[2] == "arguments are not a JSON object: '[1, 2]'"


def test_postprocess_splits_reasoning_then_recovers_calls() -> None:
    raw = ModelOutput.from_text(
        '<think>need data</think><tool_call>{"name": "clock", "arguments": {}}</tool_call>'
    )
    out = postprocess(raw, TOOLS)
    assert out.reasoning == "need data"
    assert out.text == ""
    assert out.message.content == []
    assert [c.name for c in out.tool_calls] == ["clock"]


def test_postprocess_keeps_native_calls_and_plain_text() -> None:
    native = ModelOutput.tool_call("search", {"query": "a"}, text='{"name": "clock"}')
    assert postprocess(native, TOOLS) == native
    plain = ModelOutput.from_text("just words")
    assert postprocess(plain, TOOLS) is plain


def test_postprocess_keep_think_leaves_the_block_in_the_text() -> None:
    raw = ModelOutput.from_text("<think>\nneed data\n</think>\n\nIt is 4.")
    assert postprocess(raw, []).text == "It is 4."
    kept = postprocess(raw, [], keep_think=True)
    assert kept.text == "<think>\nneed data\n</think>\n\nIt is 4." and kept.reasoning is None

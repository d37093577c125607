"""``<answer>`` extraction and its fallbacks."""

from __future__ import annotations

import pytest

from omnilab.agents.answer import extract_answer, final_answer, looks_like_tool_call


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>Paris</answer>", "Paris"),
        ("first <answer>a</answer> then <answer> b </answer>", "b"),  # the last one wins
        ("<answer>\nline one\nline two\n</answer>", "line one\nline two"),
        ("<ANSWER>x</ANSWER>", "x"),
        ("no tag here", None),
        ("<answer>cut off", None),
    ],
)
def test_extract_answer(text: str, expected: str | None) -> None:
    assert extract_answer(text) == expected


def test_final_answer_says_where_it_came_from() -> None:
    assert final_answer("so <answer>42</answer>") == ("42", "tag")
    assert final_answer("thinking... <answer>The bridge is the Ruby") == (
        "The bridge is the Ruby",
        "unclosed_tag",
    )
    assert final_answer("  Just 42.\n") == ("Just 42.", "whole_text")
    assert final_answer(" \n ") == (None, None)
    assert final_answer("<answer></answer>") == ("", "tag")


def test_calls_written_as_text_are_recognised() -> None:
    assert looks_like_tool_call('<tool_call>\n{"name": "web_search", "argu')
    assert looks_like_tool_call('{"name": "web_search", "arguments": {"query": "x"')
    assert not looks_like_tool_call("The answer is 42 and the name is Bob.")

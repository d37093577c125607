"""Reasoning split and a conservative recovery of tool calls written as text.

Open models often put tool calls in their answer text instead of native calls: Hermes/Qwen
``<tool_call>{...}</tool_call>`` blocks, a fenced JSON block, one bare JSON object, or any of these
cut off by the token limit. One malformed mix is read as well, Qwen3.6's qwen3_coder XML around
JSON (``<tool_call>function=NAME><parameter=FIRST>VALUE", "other": ...}</tool_call>``: the
whole arguments object written after the first parameter's tag), the way the Code-X authors'
KIRA harness rebuilds it (Dongping-Chen/OmniCoding ``src/omnicoding/agents/kira/recovery.py``):
``{"FIRST": "`` is put in front and the result must parse. :func:`recover_tool_calls` turns such text into calls only when the name
is one of the declared tools and the arguments parse as they stand: a truncated object is closed
only if nothing but closing brackets is missing, never by completing a cut string or number.
Recovered calls carry ``recovered=True``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from omnilab.content import Content, Text
from omnilab.models.types import ModelOutput, ToolCall, ToolSpec, new_call_id

__all__ = [
    "close_truncated_json",
    "parse_arguments",
    "postprocess",
    "recover_tool_calls",
    "split_reasoning",
]

_THINK_BLOCK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.DOTALL)
_TOOL_CALL_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_XML_FUNCTION = re.compile(r"<?function=([^>\s]+)>")
_XML_PARAMETER = re.compile(r"<parameter=([^>]+)>\s*")
_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_CLOSERS = {"{": "}", "[": "]"}


def split_reasoning(text: str) -> tuple[str, str | None]:
    """Split ``<think>...</think>`` reasoning from the answer: ``(answer, reasoning or None)``.

    An unclosed ``<think>`` (cut off by the token limit) makes the rest reasoning; a lone
    ``</think>`` (the chat template opened the block) makes everything before it reasoning.
    """
    if "<think>" in text:
        thoughts = [m.strip() for m in _THINK_BLOCK.findall(text)]
        answer = _THINK_BLOCK.sub("", text).strip()
        return answer, "\n\n".join(t for t in thoughts if t) or None
    if "</think>" in text:
        before, _, after = text.partition("</think>")
        return after.strip(), before.strip() or None
    return text, None


def close_truncated_json(text: str) -> str | None:
    """``text`` completed with the closing brackets it lacks, or None if more than that is missing.

    Refuses when the cut falls inside a string, after a key or colon, or after a number or
    literal that may itself be cut short: closing those would invent content.
    """
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif ch in "}]" and (not stack or stack.pop() != ch):
            return None
    if in_string:
        return None
    body = text.rstrip()
    if body.endswith(","):
        body = body[:-1].rstrip()  # a dangling comma drops nothing
    if not body or not (body[-1] in '"}]' or body.endswith(("true", "false", "null"))):
        return None
    candidate = body + "".join(reversed(stack))
    try:
        json.loads(candidate)
    except ValueError:
        return None
    return candidate


def _load_json(text: str) -> tuple[Any, bool] | None:
    """``(value, repaired)`` for JSON text, closing a truncated end if that is all it lacks."""
    try:
        return json.loads(text), False
    except ValueError:
        pass
    closed = close_truncated_json(text)
    if closed is None:
        return None
    return json.loads(closed), True


def parse_arguments(raw: str) -> tuple[dict[str, Any], bool, str | None]:
    """Native tool-call arguments (a JSON string): ``(arguments, repaired, problem)``.

    ``repaired`` is true when a truncated object was closed; when the text is not a JSON object
    the arguments are empty and ``problem`` says why.
    """
    if not raw.strip():
        return {}, False, None
    loaded = _load_json(raw)
    if loaded is None:
        return {}, False, f"arguments are not valid JSON: {raw[:200]!r}"
    value, repaired = loaded
    if not isinstance(value, dict):
        return {}, False, f"arguments are not a JSON object: {raw[:200]!r}"
    return value, repaired, None


def _call_from(obj: object, tools: dict[str, ToolSpec]) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
        assert isinstance(obj, dict)
    name = obj.get("name")
    if not isinstance(name, str) or name not in tools:
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        parsed = _load_json(args)
        if parsed is None:
            return None
        args = parsed[0]
    if not isinstance(args, dict) or not _fits(args, tools[name].parameters):
        return None
    return ToolCall(id=new_call_id(), name=name, arguments=args, recovered=True)


def _fits(args: dict[str, Any], schema: dict[str, Any]) -> bool:
    # Only checks that need no guessing: required names present, no undeclared names when closed.
    required = schema.get("required", [])
    if any(key not in args for key in required):
        return False
    if schema.get("additionalProperties") is False:
        return set(args) <= set(schema.get("properties", {}))
    return True


def _calls_in(snippet: str, tools: dict[str, ToolSpec]) -> list[ToolCall] | None:
    loaded = _load_json(snippet.strip())
    if loaded is None:
        return None
    value, _ = loaded
    items = value if isinstance(value, list) else [value]
    calls = [_call_from(item, tools) for item in items]
    if not calls or any(c is None for c in calls):
        return None
    return [c for c in calls if c is not None]


def _xml_json_call(block: str, tools: dict[str, ToolSpec]) -> list[ToolCall] | None:
    """The call of a qwen3_coder XML block whose first parameter holds the arguments as JSON
    (see the module docstring); ``None`` unless the name is declared and the JSON parses."""
    function = _XML_FUNCTION.search(block)
    if function is None or function.group(1).strip() not in tools:
        return None
    rest = block[function.end() :].strip()
    first = _XML_PARAMETER.search(rest)
    if first is None:
        return None
    inner = rest[first.end() :].rstrip()
    for closing in ("</function>", "</parameter>"):
        inner = inner.removesuffix(closing).rstrip()
    inner = _XML_PARAMETER.sub("", inner)
    try:
        args = json.loads('{"' + first.group(1).strip() + '": "' + inner, strict=False)
    except ValueError:
        return None
    name = function.group(1).strip()
    if not isinstance(args, dict) or not _fits(args, tools[name].parameters):
        return None
    return [ToolCall(id=new_call_id(), name=name, arguments=args, recovered=True)]


def recover_tool_calls(text: str, tools: Sequence[ToolSpec]) -> tuple[str, list[ToolCall]]:
    """Tool calls written in ``text``: ``(remaining text, recovered calls)``.

    Tries ``<tool_call>`` blocks, then fenced JSON, then the whole text as one JSON object. Only
    blocks that yield valid calls are removed from the text; anything doubtful stays text.
    """
    by_name = {t.name: t for t in tools}
    if not by_name or not text.strip():
        return text, []
    for pattern in (_TOOL_CALL_BLOCK, _FENCE):
        if not pattern.search(text):
            continue
        found: list[ToolCall] = []

        def take(
            match: re.Match[str],
            found: list[ToolCall] = found,
            xml: bool = pattern is _TOOL_CALL_BLOCK,
        ) -> str:
            calls = _calls_in(match.group(1), by_name)
            if calls is None and xml:
                calls = _xml_json_call(match.group(1), by_name)
            if calls is None:
                return match.group(0)
            found.extend(calls)
            return ""

        remaining = pattern.sub(take, text)
        if found:
            return remaining.strip(), found
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        calls = _calls_in(stripped, by_name)
        if calls:
            return "", calls
    return text, []


def postprocess(
    output: ModelOutput, tools: Sequence[ToolSpec], *, keep_think: bool = False
) -> ModelOutput:
    """Split ``<think>`` reasoning out of the answer (unless ``keep_think``:
    ``GenerateConfig.keep_think``) and recover text tool calls if none are native."""
    text_parts = [p for p in output.message.content if isinstance(p, Text)]
    if not text_parts:
        return output
    text = "\n".join(p.text for p in text_parts)
    answer, thought = (text, None) if keep_think else split_reasoning(text)
    reasoning = output.reasoning
    if thought:
        reasoning = f"{reasoning}\n\n{thought}" if reasoning else thought
    calls = list(output.message.tool_calls)
    if not calls and tools:
        answer, calls = recover_tool_calls(answer, tools)
    if answer == text and calls == output.message.tool_calls:
        return output
    others: list[Content] = [p for p in output.message.content if not isinstance(p, Text)]
    content: list[Content] = [Text(text=answer), *others] if answer else others
    message = output.message.model_copy(update={"content": content, "tool_calls": calls})
    # finish_reason stays as the provider sent it: "length" still tells that the text was cut.
    return output.model_copy(update={"message": message, "reasoning": reasoning})

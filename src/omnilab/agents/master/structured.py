"""One structured call of the master agent: a reply as JSON matching a schema, retried.

The call asks for the schema through ``GenerateConfig.response_format`` (a server that can
constrains decoding to it, the local model compiles it to a grammar, other models get it in the
prompt) unless ``constrain`` is off. A reply that is not JSON matching the schema, or that a
stage's own check refuses (an agent name not in the pool), gets ``retries`` more chances (one by
default) with the problem stated (``prompts/master_format_retry.txt``). The release's way
(``fix_with``, ``fresh``): a bad reply is first sent to the model with LangChain's fixing prompt
(``prompts/master_format_fix.txt``), and if that does not parse either the call is made again
from scratch. A last bad reply is recorded as an ``ErrorEvent`` of kind ``format`` and the
caller goes on without it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omnilab.agents.session import AgentRun, Context
from omnilab.agents.templates import render
from omnilab.models.structured import schema_problem
from omnilab.models.types import GenerateConfig, Message, ResponseFormat
from omnilab.trajectory import ErrorEvent

__all__ = ["Check", "Reply", "ask_json"]

Check = Callable[[dict[str, Any]], str | None]
"""A stage's own test of a valid reply: why it cannot be used (one line), or ``None``."""

Parse = Callable[[str], tuple[dict[str, Any] | None, str | None]]
"""A reader of a reply: its value, or ``None`` and what is wrong with it (the release's
LangChain parser, :mod:`omnilab.agents.master.lenient`)."""


@dataclass(frozen=True)
class Reply:
    """A structured reply: ``value`` when it validated, else ``None`` with the ``problem``."""

    value: dict[str, Any] | None
    text: str
    problem: str | None = None
    attempts: int = 1


def _unfenced(text: str) -> str:
    # Models that only read the schema in the prompt often wrap the JSON in a Markdown fence.
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.removeprefix("```json").removeprefix("```").removesuffix("```")
    return stripped.strip()


def _read(
    text: str, schema: dict[str, Any], check: Check | None, parse: Parse | None
) -> tuple[dict[str, Any] | None, str | None]:
    if parse is not None:
        return parse(text)
    problem = schema_problem(_unfenced(text), schema)
    if problem is None:
        value = json.loads(_unfenced(text))
        if not isinstance(value, dict):
            return None, "the answer is not a JSON object"
        problem = check(value) if check is not None else None
        if problem is None:
            return value, None
    return None, problem


async def ask_json(
    run: AgentRun,
    context: Context,
    schema: dict[str, Any],
    *,
    name: str,
    generate: GenerateConfig,
    check: Check | None = None,
    turn: bool = False,
    retries: int = 1,
    constrain: bool = True,
    fix_with: str | None = None,
    fresh: Callable[[], Context] | None = None,
    parse: Parse | None = None,
) -> Reply | None:
    """Call ``context``'s role for JSON matching ``schema`` (see the module docstring);
    ``None`` when the time budget ran out. ``fix_with``: the format instructions the fixing
    prompt quotes; ``fresh``: makes the context of a new attempt (the same messages again);
    ``parse``: reads a reply instead of the strict schema test (and ``check``)."""
    config = generate
    if constrain:
        fmt = ResponseFormat(json_schema=schema, name=name)
        config = generate.model_copy(update={"response_format": fmt})
    problem: str | None = None
    text = ""
    attempts = 1 + max(0, retries)
    for attempt in range(1, attempts + 1):
        if attempt > 1:
            if fresh is not None:
                context = fresh()
            else:
                run.add(context, Message.user(render("master_format_retry", problem=problem)))
        output = await run.call(context.role, context, config=config, turn=turn)
        if output is None:
            return None
        text = output.text
        value, problem = _read(text, schema, check, parse)
        if value is not None:
            return Reply(value, text, attempts=attempt)
        if fix_with is not None:
            assert problem is not None
            fixed = await _fix(run, context, fix_with, text, problem, config, schema, check, parse)
            if fixed is None:
                return None
            if fixed[1] is not None:
                return Reply(fixed[1], fixed[0], attempts=attempt)
    run.emit(
        ErrorEvent(
            error_kind="format",
            message=(
                f"{name} reply of {context.role} did not validate after {attempts} attempts: "
                f"{problem}"
            ),
            details={"schema": name, "reply": text[:2000]},
            context_id=context.id,
        )
    )
    return Reply(None, text, problem, attempts=attempts)


async def _fix(
    run: AgentRun,
    context: Context,
    instructions: str,
    text: str,
    problem: str,
    config: GenerateConfig,
    schema: dict[str, Any],
    check: Check | None,
    parse: Parse | None,
) -> tuple[str, dict[str, Any] | None] | None:
    """One ``OutputFixingParser`` call: the fixing prompt alone, to the same role; its reply
    and its value (``None``: it does not parse either), or ``None`` when time ran out."""
    chat = run.context(context.role, name=f"{context.id}-fix")
    prompt = render("master_format_fix", instructions=instructions, completion=text, error=problem)
    run.add(chat, Message.user(prompt))
    output = await run.call(context.role, chat, config=config, turn=False)
    if output is None:
        return None
    return output.text, _read(output.text, schema, check, parse)[0]

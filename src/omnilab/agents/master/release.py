"""Agent-Omni as the authors' released code runs it (``rules="release"``): texts and values.

huawei-lin/Agent-Omni ``src/nodes.py`` appends the output parser's format instructions to the
reasoning and decision system prompts (:func:`format_instructions`), renders the prompts'
variables as ``src/utils.py`` does (:func:`summary_lines`, :func:`history_lines`,
:func:`pool_lines`; ``cur_round_num`` a plain integer), asks each modality agent one question per
call in free text (``src/subagents/*``) and repairs an unparsable reply with LangChain's
``OutputFixingParser`` (``prompts/master_format_fix.txt``). Every text is a data file under
``agents/prompts/`` naming its source.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from omnilab.agents.master.pool import MODALITIES
from omnilab.agents.templates import load_template, render

__all__ = [
    "DECISION_KEYS",
    "format_instructions",
    "history_lines",
    "plan",
    "pool_lines",
    "strip_think",
    "summary_lines",
    "text",
]

DECISION_KEYS = ("final_answer", "is_final", "suggestions_for_next_round")
"""The decision's fields in the release's order (its ``.dict()`` of the parsed model)."""

_NEWLINES = re.compile(r"[\r\n]+")


@cache
def _table() -> dict[str, str]:
    table: dict[str, str] = {}
    for line in load_template("master_release_texts").template.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            table[key.strip()] = value
    return table


def text(key: str) -> str:
    """The release's text ``key`` of ``prompts/master_release_texts.txt``."""
    return _table()[key]


def format_instructions(schema: Mapping[str, Any]) -> str:
    """``PydanticOutputParser.get_format_instructions()`` for ``schema``: without its top-level
    ``title`` and ``type``, as ``json.dumps`` writes it."""
    reduced = {k: v for k, v in schema.items() if k not in ("title", "type")}
    return render("master_format_instructions", schema=json.dumps(reduced, ensure_ascii=False))


def _flat(value: str) -> str:
    # utils.py: re.sub(r'[\r\n]+', r'\\n', raw.strip()) - line breaks become the two characters.
    return _NEWLINES.sub(r"\\n", value.strip())


def summary_lines(summaries: Mapping[str, str]) -> str:
    """``combine_summaries``: ``    - [video]: ...`` per modality with a summary."""
    return "\n".join(f"    - [{m}]: {_flat(summaries[m])}" for m in MODALITIES if summaries.get(m))


def pool_lines(modalities: Iterable[str]) -> str:
    """``combine_available_agent``: ``    - [video_agent]: ...`` per modality with a summary."""
    have = set(modalities)
    return "\n".join(f"    - [{m}_agent]: {text(f'agent.{m}')}" for m in MODALITIES if m in have)


def history_lines(
    results: Mapping[str, Sequence[Sequence[Mapping[str, str]]]],
    decisions: Sequence[Mapping[str, Any]],
) -> str:
    """``combine_historical_message``: each modality's results of every round so far (Python's
    ``str`` of the lists, as the release prints them), then the earlier decisions."""
    lines = []
    for m in MODALITIES:
        rounds = [list(map(dict, r)) for r in results.get(m, [])]
        if rounds:
            lines.append(f"    - Memory from {m} agent: {_flat(str(rounds))}")
    if decisions:
        ordered = [{k: d[k] for k in DECISION_KEYS if k in d} for d in decisions]
        lines.append(f"    - Suggestion from previous round: {ordered}")
    return "\n".join(lines)


def plan(
    instructions: Sequence[Mapping[str, Any]], runnable: Iterable[str]
) -> tuple[dict[str, list[str]], list[str]]:
    """The sub-questions each agent of ``runnable`` answers, as ``src/subagents/*_agent.py``
    read the reasoning result: an agent named twice answers only its last entry's questions
    (each entry overwrites ``result_list``), and an agent not in ``runnable`` (not in the pool,
    or without input: the release's agents return ``None`` then, the text agent included) is
    skipped without a call. Returns the questions by agent and the names skipped."""
    ready = set(runnable)
    kept: dict[str, list[str]] = {}
    skipped: list[str] = []
    for entry in instructions:
        name = str(entry.get("agent_name"))
        if name in ready:
            kept[name] = [str(q) for q in entry.get("questions", [])]
        elif name not in skipped:
            skipped.append(name)
    return kept, skipped


def strip_think(reply: str) -> str:
    """``postprocessing`` of the text agent's answers: a ``<think>...</think>`` part removed."""
    reply = reply.strip()
    if "<think>" in reply and "</think>" in reply:
        return re.sub(r"<think>.*?</think>", "", reply, flags=re.DOTALL)
    if "</think>" in reply:
        return re.sub(r"^.*</think>", "", reply, flags=re.DOTALL)
    return reply

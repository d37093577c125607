"""The master's replies under ``rules="release"`` read by langchain-core's own
``PydanticOutputParser`` (as huawei-lin/Agent-Omni ``src/nodes.py`` reads them), and the fixing
prompt's error text ``repr(OutputParserException)`` (``OutputFixingParser``). The lenient cases
are the ones the release accepts and omnilab's strict reader refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_master_kit import decision, model, plan, run_master
from test_master_release import ReleasePool, notes

from omnilab.agents import get_agent
from omnilab.agents.base import AgentConfigError
from omnilab.agents.master import lenient
from omnilab.agents.master.lenient import langchain_parse
from omnilab.agents.master.schemas import MasterDecisionStructure
from omnilab.agents.master.structured import _read

pytest.importorskip("langchain_core")

GOOD = decision("At noon.", True, "check")
LENIENT = {
    "text before a fenced block": f"Here it is:\n```json\n{json.dumps(GOOD)}\n```",
    "a raw newline in a string": json.dumps(GOOD).replace("At noon.", "At\nnoon."),
    "JSON cut off before its end": json.dumps(GOOD)[:-3],
    "text after the JSON": json.dumps(GOOD) + " I hope this helps.",
    '"true" for a bool': json.dumps(GOOD).replace("true", '"true"'),
}


@pytest.mark.parametrize("case", sorted(LENIENT))
def test_the_release_parser_accepts_what_the_strict_reader_refuses(case: str) -> None:
    text = LENIENT[case]
    schema = MasterDecisionStructure.model_json_schema()
    strict, problem = _read(text, schema, None, None)
    assert strict is None and problem
    value, error = langchain_parse(MasterDecisionStructure)(text)
    assert error is None and value is not None
    assert value["is_final"] is True and value["suggestions_for_next_round"] == ["check"]


def test_a_refused_reply_names_the_parser_exception() -> None:
    value, error = langchain_parse(MasterDecisionStructure)("no json here")
    assert value is None and error is not None
    assert error.startswith("OutputParserException('Invalid json output: no json here")
    _, missing = langchain_parse(MasterDecisionStructure)('{"final_answer": "x"}')
    assert missing is not None
    assert missing.startswith(
        "OutputParserException('Failed to parse MasterDecisionStructure from completion"
    )


def test_a_lenient_reply_needs_no_fixing_call_and_a_bad_one_quotes_the_repr(
    tmp_path: Path,
) -> None:
    fenced = "Sure.\n```json\n" + json.dumps(plan("time", text_agent=["When?"])) + "\n```"
    pool = ReleasePool(
        queues={
            "reasoning": [fenced],
            "decision": ["no json here", json.dumps(GOOD)],
            "fix": [json.dumps(GOOD)],
        }
    )
    run = run_master(tmp_path, model(pool, "pool"), [notes(tmp_path)], rules="release",
                     max_rounds=1)  # fmt: skip
    assert run.trajectory.answer == "At noon."
    fixes = [m for m in pool.seen if m[-1].text.startswith("Instructions:")]
    assert len(fixes) == 1  # the decision's; the fenced plan parsed as it was
    assert "Error:\n--------------\nOutputParserException('Invalid json output: no json here" in (
        fixes[0][0].text
    )


def test_without_langchain_core_the_release_rules_refuse_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lenient, "available", lambda: False)
    with pytest.raises(AgentConfigError, match=r"pip install 'omnilab\[release\]'"):
        get_agent("master", rules="release")
    get_agent("master")  # omnilab's rules need no langchain-core

"""Conversations fit the model's declared context window: the longest texts are cut (and the
cut recorded), or the call is not made and the run ends with one line saying why."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentkit import RunAgent, scripted
from deepsearch_kit import build_indexes, run_deepsearch, search

from omnilab.agents.fit import ContextTooSmallError, fit_messages, prompt_tokens
from omnilab.models.capabilities import Capabilities
from omnilab.models.errors import ErrorKind
from omnilab.models.providers.scripted import text
from omnilab.models.types import Message, ToolSpec
from omnilab.trajectory import ContextEdit, ErrorEvent

ROOT = Path(__file__).resolve().parents[2]
SPEECH = ROOT / "tests" / "data" / "speech" / "two_cities_part1.wav"
SMALL = Capabilities(tool_calls=True, json_schema=True, context_tokens=1024)
"""A text-only model with a small window, like the embedded one (4096) but smaller."""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_indexes(tmp_path_factory.mktemp("ds"))


def test_fit_cuts_the_longest_message_first_and_keeps_the_rest() -> None:
    messages = [
        Message.system("Be brief."),
        Message.user("transcript: " + "word " * 3000),
        Message.user("What is said?"),
    ]
    assert prompt_tokens(messages, []) > 1024
    edits = fit_messages(messages, [], window=1024, reply_tokens=200, model="m")
    assert list(edits) == [1]  # only the long one; the system prompt and question stay whole
    fitted = [edits.get(i, m) for i, m in enumerate(messages)]
    assert prompt_tokens(fitted, []) <= 1024 - 200
    assert "characters cut" in edits[1].text and edits[1].text.startswith("transcript: word")
    assert fit_messages(fitted, [], window=1024, reply_tokens=200, model="m") == {}


def test_fit_refuses_in_one_line_when_the_fixed_part_cannot_fit() -> None:
    tools = [ToolSpec(name=f"t{i}", description="x" * 400, parameters={}) for i in range(20)]
    with pytest.raises(ContextTooSmallError) as err:
        fit_messages([Message.user("Q?")], tools, window=1024, reply_tokens=256, model="local:x")
    message = str(err.value)
    assert "\n" not in message and "bigger context" in message and "1024" in message
    assert err.value.kind is ErrorKind.CONTEXT_LENGTH and err.value.model_failure


def _within(adapter: object, window: int, reply: int) -> None:
    for messages, tools, _config in adapter.requests:  # type: ignore[attr-defined]
        assert prompt_tokens(messages, tools) <= window - reply


@pytest.mark.slow  # speech recognition of a 21 s clip
def test_deepsearch_on_an_audio_task_fits_a_small_window(index: Path, tmp_path: Path) -> None:
    # A transcript of read speech, then search results: more than 1024 tokens unless cut.
    model, adapter = scripted(
        [search("text_search", "harbour"), text("<answer>x</answer>")], caps=SMALL
    )
    run = run_deepsearch(
        model, [SPEECH], "Who reads?", tmp_path, index_dir=index, generate={"max_tokens": 128}
    )
    assert run.saved.status == "answered", [e for e in run.saved.events if e.kind == "error"]
    _within(adapter, 1024, 128)
    edits = [e for e in run.saved.events if isinstance(e, ContextEdit)]
    assert edits and all("context window (1024 tokens)" in e.reason for e in edits)


@pytest.mark.slow  # speech recognition of a 21 s clip
def test_tir_audio_task_fits_and_a_window_too_small_stops_with_one_line(
    run_agent: RunAgent,
) -> None:
    # The transcript of the speech clip with tir's tools is about 1,200 tokens: cut to fit 1,280.
    window = Capabilities(tool_calls=True, context_tokens=1280)
    model, adapter = scripted([text("<answer>x</answer>")], caps=window)
    run = run_agent(model, [SPEECH], "What is said?", generate={"max_tokens": 128})
    assert run.saved.status == "answered"
    _within(adapter, 1280, 128)
    (edit,) = [e for e in run.saved.events if isinstance(e, ContextEdit)]
    cut = edit.replacement[0].text
    assert "## audio_1 (two_cities_part1.wav)" in cut and "characters cut" in cut  # the digest
    sent = adapter.requests[0][0][-1].text  # what the model got: the digest cut, the question whole
    assert "characters cut" in sent and "What is said?" in sent
    # 1,024 tokens cannot hold tir's system prompt and tool list with room for the reply.
    model, adapter = scripted([text("<answer>x</answer>")], caps=SMALL)
    stopped = run_agent(model, [SPEECH], "What is said?", generate={"max_tokens": 128})
    assert stopped.saved.status == "error" and adapter.requests == []  # no call was made
    (error,) = [e for e in stopped.saved.events if isinstance(e, ErrorEvent)]
    assert error.error_kind == "model" and "bigger context" in error.message
    assert "\n" not in error.message

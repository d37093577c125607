"""``omnilab export sft``: every format's examples equal the trajectory's contexts, the loss mask
covers exactly the agent's own replies (OmniGAIA eq. 2), filters, per-call examples for purged
contexts, ``--check`` and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from trainkit import cli, omnilab

from omnilab.content import Image, Text
from omnilab.models import Message
from omnilab.train.chat_formats import sharegpt_row
from omnilab.train.examples import examples
from omnilab.train.runs import RecordFilter, iter_records
from omnilab.trajectory import CallContext, read_trajectory


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def export(run: Path | list[Path], fmt: str, out: Path, *extra: str, code: int = 0) -> str:
    runs = run if isinstance(run, list) else [run]
    return cli("export", "sft", *runs, "--format", fmt, "--out", out, *extra, code=code)


def agent_calls(run: Path, task: str) -> list[CallContext]:
    traj = read_trajectory(run / "trajectories" / f"{task}.jsonl")
    return [c for c in traj.contexts() if c.role == "agent"]


def rendered(message: Message) -> str | list[dict[str, Any]]:
    """How the ``openai`` format writes a message's content: text joined by newlines; images of
    user messages as ``image_url`` parts; other media as ``<kind: path>`` text."""
    if message.role == "user" and not all(isinstance(p, Text) for p in message.content):
        return [
            {"type": "text", "text": p.text}
            if isinstance(p, Text)
            else {"type": "image_url", "image_url": {"url": str(p.path)}}
            for p in message.content
        ]
    return "\n".join(
        p.text if isinstance(p, Text) else f"<{p.type}: {p.path}>" for p in message.content
    )


def test_openai_one_example_per_tir_rollout_equal_to_its_context(
    tir_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "sft.jsonl"
    said = export(tir_run, "openai", out)
    assert f"wrote 3 rows from 3 rollouts to {out}" in said
    written = rows(out)
    for i, row in enumerate(written):
        calls = agent_calls(tir_run, f"q{i}")
        last = calls[-1]
        assert last.output is not None
        expected = [(m.role, rendered(m)) for m in [*last.messages, last.output.message]]
        assert [(m["role"], m["content"]) for m in row["messages"]] == expected
        # The mask: weight on assistant messages only, 1 on each of the agent's two replies.
        weights = [(m["role"], m.get("weight")) for m in row["messages"]]
        assert weights == [
            ("system", None), ("user", None), ("assistant", 1), ("tool", None), ("assistant", 1)
        ]  # fmt: skip
        call = row["messages"][2]["tool_calls"][0]
        assert call["function"] == {"name": "read_image", "arguments": '{"image_ids": ["image_1"]}'}
        assert row["messages"][3]["tool_call_id"] == call["id"]
        assert row["tools"][0]["function"]["name"] == "read_image"
        image = row["messages"][1]["content"][2]
        assert image["type"] == "image_url" and Path(image["image_url"]["url"]).is_file()


def inject_assistant_message(trajectory: Path, text: str) -> None:
    """Rewrite a saved trajectory as if the scaffold had put an assistant message of its own
    into the context just before the second model call (a prefill, a forced turn)."""
    lines = trajectory.read_text(encoding="utf-8").splitlines()
    calls = [i for i, line in enumerate(lines) if json.loads(line).get("kind") == "model_call"]
    second = json.loads(lines[calls[1]])
    second["sent"]["prefix"] += 1  # the call was sent the injected message too
    added = {
        "id": "injected", "timestamp": second["timestamp"], "parent_id": None,
        "context_id": second["context_id"], "kind": "message",
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                    "tool_calls": [], "tool_call_id": None},
    }  # fmt: skip
    lines[calls[1]] = json.dumps(second)
    lines.insert(calls[1], json.dumps(added))
    trajectory.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_scaffold_written_assistant_message_is_not_trained(tir_run: Path, tmp_path: Path) -> None:
    """Only replies the model returned carry loss: an assistant message the scaffold put into
    the context itself is context, even though its role is assistant."""
    inject_assistant_message(tir_run / "trajectories" / "q1.jsonl", "I will now answer.")
    calls = agent_calls(tir_run, "q1")
    assert calls[1].messages[-1].text == "I will now answer."
    out = tmp_path / "sft.jsonl"
    export(tir_run, "openai", out, "--task", "q1")
    (row,) = rows(out)
    assert [(m["role"], m.get("weight")) for m in row["messages"]] == [
        ("system", None), ("user", None), ("assistant", 1), ("tool", None),
        ("assistant", 0), ("assistant", 1),
    ]  # fmt: skip
    assert row["messages"][4]["content"] == "I will now answer."


def test_reasoning_goes_before_the_reply_only_when_asked(tir_run: Path, tmp_path: Path) -> None:
    plain, thought = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    export(tir_run, "openai", plain)
    export(tir_run, "openai", thought, "--reasoning")
    assert rows(plain)[0]["messages"][-1]["content"] == "<answer>blue</answer>"
    assert (
        rows(thought)[0]["messages"][-1]["content"]
        == "<think>\nIt looks blue.\n</think>\n\n<answer>blue</answer>"
    )


def test_per_call_gives_each_call_its_exact_input_and_trains_its_reply_only(
    tir_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "calls.jsonl"
    export(tir_run, "openai", out, "--per-call", "--task", "q1")
    first, second = rows(out)
    calls = agent_calls(tir_run, "q1")
    assert len(first["messages"]) == len(calls[0].messages) + 1
    assert len(second["messages"]) == len(calls[1].messages) + 1
    assert [m.get("weight") for m in second["messages"]] == [None, None, 0, None, 1]
    assert [m.get("weight") for m in first["messages"]] == [None, None, 1]


def test_purged_ota_contexts_give_one_example_per_call(ota_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "ota.jsonl"
    export(ota_run, "openai", out, "--task", "mcq")
    written = rows(out)
    calls = agent_calls(ota_run, "mcq")
    assert len(written) == len(calls) == 3
    for row, call in zip(written, calls, strict=True):
        assert call.output is not None
        assert [m["role"] for m in row["messages"]] == [
            *(m.role for m in call.messages),
            "assistant",
        ]
        assert [m.get("weight") for m in row["messages"] if m["role"] == "assistant"][-1] == 1
        assert sum(m.get("weight", 0) for m in row["messages"]) == 1
        assert row["messages"][-1]["content"] == call.output.message.text
    # the third call saw the frames purged into their placeholder: so does its example
    third_user = written[2]["messages"][3]["content"]
    assert "[MEDIA OMITTED - Refer to your Observation]" in third_user
    assert {"type": "text", "text": "(T: 0.00s)"} in written[1]["messages"][3]["content"]


def test_sharegpt_alternates_turns_places_media_markers_and_prints_dataset_info(
    tir_run: Path, ota_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "sg.jsonl"
    said = export([tir_run, ota_run], "sharegpt", out, "--name", "mine", "--check")
    info = json.loads(said[said.index("{") :])
    assert info["mine"]["file_name"] == "sg.jsonl"
    assert info["mine"]["formatting"] == "sharegpt"
    assert info["mine"]["tags"]["function_tag"] == "function_call"
    assert "mask_history" in said  # per-call rows: LLaMA-Factory must train the last turn only
    written = rows(out)
    tir_row = written[0]
    assert [t["from"] for t in tir_row["conversations"]] == [
        "human", "function_call", "observation", "gpt"
    ]  # fmt: skip
    assert json.loads(tir_row["conversations"][1]["value"]) == {
        "name": "read_image",
        "arguments": {"image_ids": ["image_1"]},
    }
    assert tir_row["conversations"][0]["value"].count("<image>") == 1
    assert tir_row["conversations"][2]["value"].count("<image>") == 1
    assert len(tir_row["images"]) == 2 and tir_row["system"].startswith("You are")
    assert json.loads(tir_row["tools"])[0]["name"] == "read_image"
    # ota's second call: the frames turn holds two <image> markers, the two frames in order
    frames_row = written[4]
    assert frames_row["conversations"][2]["value"].count("<image>") == 2
    assert len(frames_row["images"]) == 2 and frames_row["audios"] == []
    for row in written:
        sides = [t["from"] for t in row["conversations"]]
        assert all(s in ("human", "observation") for s in sides[0::2])
        assert all(s in ("gpt", "function_call") for s in sides[1::2])


def test_sharegpt_joins_consecutive_prompt_side_messages(tir_run: Path) -> None:
    record = next(iter_records([tir_run]))
    example = next(examples(record))
    notice = Message.user("Step 2 of 5.", Image(path=Path("/x/y.png")))
    messages = [*example.messages[:4], notice, example.messages[4]]
    row = sharegpt_row(
        type(example)(
            record=record,
            context_id=example.context_id,
            messages=messages,
            trained=[*example.trained[:4], False, True],
            tools=example.tools,
            calls=example.calls,
        )
    )
    sides = [t["from"] for t in row["conversations"]]
    assert sides == ["human", "function_call", "observation", "gpt"]
    assert row["conversations"][2]["value"].endswith("Step 2 of 5.\n<image>")
    assert row["images"][-1] == "/x/y.png"


def test_trl_messages_for_whole_contexts_prompt_completion_once_any_is_per_call(
    tir_run: Path, ota_run: Path, tmp_path: Path
) -> None:
    whole, mixed = tmp_path / "whole.jsonl", tmp_path / "mixed.jsonl"
    export(tir_run, "trl", whole, "--check")
    row = rows(whole)[0]
    assert [m["role"] for m in row["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert row["messages"][2]["tool_calls"][0]["function"]["arguments"] == {
        "image_ids": ["image_1"]
    }
    assert row["messages"][1]["content"][2] == {"type": "image"} and len(row["images"]) == 2
    export([tir_run, ota_run], "trl", mixed, "--check")
    written = rows(mixed)
    assert all(set(r) >= {"prompt", "completion"} and "messages" not in r for r in written)
    assert len(written) == 2 * 3 + 3 + 2  # every call of every rollout
    calls = agent_calls(tir_run, "q0")
    assert calls[1].output is not None
    assert written[1]["completion"] == [{"role": "assistant", "content": "<answer>blue</answer>"}]
    assert len(written[1]["prompt"]) == len(calls[1].messages)


def test_filters_keep_what_they_say(tir_run: Path, ota_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "f.jsonl"
    export([tir_run, ota_run], "openai", out, "--correct-only", "--agent", "tir")
    assert "wrote 2 rows from 2 rollouts" in export(
        [tir_run, ota_run], "openai", out, "--correct-only", "--agent", "tir"
    )
    said = export([tir_run, ota_run], "openai", out, "--task", "q1", "--task", "mcq")
    assert "from 2 rollouts" in said and "--task dropped 3" in said
    said = export(tir_run, "openai", out, "--min-score", "0.5")
    assert "from 2 rollouts" in said and "--min-score dropped 1" in said
    said = export(ota_run, "openai", out, "--max-turns", "2")
    assert "from 1 rollouts" in said and "--max-turns dropped 1" in said
    picked = {r.task_id for r in iter_records([tir_run], RecordFilter(correct_only=True))}
    assert picked == {"q1", "q2"}


def test_bad_input_gets_one_line(tir_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    said = export(tir_run, "alpaca", out, code=1)
    assert "unknown format 'alpaca'" in said and "Traceback" not in said
    said = export(tmp_path, "openai", out, code=1)
    assert "is not a run folder" in said and "Traceback" not in said
    said = export(tir_run, "openai", out, "--correct-only", "--task", "q0", code=1)
    assert "no examples to export" in said and "--task dropped 2" in said
    assert "--correct-only dropped 1" in said and not out.exists()
    proc = omnilab("export", "sft", tmp_path, "--format", "openai", "--out", out, cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "not a run folder" in proc.stderr


def test_check_reloads_with_datasets(tir_run: Path, tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    out = tmp_path / "a [b]" / "c.jsonl"  # datasets reads names as glob patterns
    said = export(tir_run, "openai", out, "--check")
    assert "check: round trip: 3 rows read back unchanged" in said
    assert "check: datasets.load_dataset('json'): 3 rows" in said


def test_master_runs_export_every_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run with no ``agent`` call (``master``: a master role and per-modality roles) exports
    each of its contexts, each one's replies trained."""
    monkeypatch.chdir(tmp_path)  # no omnilab.toml of the repository's
    item = {
        "id": "q0",
        "question": "Which colour?",
        "options": ["A. red", "B. blue"],
        "answer": "B",
    }
    data = tmp_path / "mcq.jsonl"
    data.write_text(json.dumps(item) + "\n", encoding="utf-8")
    plan = {
        "user_intent": "colour",
        "agent_instructions": [{"agent_name": "text_agent", "questions": ["Which colour?"]}],
    }
    decided = {"final_answer": "B", "is_final": True, "suggestions_for_next_round": ["none"]}
    script = tmp_path / "pool.json"
    steps = [plan, {"answers": ["blue"]}, decided]
    script.write_text(json.dumps([json.dumps(s) for s in steps]), encoding="utf-8")
    run = tmp_path / "master-run"
    cli(
        "eval", "mcq", "--data", data, "--agent", "master", "--model", f"scripted:{script}",
        "--out", run, "--no-progress", "-c", "1", "--no-cache",
    )  # fmt: skip
    traj = read_trajectory(run / "trajectories" / "q0.jsonl")
    contexts = traj.contexts()
    assert contexts and not any(c.role == "agent" for c in contexts)
    out = tmp_path / "m.jsonl"
    export(run, "openai", out)
    written = rows(out)
    by_context: dict[str | None, int] = {}
    for c in contexts:
        by_context[c.context_id] = by_context.get(c.context_id, 0) + 1
    assert len(written) == len(by_context) >= 2  # each context only grew: one example each
    replies = [c.output.message.text for c in contexts if c.output is not None]
    trained = [m["content"] for r in written for m in r["messages"] if m.get("weight") == 1]
    assert sorted(trained) == sorted(replies)

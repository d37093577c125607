"""``omnilab export sft --format omniagent-steps``: rows of a scripted ``ota`` run match the field
names, types and nesting of OmniAgent's released SFT example (side by side with a released row,
``tests/data/omniagent_release_sft_row.json``), reproduce every call's purged context, and are the
rows the release's SFT filter keeps: no refused turn, one winning rollout per task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainkit import cli

from omnilab.content import Text
from omnilab.trajectory import read_trajectory

# The schema of one row of OmniAgent's released SFT file, github.com/HarryHsing/OmniAgent,
# data/example_train_sft.jsonl (commit e4aacfcb), written out by hand from its first rows:
# field -> type, nested dicts spelled out. ``done`` and ``is_action_valid`` are the strings
# "True"/"False" there, and ``env_config.actual_max_frames`` is a string ("50").
STEP_ROW: dict[str, Any] = {
    "question_id": str,
    "traj_id": str,
    "step": int,
    "raw_input": list,
    "output": str,
    "step_reward": float,
    "done": str,
    "extra_info": {
        "video": str,
        "fps": float,
        "duration_seconds": float,
        "has_audio": bool,
        "question_type": str,
        "question": str,
        "answer": str,
        "options": list,
        "mode": str,
        "max_steps": int,
        "won": bool,
        "is_action_valid": str,
        "reward": float,
        "token_stats": {
            "final_history_tokens": int,
            "total_assistant_tokens": int,
            "avg_assistant_tokens": float,
            "max_prompt_limit": int,
        },
        "env_config": {
            "actual_max_steps": int,
            "actual_max_frames": str,
            "actual_max_audio": float,
            "actual_max_clip": float,
            "video_duration": float,
        },
    },
    "episode_reward": float,
}
# raw_input: [{"role": "system"|"user"|"assistant", "content": [part, ...]}], a part being
# {"type": "text", "text": ...} or {"type": "image", "image": path} / {"type": "audio", "audio": ...}.


def matches(value: Any, schema: Any, where: str = "row") -> list[str]:
    """Where ``value`` differs from ``schema`` (same keys, same types, recursively)."""
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            return [f"{where} is not an object"]
        if set(value) != set(schema):
            return [f"{where} keys differ: {sorted(set(value) ^ set(schema))}"]
        return [p for k in schema for p in matches(value[k], schema[k], f"{where}.{k}")]
    # bool is an int in Python: compare exact types, as JSON readers tell them apart
    return [] if type(value) is schema else [f"{where} is {type(value).__name__}"]


def part_ok(part: dict[str, Any]) -> bool:
    if part["type"] == "text":
        return set(part) == {"type", "text"} and isinstance(part["text"], str)
    return set(part) == {"type", part["type"]} and isinstance(part[part["type"]], str)


def test_rows_match_the_released_schema_and_reproduce_purged_contexts(
    ota_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "steps.jsonl"
    said = cli(
        "export", "sft", ota_run, "--format", "omniagent-steps", "--keep-all", "--out", out,
        "--check",
    )  # fmt: skip
    assert "wrote 5 rows from 2 rollouts" in said and "omniagent-steps rules" in said
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if row["question_id"] == "tr":  # a TR answer is a list of spans, options null
            info = row["extra_info"]
            assert info["answer"] == [[2.0, 6.0]] and info["options"] is None
            row = {**row, "extra_info": {**info, "answer": "", "options": []}}
        assert matches(row, STEP_ROW) == []
        for message in row["raw_input"]:
            assert set(message) == {"role", "content"}
            assert all(part_ok(p) for p in message["content"])

    mcq = [r for r in rows if r["question_id"] == "mcq"]
    traj = read_trajectory(ota_run / "trajectories" / "mcq.jsonl")
    calls = [c for c in traj.contexts() if c.role == "agent"]
    assert [r["step"] for r in mcq] == [1, 2, 3] and len(calls) == 3
    for row, call in zip(mcq, calls, strict=True):
        assert call.output is not None
        assert row["output"] == call.output.message.text
        assert row["traj_id"] == traj.header.run_id
        expected = [
            {
                "role": m.role,
                "content": [
                    {"type": "text", "text": p.text}
                    if isinstance(p, Text)
                    else {"type": p.type, p.type: str(p.path)}
                    for p in m.content
                ],
            }
            for m in call.messages
        ]
        assert row["raw_input"] == expected
    # step 2 still has the frames; step 3 holds their placeholder and the audio instead
    assert [p["type"] for p in mcq[1]["raw_input"][3]["content"]].count("image") == 2
    purged = mcq[2]["raw_input"][3]["content"]
    assert [p["type"] for p in purged] == ["text"]  # the notice went with the media
    assert purged[0]["text"].endswith("[MEDIA OMITTED - Refer to your Observation]")
    assert [p["type"] for p in mcq[2]["raw_input"][5]["content"]] == ["text", "audio", "text"]

    # rewards and flags as the release writes them: the episode's reward on its last step
    assert [(r["done"], r["step_reward"], r["extra_info"]["won"]) for r in mcq] == [
        ("False", 0.0, False), ("False", 0.0, False), ("True", 1.0, True)
    ]  # fmt: skip
    assert all(r["episode_reward"] == 1.0 for r in mcq)
    info = mcq[0]["extra_info"]
    assert info["video"] == "videos/Src/v.mp4" and info["question_type"] == "MCQ_Holmes"
    assert info["options"] == ["A. a cat", "B. a counter"] and info["answer"] == "B"
    assert info["has_audio"] is True and abs(info["duration_seconds"] - 8.0) < 0.3
    assert info["fps"] == 5.0 and info["mode"] == "OmniAgent"
    assert info["env_config"]["actual_max_frames"] == "60"
    assert info["max_steps"] == info["env_config"]["actual_max_steps"] > 0
    # the reply that was not JSON is an invalid action
    tr = [r for r in rows if r["question_id"] == "tr"]
    assert [r["extra_info"]["is_action_valid"] for r in tr] == ["False", "True"]
    assert tr[0]["output"] == "not json" and tr[1]["done"] == "True"


def test_the_release_filter_drops_refused_turns_and_keeps_one_winner(
    ota_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "steps.jsonl"
    said = cli("export", "sft", ota_run, "--format", "omniagent-steps", "--out", out)
    assert "wrote 4 rows from 2 rollouts" in said
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    # the refused "not json" turn of tr has no row; its answer turn keeps its step number
    tr = [r for r in rows if r["question_id"] == "tr"]
    assert [r["step"] for r in tr] == [2] and tr[0]["output"] != "not json"
    assert all(r["extra_info"]["is_action_valid"] == "True" for r in rows)
    # --with-refused keeps it (the winners only, still)
    said = cli(
        "export", "sft", ota_run, "--format", "omniagent-steps", "--with-refused", "--out", out
    )
    assert "wrote 5 rows" in said
    # the same run twice: one winning rollout per task
    said = cli("export", "sft", ota_run, ota_run, "--format", "omniagent-steps", "--out", out)
    assert "wrote 4 rows from 4 rollouts" in said and "release filter" in said


def test_only_valid_steps_for_the_chat_formats(ota_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "chat.jsonl"
    cli("export", "sft", ota_run, "--format", "openai", "--out", out)
    everything = out.read_text(encoding="utf-8")
    assert "not json" in everything
    said = cli("export", "sft", ota_run, "--format", "openai", "--valid-only", "--out", out)
    assert "wrote 4 rows" in said
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    trained = [m for r in rows for m in r["messages"] if m.get("weight") == 1]
    assert len(trained) == 4 and all("not json" not in json.dumps(m) for m in trained)


def test_an_exported_row_side_by_side_with_a_released_row(ota_run: Path, tmp_path: Path) -> None:
    released = json.loads(
        (Path(__file__).parents[1] / "data" / "omniagent_release_sft_row.json").read_text("utf-8")
    )["row"]
    out = tmp_path / "steps.jsonl"
    cli("export", "sft", ota_run, "--format", "omniagent-steps", "--out", out)
    ours = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert ours["question_id"] == "mcq" and ours["step"] == released["step"] == 1

    def layout(value: Any) -> Any:
        """Keys, in order, and exact types, recursively; a message list by roles and parts."""
        if isinstance(value, dict):
            return [(k, layout(v)) for k, v in value.items()]
        if isinstance(value, list) and value and isinstance(value[0], dict):
            return [layout(v) for v in value]
        return type(value).__name__

    assert layout(ours) == layout(released)
    # the first step's input: the system prompt (one text part), then the first message and
    # its notice as two text parts
    assert [(m["role"], [p["type"] for p in m["content"]]) for m in ours["raw_input"]] == [
        ("system", ["text"]),
        ("user", ["text", "text"]),
    ]
    assert ours["raw_input"][1]["content"][1]["text"].lstrip().startswith("[NOTICE]")

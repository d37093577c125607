"""``omnilab export rl``: prompt rows from a dataset for OmniAgent's RL file and for verl, with
media probed for fps, duration and sound; parquet when pyarrow is installed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from trainkit import cli

# One row of OmniAgent's released RL file, github.com/HarryHsing/OmniAgent,
# data/example_train_rl.jsonl (commit e4aacfcb): field -> type, in the file's order.
RL_ROW: dict[str, Any] = {
    "prompt": list,
    "question_type": str,
    "question": str,
    "answer": str,
    "options": list,
    "video": str,
    "fps": float,
    "duration_seconds": float,
    "has_audio": bool,
    "data_source": str,
    "ability": str,
    "extra_info": dict,
}


def rl(data: Path, fmt: str, out: Path, *extra: str | Path, code: int = 0) -> str:
    return cli(
        "export", "rl", data, "--dataset", "omniagent", "--format", fmt, "--out", out, *extra,
        code=code,
    )  # fmt: skip


def test_omniagent_rows_follow_the_release(ota_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "rl.jsonl"
    said = rl(ota_data, "omniagent", out, "--media-root", tmp_path / "media", "--check")
    assert "wrote 2 prompt rows" in said and "omniagent rules: every row passes" in said
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        assert list(row) == list(RL_ROW)
        assert {k: type(v) for k, v in row.items()} == RL_ROW
        assert row["prompt"] == [{"content": "", "role": "user"}]
        assert (row["data_source"], row["ability"]) == ("agent", "agent")
        # probed from the file: 8 s at 5 fps with a sound track
        assert row["fps"] == 5.0 and abs(row["duration_seconds"] - 8.0) < 0.3
        assert row["has_audio"] is True and row["video"] == "videos/Src/v.mp4"
    mcq, tr = rows
    assert (mcq["question_type"], mcq["answer"]) == ("MCQ_Holmes", "B")
    assert mcq["options"] == ["A. a cat", "B. a counter"]
    assert (tr["question_type"], tr["answer"], tr["options"]) == ("TR", "[[2.0, 6.0]]", [])
    assert mcq["extra_info"] == {"task_id": "mcq", "index": 0}


def test_verl_rows_in_parquet_and_jsonl(ota_data: Path, tmp_path: Path) -> None:
    jsonl = tmp_path / "verl.jsonl"
    rl(ota_data, "verl", jsonl, "--media-root", tmp_path / "media", "--data-source", "omni")
    rows = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    mcq = rows[0]
    assert mcq["data_source"] == "omni" and mcq["ability"] == "mcq"
    assert mcq["reward_model"] == {"style": "rule", "ground_truth": "B"}
    prompt = mcq["prompt"]
    assert [m["role"] for m in prompt] == ["user"]
    assert prompt[0]["content"].startswith("<video>What is shown?")
    assert "A. a cat" in prompt[0]["content"]
    assert len(mcq["videos"]) == 1 and Path(mcq["videos"][0]).is_file()
    assert mcq["extra_info"]["fps"] == 5.0 and mcq["extra_info"]["task_id"] == "mcq"
    pytest.importorskip("pyarrow")
    parquet = tmp_path / "verl.parquet"
    said = rl(ota_data, "verl", parquet, "--media-root", tmp_path / "media", "--check")
    import pyarrow.parquet as pq

    table = pq.read_table(parquet).to_pylist()
    assert [r["reward_model"]["ground_truth"] for r in table] == ["B", "[[2.0, 6.0]]"]
    assert table[0]["prompt"] == [{"role": "user", "content": prompt[0]["content"]}]
    assert "round trip: 2 rows" in said


def test_bad_input_gets_one_line(ota_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    assert "unknown format 'grpo'" in rl(ota_data, "grpo", out, code=1)
    assert "is not a file" in rl(tmp_path / "none.jsonl", "verl", out, code=1)
    said = rl(ota_data, "verl", out, "--media-root", tmp_path / "elsewhere", code=1)
    assert "v.mp4" in said and not out.exists()

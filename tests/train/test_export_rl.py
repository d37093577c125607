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


def _mixed(tmp_path: Path, image_file: Path, video: Path, audio_file: Path, first: str) -> Path:
    """An OmniGAIA file with an image item, a video item and an audio-only item, ``first`` first;
    its paths are relative to the media folder (pass ``--media-root``, as paths from data must lie
    beneath their root)."""
    files = {"image": image_file, "video": video, "audio": audio_file}
    assert len({f.parent for f in files.values()}) == 1
    kinds = [first, *(k for k in files if k != first)]
    items = [
        {"id": f"{k}-item", "question": f"What is in the {k}?", "answer": "x",
         "omni_modal_input": [{"type": k, "id": f"{k}_1", "path": files[k].name}]}
        for k in kinds
    ]  # fmt: skip
    data = tmp_path / f"mixed-{first}.json"
    data.write_text(json.dumps(items), encoding="utf-8")
    return data


@pytest.mark.parametrize("first", ["image", "video"])
def test_verl_parquet_keeps_every_rows_media(
    tmp_path: Path, image_file: Path, video: Path, audio_file: Path, first: str
) -> None:
    """Issue 44.1: the parquet's columns come from every row, not only the first."""
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    data = _mixed(tmp_path, image_file, video, audio_file, first)
    out = tmp_path / "train.parquet"
    said = cli(
        "export", "rl", data, "--dataset", "omnigaia", "--format", "verl", "--out", out, "--check",
        "--media-root", video.parent,
    )  # fmt: skip
    assert "round trip: 3 rows read back unchanged" in said
    rows = {r["extra_info"]["task_id"]: r for r in pq.read_table(out).to_pylist()}
    assert rows["video-item"]["videos"] == [str(video.resolve())]
    assert rows["image-item"]["images"] == [str(image_file.resolve())]
    assert rows["video-item"]["images"] is None and rows["image-item"]["videos"] is None
    assert rows["audio-item"]["audios"] == [str(audio_file.resolve())]


def test_check_compares_every_row_and_counts_markers(tmp_path: Path) -> None:
    """Issue 44.1: a row that reads back different, or whose markers and media differ, fails."""
    pytest.importorskip("pyarrow")
    from omnilab.bench.errors import BenchError
    from omnilab.train.files import check_file, write_rows

    def row(content: str, **media: list[str]) -> dict[str, Any]:
        rm = {"style": "rule", "ground_truth": "x"}
        prompt = [{"role": "user", "content": content}]
        return {"data_source": "d", "prompt": prompt, "ability": "a", "reward_model": rm, **media}

    out = tmp_path / "t.parquet"
    good = [row("<image>q", images=["/a.png"]), row("<video>q", videos=["/b.mp4"])]
    write_rows(good, out)
    assert "round trip: 2 rows read back unchanged" in check_file(out, "verl", good)[0]
    meant = [good[0], row("<video>q", videos=["/other.mp4"])]
    with pytest.raises(BenchError, match="row 2 differs from what was written"):
        check_file(out, "verl", meant)
    bad = [row("<video>q")]
    write_rows(bad, out)
    with pytest.raises(BenchError, match="<video> markers and videos entries differ"):
        check_file(out, "verl", bad)


def test_verl_audio_only_item_is_audio(
    tmp_path: Path, image_file: Path, video: Path, audio_file: Path
) -> None:
    """Issue 44.13: an audio-only item's file is ``extra_info.audio`` with an ``<audio>`` marker;
    paths are absolute whatever the working folder."""
    data = _mixed(tmp_path, image_file, video, audio_file, "audio")
    out = tmp_path / "train.jsonl"
    cli(
        "export", "rl", data, "--dataset", "omnigaia", "--format", "verl", "--out", out, "--check",
        "--media-root", audio_file.parent,
    )  # fmt: skip
    audio = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert audio["extra_info"]["video"] is None and audio["extra_info"]["audio"]
    assert audio["prompt"][0]["content"].startswith("<audio>")
    assert audio["audios"] == [str(audio_file.resolve())]
    assert Path(audio["audios"][0]).is_absolute()


def test_check_on_an_empty_file_says_0_rows(tmp_path: Path) -> None:
    """Issue 44.4: ``--check`` on an empty export says so instead of a loader's StopIteration."""
    from omnilab.train.files import check_file, write_rows

    out = tmp_path / "empty.jsonl"
    write_rows([], out)
    assert any("0 rows" in line for line in check_file(out, "trl-dpo", []))

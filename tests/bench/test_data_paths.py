"""Issue 42, reproduction 4: a dataset's file list is data, not the operator's word. A path in it
lies beneath the media root (else a one-line error naming the item, unless
``--allow-outside-media-root``), and the file is opened beneath it through no link: staged into
the workspace, probed, sent to the model."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnilab.agents.base import AgentConfigError, AgentTask
from omnilab.agents.coder.staging import stage_inputs
from omnilab.bench import load_dataset
from omnilab.bench.agent_task import agent_task
from omnilab.bench.errors import DatasetError
from omnilab.cli.main import app
from omnilab.media.errors import MediaError

SECRET = b"root:$6$hash:19000:0:99999:7:::\n"

# One record per adapter whose file list names ``{path}``.
RECORDS: dict[str, Any] = {
    "omnigaia": lambda p: {"id": "g", "question": "q?", "answer": "a", "omni_modal_input": [p]},
    "omnigaia-inputs": lambda p: {
        "id": "g",
        "question": "q?",
        "answer": "a",
        "omni_modal_input": [{"type": "audio", "id": "audio_1", "path": p}],
    },
    "omniagent": lambda p: {
        "id": "o",
        "video": p,
        "question_type": "MCQ",
        "question": "q?",
        "options": ["A. x", "B. y"],
        "answer": "A",
    },
    "mcq": lambda p: {
        "id": "m",
        "question": "q?",
        "options": ["x", "y"],
        "answer": "A",
        "files": [p],
    },
    "jsonl": lambda p: {"id": "j", "question": "q?", "answer": "a", "files": [p]},
    "omni-deepsearch": lambda p: {"id": "d", "question": "q?", "answer": "a", "audio": [p]},
}
ESCAPES = [
    "/etc/shadow",
    "../../../opt/x/rootonly/key",
    "../secret.wav",
    "sub/../../secret.wav",
    "a/b/c/d/../../../../../secret.wav",
    "~/secret.wav",
]


def write(folder: Path, adapter: str, path: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "tasks.jsonl"
    data.write_text(json.dumps(RECORDS[adapter](path)) + "\n", encoding="utf-8")
    return data


def dataset(adapter: str) -> str:
    return adapter.split("-inputs")[0]


@pytest.fixture()
def secret(tmp_path: Path) -> Path:
    target = tmp_path / "secret.wav"
    target.write_bytes(SECRET)
    target.chmod(0o600)
    return target


@pytest.mark.parametrize("given", ESCAPES)
@pytest.mark.parametrize("adapter", sorted(RECORDS))
def test_every_adapter_refuses_paths_outside_the_media_root(
    tmp_path: Path, adapter: str, given: str
) -> None:
    data = write(tmp_path / "ds" / "deep", adapter, given)
    with pytest.raises(DatasetError) as refused:
        load_dataset(dataset(adapter), data)
    message = str(refused.value)
    assert "\n" not in message and "item" in message and "--allow-outside-media-root" in message
    assert repr(given) in message


@pytest.mark.parametrize("adapter", sorted(RECORDS))
def test_the_flag_takes_the_paths_as_written(tmp_path: Path, adapter: str, secret: Path) -> None:
    data = write(tmp_path / "ds", adapter, str(secret))
    loaded = load_dataset(dataset(adapter), data, allow_outside_media_root=True)
    (task,) = loaded.tasks
    assert [f.path for f in task.files] == [secret] and task.files[0].root is None


def test_absolute_paths_written_out_beneath_the_root_are_accepted(tmp_path: Path) -> None:
    media = tmp_path / "media"
    (media / "v").mkdir(parents=True)
    (media / "v" / "a.wav").write_bytes(b"RIFF")
    data = write(tmp_path / "ds", "jsonl", str(media / "v" / "a.wav"))
    (task,) = load_dataset("jsonl", data, media_root=media).tasks
    (f,) = task.files
    assert f.path == media / "v" / "a.wav" and f.root == media
    assert not load_dataset("jsonl", data, media_root=media).missing_media


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_a_link_beneath_the_root_is_neither_staged_nor_probed(
    tmp_path: Path, secret: Path, depth: int
) -> None:
    media = tmp_path / "media"
    folder = media.joinpath(*[f"d{i}" for i in range(depth)])
    folder.mkdir(parents=True)
    (folder / "clip.wav").symlink_to(secret)
    rel = "/".join([*[f"d{i}" for i in range(depth)], "clip.wav"])
    data = write(tmp_path / "ds", "jsonl", rel)
    loaded = load_dataset("jsonl", data, media_root=media)
    (task,) = loaded.tasks
    assert loaded.missing_media  # a link is not a file of the dataset's
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(AgentConfigError, match="not a readable file"):
        stage_inputs(agent_task(task), ws)
    assert not (ws / "inputs" / "clip.wav").exists()
    with pytest.raises(MediaError):
        task.files[0].probe()


def test_a_folder_link_on_the_way_is_not_followed(tmp_path: Path, secret: Path) -> None:
    media = tmp_path / "media"
    media.mkdir()
    (media / "up").symlink_to(tmp_path)
    data = write(tmp_path / "ds", "jsonl", "up/secret.wav")
    (task,) = load_dataset("jsonl", data, media_root=media).tasks
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(AgentConfigError):
        stage_inputs(agent_task(task), ws)


def test_a_hard_link_is_the_dataset_owners_own_file(tmp_path: Path) -> None:
    """A hard link names the file itself (no link to follow): the kernel's protected_hardlinks
    only lets a user link a file they own or may read and write; it is staged like any file."""
    media = tmp_path / "media"
    media.mkdir()
    own = tmp_path / "own.wav"
    own.write_bytes(b"RIFF own")
    os.link(own, media / "a.wav")
    data = write(tmp_path / "ds", "jsonl", "a.wav")
    (task,) = load_dataset("jsonl", data, media_root=media).tasks
    ws = tmp_path / "ws"
    ws.mkdir()
    assert stage_inputs(agent_task(task), ws) == ["inputs/a.wav"]
    assert (ws / "inputs" / "a.wav").read_bytes() == b"RIFF own"


def test_staging_keeps_a_dataset_file_beneath_its_root(tmp_path: Path) -> None:
    media = tmp_path / "media"
    (media / "x").mkdir(parents=True)
    (media / "x" / "a.wav").write_bytes(b"RIFF ok")
    data = write(tmp_path / "ds", "jsonl", "x/a.wav")
    (task,) = load_dataset("jsonl", data, media_root=media).tasks
    ws = tmp_path / "ws"
    ws.mkdir()
    assert stage_inputs(AgentTask(id="t", question="q", inputs=list(task.files)), ws) == [
        "inputs/a.wav"
    ]


def test_eval_and_data_check_refuse_in_one_line_and_take_the_flag(
    tmp_path: Path, secret: Path
) -> None:
    data = write(tmp_path / "ds", "jsonl", str(secret))
    runner = CliRunner()
    for args in (
        ["data", "check", "jsonl", "--data", str(data)],
        [
            "eval",
            "jsonl",
            "--data",
            str(data),
            "--model",
            "scripted:x",
            "--scorer",
            "answer_set",
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
        ],
    ):
        result = runner.invoke(app, args)
        # The CLI's main prints an OmnilabError as its one line (no traceback).
        assert isinstance(result.exception, DatasetError), (result.output, result.exception)
        message = str(result.exception)
        assert "\n" not in message and "jsonl item 0" in message and "absolute path" in message
        assert not (tmp_path / "run" / "results.jsonl").exists()
    checked = runner.invoke(
        app, ["data", "check", "jsonl", "--data", str(data), "--allow-outside-media-root", "--json"]
    )
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.output)["tasks"] == 1


def test_a_task_file_carries_its_rule_into_a_worker_process(tmp_path: Path, secret: Path) -> None:
    """The process and Ray backends unpickle tasks in fresh processes: a dataset file there is
    still read beneath its root through no link."""
    import pickle
    import subprocess
    import sys

    media = tmp_path / "media"
    media.mkdir()
    (media / "clip.wav").symlink_to(secret)
    (task,) = load_dataset(
        "jsonl", write(tmp_path / "ds", "jsonl", "clip.wav"), media_root=media
    ).tasks
    blob = tmp_path / "task.pickle"
    blob.write_bytes(pickle.dumps(task))
    code = (
        "import pickle, sys; from omnilab import _wsread; "
        f"task = pickle.loads(open({str(blob)!r}, 'rb').read()); "
        "print(_wsread.regular_file(task.files[0].path), task.files[0].root is not None)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"], out

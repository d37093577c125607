"""Issue 42's reviewer on reproductions 4 and 5 for the exporters (``omnilab export`` and the
RL/DPO/group exports all start at :func:`omnilab.train.runs.load_run`): a run folder may be
another user's. Its trajectory linked to root's own private run was exported through the link;
its run.json names the dataset file (and may say ``allow_outside_media_root``): a run.json
another user can change names no dataset root then reads (the export has no labels)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from omnilab.bench.errors import BenchError
from omnilab.report.synthetic import write_synthetic_run
from omnilab.train.runs import iter_records, load_run

SECRET = "ROOTS-OWN-PRIVATE-CONVERSATION-91c2"


def test_an_export_does_not_follow_a_planted_trajectory_link(tmp_path: Path) -> None:
    mine = write_synthetic_run(tmp_path / "roots-run", tasks=1, frames=1)
    theirs = write_synthetic_run(tmp_path / "their-run", tasks=1, frames=1)
    (source,) = (mine / "trajectories").glob("*.jsonl")
    source.write_text(source.read_text().replace("What colour", f"{SECRET} What colour"))
    source.chmod(0o600)
    planted = theirs / "trajectories" / source.name
    planted.unlink()
    planted.symlink_to(source)
    (record,) = list(iter_records([theirs]))
    try:
        text = record.trajectory.model_dump_json()
    except BenchError as e:
        text = str(e)
    assert SECRET not in text


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's run folder needs root to make")
def test_a_planted_run_json_does_not_choose_the_dataset_root_reads(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    labels = private / "labels.jsonl"
    labels.write_text(json.dumps({"id": "x", "question": "q", "answer": SECRET}) + "\n")
    labels.chmod(0o600)
    theirs = write_synthetic_run(tmp_path / "their-run", tasks=1, frames=1)
    config = json.loads((theirs / "run.json").read_text())
    config |= {"dataset": "jsonl", "data": str(labels), "allow_outside_media_root": True}
    (theirs / "run.json").write_text(json.dumps(config))
    os.chown(theirs, 65534, 65534)
    _, _, tasks = load_run(theirs)
    assert SECRET not in json.dumps([t.model_dump(mode="json") for t in tasks.values()])

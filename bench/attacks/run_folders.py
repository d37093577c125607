"""Issue 42 points 7-9, a run's own folders under a system folder: the sandbox shows ``/usr``,
``/etc`` and ``/sys`` read-only, so a dataset, a media root, an ``eval --out`` or a
``serve --runs-dir`` placed under one of them was visible to the run's own code. Each attack
makes such a folder under a real system folder (root only; removed afterwards), names it as the
run would (``plan_run``, ``create_app`` and ``ask`` call ``add_private_paths``; the tests check
that they do), and looks for it from inside, at other depths and in other system folders too."""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from attacks.registry import STRONG, Ctx, Verdict, attack
from attacks.visibility import _looks, _plant
from omnilab.sandbox import add_private_paths


@contextlib.contextmanager
def system_folder(base: str) -> Iterator[Path | None]:
    """A fresh world-readable folder under the system folder ``base`` (None where this harness
    cannot write there: not root), removed afterwards."""
    parent = Path(base)
    if os.geteuid() != 0 or not parent.is_dir() or not os.access(parent, os.W_OK):
        yield None
        return
    folder = parent / f"omnilab-attack-{uuid.uuid4().hex[:8]}"
    folder.mkdir(mode=0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_NOT_HERE = True, "n/a (needs a root harness that can write the system folder)"


@attack("read an eval dataset and its folder under /usr/local", STRONG)
def dataset_under_usr(ctx: Ctx) -> Verdict:
    with system_folder("/usr/local/share") as top:
        if top is None:
            return _NOT_HERE
        data = _plant(top / "datasets" / "qa", "tasks.jsonl")
        labels = _plant(top / "datasets" / "qa" / "split" / "test", "answers.json")
        add_private_paths(data)  # what plan_run names for --data
        return _looks(ctx, [data, data.parent, labels, labels.parent])


@attack("read an eval dataset lying directly in /usr/local", STRONG)
def dataset_in_system_folder(ctx: Ctx) -> Verdict:
    if os.geteuid() != 0 or not os.access("/usr/local", os.W_OK):
        return _NOT_HERE
    data = Path("/usr/local") / f"omnilab-attack-{uuid.uuid4().hex[:8]}.jsonl"
    data.write_text(f'{{"answer": "SECRET-{uuid.uuid4().hex}"}}')
    data.chmod(0o644)
    try:
        add_private_paths(data)  # /usr/local cannot be masked: the file reads as empty
        out, how = ctx.run(f"print(open({str(data)!r}).read())")
        return "SECRET" not in out, out.strip()[:80] or f"read nothing ({how})"
    finally:
        data.unlink()


@attack("read media under a --media-root in /usr/share, three levels down", STRONG)
def media_root_under_usr(ctx: Ctx) -> Verdict:
    with system_folder("/usr/share") as top:
        if top is None:
            return _NOT_HERE
        clip = _plant(top / "media" / "a" / "b" / "c", "clip.mp4")
        add_private_paths(top / "media")  # --media-root
        return _looks(ctx, [clip, clip.parent, top / "media", top / "media" / "a"])


@attack("read another task's verdict under an eval --out in /usr/local", STRONG)
def eval_out_under_usr(ctx: Ctx) -> Verdict:
    with system_folder("/usr/local/share") as top:
        if top is None:
            return _NOT_HERE
        out = top / "runs" / "eval-1"
        results = _plant(out, "results.jsonl")
        other = _plant(out / "trajectories", "task-1.jsonl")
        ws = out / "workspaces" / "task-2"
        ws.mkdir(parents=True, mode=0o755)
        add_private_paths(out)  # --out
        paths = [results, other, other.parent, ws / ".." / ".." / "results.jsonl"]
        return _looks(ctx, paths, ws=ws)


@attack("read another client's upload under serve --runs-dir in /etc", STRONG)
def serve_runs_under_etc(ctx: Ctx) -> Verdict:
    with system_folder("/etc") as top:
        if top is None:
            return _NOT_HERE
        runs = top / "serve-runs"
        upload = _plant(runs / "run-of-alice" / "inputs", "photo.png")
        ws = runs / "run-of-bob" / "workspace"
        ws.mkdir(parents=True, mode=0o755)
        add_private_paths(runs)  # what create_app names for --runs-dir (uploads are inside)
        return _looks(ctx, [upload, upload.parent, runs / "run-of-alice"], ws=ws)

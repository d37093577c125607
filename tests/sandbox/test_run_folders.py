"""A run's own folders are masked wherever they lie (issue 42, points 7-9): a dataset, a media
root, an ``eval --out`` or a ``serve --runs-dir`` under a system folder that the sandbox shows
(``/usr``, ``/etc``) is not visible to the run's sandboxed code.

The folders are made under the real system folders (root only, removed afterwards): only there
does the mount plan show the machine's own folders."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from omnilab.sandbox import IsolationLevel, add_private_paths, private_paths, run
from omnilab.sandbox._isolation import visible_paths
from omnilab.sandbox._plan import mount_plan, run_folders

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs a root harness")


def _system_folder(base: str) -> Iterator[Path]:
    parent = Path(base)
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        pytest.skip(f"{base} is not writable here")
    folder = parent / f"omnilab-test-{uuid.uuid4().hex[:8]}"
    folder.mkdir(mode=0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture()
def under_usr_local() -> Iterator[Path]:
    yield from _system_folder("/usr/local/share")


@pytest.fixture()
def under_etc() -> Iterator[Path]:
    yield from _system_folder("/etc")


@pytest.fixture()
def ns(available: Callable[[str], IsolationLevel]) -> IsolationLevel:
    return available("namespaces")


def _plant(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True, mode=0o755)
    path = folder / name
    path.write_text(f"SECRET-{uuid.uuid4().hex}")
    path.chmod(0o644)
    return path


def _seen(level: IsolationLevel, ws: Path, *paths: Path) -> list[str]:
    """What sandboxed code read (non-empty contents) or listed (non-empty folders) of ``paths``."""
    code = f"""
        import os
        for path in {[str(p) for p in paths]!r}:
            try:
                if os.path.isdir(path):
                    names = sorted(os.listdir(path))
                    if names:
                        print("listed", path, names)
                else:
                    text = open(path).read()
                    if text:
                        print("read", path, text)
            except OSError:
                pass
        open("mine.txt", "w").write("ok")  # the workspace stays writable
    """
    r = run([sys.executable, "-c", textwrap.dedent(code)], workspace=ws, isolation=level)
    assert r.exit_code == 0, r.stderr
    assert (ws / "mine.txt").read_text() == "ok"
    return r.stdout.splitlines()


@root_only
def test_a_dataset_and_media_root_under_usr_are_masked(
    ns: IsolationLevel, ws: Path, under_usr_local: Path
) -> None:
    data = _plant(under_usr_local / "datasets" / "qa", "tasks.jsonl")
    media = _plant(under_usr_local / "media" / "clips", "clip.mp4")
    # Without being named, they are visible through the shown /usr (the reproduction).
    assert any("SECRET" in line for line in _seen(ns, ws, data))
    add_private_paths(data, media.parent.parent)
    assert _seen(ns, ws, data, data.parent, media, media.parent, media.parent.parent) == []
    # Other depths of the same folders are hidden with them.
    deeper = _plant(under_usr_local / "datasets" / "qa" / "split" / "a", "labels.json")
    assert _seen(ns, ws, deeper, deeper.parent) == []


@root_only
def test_a_dataset_directly_in_a_system_folder_reads_as_empty(ns: IsolationLevel, ws: Path) -> None:
    # /usr/local itself is never masked (the system needs it): the file alone is hidden.
    data = Path("/usr/local") / f"omnilab-test-{uuid.uuid4().hex[:8]}.jsonl"
    data.write_text('{"answer": "SECRET"}')
    data.chmod(0o644)
    try:
        add_private_paths(data)
        assert _seen(ns, ws, data) == []
        assert str(data) in mount_plan(ws, as_stranger=True).hidden
    finally:
        data.unlink()


@root_only
def test_an_eval_out_folder_under_a_system_folder_is_masked_around_its_workspace(
    ns: IsolationLevel, under_usr_local: Path
) -> None:
    out = under_usr_local / "runs" / "eval-1"
    results = _plant(out, "results.jsonl")
    verdict = _plant(out / "trajectories", "task-1.jsonl")
    ws = out / "workspaces" / "task-2"
    ws.mkdir(parents=True, mode=0o755)
    add_private_paths(out)
    seen = _seen(ns, ws, results, verdict, verdict.parent, out, ws / ".." / ".." / "results.jsonl")
    # The workspace's own path is shown again on top of the mask, nothing beside it.
    assert [line for line in seen if "SECRET" in line or "results" in line] == []


@root_only
def test_serve_runs_under_etc_hide_other_clients_uploads(
    ns: IsolationLevel, under_etc: Path
) -> None:
    from omnilab.server.http import create_app

    runs = under_etc / "serve-runs"
    upload = _plant(runs / "run-of-alice" / "inputs", "photo.png")
    ws = runs / "run-of-bob" / "workspace"
    ws.mkdir(parents=True, mode=0o755)
    create_app(runs_dir=runs, token="t" * 32)  # what omnilab serve does: names its folders
    assert str(runs) in private_paths()
    seen = _seen(ns, ws, upload, upload.parent, runs, runs / "run-of-alice")
    # Only the way to bob's own workspace exists inside.
    assert [line for line in seen if "alice" in line or "SECRET" in line] == []


def test_named_paths_split_into_masks_and_hidden_files(tmp_path: Path) -> None:
    from omnilab.sandbox._plan import SYSTEM_DIRS
    from omnilab.sandbox._private import split_private

    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "t.jsonl").write_text("x")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "staged.mp4").write_text("x")
    paths = [str(folder / "t.jsonl"), str(ws / "staged.mp4"), str(tmp_path / "gone"), "/usr/local"]
    masks, files = split_private(paths, never=SYSTEM_DIRS, workspace=str(ws))
    assert masks == [str(folder)] and files == []  # staged copies and system folders stay
    masks, files = split_private(["/etc/hostname"], never=SYSTEM_DIRS, workspace=str(ws))
    if Path("/etc/hostname").is_file():
        assert (masks, files) == ([], ["/etc/hostname"])


def test_a_run_folder_inside_the_python_install_is_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnilab.sandbox import _plan

    prefix = tmp_path / "venv"
    data = prefix / "share" / "datasets"
    data.mkdir(parents=True)
    monkeypatch.setattr(_plan, "_python_paths", lambda: [str(prefix)])
    ws = tmp_path / "ws"
    ws.mkdir()
    add_private_paths(data)
    plan = mount_plan(ws, as_stranger=False)
    assert str(data) in plan.masks and (str(prefix), False) in plan.binds


def test_doctor_names_the_run_folders(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from omnilab.cli.main import app
    from omnilab.config import get_settings
    from omnilab.sandbox import isolation_report

    add_private_paths(tmp_path)
    assert str(tmp_path.resolve()) in run_folders()
    # The visible list still describes a sandbox (masks appear only for folders under /usr...).
    assert any("<workspace>" in line for line in visible_paths(IsolationLevel.NAMESPACES, True))
    report = json.loads(CliRunner().invoke(app, ["doctor", "--json"]).output)
    runs = os.path.realpath(get_settings().bench.runs_dir)
    assert runs in report["private"]
    text = CliRunner().invoke(app, ["doctor"]).output
    assert "a run's own folders, masked in its sandboxes wherever they lie" in text
    assert f"  - {runs}" in text
    if isolation_report().own_uid:
        assert report["uids"].startswith(f"[{get_settings().sandbox.uid_base}, ")
        assert "sandbox uids: [" in text


def test_worker_processes_get_the_named_folders() -> None:
    from omnilab.bench import backends

    add_private_paths("/usr/local/share/omnilab-worker-test")
    interrupt = signal.getsignal(signal.SIGINT)
    with pytest.MonkeyPatch.context() as mp:
        got: list[str] = []
        mp.setattr(backends, "add_private_paths", lambda *p: got.extend(p))
        mp.setattr(backends, "_WORKER", {})
        try:
            backends._init_worker(object, private_paths())  # type: ignore[arg-type]
        finally:
            signal.signal(signal.SIGINT, interrupt)
    assert "/usr/local/share/omnilab-worker-test" in got


def test_the_catalogue_has_issue_42_part_c() -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "bench" / "sandbox_attacks.py"
    attacks = sys.modules.get("sandbox_attacks")
    if attacks is None:
        spec = importlib.util.spec_from_file_location("sandbox_attacks", path)
        assert spec is not None and spec.loader is not None
        attacks = importlib.util.module_from_spec(spec)
        sys.modules["sandbox_attacks"] = attacks
        spec.loader.exec_module(attacks)
    folders = {
        "read an eval dataset and its folder under /usr/local",
        "read an eval dataset lying directly in /usr/local",
        "read media under a --media-root in /usr/share, three levels down",
        "read another task's verdict under an eval --out in /usr/local",
        "read another client's upload under serve --runs-dir in /etc",
    }
    others = {
        "four 256 MiB sparse files in a 16 MiB workspace",
        "sixty 8 MiB sparse files five folders deep",
        "grow the workspace total by restarting",
        "a local user holds the workspace's sandbox uid",
        "another user's subuid range covers the sandbox uids",
        "squat the harness's state folder before its first run",
        "forge a deeply nested interpreter reply",
        "swap a view for a link during the run",
    }
    assert folders | others <= set(attacks.ATTACKS)
    # The process level has no mount namespace: masking is promised at the strong levels only.
    assert all(attacks.PROMISED[name] == attacks.STRONG for name in folders)
    assert all("namespaces" in attacks.PROMISED[name] for name in others)

"""Issue 42, reproduction 14: run and cache folders are this user's own (made 0700; a link or
another user's folder is refused in one line), and files in them are written through no link."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

import omnilab
from omnilab._atomic import write_atomic
from omnilab._ownfolders import UnsafeFolderError, open_new, private_folder
from omnilab.api import new_run_dir
from omnilab.cli.main import app
from omnilab.media.cache import MediaCache
from omnilab.trajectory import TrajectoryWriter

VICTIM = b"root's own file\n"
NOBODY = 65534


@pytest.fixture()
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_bytes(VICTIM)
    path.chmod(0o600)
    return path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_run_folders_and_their_missing_parents_are_made_0700(tmp_path: Path) -> None:
    runs = tmp_path / "a" / "b" / "runs"
    folder = new_run_dir(runs)
    assert folder.parent == runs
    assert mode(folder) == mode(runs) == mode(tmp_path / "a") == 0o700


@pytest.mark.parametrize("depth", [0, 2])
def test_a_linked_runs_folder_is_refused_in_one_line(tmp_path: Path, depth: int) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    base = tmp_path.joinpath(*[f"d{i}" for i in range(depth)])
    base.mkdir(parents=True, exist_ok=True)
    (base / "omnilab-runs").symlink_to(elsewhere)
    with pytest.raises(UnsafeFolderError) as refused:
        new_run_dir(base / "omnilab-runs")
    assert "is a link" in str(refused.value) and "\n" not in str(refused.value)
    assert not any(elsewhere.iterdir())


@pytest.mark.skipif(os.geteuid() != 0, reason="making another user's folder needs root")
def test_another_users_runs_folder_is_refused(tmp_path: Path) -> None:
    runs = tmp_path / "omnilab-runs"
    runs.mkdir()
    os.chown(runs, NOBODY, NOBODY)
    with pytest.raises(UnsafeFolderError, match="belongs to"):
        new_run_dir(runs)
    with pytest.raises(UnsafeFolderError, match="belongs to"):
        private_folder(runs, what="--out folder")  # eval's RunDir.write_config checks so
    os.chown(runs, 0, 0)
    runs.chmod(0o777)
    with pytest.raises(UnsafeFolderError, match="writable by every user"):
        new_run_dir(runs)


def test_ask_in_a_checkout_with_a_planted_runs_link_stops_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, victim: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OMNILAB_AGENTS__RUNS_DIR", raising=False)
    Path("omnilab-runs").symlink_to(victim.parent)
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"outputs": ["<answer>x</answer>"], "repeat": True}))
    result = CliRunner().invoke(
        app, ["ask", str(notes), "What is this?", "-m", f"scripted:{script}"]
    )
    assert isinstance(result.exception, UnsafeFolderError), (result.output, result.exception)
    assert "omnilab-runs is a link" in str(result.exception)
    assert victim.read_bytes() == VICTIM


def test_the_atomic_write_replaces_a_planted_link_and_never_writes_through_it(
    tmp_path: Path, victim: Path
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").symlink_to(victim)
    write_atomic(folder / "run.json", "{}\n")
    assert victim.read_bytes() == VICTIM
    assert not (folder / "run.json").is_symlink() and (folder / "run.json").read_text() == "{}\n"
    # The folder itself swapped for a link: refused, nothing written there.
    (tmp_path / "out").symlink_to(victim.parent)
    with pytest.raises(OSError):
        write_atomic(tmp_path / "out" / "victim", "x")
    assert victim.read_bytes() == VICTIM


def test_trajectory_results_and_rollout_files_are_opened_without_following_links(
    tmp_path: Path, victim: Path
) -> None:
    folder = new_run_dir(tmp_path / "runs")
    (folder / "trajectory.jsonl").symlink_to(victim)
    with pytest.raises(OSError), TrajectoryWriter(folder / "trajectory.jsonl"):
        pass
    (folder / "results.jsonl").symlink_to(victim)
    with pytest.raises(OSError):
        open_new(folder / "results.jsonl", append=True)
    assert victim.read_bytes() == VICTIM


def test_coder_rollout_replaces_a_planted_link(tmp_path: Path, victim: Path) -> None:
    from omnilab.agents.coder.artifacts import Rollout

    rollout = Rollout(tmp_path / "trajectory.coder", tmp_path / "ws")
    (tmp_path / "trajectory.coder" / "images").mkdir(parents=True)
    planted = tmp_path / "trajectory.coder" / "images" / "000-x.png"
    planted.symlink_to(victim)
    saved = rollout.save_image("x.png", b"\x89PNG")
    assert saved == planted and not saved.is_symlink() and saved.read_bytes() == b"\x89PNG"
    assert victim.read_bytes() == VICTIM


def test_a_linked_media_cache_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "cache").symlink_to(elsewhere)
    cache = MediaCache(tmp_path / "cache", max_bytes=1 << 20)
    with pytest.raises(UnsafeFolderError, match="is a link"):
        cache.get_or_create("k", ".bin", lambda p: p.write_bytes(b"x"))
    with pytest.raises(UnsafeFolderError, match="is a link"), cache.lock("k"):
        pass
    assert not any(elsewhere.iterdir())


def test_ask_writes_its_run_folder_0700(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"outputs": ["<answer>x</answer>"], "repeat": True}))
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    result = omnilab.ask([notes], "q?", model=f"scripted:{script}", run_dir=tmp_path / "r" / "1")
    assert mode(result.trajectory_path.parent) == 0o700
    assert mode(tmp_path / "r") == 0o700

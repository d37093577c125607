"""Issue 42's leftover: ``omnilab serve --runs-dir`` was resolved before its ownership check, so
a link another user planted at the name (in ``/tmp``, sticky: they own their link) was followed
wherever it pointed, and a folder of root's there became the server's runs folder. The path is
now checked as given (no link followed), then resolved, when the server starts."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from omnilab._ownfolders import UnsafeFolderError
from omnilab.server.http import create_app

NOBODY = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="another user's link needs root")
TOKEN = "t" * 32


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _shared_tmp(tmp_path: Path) -> Path:
    """A folder like /tmp: every user may add entries, and only remove their own."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    return shared


def _roots_private(tmp_path: Path) -> Path:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "key").write_text("root's own\n")
    return private


def serve_stops_with_one_line(tmp_path: Path, *args: str) -> None:
    """``omnilab serve ARGS`` in a real process exits 1 with one ``error:`` line naming a link
    owned by another user, before any token is made or shown."""
    done = subprocess.run(
        [sys.executable, "-m", "omnilab", "serve", "--port", str(_free_port()), *args],
        capture_output=True,
        text=True,
        timeout=60,  # a server that started would run until killed here: that fails the test
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")},
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "link owned by" in lines[0]
    assert "token" not in done.stderr  # stopped before a token was made or shown


@root_only
def test_a_runs_dir_that_is_another_users_link_is_refused(tmp_path: Path) -> None:
    private = _roots_private(tmp_path)
    link = _shared_tmp(tmp_path) / "runs"
    link.symlink_to(private)
    os.lchown(link, NOBODY, NOBODY)  # alice's link: she may point it anywhere, at any time
    with pytest.raises(UnsafeFolderError) as refused:
        create_app(runs_dir=link, token=TOKEN)
    message = str(refused.value)
    assert "is a link owned by" in message and "--runs-dir" in message and "\n" not in message
    assert sorted(p.name for p in private.iterdir()) == ["key"]


def test_a_runs_dir_linked_from_a_folder_anyone_can_write_is_refused(tmp_path: Path) -> None:
    private = _roots_private(tmp_path)
    drop = tmp_path / "drop"
    drop.mkdir()
    drop.chmod(0o777)  # no sticky bit: anyone may replace the link after it is checked
    (drop / "runs").symlink_to(private)
    with pytest.raises(UnsafeFolderError, match="writable by every user"):
        create_app(runs_dir=drop / "runs", token=TOKEN)


def test_a_runs_dir_through_the_operators_own_link_is_followed(tmp_path: Path) -> None:
    target = tmp_path / "data" / "serve-runs"
    link = _shared_tmp(tmp_path) / "runs"
    link.symlink_to(target)  # the operator's own link (this user's)
    create_app(runs_dir=link, token=TOKEN)
    # Made when the server starts, 0700, where the link leads (not beside it).
    assert target.is_dir() and stat.S_IMODE(target.stat().st_mode) == 0o700
    assert link.is_symlink()


@root_only
def test_the_operators_link_into_another_users_folder_is_refused(tmp_path: Path) -> None:
    alice = tmp_path / "alice"
    alice.mkdir()
    os.chown(alice, NOBODY, NOBODY)
    link = tmp_path / "runs"
    link.symlink_to(alice / "runs")
    with pytest.raises(UnsafeFolderError, match="belongs to"):
        create_app(runs_dir=link, token=TOKEN)
    assert not (alice / "runs").exists()


@root_only
def test_serve_with_another_users_linked_runs_dir_stops_with_one_line(tmp_path: Path) -> None:
    private = _roots_private(tmp_path)
    link = _shared_tmp(tmp_path) / "runs"
    link.symlink_to(private)
    os.lchown(link, NOBODY, NOBODY)
    serve_stops_with_one_line(tmp_path, "--runs-dir", str(link))
    assert sorted(p.name for p in private.iterdir()) == ["key"]

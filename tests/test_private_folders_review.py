"""Issue 42's reviewer on reproduction 14: a run folder of root's own (0700) inside a folder
another user owns or can write is still theirs to swap. They rename it away mid-run and put a
folder of theirs in its place holding a link named like the run's folder; root's next write to
``runs/RUN/trajectory.jsonl`` then follows that link (``O_NOFOLLOW`` guards only the last
component) into any folder of root's. So the folders above a runs or cache folder must be
root's (or this user's) too, or sticky like ``/tmp``: the issue's "ownership check on the
parent", checked on the path as written and on where it leads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from omnilab._ownfolders import UnsafeFolderError
from omnilab.api import new_run_dir

NOBODY = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="another user's folder needs root")


@root_only
def test_runs_inside_another_users_folder_are_refused(tmp_path: Path) -> None:
    checkout = tmp_path / "alice-checkout"
    checkout.mkdir()
    os.chown(checkout, NOBODY, NOBODY)
    with pytest.raises(UnsafeFolderError) as refused:
        new_run_dir(checkout / "omnilab-runs")
    assert "belongs to" in str(refused.value) and "\n" not in str(refused.value)
    assert not (checkout / "omnilab-runs").exists()


@root_only
def test_runs_below_another_users_folder_at_any_depth_are_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / "team" / "exp").mkdir(parents=True)
    os.chown(shared, NOBODY, NOBODY)
    with pytest.raises(UnsafeFolderError, match="belongs to"):
        new_run_dir(shared / "team" / "exp" / "runs")


def test_runs_below_a_folder_every_user_can_write_are_refused(tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    drop.chmod(0o777)
    with pytest.raises(UnsafeFolderError, match="writable by every user"):
        new_run_dir(drop / "runs")


@root_only
def test_a_link_on_the_way_in_another_users_folder_is_refused(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    alice = tmp_path / "alice"
    alice.mkdir()
    (alice / "to-mine").symlink_to(mine)  # alice can point it anywhere at any moment
    os.chown(alice, NOBODY, NOBODY)
    with pytest.raises(UnsafeFolderError, match="belongs to"):
        new_run_dir(alice / "to-mine" / "runs")


def test_a_sticky_folder_like_tmp_is_fine(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    folder = new_run_dir(tmp / "runs")
    assert folder.is_dir() and folder.parent == tmp / "runs"


@root_only
def test_a_response_cache_in_another_users_folder_is_refused(tmp_path: Path) -> None:
    """Reproduction 3 through a shared cache folder: another user plants responses.sqlite3
    (a cached tool call) where root's response cache reads it."""
    from omnilab.models.cache import ResponseCache

    shared = tmp_path / "team-cache" / "models"
    shared.mkdir(parents=True)
    planted = ResponseCache(shared / "responses.sqlite3")
    planted._connection(create=True)  # the file, as another user would leave it
    planted.close()
    os.chown(shared, NOBODY, NOBODY)
    os.chown(shared / "responses.sqlite3", NOBODY, NOBODY)
    with pytest.raises(UnsafeFolderError, match="belongs to"):
        ResponseCache(shared / "responses.sqlite3").get("k")


@root_only
def test_a_media_cache_below_another_users_folder_is_refused(tmp_path: Path) -> None:
    from omnilab.media.cache import MediaCache

    shared = tmp_path / "team"
    shared.mkdir()
    os.chown(shared, NOBODY, NOBODY)
    cache = MediaCache(shared / "cache" / "media", max_bytes=1 << 20)
    with pytest.raises(UnsafeFolderError, match="belongs to"), cache.lock("k" * 64):
        pass


# Issue 42's leftover: a folder a group can write is another user's when the group is not this
# user's own (the rule config files are trusted by: omnilab._trust.others_can_write). Its other
# members can rename the run's folder away as well as any user could in a world-writable one.


@root_only
def test_runs_below_a_folder_another_group_can_write_are_refused(tmp_path: Path) -> None:
    team = tmp_path / "team"
    (team / "exp").mkdir(parents=True)
    os.chown(team, 0, NOBODY)  # root's folder, but the nogroup group may write it
    team.chmod(0o775)
    with pytest.raises(UnsafeFolderError) as refused:
        new_run_dir(team / "exp" / "runs")
    message = str(refused.value)
    assert f"lies in {team}, writable by group" in message and f"gid {NOBODY}" in message
    assert "\n" not in message
    assert not (team / "exp" / "runs").exists()


@root_only
def test_a_runs_folder_another_group_can_write_is_refused(tmp_path: Path) -> None:
    from omnilab._ownfolders import private_folder

    runs = tmp_path / "runs"
    runs.mkdir()
    os.chown(runs, 0, NOBODY)
    runs.chmod(0o770)
    with pytest.raises(UnsafeFolderError, match="is writable by group"):
        new_run_dir(runs)
    with pytest.raises(UnsafeFolderError, match="is writable by group"):
        private_folder(runs, what="--out folder")  # eval's RunDir.write_config


@root_only
def test_a_media_cache_below_a_folder_another_group_can_write_is_refused(tmp_path: Path) -> None:
    from omnilab.media.cache import MediaCache

    shared = tmp_path / "team"
    shared.mkdir()
    os.chown(shared, 0, NOBODY)
    shared.chmod(0o775)
    cache = MediaCache(shared / "cache" / "media", max_bytes=1 << 20)
    with pytest.raises(UnsafeFolderError, match="writable by group"), cache.lock("k" * 64):
        pass


def test_a_folder_only_the_users_own_group_can_write_is_fine(tmp_path: Path) -> None:
    """umask 002 gives a user's folders to their private group: still their own."""
    own = tmp_path / "own"
    own.mkdir()
    os.chown(own, -1, os.getegid())
    own.chmod(0o775)
    folder = new_run_dir(own / "runs")
    assert folder.is_dir()


@root_only
def test_a_sticky_folder_another_group_can_write_is_fine(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chown(shared, 0, NOBODY)
    shared.chmod(0o1775)  # members may not rename what they do not own
    assert new_run_dir(shared / "runs").is_dir()

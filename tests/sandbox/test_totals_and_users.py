"""Totals that hold and other local users (issue 42, points 10, 11 and 13, and the smaller ones):
sparse files count at their apparent size and are copied back sparse, the workspace total is
fixed for the workspace's life, sandbox uids are nobody else's, the shared state folder cannot be
squatted, and a forged interpreter reply is a sandbox error."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from omnilab.config import SandboxLimits
from omnilab.sandbox import PythonSession, SandboxError, _statedir, _uidcheck, _uids, run
from omnilab.sandbox._safefs import copy_tree, open_folder

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs a root harness")
MiB = 1024**2


def _small(**kw: int) -> SandboxLimits:
    values = {"file_size_bytes": 512 * MiB, "workspace_bytes": 16 * MiB, "wall_seconds": 20}
    return SandboxLimits(**{**values, **kw})


def _apparent(root: Path) -> tuple[int, int]:
    """(apparent bytes, allocated bytes) of the regular files under ``root``."""
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    return sum(p.stat().st_size for p in files), sum(p.stat().st_blocks * 512 for p in files)


# -- sparse files -------------------------------------------------------------------------------


def test_copy_keeps_holes_and_refuses_past_the_total(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    with (src / "holes.bin").open("wb") as f:
        f.write(b"head")
        f.seek(64 * MiB)
        f.write(b"tail")
    for i in range(4):
        with (src / f"sparse{i}.bin").open("wb") as f:
            f.truncate(256 * MiB)
    refused: list[str] = []
    with open_folder(src) as a, open_folder(dst) as b:
        _, _, problems = copy_tree(a, b, max_bytes=80 * MiB, refused=refused)
    assert problems == []
    copied = dst / "holes.bin"
    assert copied.stat().st_size == 64 * MiB + 4
    with copied.open("rb") as f:
        assert f.read(4) == b"head"
        f.seek(64 * MiB)
        assert f.read() == b"tail"
    assert copied.stat().st_blocks * 512 < 4 * MiB  # copied sparse, not 64 MiB of zeros
    # 256 MiB of holes count as 256 MiB: none of the four fits what is left of 80 MiB.
    assert not [p for p in dst.iterdir() if p.name.startswith("sparse")]
    assert len(refused) == 1 and "past the workspace total: sparse" in refused[0]
    assert "(and 1 more)" in refused[0]  # all four named or counted


@root_only
def test_sparse_files_do_not_pass_the_workspace_total_on_copy_back(ws: Path) -> None:
    code = """
import os
for i in range(4):
    with open(f"sparse{i}.bin", "wb") as f:
        f.truncate(256 * 1024 * 1024)
print("made", sum(os.stat(f"sparse{i}.bin").st_blocks for i in range(4)))
"""
    r = run([sys.executable, "-c", code], workspace=ws, limits=_small(), isolation="namespaces")
    assert "made" in r.stdout, r
    apparent, allocated = _apparent(ws)
    assert apparent <= 16 * MiB + MiB, f"{apparent} bytes came back"
    assert allocated <= 16 * MiB + MiB
    assert any("past the workspace total" in w for w in r.warnings), r.warnings


# -- the workspace total ------------------------------------------------------------------------


@root_only
def test_restarts_do_not_grow_the_workspace_total(ws: Path) -> None:
    code = """
import os
st = os.statvfs(".")
print("total", st.f_blocks * st.f_frsize)
try:
    with open(f"fill-{len(os.listdir('.'))}.bin", "wb") as f:
        f.write(b"x" * 6 * 1024 * 1024)
    print("wrote")
except OSError as e:
    print("refused", e.errno)
"""
    totals, wrote = [], 0
    for _ in range(4):  # each run ends the workspace's last sandbox: a restart
        r = run([sys.executable, "-c", code], workspace=ws, limits=_small(), isolation="namespaces")
        line = next(x for x in r.stdout.splitlines() if x.startswith("total"))
        totals.append(int(line.split()[1]))
        wrote += "wrote" in r.stdout
    assert len(set(totals)) == 1, f"the tmpfs grew: {totals}"
    assert totals[0] <= 17 * MiB and wrote <= 2  # 16 MiB hold two 6 MiB files, not four


# -- sandbox uids -------------------------------------------------------------------------------


def test_subuid_ranges_of_other_users_are_taken_but_omnilab_s_is_not(tmp_path: Path) -> None:
    subuid = tmp_path / "subuid"
    subuid.write_text("alice:400000:65536\nomnilab:500000:65536\n# comment\nbroken-line\n")
    check = _uidcheck.UidCheck(files=(str(subuid),))
    assert check.taken_by(400123) == f"{subuid} range of alice"
    assert "range" not in str(check.taken_by(500123))  # the range reserved for omnilab
    assert "range of alice" in _uidcheck.describe_range(400000, 65536, files=(str(subuid),))
    assert "range of" not in _uidcheck.describe_range(500000, 65536, files=(str(subuid),))


def test_a_lease_skips_uids_in_another_users_subordinate_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = 420000
    subuid = tmp_path / "subuid"
    subuid.write_text(f"alice:{base}:65526\n")  # all but the last ten
    monkeypatch.setattr(_uidcheck, "SUBID_FILES", (str(subuid),))
    lease = _uids.acquire(tmp_path / "w", base)
    try:
        assert base + 65526 <= lease.uid < base + 65536
    finally:
        _uids.release(lease)
    subuid.write_text(f"alice:{base}:65536\n")
    with pytest.raises(SandboxError, match=r"no free sandbox uid.*range of alice.*uid_base"):
        _uids.acquire(tmp_path / "w2", base)


@root_only
def test_a_lease_skips_a_uid_a_running_process_holds(tmp_path: Path) -> None:
    base = 440000
    ws = tmp_path / "w"
    wanted = base + zlib.crc32(os.fsencode(str(ws))) % 65536
    squatter = subprocess.Popen(["sleep", "30"], user=wanted, group=wanted)  # another local user
    try:
        lease = _uids.acquire(ws, base)
        try:
            assert lease.uid != wanted
        finally:
            _uids.release(lease, on_last=None)
    finally:
        squatter.kill()
        squatter.wait()


# -- the shared state folder --------------------------------------------------------------------


@root_only
def test_a_squatted_state_folder_is_moved_aside_by_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shm"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    squat = shared / "omnilab-sandbox-0"
    squat.mkdir(mode=0o755)
    (squat / "uids.json").write_text('[{"uid": 0, "ws": "/", "pid": 1, "start": "x", "id": "x"}]')
    os.chown(squat, 54321, 54321)  # made by another local user before root's first run
    monkeypatch.setattr(_statedir, "_candidates", lambda: [squat])
    folder = _statedir.own_folder()
    assert folder == squat and _statedir.is_private(folder)
    assert not (folder / "uids.json").exists()  # the forged table is not ours to read
    assert [p for p in shared.iterdir() if p.name.startswith(".omnilab-squatted-")]
    # A link planted in its place is moved aside too, never followed.
    target = tmp_path / "elsewhere"
    target.mkdir()
    folder.rmdir()
    squat.symlink_to(target)
    assert _statedir.own_folder() == squat and not squat.is_symlink()
    assert list(target.iterdir()) == []


def test_a_squatted_name_that_cannot_be_moved_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    squat = tmp_path / "omnilab-sandbox-x"
    squat.write_text("not a folder")  # a file in the way (the denial of service)
    home = tmp_path / "home"
    monkeypatch.setattr(_statedir, "_candidates", lambda: [squat])
    monkeypatch.setenv("HOME", str(home))
    if os.geteuid() == 0:
        # Root moves anything aside in a folder others can write; here the parent is root's own
        # and only writable by it, so the name is passed over instead.
        tmp_path.chmod(0o755)
    folder = _statedir.own_folder()
    assert folder == home / ".cache" / "omnilab" / "sandbox-state" and _statedir.is_private(folder)
    assert squat.read_text() == "not a folder"


# -- a forged interpreter reply -----------------------------------------------------------------


def test_a_deeply_nested_forged_reply_is_a_sandbox_error(ws: Path) -> None:
    code = """
import os, struct
body = b'{"value": ' + b"[" * 200000 + b"]" * 200000 + b"}"
os.write(4, struct.pack(">I", len(body)) + body)
"""
    with PythonSession(ws, limits=_small(workspace_bytes=64 * MiB)) as py:
        result = py.run(code)
        assert result.error is not None and "malformed reply" in result.error
        assert result.state_lost
        assert py.run("6 * 7").value == "42"  # the next call starts afresh

"""Issue 32 part A: the harness's one safe way into a workspace (``omnilab._wsread``) and the
bounded, iterative file-system work on workspaces (copy, chown, cleanup at any depth)."""

from __future__ import annotations

import importlib.util
import os
import struct
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image as PILImage

from omnilab import _wsread, _wswalk
from omnilab.content import Image
from omnilab.sandbox import PythonSession, _uids, run
from omnilab.sandbox._safefs import (
    chown_tree,
    copy_tree,
    open_folder,
    remove_children,
    remove_tree,
)
from omnilab.sandbox._wsfs import _private, size_limited

DEPTH = 1_500


def huge_png(path: Path, side: int = 13_000) -> Path:
    """A valid grayscale PNG of ``side`` x ``side`` black pixels: a few hundred KB on disk,
    ``side**2`` bytes once decoded (written in chunks, never held whole)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    packer = zlib.compressobj(9)
    row = b"\0" * (side + 1)  # filter byte + pixels
    body = b"".join(packer.compress(row * 500) for _ in range(side // 500))
    body += packer.compress(row * (side % 500)) + packer.flush()
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")
    )
    return path


@pytest.fixture(autouse=True)
def _no_deep_tree_left(tmp_path: Path) -> Iterator[None]:
    """Deep trees are removed here: pytest's own cleanup of old temporary folders (shared by
    every pytest run on the machine) recurses and would fail on them."""
    yield
    with open_folder(tmp_path) as fd:
        remove_children(fd)


@pytest.fixture()
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with a regular file, links to a secret (file and folder) and a FIFO."""
    ws, secret = tmp_path / "ws", tmp_path / "secret"
    (ws / "views").mkdir(parents=True)
    secret.mkdir(mode=0o700)
    (secret / "shadow").write_text("SECRET")
    (ws / "views" / "ok.jpg").write_bytes(b"fine")
    (ws / "views" / "a.jpg").symlink_to(secret / "shadow")
    (ws / "linked").symlink_to(secret)
    os.mkfifo(ws / "t.png")
    return ws, secret


def test_reads_beneath_a_folder_refuse_links_fifos_and_escapes(planted: tuple[Path, Path]) -> None:
    ws, _ = planted
    assert _wsread.read_bytes("views/ok.jpg", root=ws) == b"fine"
    assert _wsread.read_bytes(ws / "views" / "ok.jpg", root=ws) == b"fine"
    refused = {
        "views/a.jpg": "is a link",  # a link as the last component
        "linked/shadow": "is a link",  # a link on the way
        "t.png": "not a regular file",  # a FIFO: refused at once, never waited on
        "../secret/shadow": "leaves its folder",
        "views": "not a regular file",
    }
    for rel, why in refused.items():
        started = time.monotonic()
        with pytest.raises(_wsread.UnsafeFileError, match=why) as caught:
            _wsread.read_bytes(rel, root=ws)
        assert time.monotonic() - started < 2
        assert "\n" not in str(caught.value) and "Errno" not in str(caught.value)
    with pytest.raises(_wsread.UnsafeFileError, match="larger than"):
        _wsread.read_bytes("views/ok.jpg", root=ws, max_bytes=2)


def test_both_ways_of_resolving_agree(
    planted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # openat2 where the kernel has it, one O_NOFOLLOW open per component where it does not.
    ws, _ = planted
    for available in (None, False):
        monkeypatch.setattr(_wsread, "_openat2_ok", available)
        assert _wsread.read_bytes("views/ok.jpg", root=ws) == b"fine"
        for rel in ("views/a.jpg", "linked/shadow"):
            with pytest.raises(_wsread.UnsafeFileError, match="link"):
                _wsread.read_bytes(rel, root=ws)


def test_content_under_a_marked_workspace_is_read_without_links(
    planted: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, secret = planted
    # A user's own file given through a link is still read (only workspaces are untrusted).
    mine = tmp_path / "mine.jpg"
    mine.symlink_to(secret / "shadow")
    assert Image(path=mine).read_bytes() == b"SECRET"
    assert Image(path=ws / "views" / "a.jpg").read_bytes() == b"SECRET"  # not marked yet
    _wsread.mark_untrusted(ws)
    with pytest.raises(OSError, match="link"):
        Image(path=ws / "views" / "a.jpg").read_bytes()
    with pytest.raises(OSError, match="link"):
        Image(path=ws / "linked" / "shadow").read_bytes()
    assert Image(path=ws / "views" / "ok.jpg").read_bytes() == b"fine"


def test_a_huge_image_is_refused_on_its_header_before_decoding(tmp_path: Path) -> None:
    bomb = huge_png(tmp_path / "big.png")
    assert bomb.stat().st_size < 1024**2
    with pytest.raises(_wsread.UnsafeFileError, match="13000x13000 pixels"):
        _wsread.open_image("big.png", root=tmp_path)
    with pytest.raises(_wsread.UnsafeFileError, match="13000x13000"):
        _wsread.open_image(bomb.read_bytes())
    small = tmp_path / "small.png"
    PILImage.new("RGB", (64, 32)).save(small)
    with _wsread.open_image("small.png", root=tmp_path) as image:
        assert image.size == (64, 32)


def test_walk_never_lists_a_folder_swapped_for_a_link_mid_walk(tmp_path: Path) -> None:
    ws, secret = tmp_path / "ws", tmp_path / "secret"
    (ws / "a" / "b").mkdir(parents=True)
    secret.mkdir(mode=0o700)
    (secret / "ROOT_ONLY_NAME").write_text("x")
    walk = _wswalk.walk(ws)
    top = next(walk)
    assert top.descend == ["a"]
    # The race of issue 32: between listing ``a`` and entering it, code makes it a link.
    (ws / "a").rename(ws / "moved")
    (ws / "a").symlink_to(secret)
    seen = [name for folder in walk for name, _ in folder.entries]
    assert "ROOT_ONLY_NAME" not in seen


def test_walk_reaches_any_depth_without_recursion_or_a_descriptor_per_level(tmp_path: Path) -> None:
    deep = tmp_path / "deep"
    deep.mkdir()
    fd = os.open(deep, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(DEPTH):
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    open_fds = len(list(Path("/proc/self/fd").iterdir()))
    peak = 0
    depth = 0
    for folder in _wswalk.walk(deep):
        depth = max(depth, len(folder.parts))
        peak = max(peak, len(list(Path("/proc/self/fd").iterdir())) - open_fds)
        if folder.parts and folder.parts[-1] == "d" and len(folder.parts) == DEPTH:
            assert [n for n, _ in folder.entries] == ["leaf"]
    assert depth == DEPTH
    assert peak <= 24  # a handful held, not one per level


def _deep_tree(root: Path, depth: int) -> None:
    """``root/d/d/.../d/leaf.txt`` with a file and a link every 100 levels (made without ever
    resolving a long path)."""
    root.mkdir()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(depth):
            if i % 100 == 0:
                file = os.open(f"f{i}", os.O_WRONLY | os.O_CREAT, 0o640, dir_fd=fd)
                os.write(file, str(i).encode())
                os.close(file)
                os.symlink("/etc/shadow", f"l{i}", dir_fd=fd)
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        file = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)
        os.write(file, b"LEAF")
        os.close(file)
    finally:
        os.close(fd)


def _inventory(root: Path) -> list[tuple[tuple[str, ...], str, int]]:
    found = []
    for folder in _wswalk.walk(root):
        for name, st in folder.entries:
            found.append(
                ((*folder.parts, name), oct(st.st_mode), st.st_size if name[0] != "d" else 0)
            )
    return sorted(found)


@pytest.mark.slow
def test_copy_chown_and_remove_of_a_deep_tree_lose_nothing(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    _deep_tree(src, DEPTH)
    dst.mkdir()
    with open_folder(src) as a, open_folder(dst) as b:
        size, count, problems = copy_tree(a, b)
    assert problems == [] and count == DEPTH + 2 * (DEPTH // 100) + 1
    assert _inventory(dst) == _inventory(src)
    assert size == sum(len(str(i)) for i in range(0, DEPTH, 100)) + 4
    assert chown_tree(dst, os.getuid(), os.getgid()) == []
    with open_folder(dst) as b:
        assert remove_children(b) == []
    assert list(dst.iterdir()) == []
    assert remove_tree(src) == [] and not src.exists()  # what serve and mcp remove with
    assert remove_tree(src) == []


def test_tree_failures_are_reported_not_swallowed(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    _deep_tree(src, 3)
    dst.mkdir()
    (dst / "f0").mkdir()  # in the way of a file: that one entry fails, the rest is copied
    with open_folder(src) as a, open_folder(dst) as b:
        _, _, problems = copy_tree(a, b)
    assert len(problems) == 1 and "f0" in problems[0]
    assert (dst / "d" / "d" / "d" / "leaf.txt").read_bytes() == b"LEAF"


def test_a_failing_release_hook_reaches_the_caller(tmp_path: Path) -> None:
    def broken(ws: str, uid: int) -> list[str]:
        raise RecursionError("maximum recursion depth exceeded")

    lease = _uids.acquire(tmp_path / "w", 310_000)
    problems: list[str] = []
    assert _uids.release(lease, on_last=broken, problems=problems)
    assert problems and "RecursionError" in problems[0] and str(tmp_path / "w") in problems[0]


@pytest.mark.slow
def test_a_1500_level_tree_survives_a_sandbox_and_the_next_start(ws: Path) -> None:
    # Issue 32's reproduction: files were lost, the tmpfs stayed mounted and the next start
    # failed with RecursionError.
    code = f"""
import os
for i in range({DEPTH}):
    open(f"f{{i}}", "w").write(str(i))
    os.mkdir("d")
    os.chdir("d")
open("leaf.txt", "w").write("LEAF")
print("made")
"""
    with PythonSession(ws) as py:
        result = py.run(code)
        assert "made" in result.stdout, result
    assert not os.path.ismount(_private(str(ws))) and not size_limited(ws)
    names = {name for folder in _wswalk.walk(ws) for name, _ in folder.entries}
    assert {"leaf.txt", f"f{DEPTH - 1}", "f0"} <= names
    again = run(["true"], workspace=ws)
    assert again.ok and not [w for w in again.warnings if "fail" in w], again.warnings


def test_the_attack_catalogue_covers_issue_32_part_a() -> None:
    # tests/sandbox/test_escapes.py runs every attack of the catalogue at every level.
    attacks = sys.modules.get("sandbox_attacks")
    if attacks is None:
        path = Path(__file__).resolve().parents[2] / "bench" / "sandbox_attacks.py"
        spec = importlib.util.spec_from_file_location("sandbox_attacks", path)
        assert spec is not None and spec.loader is not None
        attacks = importlib.util.module_from_spec(spec)
        sys.modules["sandbox_attacks"] = attacks
        spec.loader.exec_module(attacks)
    wanted = {
        "views: planted link sent to the model",
        "perception: planted link copied into a report",
        "image_read of a FIFO",
        "image_read of a 13000x13000 PNG",
        "1,500-level tree in the workspace",
        "swap a folder for a link during the snapshot",
    }
    assert wanted <= set(attacks.ATTACKS)
    assert all(attacks.PROMISED[name] == attacks.ALL for name in wanted)

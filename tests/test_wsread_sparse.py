"""Copies made by the harness from folders others can write keep a sparse file's holes (issue 42's
reviewer: reproduction 10 through the copy paths other than the sandbox's copy-back). A sparse
file costs its maker no disk; copied dense by a root harness it filled the harness's disk:
``omnilab mcp``'s private copies (up to 16 GiB a file) and ``report --serve``'s snapshots of a
run folder another user planted (512 MiB a file, any number of files)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from omnilab import _wsread
from omnilab.report.serve import ReportServer


def _sparse(path: Path, size: int, head: bytes = b"head", at: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.seek(at)
        f.write(head)
        f.truncate(size)
    return path


def _disk(path: Path) -> int:
    return path.stat().st_blocks * 512


def test_copy_to_a_file_keeps_holes_and_bytes(tmp_path: Path) -> None:
    source = _sparse(tmp_path / "in.bin", 300 * 1024**2, b"middle", at=100 * 1024**2)
    target = tmp_path / "out.bin"
    with target.open("wb") as out:
        _wsread.copy_to(source, out)
    assert target.stat().st_size == source.stat().st_size
    assert _disk(target) < 16 * 1024**2
    with target.open("rb") as f:
        f.seek(100 * 1024**2 - 2)
        assert f.read(8) == b"\0\0middle"


def test_copy_to_memory_gets_every_byte(tmp_path: Path) -> None:
    source = _sparse(tmp_path / "in.bin", 3 * 1024**2, b"x", at=2 * 1024**2)
    out = io.BytesIO()
    _wsread.copy_to(source, out)
    assert out.getvalue() == source.read_bytes()


def test_copy_to_still_refuses_a_file_over_its_limit(tmp_path: Path) -> None:
    source = _sparse(tmp_path / "in.bin", 3 * 1024**2)
    with (tmp_path / "out.bin").open("wb") as out, pytest.raises(OSError, match="larger than"):
        _wsread.copy_to(source, out, max_bytes=1024**2)


def test_report_serve_snapshots_a_planted_sparse_run_without_its_zeros(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = runs / "planted"
    run.mkdir(parents=True)
    (run / "results.jsonl").write_text("")
    for n in range(4):  # another user's run: four 400 MiB files that use no disk
        _sparse(run / "workspaces" / f"t{n}" / "big.bin", 400 * 1024**2)
    reports = ReportServer(runs, tmp_path / "out")
    source = reports._snapshot("planted")
    copies = sorted(source.glob("workspaces/*/big.bin"))
    assert len(copies) == 4
    assert all(c.stat().st_size == 400 * 1024**2 for c in copies)
    assert sum(_disk(c) for c in copies) < 16 * 1024**2, "holes were written out as zeros"

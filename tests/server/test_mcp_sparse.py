"""``omnilab mcp FOLDER`` copies each file a tool reads into a private folder of the server (issue
42's reviewer, reproduction 10 through another copy path): another user who can write FOLDER
plants a sparse file (no disk used); the copy must keep its holes, or a root server writes
gigabytes of zeros to its own disk for every such file a client asks about."""

from __future__ import annotations

from pathlib import Path

from omnilab.server.mcp import folder_inputs
from omnilab.server.mcp_files import PrivateCopies


def test_a_sparse_file_is_copied_with_its_holes(tmp_path: Path) -> None:
    root = tmp_path / "served"
    root.mkdir()
    big = root / "talk.mp4"
    with big.open("wb") as f:
        f.write(b"\0\0\0\x18ftypisom")  # a little data first, then 1 GiB of hole
        f.truncate(1024**3)
    copies = PrivateCopies(root, folder_inputs(root))
    try:
        assert copies.refresh(["talk.mp4"]) is None
        (copy,) = list(copies.inputs)
        st = copy.path.stat()
        assert st.st_size == 1024**3
        assert st.st_blocks * 512 < 16 * 1024**2, "the hole was written out as zeros"
        with copy.path.open("rb") as f:
            assert f.read(12) == b"\0\0\0\x18ftypisom"
    finally:
        copies.close()
    assert not copies.folder.exists()

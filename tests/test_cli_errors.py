"""User errors print verbatim on one line: no markup, no emoji codes, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _omnilab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "omnilab", *args], capture_output=True, text=True, cwd=cwd
    )


def test_error_text_is_not_read_as_markup_or_emoji(tmp_path: Path) -> None:
    proc = _omnilab("chat", "--model", "nope:x:y", "hello", cwd=tmp_path)
    assert proc.returncode == 1
    assert "model nope:x:y" in proc.stderr  # ':x:' would otherwise become an emoji
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_brackets_in_messages_survive(tmp_path: Path) -> None:
    proc = _omnilab("media", "probe", str(tmp_path / "[local].mp4"), cwd=tmp_path)
    assert proc.returncode == 1
    assert "[local].mp4 does not exist" in proc.stderr

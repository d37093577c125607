"""A process that only fetches inputs at URLs imports no decoder, no schema library and no
settings (issue 46: they were a large share of a cold fetch's cost), and ``omnilab.media.probe``
stays the function however the probe module was imported (checked in fresh processes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_FETCH_ONLY = """
import sys, tempfile
from pathlib import Path
from omnilab.media.cache import MediaCache
from omnilab.media.remote import fetch, stat_remote
MediaCache(Path(tempfile.mkdtemp()) / "media", max_bytes=1 << 20).evict()
heavy = ("av", "PIL.Image", "numpy", "pydantic", "pydantic_settings", "omnilab.config")
print(" ".join(m for m in heavy if m in sys.modules))
"""

_PROBE_NAME = """
import omnilab.media.probe
import omnilab.media
from omnilab.media import MediaInfo, probe
assert callable(probe) and probe is omnilab.media.probe is sys.modules["omnilab.media.probe"].probe
assert MediaInfo is sys.modules["omnilab.media.probe"].MediaInfo
print(probe(sys.argv[1]).kind)
"""


def _run(script: str, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def test_the_fetch_layer_loads_no_decoder_schema_library_or_settings() -> None:
    assert _run(_FETCH_ONLY) == ""


def test_probe_is_the_function_after_its_module_was_imported(tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    note.write_text("hello")
    assert _run("import sys\n" + _PROBE_NAME, str(note)) == "text"

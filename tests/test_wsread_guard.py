"""Every harness-side read of what lies in a workspace goes through ``omnilab._wsread``: this
fails when a module that handles workspace files opens, reads, copies or walks a path itself."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "omnilab"

# The modules that touch files sandboxed code can write (views, the perception store, staging,
# artifacts, image_read, report media, the created-files snapshot, the MCP folder, and the media
# layer's opening, probing and image loading, which every agent's media goes through).
GUARDED = (
    "content.py",
    "agents/views.py",
    "agents/delivery.py",
    "agents/master/views.py",
    "agents/coder/staging.py",
    "agents/coder/artifacts.py",
    "agents/coder/tools.py",
    "models/providers/openai_wire.py",
    "models/providers/wire_body.py",
    "tools/_store.py",
    "tools/code.py",
    "report/media.py",
    "server/mcp.py",
    "media/_open.py",
    "media/probe.py",
    "media/image.py",
    # Paths named by data (issue 42): every dataset adapter's file list, the tasks and inputs
    # made from it; such a path is a DataPath opened beneath its root (omnilab._datapath).
    "bench/datasets/_common.py",
    "bench/datasets/omnigaia.py",
    "bench/datasets/omniagent.py",
    "bench/datasets/mcq.py",
    "bench/datasets/jsonl.py",
    "bench/datasets/deepsearch.py",
    "bench/task.py",
    "inputs.py",
)
# Calls that read or walk a path (by the name called, however it is reached).
READS = frozenset(
    {
        "open",
        "read_bytes",
        "read_text",
        "copyfile",
        "copy",
        "copy2",
        "copytree",
        "walk",
        "fwalk",
        "rglob",
        "glob",
        "iterdir",
        "scandir",
        "listdir",
        "is_file",
    }
)
# The few that are not reads of a workspace path, each with why.
ALLOWED = {
    # The dataset file itself is the operator's (--data), not a path the data names.
    ("bench/datasets/_common.py", "path.read_text(encoding='utf-8-sig')"),
    # Names only (the media root's files by name); each is then checked by _wsread.regular_file.
    ("bench/datasets/_common.py", "root.rglob('*')"),
    # A path the user typed (omnilab ask FILE); one under a marked folder is never resolved.
    ("inputs.py", "path.is_file()"),
    # Content.read_bytes goes through _wsread itself; a clip comes from the media cache.
    ("models/providers/openai_wire.py", "part.read_bytes()"),
    ("models/providers/openai_wire.py", "cut.read_bytes()"),
    # The file object comes from _wsread.open_file's descriptor.
    ("report/media.py", "PILImage.open(f)"),
    ("report/media.py", "picture.copy()"),  # a Pillow image in memory
    # media: a workspace path takes open_bytes (_wsread.open_file's descriptor) before these;
    # is_file is for the user's own files, and FFmpeg opens the checked descriptor's
    # /proc/self/fd name (or the file object itself).
    ("media/_open.py", "p.is_file()"),
    ("media/_open.py", "av.open(source, mode='r', metadata_errors='ignore')"),
    ("media/probe.py", "Image.open(f)"),
    ("media/image.py", "Image.open(f)"),
    # omnilab's own package data (the KIRA tool specs), never a workspace file.
    (
        "agents/coder/tools.py",
        "resources.files(__package__).joinpath('tools_kira.json').read_text(encoding='utf-8')",
    ),
}


def offences(source: str, module: str) -> list[str]:
    """The read calls in ``source`` that do not go through ``_wsread`` and are not allowed."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in READS:
            continue
        text = ast.unparse(node)
        if text.startswith(("_wsread.", "_wswalk.")) or (module, text) in ALLOWED:
            continue
        if node.args and ast.unparse(node.args[0]).startswith("io.BytesIO("):
            continue  # bytes already in memory
        found.append(f"{module}:{node.lineno}: {text}")
    return found


def test_workspace_files_are_read_only_through_wsread() -> None:
    found = [o for m in GUARDED for o in offences((SRC / m).read_text(), m)]
    assert not found, "read these through omnilab._wsread:\n" + "\n".join(found)


def test_the_guard_catches_direct_reads() -> None:
    caught = offences(
        "data = (ws / 'views' / 'a.jpg').read_bytes()\n"
        "shutil.copyfile(src, dst)\n"
        "for f in os.walk(ws): pass\n"
        "PILImage.open(path)\n"
        "with open(path, 'rb') as f: pass\n"
        "ok = _wsread.read_bytes(path)\n"
        "im = PILImage.open(io.BytesIO(data))\n",
        "agents/views.py",
    )
    assert len(caught) == 5 and all("_wsread" not in c for c in caught)

"""The media toolbox inside the sandbox, installed by pip alone (no apt).

What the ``coder`` agent's shell can call, with no system packages:

- ``ffmpeg``: the static binary of the ``imageio-ffmpeg`` wheel (``pip install
  'omnilab[coder]'``), linked as ``.toolbox/bin/ffmpeg`` in the workspace (the wheel names it
  ``ffmpeg-linux-x86_64-v7.0.2`` or similar, so a plain ``ffmpeg`` would not be found);
- ``mediaprobe FILE``: a probe (format, duration, streams as JSON) written with PyAV, which
  omnilab already depends on; the wheel ships no ``ffprobe``;
- ``python`` with numpy, Pillow and PyAV (the harness's interpreter, first on ``PATH``);
- ``omnilab`` itself (``omnilab media ...``, ``omnilab digest``): a regular install is in
  site-packages; an editable install's package folder is bound back read-only on its own (the
  rest of its checkout stays masked, see ``docs/sandbox.md``). The probe runs it to make sure.

:func:`toolbox_report` finds each tool and its version once per process, from inside a sandbox,
so the system prompt and ``omnilab doctor`` list what the agent will really have.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from omnilab.sandbox import ShellSession, open_folder

__all__ = ["TOOLBOX_DIR", "ToolInfo", "ToolboxReport", "install_toolbox", "toolbox_report"]

TOOLBOX_DIR = ".toolbox"
"""The folder of the workspace that holds the toolbox's commands (``.toolbox/bin``)."""

# Standard library and PyAV only: it runs in the sandbox, where omnilab may not be importable.
_MEDIAPROBE = '''#!{python}
"""mediaprobe FILE...: container format, duration and streams of media files, as JSON."""
import json, sys
import av

def probe(path):
    with av.open(path) as c:
        streams = []
        for s in c.streams:
            d = {{"index": s.index, "type": s.type, "codec": s.codec_context.name}}
            if s.duration is not None and s.time_base is not None:
                d["duration"] = float(s.duration * s.time_base)
            if s.type == "video":
                d.update(width=s.codec_context.width, height=s.codec_context.height,
                         fps=float(s.average_rate) if s.average_rate else None,
                         frames=s.frames or None)
            elif s.type == "audio":
                d.update(sample_rate=s.codec_context.sample_rate,
                         channels=s.codec_context.channels)
            streams.append(d)
        dur = float(c.duration / av.time_base) if c.duration is not None else None
        return {{"file": path, "format": c.format.name, "duration": dur, "streams": streams}}

if len(sys.argv) < 2:
    sys.exit("usage: mediaprobe FILE...")
code = 0
for p in sys.argv[1:]:
    try:
        print(json.dumps(probe(p), indent=1))
    except Exception as e:
        print(f"mediaprobe: {{p}}: {{e}}", file=sys.stderr)
        code = 1
sys.exit(code)
'''

# One line per tool: ``name<TAB>version or -``; run inside the sandbox by the probe.
_PROBE = r"""
v() { printf '%s\t%s\n' "$1" "${2:--}"; }
v ffmpeg "$(ffmpeg -version 2>/dev/null | head -n1 | awk '{print $3}')"
v mediaprobe "$(command -v mediaprobe >/dev/null && python -c 'import av; print("pyav", av.__version__)' 2>/dev/null)"
v python "$(python -c 'import sys; print(sys.version.split()[0])' 2>/dev/null)"
for m in numpy PIL av; do v "$m" "$(python -c "import $m; print($m.__version__)" 2>/dev/null)"; done
v omnilab "$(omnilab --version 2>/dev/null | head -n1 | awk '{print $NF}')"
"""


@dataclass(frozen=True)
class ToolInfo:
    """One tool of the toolbox: whether the sandbox has it, and its version."""

    name: str
    version: str | None
    usage: str
    hint: str = ""
    """How to get it, when it is missing."""

    @property
    def present(self) -> bool:
        return self.version is not None


@dataclass(frozen=True)
class ToolboxReport:
    """The tools the sandboxed shell has (``present``) and lacks, with how to get them."""

    tools: tuple[ToolInfo, ...]

    def prompt_lines(self) -> str:
        """The listing of the system prompt: present tools with their version and usage."""
        lines = [f"- {t.name} {t.version}: {t.usage}" for t in self.tools if t.present]
        missing = [t.name for t in self.tools if not t.present]
        if missing:
            lines.append(f"- not available here: {', '.join(missing)}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, str | None]:
        return {t.name: t.version for t in self.tools}


_USAGE = {
    "ffmpeg": "decode, cut, resample and extract frames/audio (ffmpeg -i in.mp4 ...)",
    "mediaprobe": "mediaprobe FILE prints format, duration and streams as JSON",
    "python": "python3 for scripts",
    "numpy": "import numpy",
    "PIL": "import PIL (Pillow) for images",
    "av": "import av (PyAV) to decode video and audio in Python",
    "omnilab": "omnilab media probe/frames/audio, omnilab digest (ASR, OCR, shots)",
}


_HINTS = {
    "ffmpeg": "pip install 'omnilab[coder]' (the imageio-ffmpeg wheel)",
    "omnilab": "not importable in the sandbox: check `omnilab doctor` and the install "
    "(pip install omnilab)",
}


def ffmpeg_exe() -> Path | None:
    """The ffmpeg binary of the ``imageio-ffmpeg`` wheel, if installed."""
    try:
        import imageio_ffmpeg
    except ImportError:
        return None
    try:
        return Path(imageio_ffmpeg.get_ffmpeg_exe())
    except RuntimeError:  # the wheel for another platform
        return None


def install_toolbox(workspace: Path) -> dict[str, str]:
    """Puts the toolbox commands in ``workspace/.toolbox/bin`` and returns the environment the
    sandboxed shell needs to find them (``PATH``)."""
    with open_folder(workspace, (TOOLBOX_DIR, "bin"), create=True) as fd:
        script = _MEDIAPROBE.format(python=sys.executable).encode()
        _replace(fd, "mediaprobe", script, mode=0o755)
        exe = ffmpeg_exe()
        if exe is not None:
            _link(fd, "ffmpeg", str(exe))
    base = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    bin_dir = workspace.resolve() / TOOLBOX_DIR / "bin"
    return {"PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), base])}


def _replace(dirfd: int, name: str, data: bytes, *, mode: int) -> None:
    # Written beside and renamed over: a link planted under the name is replaced, not followed.
    tmp_name = f".{name}.{os.getpid()}.tmp"
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=dirfd)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(tmp_name, mode, dir_fd=dirfd)
    os.replace(tmp_name, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)


def _link(dirfd: int, name: str, target: str) -> None:
    tmp_name = f".{name}.{os.getpid()}.lnk"
    os.symlink(target, tmp_name, dir_fd=dirfd)
    os.replace(tmp_name, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)


@cache
def toolbox_report() -> ToolboxReport:
    """What the sandboxed shell has, found once per process by running a probe inside it."""
    versions: dict[str, str | None] = dict.fromkeys(_USAGE)
    with tempfile.TemporaryDirectory(prefix="omnilab-toolbox-") as tmp:
        ws = Path(tmp)
        env = install_toolbox(ws)
        with ShellSession(ws, env=env) as shell:
            result = shell.run(_PROBE, timeout=60)
        for line in result.stdout.splitlines():
            name, _, version = line.partition("\t")
            if name in versions:
                versions[name] = None if version.strip() in ("", "-") else version.strip()
    return ToolboxReport(
        tuple(
            ToolInfo(n, v, _USAGE[n], _HINTS.get(n, "") if v is None else "")
            for n, v in versions.items()
        )
    )

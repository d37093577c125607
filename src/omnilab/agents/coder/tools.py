"""The three model-visible tools of the Code-X harness (Appendix I.1, Table 11).

- ``execute_commands(analysis, plan, keystrokes, wait_seconds)``: one command in the task's
  persistent sandboxed bash (:class:`~omnilab.sandbox.ShellSession`). Completion is reported on
  a private pipe (the sandbox's marker, which output cannot fake); output comes back cut head
  and tail; past its wait the command's whole process tree is killed and the shell kept; a
  shell that died is restarted and the observation says its state was lost.
- ``image_read(path)``: an image from the workspace, read without following links, shrunk to
  ``max_edge`` and shown to the model itself (the harness adds it to the conversation).
- ``task_complete(answer)``: ends the run once a wrapped ``<answer>`` exists.

The schema is flat, as the paper's is for Qwen-style tool calling. ``schema="kira"`` sends the
released KIRA harness's specs instead (``tools_kira.json``, verbatim from
Dongping-Chen/OmniCoding ``agents/kira/tools.py``): ``execute_commands(analysis, plan,
keystrokes, duration)``, ``image_read(file_path, image_read_instruction)`` (the instruction is
echoed beside the image) and ``task_complete()`` without arguments; they run the same code.
"""

from __future__ import annotations

import io
import json
import threading
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from PIL import Image as PILImage
from PIL import ImageOps, UnidentifiedImageError

from omnilab import _wsread
from omnilab.content import Text
from omnilab.media.image import resize
from omnilab.sandbox import ExecResult, ShellSession
from omnilab.tools.base import Tool, ToolResult, tool

__all__ = [
    "ShellTools",
    "ToolSchema",
    "format_exec",
    "kira_schemas",
    "make_tools",
    "read_workspace_image",
]

ToolSchema = Literal["omnilab", "kira"]

_MAX_IMAGE_BYTES = 64 * 1024**2


def format_exec(
    result: ExecResult, seen: set[str] | None = None, *, state_lost: bool | None = None
) -> str:
    """The observation of one command: its output, then what the harness has to say.

    Sandbox warnings already in ``seen`` (said by an earlier command: the isolation level's
    caveat comes with every result) are left out; new ones are added to it. ``state_lost``
    overrides the result's flag (the loop says a restart once, not again when the next command
    starts the new shell).
    """
    lost = result.state_lost if state_lost is None else state_lost
    seen = set() if seen is None else seen
    parts: list[str] = []
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append(result.stderr.rstrip("\n"))
    if not parts:
        parts.append("(no output)")
    status = f"exit code {result.exit_code}" if result.exit_code is not None else "no exit code"
    notes = [f"[{status}, {result.duration_s:.2f} s]"]
    if result.timed_out:
        notes.append(
            "[warning] the command ran past its time limit: it and every process it started "
            "were killed; the shell is still running"
        )
    if lost:
        notes.append(
            "[warning] the shell died and was restarted: the working directory, variables and "
            "background jobs are gone (files you wrote are still there)"
        )
    for warning in result.warnings:
        if not _routine(warning) and warning not in seen:
            seen.add(warning)
            notes.append(f"[sandbox] {warning}")
    return "\n".join(parts + notes)


def _routine(warning: str) -> bool:
    # Said above in the model's terms; the sandbox's own wording would repeat it.
    return "restarted" in warning or "was killed" in warning or "hung" in warning


def read_workspace_image(
    workspace: Path, path: str, max_edge: int
) -> tuple[bytes, str, tuple[int, int]]:
    """The image at ``path`` (relative to ``workspace``, or absolute inside it), as PNG bytes no
    larger than ``max_edge``, with a display name and its original size.

    Each path component is opened without following links, so a link that sandboxed code planted
    cannot make the harness read (and show the model) a file outside the workspace. Raises
    ``ValueError`` with a message the model can act on.
    """
    rel = _relative(workspace, path)
    if not rel.parts:
        raise ValueError(f"{path!r} is the workspace itself, not an image file")
    try:
        # Beneath the workspace, no link on any component, a FIFO refused at once, and the
        # header's pixel count checked before anything is decoded.
        opened = _wsread.open_image(
            str(rel), root=workspace, max_bytes=_MAX_IMAGE_BYTES, name=repr(path)
        )
    except _wsread.UnsafeFileError as e:
        raise ValueError(str(e)) from None
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise ValueError(f"{path!r} is not an image Pillow can read ({e})") from None
    try:
        with opened as im:
            upright = ImageOps.exif_transpose(im).convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise ValueError(f"{path!r} is not an image Pillow can read ({e})") from None
    size = upright.size
    out = io.BytesIO()
    resize(upright, max_edge).save(out, format="PNG")
    return out.getvalue(), str(rel), size


def _relative(workspace: Path, path: str) -> PurePosixPath:
    raw = PurePosixPath(path.strip())
    if raw.is_absolute():
        root = PurePosixPath(str(workspace.resolve()))
        try:
            raw = raw.relative_to(root)
        except ValueError:
            raise ValueError(f"{path!r} is outside the workspace; use a path inside it") from None
    parts = [p for p in raw.parts if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"{path!r} leaves the workspace ('..' is not allowed)")
    return PurePosixPath(*parts)


@dataclass
class ShellTools:
    """The task's shell and what the tools have done with it (read by the agent loop)."""

    shell: ShellSession
    workspace: Path
    default_wait: float
    max_wait: float
    max_edge: int
    warned: set[str] = field(default_factory=set)
    """Sandbox warnings the model has been told (each is said once)."""
    merge_output: bool = False
    """Run each command with stderr into stdout, so the two are one stream cut head and tail
    as one (the KIRA shell's merged 30,000-byte cap)."""
    death_told: bool = False
    """The last observation said the shell died: the restart the next command brings about
    was announced already."""
    images: list[tuple[str, bytes]] = field(default_factory=list)
    """Images read so far: (workspace path, PNG bytes) — the loop shows each to the model."""
    lock: threading.Lock = field(default_factory=threading.Lock)


@cache
def kira_schemas() -> dict[str, dict[str, Any]]:
    """The KIRA harness's function specs by name (``tools_kira.json``)."""
    text = resources.files(__package__).joinpath("tools_kira.json").read_text(encoding="utf-8")
    return {t["function"]["name"]: t["function"] for t in json.loads(text)["tools"]}


def make_tools(env: ShellTools, *, schema: ToolSchema = "omnilab") -> list[Tool]:
    """``execute_commands``, ``image_read`` and ``task_complete`` over ``env``, with omnilab's
    schemas or the KIRA harness's (see the module docstring)."""
    omnilab = _omnilab_tools(env)
    if schema == "omnilab":
        return omnilab
    run, look, done = omnilab
    specs = kira_schemas()

    def spec(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "description": specs[name]["description"],
            "parameters": specs[name]["parameters"],
        }

    @tool(**spec("execute_commands"))
    async def execute_commands(
        analysis: str, plan: str, keystrokes: str, duration: float | None = None
    ) -> ToolResult:
        """Run one command (KIRA's schema; the model sees ``tools_kira.json``'s words).

        Args:
            analysis: The state so far.
            plan: What this command does.
            keystrokes: The shell text to run.
            duration: Seconds the command may run (KIRA: default 1, at most 60).
        """
        return await run(
            {"analysis": analysis, "plan": plan, "keystrokes": keystrokes, "wait_seconds": duration}
        )

    @tool(**spec("image_read"))
    async def image_read(file_path: str, image_read_instruction: str = "") -> ToolResult:
        """Look at an image (KIRA's schema; the instruction is echoed beside the image).

        Args:
            file_path: The image's path in the workspace.
            image_read_instruction: What to learn from the image.
        """
        result = await look({"path": file_path})
        if result.error is None and image_read_instruction.strip():
            echo = f"Instruction: {image_read_instruction.strip()}"
            return result.model_copy(update={"content": [*result.content, Text(text=echo)]})
        return result

    @tool(**spec("task_complete"))
    async def task_complete() -> ToolResult:
        """End the task (KIRA's schema: no arguments)."""
        return await done({})

    return [execute_commands, image_read, task_complete]


def _omnilab_tools(env: ShellTools) -> list[Tool]:
    """omnilab's three tools (their schemas from the typed functions below)."""

    @tool
    def execute_commands(
        analysis: str, plan: str, keystrokes: str, wait_seconds: float | None = None
    ) -> ToolResult:
        """Run one command in the persistent bash session of the workspace.

        Args:
            analysis: What you know so far and what the last output showed.
            plan: What this command will do and why.
            keystrokes: The exact shell command to run (a line, a script or a heredoc).
            wait_seconds: How long the command may run before it is killed (default and maximum
                set by the harness).
        """
        if not keystrokes.strip():
            return ToolResult.fail("INVALID_ARGS", "keystrokes is empty: give the command to run")
        wait = env.default_wait if wait_seconds is None else wait_seconds
        wait = min(max(wait, 1.0), env.max_wait)
        with env.lock:
            before = env.shell.restarts
            # Braces, not a subshell: cd and variables still persist.
            line = f"{{ {keystrokes}\n}} 2>&1" if env.merge_output else keystrokes
            result = env.shell.run(line, timeout=wait)
            restarted = env.shell.restarts > before
        # A shell that died during a command is restarted when the next one starts; both
        # results carry state_lost, but the model is told once.
        died = result.state_lost and (not restarted or any("ended" in w for w in result.warnings))
        told = result.state_lost and (died or not env.death_told)
        env.death_told = died
        return ToolResult(
            content=[Text(text=format_exec(result, env.warned, state_lost=told))],
            metadata={
                "exit_code": result.exit_code,
                "ran": True,
                "timed_out": result.timed_out,
                "state_lost": result.state_lost,
                "duration_s": result.duration_s,
                "isolation": result.isolation.value,
                "network": result.network,
                "stdout_bytes": result.stdout_bytes,
                "stderr_bytes": result.stderr_bytes,
            },
        )

    @tool
    def image_read(path: str) -> ToolResult:
        """Look at an image file of the workspace (a frame, crop, figure or screenshot).

        Args:
            path: The image's path, relative to the workspace root.
        """
        try:
            data, name, (w, h) = read_workspace_image(env.workspace, path, env.max_edge)
        except ValueError as e:
            return ToolResult.fail(
                "NOT_FOUND" if "cannot be opened" in str(e) else "INVALID_ARGS", str(e)
            )
        env.images.append((name, data))
        shown = PILImage.open(io.BytesIO(data)).size
        text = f"Loaded {name} ({w}x{h}, shown at {shown[0]}x{shown[1]}); the image follows."
        return ToolResult(
            content=[Text(text=text)],
            metadata={"image": name, "size": [w, h], "shown": list(shown)},
        )

    @tool
    def task_complete(answer: str = "") -> str:
        """End the task. Call it after writing your final answer as <answer>...</answer>.

        Args:
            answer: Your final answer wrapped as <answer>...</answer> (may be left empty when
                the wrapped answer is already in your message).
        """
        return "Task marked complete."

    return [execute_commands, image_read, task_complete]

"""The rollout artifacts of Table 12, in the run folder beside the trajectory.

``<trajectory>.coder/`` (``trajectory.coder/`` for ``omnilab ask``,
``trajectories/<task>.coder/`` for ``omnilab eval``) holds

- ``images/NNN-<name>.png``: the pixels each ``image_read`` showed the model (the conversation
  refers to these files, so a replay sends exactly what the model saw);
- ``rollout.json``: messages (the replayable conversation, tool calls and observations, images by
  path), workspace outputs (derived files, with sizes), image references, the extracted answer,
  the exit reason, and reward metadata (the facts the automatic verification reads: status, tool
  calls, commands that ran, a clean ``task_complete`` exit with a non-empty answer).

It lives outside the workspace, where sandboxed code cannot rewrite it.
"""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnilab import _wswalk
from omnilab._atomic import write_atomic
from omnilab.trajectory import AnswerEvent, ToolResultEvent

if TYPE_CHECKING:
    from omnilab.agents.session import AgentRun

__all__ = ["Rollout", "workspace_outputs"]

_HIDDEN = (".toolbox", ".skills", "inputs", "tmp")
_MAX_LISTED = 500


def workspace_outputs(workspace: Path) -> list[dict[str, Any]]:
    """Files the agent made in ``workspace`` (not the staged inputs, toolbox or skills), with
    sizes; links are listed as links and never followed."""
    found: list[dict[str, Any]] = []
    if not workspace.is_dir():
        return found
    # By descriptor: a folder swapped for a link mid-walk is not entered.
    for folder in _wswalk.walk(workspace):
        if not folder.parts:
            folder.descend[:] = [d for d in folder.descend if d not in _HIDDEN]
        for name, st in folder.entries:
            if stat.S_ISDIR(st.st_mode):
                continue
            entry: dict[str, Any] = {"path": "/".join((*folder.parts, name)), "size": st.st_size}
            if stat.S_ISLNK(st.st_mode):
                entry["link"] = True
            found.append(entry)
            if len(found) >= _MAX_LISTED:
                return found
    return sorted(found, key=lambda e: str(e["path"]))


class Rollout:
    """Where one run's artifacts go, and what writes them."""

    def __init__(self, folder: Path, workspace: Path) -> None:
        self.folder = folder
        self.workspace = workspace
        self.images: list[dict[str, str]] = []

    @classmethod
    def beside(cls, trajectory: Path, workspace: Path) -> Rollout:
        """The artifacts folder of the run whose trajectory is ``trajectory``."""
        return cls(trajectory.with_name(f"{trajectory.stem}.coder"), workspace)

    def save_image(self, name: str, data: bytes) -> Path:
        """Keeps the PNG the model is shown; returns its path."""
        folder = self.folder / "images"
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name)[:80] or "image"
        path = folder / f"{len(self.images):03d}-{Path(safe).stem}.png"
        write_atomic(path, data, sync=False)  # never through a planted link
        self.images.append({"workspace_path": name, "file": str(path.relative_to(self.folder))})
        return path

    def write(self, run: AgentRun, exit_reason: str, *, shell_restarts: int = 0) -> Path:
        """Writes ``rollout.json`` from the run's events (atomically); returns its path."""
        answer = next((e for e in reversed(run.events) if isinstance(e, AnswerEvent)), None)
        results = [e for e in run.events if isinstance(e, ToolResultEvent)]
        commands_run = sum(
            1 for e in results if e.name == "execute_commands" and e.result.metadata.get("ran")
        )
        messages = run.trajectory().messages()
        record = {
            "format": 1,
            "messages": [m.model_dump(mode="json", exclude_none=True) for m in messages],
            "workspace_outputs": workspace_outputs(self.workspace),
            "image_references": self.images,
            "answer": answer.answer if answer is not None else None,
            "exit_reason": exit_reason,
            "reward_metadata": {
                "status": run.trajectory().status,
                "tool_calls": len(results),
                "commands_run": commands_run,
                "shell_restarts": shell_restarts,
                "clean_completion": exit_reason == "completion",
                "answer_nonempty": bool(answer is not None and answer.answer),
            },
        }
        path = self.folder / "rollout.json"
        write_atomic(path, json.dumps(record, indent=1, ensure_ascii=False) + "\n", sync=False)
        return path

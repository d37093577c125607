"""``omnilab trace FILE``: print a saved trajectory, compactly or as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from omnilab.cli._console import inert_console
from omnilab.errors import OmnilabError
from omnilab.terminal import inert_json
from omnilab.trajectory import EventAdapter, read_trajectory, render_text

__all__ = ["trace"]


def trace(
    file: Annotated[Path, typer.Argument(help="A trajectory file (.jsonl) written by a run.")],
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the header and events as one JSON object.")
    ] = False,
    width: Annotated[
        int | None,
        typer.Option("--width", help="Cut lines to this many characters (default: terminal)."),
    ] = None,
    call: Annotated[
        int | None,
        typer.Option(
            "--call",
            min=1,
            help="Print the exact input of model call N (1 = the first) as JSON: its role, "
            "context, messages, tools and settings.",
        ),
    ] = None,
) -> None:
    """Print a saved trajectory step by step: thoughts, tool calls, observations, the answer.

    A file cut off by a crash is read up to its last complete event, with a warning.
    """
    traj = read_trajectory(file)
    if call is not None:
        contexts = traj.contexts()
        if call > len(contexts):
            raise OmnilabError(
                f"{file} has {len(contexts)} model call(s) whose input can be rebuilt; "
                f"--call {call} is past the last"
            )
        found = contexts[call - 1]
        sent = found.call.sent
        data: dict[str, Any] = {
            "model": found.call.model,
            "role": found.role,
            "context_id": found.context_id,
            "exact": found.exact,
            "messages": [m.model_dump(mode="json") for m in found.messages],
            "tools": [t.model_dump(mode="json") for t in found.tools],
            "config": sent.config.model_dump(mode="json", exclude_defaults=True) if sent else {},
            "media": sent.media if sent else {},
        }
        typer.echo(inert_json(json.dumps(data, indent=2, ensure_ascii=False)))
        return
    if json_out:
        data = {
            "header": traj.header.model_dump(mode="json"),
            "truncated": traj.truncated,
            "warnings": traj.warnings,
            "events": [EventAdapter.dump_python(e, mode="json") for e in traj.events],
        }
        typer.echo(inert_json(json.dumps(data, indent=2, ensure_ascii=False)))
        return
    # Model text may contain [brackets]: never read it as rich markup.
    console = inert_console(highlight=False, emoji=False, soft_wrap=True)
    console.print(render_text(traj, width=width or max(console.width, 40)), markup=False)

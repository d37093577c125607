"""``omnilab doctor``: what the sandbox can enforce on this machine, and what it cannot."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from omnilab.cli._console import inert_console

__all__ = ["doctor"]


def doctor(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON (for scripts and CI).")
    ] = False,
) -> None:
    """Check the sandbox: the isolation level that works here, the per-sandbox totals (cgroups,
    workspace tmpfs) it can enforce, what model-written code could still do, and the media
    toolbox a sandboxed shell has (ffmpeg, mediaprobe, Python packages: the coder agent's).

    Starts a trivial sandbox at each level to find out; nothing is changed on the machine.
    """
    from omnilab.agents.coder.toolbox import toolbox_report
    from omnilab.sandbox import isolation_report

    report = isolation_report()
    toolbox = toolbox_report()
    if as_json:
        payload = report.model_dump(mode="json") | {"toolbox": toolbox.as_dict()}
        typer.echo(json.dumps(payload, indent=1))
        return
    console = inert_console(highlight=False)
    console.print(f"[bold]sandbox isolation:[/] {report.level.value}")
    for level, why in report.unavailable.items():
        console.print(f"  {level}: unavailable ({escape(why)})")
    uid = "yes" if report.own_uid else "NO (the harness is not root, or the unsafe opt-in is set)"
    console.print(f"[bold]own uid per live workspace:[/] {uid}")
    console.print(f"[bold]seccomp filter:[/] {'yes' if report.seccomp else 'NO'}")
    table = Table("total per sandbox", "enforced by")
    for name, how in report.totals.items():
        style = "red" if how.startswith("MISSING") else ""
        table.add_row(name, escape(how), style=style)
    console.print(table)
    console.print(f"[bold]host paths sandboxed code sees ({report.level.value}):[/]")
    for item in report.visible:
        console.print(f"  - {escape(item)}", soft_wrap=True)  # paths whole, to copy
    console.print("[bold]blocked:[/]")
    for item in report.blocked:
        console.print(f"  - {escape(item)}")
    if report.not_blocked:
        console.print("[bold red]NOT blocked:[/]")
        for item in report.not_blocked:
            console.print(f"  - {escape(item)}")
    console.print("[bold]media toolbox in the sandbox (coder agent):[/]")
    for tool in toolbox.tools:
        found = escape(tool.version) if tool.version else f"[red]MISSING[/] {escape(tool.hint)}"
        console.print(f"  - {tool.name}: {found}")

"""``omnilab tools`` and ``omnilab agents``: what a run can be given, built-in and from plugins."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from omnilab.agents.base import AgentConfigError
from omnilab.agents.registry import agent_names, describe_agent
from omnilab.cli._console import inert_console
from omnilab.tools.registry import describe_tools

__all__ = ["agents", "tools"]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def tools(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Tools to show (default: all); module:attr works too."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the tools agents can use, with their schemas (`--tools NAME,...` picks them).

    Plugins add tools through the entry-point group omnilab.tools; a tool that cannot be built
    here (a missing extra, a broken plugin) is listed with its error.
    """
    infos = describe_tools(names or None)
    if json_out:
        rows = [
            {
                "name": i.name,
                "source": i.source,
                "description": i.spec.description if i.spec else None,
                "parameters": i.spec.parameters if i.spec else None,
                "error": i.error,
            }
            for i in infos
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(box=None, padding=(0, 1), header_style="bold")
    table.add_column("tool", no_wrap=True)
    table.add_column("arguments", overflow="fold")
    table.add_column("description", overflow="fold")
    for i in infos:
        if i.spec is None:
            table.add_row(i.name, "", f"[red]cannot be built:[/] {escape(i.error or '')}")
            continue
        props = i.spec.parameters.get("properties", {})
        required = set(i.spec.parameters.get("required", []))
        args = ", ".join(
            f"{k}{'' if k in required else '?'}: {v.get('type', 'any')}" for k, v in props.items()
        )
        # The first sentence: the schemas' descriptions run to paragraphs (--json has them whole).
        first = " ".join(i.spec.description.split()).split(". ")[0].rstrip(".") + "."
        table.add_row(i.name, escape(args), escape(first))
    inert_console().print(table, highlight=False)


def agents(json_out: JsonOpt = False) -> None:
    """List the agents (`--agent NAME`) with their options (`--agent-option KEY=VALUE`).

    Plugins add agents through the entry-point group omnilab.agents.
    """
    rows: list[dict[str, object]] = []
    for name in agent_names():
        try:
            info = describe_agent(name)
        except AgentConfigError as e:
            rows.append({"name": name, "error": str(e)})
            continue
        rows.append(
            {
                "name": info.name,
                "summary": info.summary,
                "source": info.source,
                "options": [o.__dict__ for o in info.options],
            }
        )
    if json_out:
        typer.echo(json.dumps(rows, indent=2))
        return
    console = inert_console(highlight=False, soft_wrap=True)
    for row in rows:
        if "error" in row:
            console.print(
                f"[bold]{escape(str(row['name']))}[/]  [red]{escape(str(row['error']))}[/]"
            )
            continue
        console.print(f"[bold]{escape(str(row['name']))}[/]  {escape(str(row['summary']))}")
        options = row["options"]
        assert isinstance(options, list)
        for o in options:
            kind = f": {o['type']}" if o["type"] else ""
            about = f"  {o['help']}" if o["help"] else ""
            console.print(
                f"  [cyan]{escape(o['name'])}[/]{escape(kind)} = {escape(o['default'])}"
                f"[dim]{escape(about)}[/]"
            )
        console.print()

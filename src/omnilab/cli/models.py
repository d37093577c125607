"""``omnilab models`` and ``omnilab chat``: see the providers, try a model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from omnilab.cli._console import inert_console
from omnilab.models.capabilities import Capabilities
from omnilab.models.chat import chat as run_chat
from omnilab.models.overview import describe_providers
from omnilab.models.types import GenerateConfig
from omnilab.terminal import inert, inert_json

__all__ = ["chat", "list_models"]

_KEY_STYLE = {"set": "green", "missing": "red", "optional": "dim", "none": "dim"}


def list_models(
    json_out: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List providers and aliases: base URL, API key variable (set or not), capability flags.

    Name a model as provider:model[@base_url], e.g. vllm:Qwen/Qwen2.5-Omni-7B@http://gpu:8000/v1.
    """
    rows = describe_providers()
    if json_out:
        typer.echo(json.dumps([r.model_dump(mode="json") for r in rows], indent=2))
        return
    table = Table(box=None, padding=(0, 1), header_style="bold")
    table.add_column("provider", no_wrap=True)
    table.add_column("API key", no_wrap=True)
    table.add_column("endpoint, default flags", overflow="fold")
    for r in rows:
        # The first variable is enough here; --json lists every one it is read from.
        var = f"{r.key_env[0]} " if r.key_env else ""
        key = f"{var}[{_KEY_STYLE[r.key]}]{r.key}[/]"
        about = r.description if r.available else f"{r.description} [red](not installed)[/]"
        where = r.base_url or about
        detail = (
            f"{where}\n[dim]{r.capabilities.describe()}"
            + (f"; {about}" if r.base_url else "")
            + "[/]"
        )
        table.add_row(r.name, key, detail)
    console = inert_console()
    console.print(table, highlight=False)
    flags = ", ".join(Capabilities.model_fields)
    console.print(
        f"\nFlags also depend on the model family and on models.capabilities in omnilab.toml "
        f"({flags}).",
        highlight=False,
    )


def chat(
    prompt: Annotated[str, typer.Argument(help="What to ask.")],
    model: Annotated[
        str | None,
        typer.Option(
            "--model", "-m", help="provider:model\\[@base_url]; default: OMNILAB_MODEL or config."
        ),
    ] = None,
    image: Annotated[
        list[Path] | None,
        typer.Option("--image", exists=True, dir_okay=False, help="Attach an image (repeatable)."),
    ] = None,
    audio: Annotated[
        list[Path] | None,
        typer.Option("--audio", exists=True, dir_okay=False, help="Attach audio (repeatable)."),
    ] = None,
    video: Annotated[
        list[Path] | None,
        typer.Option("--video", exists=True, dir_okay=False, help="Attach a video (repeatable)."),
    ] = None,
    system: Annotated[str | None, typer.Option("--system", help="A system prompt.")] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", min=1, help="Most tokens to generate.")
    ] = None,
    temperature: Annotated[
        float | None, typer.Option("--temperature", min=0.0, help="Sampling temperature.")
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the whole output (usage, reasoning) as JSON.")
    ] = False,
) -> None:
    """Send PROMPT (with any attached media) to a model and print the answer."""
    from omnilab.cli.exit_codes import ExitCode

    output = run_chat(
        prompt,
        model=model,
        images=image or [],
        audio=audio or [],
        videos=video or [],
        system=system,
        config=GenerateConfig(max_tokens=max_tokens, temperature=temperature),
    )
    if json_out:
        typer.echo(inert_json(output.model_dump_json(indent=2)))
        if not output.text.strip():
            raise typer.Exit(ExitCode.NO_ANSWER)
        return
    err = inert_console(stderr=True)
    if output.reasoning:
        err.print(Text(inert(output.reasoning), style="dim"))
    # The model's answer, on a terminal or not: its control characters never act on one.
    typer.echo(inert(output.text))
    u = output.usage
    cached = ", cached" if output.cached else ""
    err.print(
        f"[dim]{u.prompt_tokens} prompt + {u.completion_tokens} completion tokens, "
        f"{output.latency_s:.2f} s{cached}[/]",
        highlight=False,
    )
    if not output.text.strip():
        err.print("[yellow]the model gave no text[/]", highlight=False)
        raise typer.Exit(ExitCode.NO_ANSWER)

"""``omnilab ask FILE... QUESTION``: an agent answers a question about files, step by step.

Each step is shown as it happens (the model's thought, its tool calls, a short observation),
then the answer and the path of the saved trajectory (``omnilab trace PATH`` replays it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule

from omnilab._urls import is_remote
from omnilab.api import AskResult, ask_async
from omnilab.cli._console import inert_console
from omnilab.cli._pairs import parse_pairs
from omnilab.cli.exit_codes import ExitCode, for_run
from omnilab.errors import OmnilabError
from omnilab.inputs import InputSet
from omnilab.models.events import ModelCallEvent
from omnilab.plural import plural
from omnilab.terminal import inert, inert_json
from omnilab.trajectory import (
    AnswerEvent,
    ErrorEvent,
    Event,
    MessageAdded,
    RunEnd,
    RunStart,
    StepNote,
    ToolResultEvent,
)

__all__ = ["LiveView", "ask", "exit_code", "print_result", "run_ask"]

_THOUGHT_CHARS = 600
_OBSERVATION_CHARS = 240


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _arguments(arguments: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    return _short(shown, 300)


class LiveView:
    """Prints each event of a run as it is written (pass as ``on_event``)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.agent_model: str | None = None
        self.step = 0
        self._messages = 0
        self._call_error: str | None = None

    def _print(self, markup: str) -> None:
        # Model and tool text is escaped for markup already; make its control characters inert.
        self.console.print(inert(markup), highlight=False, soft_wrap=True)

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStart):
            self.agent_model = event.models.get("agent")
            cfg = event.config
            tools = ", ".join(map(str, cfg.get("tools") or [])) or "none"
            shown = [f"{k} {cfg[k]}" for k in ("variant", "mode") if cfg.get(k) is not None]
            about = f" ({escape(', '.join(shown))})" if shown else ""
            self._print(
                f"[bold]agent[/] {escape(event.agent)}{about}  [bold]model[/] "
                f"{escape(self.agent_model or '?')}\n[bold]tools[/] {escape(tools)}"
            )
            for f in event.inputs:
                self._print(
                    f"[bold]input[/] {escape(f.id)}: {escape(f.kind)} {escape(str(f.path))}"
                )
        elif isinstance(event, MessageAdded):
            self._messages += 1
            if event.message.role == "user" and self._messages > 2:  # notices, forced final
                self._print(f"[yellow]notice:[/] {escape(_short(event.message.text, 300))}")
        elif isinstance(event, ModelCallEvent):
            self._model_call(event)
        elif isinstance(event, ToolResultEvent):
            seconds = f"{event.duration_s:.1f}s"
            if event.result.error is not None:
                err = event.result.error
                self._print(
                    f"  [red]← {escape(event.name)} {seconds} error {escape(err.code)}:[/] "
                    f"{escape(_short(err.message, _OBSERVATION_CHARS))}"
                )
            else:
                media = [p.type for p in event.result.content if p.type != "text"]
                extra = f" [+{len(media)} media]" if media else ""
                text = _short(event.result.text, _OBSERVATION_CHARS) or "(no text)"
                self._print(f"  [green]← {escape(event.name)}[/] {seconds}{extra}: {escape(text)}")
        elif isinstance(event, AnswerEvent):
            title = "answer (forced final)" if event.forced else "answer"
            body = (
                escape(inert(event.answer)) if event.answer is not None else "[red](no answer)[/]"
            )
            self.console.print(Panel(body, title=title, expand=False), highlight=False)
        elif isinstance(event, ErrorEvent):
            if event.error_kind == "model" and event.message == self._call_error:
                return  # the failed call was just shown with this very message
            self._print(f"[red]{escape(event.error_kind)}:[/] {escape(event.message)}")
        elif isinstance(event, StepNote):
            self._print(f"  [magenta]{escape(event.label)}:[/] {escape(_short(event.text, 400))}")
        elif isinstance(event, RunEnd):
            u = event.usage
            self._print(
                f"[dim]{event.status}: {plural(event.turns, 'turn')}, {u.prompt_tokens} prompt + "
                f"{u.completion_tokens} completion tokens, {event.wall_s:.1f} s[/]"
            )

    def _model_call(self, event: ModelCallEvent) -> None:
        # A call of another role (schema 2 labels it), else of another model name: a tool's
        # own model, e.g. the perception model behind audio_qa.
        side = event.role != "agent" if event.role is not None else event.model != self.agent_model
        if side:
            # A tool's perception model, or one of a master agent's per-role models.
            role = f" as {event.role}" if event.role is not None else ""
            self._print(f"  [dim]({escape(event.model)} answered{escape(role)})[/]")
            return
        self.step += 1
        self.console.print(Rule(f"step {self.step}", align="left", style="dim"))
        if event.error is not None:
            self._call_error = event.error
            self._print(f"[red]model call failed:[/] {escape(event.error)}")
            return
        output = event.output
        if output is None:
            return
        if output.reasoning:
            self._print(f"[dim italic]{escape(_short(output.reasoning, _THOUGHT_CHARS))}[/]")
        if output.text.strip():
            self._print(escape(_short(output.text, _THOUGHT_CHARS)))
        for call in output.tool_calls:
            self._print(f"  [cyan]→ {escape(call.name)}[/]({escape(_arguments(call.arguments))})")


def print_result(console: Console, result: AskResult) -> None:
    """The closing lines: where the trajectory and the workspace are."""
    console.print(f"trajectory: {result.trajectory_path}", highlight=False, soft_wrap=True)
    console.print(
        f"[dim]replay it with: omnilab trace {escape(str(result.trajectory_path))}[/]",
        highlight=False,
        soft_wrap=True,
    )


def run_ask(
    files: list[str | Path],
    question: str,
    *,
    console: Console | None,
    **options: Any,
) -> AskResult:
    """Run :func:`omnilab.api.ask_async` with a live view on ``console`` (none: quiet); Ctrl-C
    exits with :attr:`ExitCode.INTERRUPTED`."""
    import asyncio

    view = LiveView(console) if console is not None else None
    try:
        return asyncio.run(ask_async(files, question, on_event=view, **options))
    except KeyboardInterrupt:
        typer.echo("interrupted: the steps so far are saved in the run's trajectory", err=True)
        raise typer.Exit(ExitCode.INTERRUPTED) from None


def _split(args: list[str]) -> tuple[list[str | Path], str]:
    if not args:
        raise OmnilabError('give the files, then the question: omnilab ask clip.mp4 "What ...?"')
    *files, question = args
    # URLs (s3://, https://, ...) stay text: they are fetched, a Path would mangle them.
    return [f if is_remote(f) else Path(f) for f in files], question


def _print_header(
    console: Console,
    files: list[str | Path],
    model: str | None,
    mode: str | None,
    tools: list[str] | None,
    *limits: float | None,
    agent: str = "tir",
    roles: dict[str, str] | None = None,
    search: str | None = None,
    warnings: list[str] | None = None,
    title: str = "",
) -> None:
    """The run header (agent, mode and why, tools, models, budgets, the web search provider
    when web_search is offered, ``warnings``) above the live view, under a rule with ``title``
    (printed once the header is known: a bad model name prints its error alone)."""
    from omnilab.bench.header import ask_header, render_header
    from omnilab.config import get_settings

    budgets = dict(zip(("max_turns", "max_tokens", "max_seconds"), limits, strict=True))
    named = {**get_settings().agents.roles, **(roles or {})}
    header = ask_header(
        files,
        agent=agent,
        model=model,
        mode=mode,
        tools=tools,
        budgets=budgets,
        roles=named,
        warnings=warnings or (),
    )
    if tools is None or "web_search" in tools:
        from omnilab.tools.search_choice import search_origin

        header = header.model_copy(update={"search": search_origin(search)})
    console.print(Rule(escape(title)))
    for line in render_header(header):
        style = "bold yellow" if line.startswith("warning:") else "dim"
        console.print(line, style=style, markup=False, highlight=False)


def ask(
    args: Annotated[
        list[str],
        typer.Argument(help="Input files, then the question (last).", metavar="FILE... QUESTION"),
    ],
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="provider:model or provider:model@URL; default: the configured one.",
        ),
    ] = None,
    agent: Annotated[
        str, typer.Option("--agent", "-a", help="Agent scaffold (see omnilab agents).")
    ] = "tir",
    agent_option: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-option",
            "-O",
            help="KEY=VALUE agent option (value read as JSON when it is JSON); repeatable.",
        ),
    ] = None,
    role: Annotated[
        list[str] | None,
        typer.Option("--role", help="ROLE=MODEL for a further model (e.g. perception=...)."),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            help="tir: native, active, tools, audio-as-tool, vision-as-tool or evidence; "
            "default: from the model's flags.",
        ),
    ] = None,
    variant: Annotated[
        str | None,
        typer.Option("--variant", help="tir: system prompt base or omniatlas; default: by mode."),
    ] = None,
    max_turns: Annotated[
        int | None,
        typer.Option("--max-turns", min=1, help="Tool-using turns before a forced final answer."),
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option("--max-tokens", min=1, help="Token budget of the whole run."),
    ] = None,
    max_seconds: Annotated[
        float | None,
        typer.Option("--max-seconds", min=1.0, help="Wall-clock budget of the whole run."),
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools",
            help="Comma-separated tools to offer, e.g. web_search,code_executor "
            "(`omnilab tools` lists them; package.module:attr works too).",
        ),
    ] = None,
    perception_model: Annotated[
        str | None,
        typer.Option("--perception-model", help="Model behind audio_qa/vision_qa (mode tools)."),
    ] = None,
    search: Annotated[
        str | None,
        typer.Option(
            "--search",
            help="Web search provider of web_search: serper, brave, tavily, searxng or local "
            "(the offline corpus); default: web.search_provider.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Run folder (trajectory + workspace); default: a new one."),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="No live view; print the result as JSON.")
    ] = False,
    allow_unreadable: Annotated[
        bool,
        typer.Option(
            "--allow-unreadable",
            help="Run even when a video, audio or image input does not decode (it is refused "
            "otherwise); the agent sees it listed as unreadable.",
        ),
    ] = False,
) -> None:
    """Answer QUESTION about the FILEs with an agent, showing each step as it happens.

    Example: omnilab ask sample.mp4 "What text appears on screen?"

    Any registered agent runs with --agent NAME and its options with -O KEY=VALUE.
    """
    files, question = _split(args)
    if search is not None:
        from omnilab.tools.search_choice import check_search

        check_search(search)
    options = parse_pairs(agent_option, "--agent-option", parse_json=True)
    roles = parse_pairs(role, "--role", parse_json=False)
    tool_names = [t.strip() for t in tools.split(",") if t.strip()] if tools is not None else None
    # A missing or undecodable file is reported before anything runs.
    problems = InputSet.from_paths(files).check_readable(allow=allow_unreadable)
    unreadable = [f"unreadable input {p} (--allow-unreadable)" for p in problems]
    console = None if json_out else inert_console(highlight=False)
    if console is None:
        for line in unreadable:
            typer.echo(f"warning: {line}", err=True)
    if console is not None:
        limits = (max_turns, max_tokens, max_seconds)
        _print_header(
            console,
            files,
            model,
            mode,
            tool_names,
            *limits,
            agent=agent,
            roles=roles,
            search=search,
            warnings=unreadable,
            title=question,
        )
    result = run_ask(
        files,
        question,
        console=console,
        model=model,
        agent=agent,
        agent_options=options,
        roles=roles,
        mode=mode,
        variant=variant,
        tools=tool_names,
        max_turns=max_turns,
        max_tokens=max_tokens,
        max_seconds=max_seconds,
        perception_model=perception_model,
        run_dir=out,
        search=search,
        allow_unreadable=allow_unreadable,
    )
    code = exit_code(result)
    if console is None:
        end = result.trajectory.run_end
        summary = {
            "answer": result.answer,
            "status": result.status,
            "trajectory": str(result.trajectory_path),
            "workspace": str(result.workspace),
            "turns": end.turns if end is not None else None,
            "usage": result.trajectory.usage.model_dump(),
            "wall_s": end.wall_s if end is not None else None,
            "exit_code": int(code),
        }
        typer.echo(inert_json(json.dumps(summary, indent=2, ensure_ascii=False)))
    else:
        print_result(console, result)
    if code != ExitCode.ANSWERED:
        raise typer.Exit(code)


def exit_code(result: AskResult) -> ExitCode:
    """The exit status of a finished ask run (see :mod:`omnilab.cli.exit_codes`)."""
    kinds = [e.error_kind for e in result.trajectory.events if isinstance(e, ErrorEvent)]
    return for_run(result.status, kinds)

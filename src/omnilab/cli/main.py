"""Entry point of the ``omnilab`` command.

Sub-commands are imported only when they run: ``omnilab --version`` and ``omnilab --help``
import none of them, and ``omnilab media probe`` imports the media layer but no agent, model or
benchmark code. ``tests/test_cli_startup.py`` checks this.
"""

from __future__ import annotations

import difflib
import gc
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from omnilab import __version__
from omnilab.errors import OmnilabError

__all__ = ["COMMANDS", "app", "main"]

# ---------------------------------------------------------------------------------------------
# HOW TO ADD A COMMAND: one line below, `"name": ("omnilab.cli.module:attr", "Short help.")`.
# `attr` is a typer command function (as you would pass to `app.command()`) or a `typer.Typer`
# (a group of sub-commands, like `media`). The module is imported only when the command runs
# (or when `omnilab NAME --help` is asked); the short help here is what `omnilab --help` lists
# without importing anything, so keep it in step with the command's docstring. Keep imports of
# heavy layers inside the command module, never here.
# ---------------------------------------------------------------------------------------------
COMMANDS: dict[str, tuple[str, str]] = {
    "media": ("omnilab.cli.media:app", "Inspect and cut media files (probe, frames, audio, ...)."),
    "data": ("omnilab.cli.data:app", "Load benchmark files: check them, show their tasks."),
    "index": ("omnilab.cli.index:app", "Build and query the offline search index."),
    "demo": ("omnilab.cli.demo:demo", "Run an agent on a sample video made on the spot."),
    "ask": ("omnilab.cli.ask:ask", "Answer a question about files with an agent."),
    "digest": ("omnilab.cli.digest:digest", "Turn media files into compact text evidence."),
    "models": ("omnilab.cli.models:list_models", "List model providers and aliases."),
    "chat": ("omnilab.cli.models:chat", "Send a prompt (with media) to a model."),
    "tools": ("omnilab.cli.tools:tools", "List the tools agents can use, with their schemas."),
    "agents": ("omnilab.cli.tools:agents", "List the agents, with their options."),
    "eval": ("omnilab.cli.eval:eval_", "Run an agent on a benchmark."),
    "explore": ("omnilab.cli.explore:explore", "Hindsight-guided tree exploration of a dataset."),
    "rollout": ("omnilab.cli.rollout:rollout", "Token-exact rollouts of an agent for RL trainers."),
    "protocols": ("omnilab.cli.protocols:protocols", "Reproduction presets of published setups."),
    "score": ("omnilab.cli.runs:score", "Score a run's answers again (another judge or scorer)."),
    "metrics": ("omnilab.cli.runs:metrics", "Metrics of a run (Pass@1, EM, groups, cost)."),
    "compare": ("omnilab.cli.runs:compare", "Two runs side by side, with McNemar's test."),
    "analyze": ("omnilab.cli.runs:analyze", "Label failed tasks with OmniGAIA's error types."),
    "leaderboard": ("omnilab.cli.leaderboard:leaderboard", "Models x benchmarks, with 95% CIs."),
    "trace": ("omnilab.cli.trace:trace", "Print a saved trajectory step by step."),
    "report": ("omnilab.cli.report:report", "HTML report of runs (charts, tasks, comparison)."),
    "view": ("omnilab.cli.report:view", "Render one trajectory as an HTML page."),
    "export": (
        "omnilab.cli.export:app",
        "Training data: SFT, DPO, RL prompts and group advantages.",
    ),
    "cache": ("omnilab.cli.cache:app", "See and clear the media cache (prepared media parts)."),
    "config": ("omnilab.cli.config:config", "Show the settings in effect and their sources."),
    "trust": (
        "omnilab.cli.trust:trust_command",
        "Let a project's omnilab.toml set security options.",
    ),
    "doctor": ("omnilab.cli.doctor:doctor", "What this machine's sandbox enforces, and what not."),
    "mcp": ("omnilab.cli.mcp:mcp", "Serve omnilab's tools over the Model Context Protocol."),
    "serve": (
        "omnilab.cli.serve:serve",
        "Serve agents over HTTP (ask with uploads, streamed steps).",
    ),
    "skills": ("omnilab.cli.skills:app", "Skills for the coder agent: list, distill, refine."),
}
"""Every sub-command: name -> (``module:attr``, short help)."""


_RUNS = frozenset({"ask", "chat", "eval", "demo", "rollout"})
"""Commands that run a model: their ``--help`` ends with the exit status table."""


# Click's classes are named through typer's (recent typer versions bundle their own click).
def _load(name: str, target: str) -> Any:
    from omnilab.registry import import_target

    value = import_target(target)
    if isinstance(value, typer.Typer):
        return typer.main.get_group(value)
    single = typer.Typer()
    epilog: str | None = None
    if name in _RUNS:
        from omnilab.cli.exit_codes import EPILOG

        epilog = EPILOG
    single.command(name, epilog=epilog)(value)
    # One command and no callback: typer returns the command itself, not a group.
    return typer.main.get_command(single)


class _Stub(TyperCommand):
    """Stands for a command not imported yet, in ``omnilab --help`` listings."""


class LazyGroup(TyperGroup):
    """The root group: commands of :data:`COMMANDS` are imported when resolved."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(n for n in super().list_commands(ctx) if n not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is not None or cmd_name not in COMMANDS:
            return found
        # Listing commands needs only their short help: no import.
        return _Stub(cmd_name, help=COMMANDS[cmd_name][1], short_help=COMMANDS[cmd_name][1])

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        typed = args[0] if args else ""
        if typed and not typed.startswith("-") and self.get_command(ctx, typed) is None:
            # typer suggests only among loaded commands; these are not loaded yet.
            near = difflib.get_close_matches(typed, self.list_commands(ctx))
            hint = f" Did you mean {', '.join(map(repr, near))}?" if near else ""
            ctx.fail(f"No such command {typed!r}.{hint}")
        name, cmd, rest = super().resolve_command(ctx, args)
        if isinstance(cmd, _Stub) and name is not None:
            cmd = _load(name, COMMANDS[name][0])
            self.add_command(cmd, name)
        return name, cmd, rest


app = typer.Typer(
    name="omnilab",
    cls=LazyGroup,
    help="Omni-modal agents: media environment, models, tools, agents and evaluation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"omnilab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Omni-modal agents: media environment, models, tools, agents and evaluation."""


def _error_console(**options: Any) -> Any:
    # Error messages may quote model or tool text: never let its escape sequences through.
    from omnilab.cli._console import inert_console

    return inert_console(stderr=True, **options)


def _plain_flags() -> None:
    """Make typer's help show no type after flags: typer (0.2x) writes ``<bool>`` after every
    option that takes no value (``--check <bool>``), which reads as if it wanted one."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    if getattr(shown, "omnilab_plain_flags", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag or self.count else shown(self, ctx)

    display_type_rich.omnilab_plain_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def _close_options() -> None:
    """Suggest options by their names alone: click (and the copy of it typer 0.2x carries)
    compares whole spellings with difflib, where the shared leading dashes pass its cutoff by
    themselves (``--bogus`` offered ``--out``). The suggestions it made are filtered again."""
    import contextlib
    import importlib

    for module in ("typer._click.exceptions", "click.exceptions"):
        with contextlib.suppress(ImportError, AttributeError):
            _filter_suggestions(importlib.import_module(module).NoSuchOption)


def _filter_suggestions(cls: Any) -> None:
    import difflib

    init = cls.__init__
    if getattr(init, "omnilab_close_options", False):
        return

    def filtered_init(
        self: Any,
        option_name: str,
        message: str | None = None,
        possibilities: Any = None,
        ctx: Any = None,
    ) -> None:
        init(self, option_name, message, possibilities, ctx)
        bare = {str(p).lstrip("-"): str(p) for p in self.possibilities or ()}
        close = difflib.get_close_matches(option_name.lstrip("-"), list(bare))
        object.__setattr__(self, "possibilities", [bare[c] for c in close] or None)

    filtered_init.omnilab_close_options = True  # type: ignore[attr-defined]
    cls.__init__ = filtered_init


def main() -> None:
    """Run the CLI; user errors print one line on stderr and exit with status 1 (4 when the
    model or its endpoint failed; see :mod:`omnilab.cli.exit_codes`)."""
    _plain_flags()  # --help: no <bool> after flags
    _close_options()  # an unknown option suggests only options spelled like it
    try:
        app()
    except OmnilabError as e:
        from rich.markup import escape

        from omnilab.cli.exit_codes import ExitCode

        # Messages quote user input and extras such as 'omnilab[local]': never read them as markup.
        _error_console(emoji=False).print(
            f"[bold red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True
        )
        sys.exit(ExitCode.MODEL_FAILURE if e.model_failure else ExitCode.BAD_INPUT)
    except KeyboardInterrupt:
        from omnilab.cli.exit_codes import ExitCode

        _error_console().print("interrupted")
        sys.exit(ExitCode.INTERRUPTED)
    finally:
        _settle_heap()


def _settle_heap() -> None:
    """Collect once, then freeze what is left: the process ends next. The interpreter's shutdown
    walks every live object again in its own collections (the modules, pydantic's schemas, a
    run's plan), which took 0.25-0.3 s after a 1,000-task eval here; frozen objects are not
    walked. Garbage made so far is still collected (and finalized) here; exit hooks, buffered
    files and reference counting at shutdown are untouched."""
    gc.collect()
    gc.freeze()

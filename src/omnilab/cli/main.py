"""Entry point of the ``omnilab`` command."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from omnilab import __version__
from omnilab.cli import ask as ask_cmd
from omnilab.cli import config as config_cmd
from omnilab.cli import data as data_cmd
from omnilab.cli import demo, media
from omnilab.cli import digest as digest_cmd
from omnilab.cli import doctor as doctor_cmd
from omnilab.cli import eval as eval_cmd
from omnilab.cli import index as index_cmd
from omnilab.cli import models as models_cmd
from omnilab.cli import trace as trace_cmd
from omnilab.errors import OmnilabError

__all__ = ["app", "main"]

app = typer.Typer(
    name="omnilab",
    help="Omni-modal agents: media environment, models, tools, agents and evaluation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(media.app, name="media")
app.add_typer(data_cmd.app, name="data")
app.add_typer(index_cmd.app, name="index")
app.command("demo")(demo.demo)
app.command("ask")(ask_cmd.ask)
app.command("digest")(digest_cmd.digest)
app.command("models")(models_cmd.list_models)
app.command("chat")(models_cmd.chat)
app.command("eval")(eval_cmd.eval_)
app.command("score")(eval_cmd.score)
app.command("metrics")(eval_cmd.metrics)
app.command("compare")(eval_cmd.compare)
app.command("analyze")(eval_cmd.analyze)
app.command("trace")(trace_cmd.trace)
app.command("config")(config_cmd.config)
app.command("doctor")(doctor_cmd.doctor)


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


def main() -> None:
    """Run the CLI; user errors print one line on stderr and exit with status 1."""
    try:
        app()
    except OmnilabError as e:
        # Messages quote user input and extras such as 'omnilab[local]': never read them as markup.
        Console(stderr=True, emoji=False).print(
            f"[bold red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True
        )
        sys.exit(1)
    except KeyboardInterrupt:
        Console(stderr=True).print("interrupted")
        sys.exit(130)

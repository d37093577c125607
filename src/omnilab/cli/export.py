"""``omnilab export ...``: training data from finished runs, in the formats trainers read.

Each sub-command lives in its own module and imports its library code only when it runs.
"""

from __future__ import annotations

import typer

from omnilab.cli.export_groups import rl_groups

__all__ = ["app"]

app = typer.Typer(
    help="Training data from runs: rewards, advantages and examples for trainers.",
    no_args_is_help=True,
)
app.command("rl-groups")(rl_groups)

"""``omnilab demo``: the main job on embedded defaults, an agent run on a sample video, offline.

It makes a short video with on-screen text (:mod:`omnilab.media.synth`), then runs what
``omnilab ask sample.mp4 "What text appears on screen?"`` runs: the default model (the embedded
SmolLM2-135M when nothing else is configured), the ``tir`` agent with its default tools and the
sample search corpus shipped with omnilab. A tiny model gets the loop right, not the answer; the
demo says so. Its files go to ``cache_dir/demo`` unless ``--out`` says otherwise: never into the
folder it is run from, which is often a checkout of omnilab itself.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.rule import Rule

from omnilab.cli._console import inert_console
from omnilab.cli.ask import exit_code, print_result, run_ask
from omnilab.cli.exit_codes import ExitCode
from omnilab.errors import OmnilabError
from omnilab.media import synth
from omnilab.models.providers.local_runtime import preflight
from omnilab.models.registry import default_model_name
from omnilab.models.types import GenerateConfig

__all__ = ["DEMO_QUESTION", "demo"]

DEMO_QUESTION = "What text appears on screen?"
_TEXT = "omnilab demo"
# The sample corpus's page about omnilab describes this video: 8 s, 640x360, "omnilab demo".
_SECONDS = 8.0
_SIZE = (640, 360)
# A tiny CPU model must finish in about a minute on two cores: few turns, short replies, short
# observations (its context is 4096 tokens), and a token budget as a backstop.
_REPLY_TOKENS = 256
_OBSERVATION_CHARS = 1200
_TOKEN_BUDGET = 40_000


def demo(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Folder for the sample video and the run; default: demo/ in omnilab's cache "
            "folder (setting cache_dir), outside the current folder.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="provider:model or provider:model@URL; default: the configured one.",
        ),
    ] = None,
    max_turns: Annotated[
        int, typer.Option("--max-turns", min=1, help="Tool-using turns before the final answer.")
    ] = 4,
) -> None:
    """Run an agent on a sample video made on the spot (offline, about a minute on a CPU).

    Makes an 8-second video showing the text "omnilab demo", asks the default model what text
    appears on screen, shows every step, and saves the trajectory under --out.
    """
    began = time.monotonic()
    console = inert_console(highlight=False, soft_wrap=True)
    folder = (out or _default_folder()).expanduser()
    if folder.exists() and not folder.is_dir():
        raise OmnilabError(f"--out {folder} is a file; the demo needs a folder")
    name = model or default_model_name()  # fails here, in one line, when no model is available
    # A runtime built for another CPU would kill the run at its first step; found here, in a
    # child process, it is one line with the fix.
    preflight(name)
    folder.mkdir(parents=True, exist_ok=True)
    console.print(Rule("sample video"))
    video = synth.make_video(folder / "sample.mp4", duration=_SECONDS, size=_SIZE, text=_TEXT)
    console.print(f'made {video}: {_SECONDS:g} s, the text "{_TEXT}" on every frame')
    if name.startswith("local:"):
        console.print(
            f"[yellow]{escape(name)} is a 135M-parameter model on the CPU: the demo shows the agent "
            "loop (steps, tool calls, a saved trajectory); do not expect a correct answer.[/]"
        )
    console.print(Rule(f"omnilab ask {video.name} {DEMO_QUESTION!r}"))
    result = run_ask(
        [video],
        DEMO_QUESTION,
        console=console,
        model=name,
        max_turns=max_turns,
        max_tokens=_TOKEN_BUDGET,
        # Greedy and seeded: the demo gives the same steps and answer on every machine.
        generate=GenerateConfig(max_tokens=_REPLY_TOKENS, temperature=0.0, seed=0),
        max_observation_chars=_OBSERVATION_CHARS,
        run_dir=folder / "run",
    )
    console.print(Rule(f"done in {time.monotonic() - began:.1f} s"))
    verdict = "matches" if result.answer and _TEXT in result.answer.lower() else "differs from"
    console.print(
        f'answer: {escape(repr(result.answer))} ({verdict} the text on screen, "{_TEXT}"); '
        f"status {result.status}"
    )
    print_result(console, result)
    code = exit_code(result)
    if code != ExitCode.ANSWERED:
        raise typer.Exit(code)


def _default_folder() -> Path:
    from omnilab.config import get_settings

    return get_settings().cache_dir / "demo"

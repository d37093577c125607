"""``omnilab skills ...``: list skills, and learn new ones from runs (Code-X §2.3).

Each command parses its options, calls one function of :mod:`omnilab.skills` and prints the
result; user mistakes are :class:`~omnilab.errors.OmnilabError` s (one line).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from omnilab.cli._console import inert_console

__all__ = ["app"]

app = typer.Typer(
    help="Skills for the coder agent: list, distill from runs, refine.", no_args_is_help=True
)

OutOpt = Annotated[
    Path, typer.Option("--out", "-o", help="The new skills folder (must not exist).")
]
FromOpt = Annotated[
    Path | None,
    typer.Option("--from", help="Skills folder to start from; its other skills are copied along."),
]


def _report(console: Console, folder: Path, dropped: list[tuple[str, str]]) -> None:
    console.print(f"skills folder: {folder} (use it with: -O skills={folder})")
    if dropped:
        console.print(f"[yellow]dropped {len(dropped)} line(s) with case-specific facts:[/]")
        for line, why in dropped[:10]:
            console.print(f"  - {escape(line.strip()[:100])}  [dim]({escape(why)})[/]")


@app.command("list")
def list_skills(
    folder: Annotated[
        Path | None, typer.Argument(help="A skills folder (default: the shipped starter set).")
    ] = None,
) -> None:
    """List the skills of a folder: name, modalities, files, description."""
    from omnilab.skills import load_skills, starter_skills

    skills = load_skills(folder) if folder is not None else starter_skills()
    console = inert_console(highlight=False)
    for skill in skills:
        files = f" [dim]({', '.join(skill.files)})[/]" if skill.files else ""
        kinds = escape(f"[{', '.join(skill.modalities)}]")
        console.print(f"[bold]{skill.name}[/] {kinds}{files}")
        console.print(f"  {escape(skill.description)}")


@app.command("distill")
def distill_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Run folders (omnilab eval --out ...).")],
    out: OutOpt,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="The guide writer (default: the configured model)."),
    ] = None,
    base: FromOpt = None,
) -> None:
    """Log-driven self-distillation: write an agent guide learned from the runs' traces.

    The model sees the paper's prompt (H.2), the previous guide and a sanitized summary of the
    runs (outcomes, exits, programs used, failures; never questions, answers or file names);
    lines of its guide that still carry case-specific facts are dropped.
    """
    from omnilab.errors import OmnilabError
    from omnilab.models import get_model
    from omnilab.train.skills_learn import distill

    for run in runs:
        if not (run / "results.jsonl").is_file():
            raise OmnilabError(f"{run} is not a run folder (no results.jsonl)")
    outcome = asyncio.run(distill(runs, get_model(model), out, base=base))
    _report(inert_console(highlight=False), outcome.folder, outcome.dropped)


@app.command("refine")
def refine_cmd(
    data: Annotated[Path, typer.Option("--data", help="The calibration set (a dataset file).")],
    out: OutOpt,
    dataset: Annotated[
        str, typer.Option("--dataset", help="Its format (dataset adapter).")
    ] = "jsonl",
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="The coder agent's model (default: configured)."),
    ] = None,
    writer: Annotated[
        str | None, typer.Option("--writer", help="The guide writer (default: the agent's model).")
    ] = None,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="Self-iteration rounds.")] = 1,
    base: FromOpt = None,
    scorer: Annotated[str | None, typer.Option("--scorer", help="Default: the dataset's.")] = None,
    judge: Annotated[
        list[str] | None, typer.Option("--judge", help="Judge model(s) of the scorer.")
    ] = None,
) -> None:
    """Calibration-set self-iteration: run the coder agent on DATA with the current skills, tell
    the writer only which tasks were right, update the guide; ROUNDS times."""
    from omnilab.bench.rescore import default_scorer, resolve_judges
    from omnilab.models import get_model
    from omnilab.models.registry import default_model_name
    from omnilab.train.skills_learn import refine

    agent_model = model or default_model_name()
    chosen = scorer or default_scorer(dataset)
    judges = resolve_judges(chosen, judge or [])
    outcome = asyncio.run(
        refine(
            data,
            dataset=dataset,
            agent_model=agent_model,
            writer=get_model(writer or agent_model),
            out=out,
            rounds=rounds,
            base=base,
            scorer=chosen,
            judges=judges,
        )
    )
    console = inert_console(highlight=False)
    for n, score in enumerate(outcome.scores, 1):
        console.print(f"round {n}: Pass@1 {100 * score:.1f}% ({outcome.runs[n - 1]})")
    _report(console, outcome.folder, outcome.dropped)

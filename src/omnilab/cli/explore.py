"""``omnilab explore``: hindsight-guided tree exploration of a dataset into a run folder."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from omnilab.bench.errors import BenchError
from omnilab.cli._console import err_console, out_console, split_values
from omnilab.cli._dataopts import AllowOutsideOpt
from omnilab.cli._pairs import parse_pairs

__all__ = ["explore"]


def explore(
    dataset: Annotated[
        str | None,
        typer.Argument(
            help="Dataset format (omnigaia, omniagent, mcq, jsonl, ...); taken from the run "
            "when resuming.",
            show_default=False,
        ),
    ] = None,
    data: Annotated[
        str | None, typer.Option("--data", help="The dataset file, or its URL (s3://, https://).")
    ] = None,
    media_root: Annotated[
        str | None,
        typer.Option("--media-root", help="Folder or URL the media paths are relative to."),
    ] = None,
    allow_outside_media_root: AllowOutsideOpt = False,
    agent: Annotated[
        str, typer.Option("--agent", help="The scaffold to explore with (any agent).")
    ] = "tir",
    agent_option: Annotated[
        list[str] | None,
        typer.Option("--agent-option", "-O", help="KEY=VALUE agent option; repeatable."),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="The agent's model, provider:model.")
    ] = None,
    role: Annotated[
        list[str] | None,
        typer.Option("--role", help="ROLE=MODEL for a further model of the scaffold (perception)."),
    ] = None,
    verifier: Annotated[
        str | None,
        typer.Option(
            "--verifier", help="The verifier model: it sees the correct answer and prunes steps."
        ),
    ] = None,
    branches: Annotated[
        int, typer.Option("--branches", "-k", min=1, max=16, help="Candidate steps per node.")
    ] = 3,
    max_expansions: Annotated[
        int,
        typer.Option("--max-expansions", min=1, help="Expansions per task before giving up."),
    ] = 30,
    parallel: Annotated[
        bool,
        typer.Option(
            "--parallel/--sequential",
            help="Run the branches of a node at once, or one after the other in order.",
        ),
    ] = True,
    tools: Annotated[
        str | None, typer.Option("--tools", help="Tools to offer, comma-separated.")
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="Agent turns per task (default 50).")
    ] = None,
    scorer: Annotated[
        str | None, typer.Option("--scorer", help="Scorer of the paths (default: the dataset's).")
    ] = None,
    judge: Annotated[
        list[str] | None, typer.Option("--judge", help="Judge model of the scorer, if it has one.")
    ] = None,
    ids: Annotated[list[str] | None, typer.Option("--ids", help="Only these task ids.")] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="The first N selected tasks.")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", "-c", min=1, help="Tasks at once.")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Run seed.")] = 0,
    backend: Annotated[
        str,
        typer.Option(
            "--backend",
            help="Where tasks run: local (this process), processes (worker processes) or ray "
            "(a Ray cluster, see omnilab eval --help); the run folder must be reachable there.",
        ),
    ] = "local",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="The run folder.")] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Continue the run in --out: finished tasks are skipped, unfinished "
            "ones go on from their branches and journal (no model call is made twice).",
        ),
    ] = False,
) -> None:
    """Hindsight-guided tree exploration (OmniGAIA §4.2): at each step of the agent, sample
    --branches candidate steps, let a verifier that knows the answer keep or prune them, go on
    from the best kept one (backtracking when all are pruned), and keep the successful paths.

    The run folder is an ordinary run (results, metrics, one trajectory per task: the
    successful path) plus branches/<task>/ with every branch (run_start points at its parent
    branch and step) and tree.jsonl, the verifier's verdicts and replies. Train on the paths
    with: omnilab export sft RUN --correct-only.
    """
    from omnilab.agents.base import Budgets
    from omnilab.bench.run_dir import RunDir, Selection
    from omnilab.train.explore import ExploreOptions
    from omnilab.train.explore_run import explore as run_explore
    from omnilab.train.explore_run import explore_config

    if out is None:
        raise BenchError("name the run folder: omnilab explore ... --out DIR")
    stored = RunDir(out).read_config() if resume and RunDir(out).is_run() else None
    if stored is not None:
        config = stored  # a resumed run continues with what it started with
    else:
        if dataset is None or data is None:
            raise BenchError("name the dataset and its file: omnilab explore DATASET --data PATH")
        if model is None or verifier is None:
            raise BenchError("name the agent's model and the verifier: --model M --verifier V")
        config = explore_config(
            dataset,
            data,
            agent=agent,
            model=model,
            verifier=verifier,
            options=ExploreOptions(
                branches=branches, max_expansions=max_expansions, parallel=parallel
            ),
            agent_options=parse_pairs(agent_option, "--agent-option", parse_json=True),
            roles=parse_pairs(role, "--role", parse_json=False),
            media_root=media_root,
            allow_outside_media_root=allow_outside_media_root,
            tools=split_values([tools]) if tools is not None else None,
            budgets=Budgets(max_turns=max_turns) if max_turns else None,
            scorer=scorer,
            judges=split_values(judge),
            selection=Selection(ids=split_values(ids), limit=limit),
            concurrency=concurrency,
            seed=seed,
            backend=backend,
        )
    err = err_console()
    err.print(f"exploring into {out} ({'resumed' if stored else 'new run'})")
    outcome = asyncio.run(run_explore(config, out, resume=resume))
    results = RunDir(out).results()
    found = sum(1 for r in results if r.judged is True)
    out_console().print(
        f"{outcome.ran} tasks explored now, {outcome.already_done} done before; {found} of "
        f"{len(results)} with a successful path; branches in {Path(out) / 'branches'}"
    )

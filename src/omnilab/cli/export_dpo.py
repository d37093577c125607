"""``omnilab export dpo``: OmniDPO preference pairs from the failed rollouts of runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from omnilab.cli._console import err_console, split_values
from omnilab.cli.exit_codes import ExitCode

__all__ = ["dpo"]


def dpo(
    runs: Annotated[list[Path], typer.Argument(help="Run folders (written by omnilab eval).")],
    judge: Annotated[
        str,
        typer.Option(
            "--judge", help="Step judge model: sees the answer, names the first wrong step."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The pairs file to write (.jsonl).")],
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="Model that redoes the wrong step and the rest (default: the run's own model).",
        ),
    ] = None,
    agent: Annotated[
        list[str] | None, typer.Option("--agent", help="Keep runs of this agent (repeatable).")
    ] = None,
    task: Annotated[
        list[str] | None, typer.Option("--task", help="Keep this task id (repeatable).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Judge at most N failed rollouts.")
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Read the pairs back and check them (with datasets' loader if installed).",
        ),
    ] = False,
    reruns: Annotated[
        Path | None,
        typer.Option("--reruns", help="Folder of the re-runs' trajectories (default OUT.reruns)."),
    ] = None,
) -> None:
    """OmniDPO (OmniGAIA §4.4): for each failed rollout a judge that knows the answer names the
    first wrong step and a correction; the agent is re-run with the steps before it replayed and
    the correction shown for that step only; when the re-run is scored correct, the pair
    (prompt = that step's exact context, chosen = the corrected step, rejected = the original
    step) is written as a TRL conversational DPO row. TRL scores the completions only, so the
    loss covers the agent's own tokens. The judge's replies and the fate of every judged rollout
    go to OUT.judge.jsonl.
    """
    from omnilab.bench.run_dir import RunDir
    from omnilab.models import get_model
    from omnilab.train.dpo import JUDGE_FAILED, PairLog, dpo_pairs
    from omnilab.train.runs import RecordFilter

    for run in runs:
        RunDir(run).read_config()  # not a run folder: one line, before any file is opened
    keep = RecordFilter(agents=frozenset(split_values(agent)), tasks=frozenset(split_values(task)))
    folder = reruns or out.with_name(out.name + ".reruns")
    log_path = out.with_name(out.name.removesuffix(".jsonl") + ".judge.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    # Written as each rollout is decided: an interrupted export keeps what it paid the judge for.
    with out.open("w", encoding="utf-8") as rows, log_path.open("w", encoding="utf-8") as logs:

        def write(entry: PairLog, row: dict[str, Any] | None) -> None:
            logs.write(entry.model_dump_json() + "\n")
            logs.flush()
            if row is not None:
                rows.write(json.dumps(row, ensure_ascii=False) + "\n")
                rows.flush()

        export = asyncio.run(
            dpo_pairs(
                runs,
                judge=get_model(judge),
                model=get_model(model) if model is not None else None,
                keep=keep,
                limit=limit,
                reruns=folder,
                on_done=write,
            )
        )
    err = err_console()
    err.print(
        f"judged {len(export.log)} failed rollouts, wrote {len(export.rows)} pairs to {out}; "
        f"judge replies and reasons in {log_path}; re-runs in {folder}",
        markup=False,
    )
    failed = [e for e in export.log if e.reason.startswith(JUDGE_FAILED)]
    if failed:
        # once, not per rollout: the same cause (a refused request format, a dead server)
        # usually fails every call
        err.print(
            f"the judge failed on {len(failed)} of {len(export.log)} rollouts; first: "
            f"{failed[0].reason.removeprefix(JUDGE_FAILED).strip()}",
            style="bold red",
            markup=False,
        )
    if check:
        from omnilab.train.files import check_file

        for line in check_file(out, "trl-dpo", export.rows):
            err.print(f"check: {line}", markup=False)
    if failed and not export.rows:
        raise typer.Exit(ExitCode.MODEL_FAILURE)  # nothing written, and failures are why

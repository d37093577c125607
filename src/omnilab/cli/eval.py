"""``omnilab eval``: run a benchmark (``score``, ``metrics``, ``compare`` and ``analyze``, which
read runs back, are in :mod:`omnilab.cli.runs`).

The command parses its options (declared in :mod:`omnilab.cli.eval_options`) into a
:class:`~omnilab.bench.run_request.RunRequest`, gets the run's configuration and plan from
:mod:`omnilab.bench` and renders the run with rich; progress goes to stderr, tables to stdout.
User mistakes are :class:`~omnilab.errors.OmnilabError` s, printed by ``omnilab.cli.main`` as
one line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import typer

from omnilab.bench.errors import BenchError
from omnilab.bench.executor import RunSetupError
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import RunDir
from omnilab.bench.run_request import (
    RunRequest,
    default_run_dir,
    preview_prompt,
    request_config,
    resumed_config,
)
from omnilab.bench.runner import plan_run
from omnilab.cli import eval_options as o
from omnilab.cli._console import err_console, out_console, split_values
from omnilab.cli._pairs import parse_pairs
from omnilab.cli._run_render import execute_with_progress, render_outcome
from omnilab.cli._signals import term_as_interrupt
from omnilab.cli.exit_codes import ExitCode
from omnilab.terminal import inert

__all__ = ["eval_"]


def eval_(
    dataset: o.Dataset = None,
    data: o.Data = None,
    media_root: o.MediaRoot = None,
    allow_outside_media_root: o.AllowOutsideMediaRoot = None,
    agent: o.Agent = None,
    protocol: o.Protocol = None,
    agent_option: o.AgentOption = None,
    model: o.Model = None,
    role: o.Role = None,
    tools: o.Tools = None,
    search: o.Search = None,
    missing_media: o.MissingMedia = None,
    judge: o.Judge = None,
    scorer: o.Scorer = None,
    concurrency: o.Concurrency = None,
    timeout: o.Timeout = None,
    max_turns: o.MaxTurns = None,
    max_tokens: o.MaxTokens = None,
    max_seconds: o.MaxSeconds = None,
    seed: o.Seed = None,
    level: o.Level = None,
    category: o.Category = None,
    ids: o.Ids = None,
    limit: o.Limit = None,
    out: o.Out = None,
    resume: o.Resume = False,
    retry_failed: o.RetryFailed = False,
    backend: o.Backend = None,
    samples: o.Samples = None,
    cache: o.Cache = None,
    show_prompt: o.ShowPrompt = False,
    progress: o.Progress = True,
) -> None:
    """Run an agent on a benchmark: results, trajectories and metrics in a run folder.

    Before the first task it prints the run header (agent, mode and why, tools, models, budgets,
    dataset, task count, concurrency and the reply cache), also kept in run.json. --concurrency
    N lifts the per-endpoint limit of model calls to N unless models.concurrency is set. After
    3 tasks in a row fail to connect to a model the run stops with a resume hint.
    """
    stored = resumed_config(out, resume=resume, retry_failed=retry_failed)
    request = RunRequest(
        dataset=dataset,
        data=data,
        media_root=media_root,
        allow_outside_media_root=allow_outside_media_root,
        agent=agent,
        protocol=protocol,
        agent_options=parse_pairs(agent_option, "--agent-option", parse_json=True),
        model=model,
        roles=parse_pairs(role, "--role", parse_json=False),
        tools=split_values([tools]) if tools is not None else None,
        search=search,
        missing_media=missing_media,
        judges=split_values(judge),
        scorer=scorer,
        concurrency=concurrency,
        task_timeout_s=timeout,
        max_turns=max_turns,
        max_tokens=max_tokens,
        max_seconds=max_seconds,
        seed=seed,
        levels=split_values(level),
        categories=split_values(category),
        ids=split_values(ids),
        limit=limit,
        backend=backend,
        samples=samples,
        cache=cache,
        preview=show_prompt,
    )
    config = request_config(request, stored)
    if show_prompt:
        # Dataset text is untrusted: its escape sequences (OSC title, clipboard) never act here.
        typer.echo(inert(preview_prompt(config)))
        return
    run_dir = out or default_run_dir(config)
    plan = plan_run(config, run_dir, resume=resume, retry_failed=retry_failed)
    err = err_console()
    for note in plan.notes:
        err.print(f"note: {note}")
    try:
        with term_as_interrupt():  # kill PID ends the run as Ctrl-C does
            outcome = asyncio.run(
                execute_with_progress(plan, config.concurrency or 1, progress, err)
            )
    except RunSetupError as e:
        stop = RunSetupError(
            f"{e}; finished tasks are saved, continue with omnilab eval --out {run_dir} --resume"
        )
        stop.model_failure = e.model_failure
        raise stop from None
    except KeyboardInterrupt:
        finished = len(RunDir(run_dir).results())
        err.print(
            f"interrupted: {finished} finished tasks are saved in {run_dir}; continue with "
            f"omnilab eval --out {run_dir} --resume"
        )
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    render_outcome(outcome, out_console())
    if outcome.ran and outcome.failed == outcome.ran and not outcome.reached_model:
        first = next(r for r in RunDir(run_dir).results() if r.error is not None)
        raise BenchError(
            f"all {outcome.ran} tasks run failed before any model call (e.g. {first.task_id}: "
            f"{first.error}); fix the cause (omnilab data check), then omnilab eval --out "
            f"{run_dir} --resume --retry-failed"
        )
    code = _exit_status(RunDir(run_dir).results())
    if code != ExitCode.ANSWERED:
        raise typer.Exit(code)


def _exit_status(results: Sequence[TaskResult]) -> ExitCode:
    """0 when some task answered; else 4 when every task failed on its model, else 3."""
    from omnilab.models.errors import ErrorKind

    if any(r.error is None and r.extracted for r in results):
        return ExitCode.ANSWERED
    model_kinds = {str(k) for k in ErrorKind}
    if results and all(r.error_kind in model_kinds for r in results):
        return ExitCode.MODEL_FAILURE
    return ExitCode.NO_ANSWER

"""``omnilab eval``: run a benchmark (``score``, ``metrics``, ``compare`` and ``analyze``, which
read runs back, are in :mod:`omnilab.cli.runs`).

Each command parses its options, calls one library function of :mod:`omnilab.bench` and renders
the result with rich; progress goes to stderr, tables and JSON to stdout. User mistakes are
:class:`~omnilab.errors.OmnilabError` s, printed by ``omnilab.cli.main`` as one line.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from omnilab.agents.base import Budgets
from omnilab.bench.errors import BenchError
from omnilab.bench.executor import RunSetupError
from omnilab.bench.header import RunHeader, render_header
from omnilab.bench.progress import RichProgress
from omnilab.bench.protocols import get_protocol
from omnilab.bench.rescore import SCORER_NAMES
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import MissingMedia, RunConfig, RunDir, Selection
from omnilab.bench.runner import RunOutcome, RunPlan, execute, new_config, plan_run
from omnilab.bench.samples import sample_lines
from omnilab.bench.tables import summary_tables
from omnilab.cli._console import err_console, out_console, split_values
from omnilab.cli._dataopts import OUTSIDE_HELP
from omnilab.cli._pairs import parse_pairs
from omnilab.cli.exit_codes import ExitCode
from omnilab.config import get_settings
from omnilab.models import default_model_name
from omnilab.terminal import inert

__all__ = ["eval_"]


def _pick(given: Any, stored: RunConfig | None, field: str, default: Any) -> Any:
    """An option's value: what was typed, else the resumed run's, else the default."""
    if given is not None:
        return given
    if stored is not None:
        return getattr(stored, field)
    return default


def _selection(stored: RunConfig | None, **given: Any) -> Selection:
    base = stored.selection if stored is not None else Selection()
    update = {k: v for k, v in given.items() if v not in (None, [])}
    return base.model_copy(update=update)


def _budgets(stored: RunConfig | None, **given: Any) -> Budgets:
    base = stored.budgets if stored is not None else Budgets()
    return base.model_copy(update={k: v for k, v in given.items() if v is not None})


def _stamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def _render_outcome(outcome: RunOutcome, console: Console) -> None:
    run = RunDir(outcome.run)
    for renderable in summary_tables(outcome.summary, label=f"run {run.path.name}"):
        console.print(renderable)
    for line in sample_lines(outcome.summary.samples):
        console.print(line)
    from omnilab.bench.search_stats import run_search_stats, search_table

    # deepsearch runs: searches and budgets, read back from the trajectories only when a task
    # reported searches (reading a thousand files took ~0.2 s at the end of every run).
    reported = "searches" in outcome.summary.run_stats
    searches = run_search_stats(run.path) if reported else None
    if searches is not None:
        console.print(search_table(searches))
    what = "tasks" if outcome.summary.samples is None else "rollouts (task x sample)"
    console.print(
        f"{outcome.ran} {what} run now, {outcome.already_done} were done before, "
        f"{outcome.selected} selected; results {run.results_file}, trajectories "
        f"{run.path / 'trajectories'}, metrics {run.metrics_file}"
    )


def eval_(
    dataset: Annotated[
        str | None,
        typer.Argument(
            help="Dataset format (omnigaia, omni-deepsearch, omniagent, mcq, jsonl); "
            "taken from the run when resuming.",
            show_default=False,
        ),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            help="The dataset file (offline-suite: a folder to build it in; default: the cache).",
        ),
    ] = None,
    media_root: Annotated[
        Path | None, typer.Option("--media-root", help="Folder media paths are relative to.")
    ] = None,
    allow_outside_media_root: Annotated[
        bool | None, typer.Option("--allow-outside-media-root", help=OUTSIDE_HELP)
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Agent scaffold (default: tir).")
    ] = None,
    protocol: Annotated[
        str | None,
        typer.Option(
            "--protocol",
            help="Reproduction preset (omnilab protocols lists them): the authors' agent "
            "settings, sampling, loop and scoring rules; options given here win, and the header "
            "lists what differs from the preset.",
        ),
    ] = None,
    agent_option: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-option",
            "-O",
            help="KEY=VALUE agent option (value read as JSON when it is JSON); repeatable.",
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="The agent's model, provider:model.")
    ] = None,
    role: Annotated[
        list[str] | None,
        typer.Option("--role", help="ROLE=MODEL for a further model (e.g. perception=...)."),
    ] = None,
    tools: Annotated[
        str | None, typer.Option("--tools", help="Tools to offer, comma-separated.")
    ] = None,
    search: Annotated[
        str | None,
        typer.Option(
            "--search",
            help="Web search provider of web_search for this run: serper, brave, tavily, "
            "searxng (keys and URLs from the web settings) or local (the offline corpus or "
            "web.index_dir); kept in run.json and shown in the header (default: "
            "web.search_provider).",
        ),
    ] = None,
    missing_media: Annotated[
        str | None,
        typer.Option(
            "--missing-media",
            help="A task whose input files are missing: fail it (default) or drop the missing "
            "files and run it with the rest (OmniGAIA's released code; the presets do).",
        ),
    ] = None,
    judge: Annotated[
        list[str] | None,
        typer.Option(
            "--judge", help="Judge model; repeat for a majority vote (default: bench.judge_model)."
        ),
    ] = None,
    scorer: Annotated[
        str | None,
        typer.Option(
            "--scorer", help=f"Scorer ({', '.join(SCORER_NAMES)}) (default: the dataset's)."
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency", "-c", min=1, help="Tasks at once (default: bench.concurrency)."
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout", min=0.001, help="Seconds per task (default: bench.task_timeout_s)."
        ),
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="Agent turns per task (default: 50).")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", min=1, help="Agent tokens per task.")
    ] = None,
    max_seconds: Annotated[
        float | None,
        typer.Option("--max-seconds", min=0.001, help="Agent's own time budget per task."),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Run seed (default: 0).")] = None,
    level: Annotated[
        list[str] | None, typer.Option("--level", help="Only these Levels (repeat or a,b).")
    ] = None,
    category: Annotated[
        list[str] | None, typer.Option("--category", help="Only these categories.")
    ] = None,
    ids: Annotated[
        list[str] | None, typer.Option("--ids", help="Only these task ids (repeat or a,b).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="The first N selected tasks.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Run folder (default: bench.runs_dir/DATASET-AGENT-TIME)."
        ),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the run in --out, skipping finished tasks.")
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="With --resume: run failed tasks again.")
    ] = False,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            help="Where tasks execute: local (this process), processes (worker processes, "
            "for CPU-heavy tasks) or ray (a Ray cluster: bench.ray_address or RAY_ADDRESS, "
            "else a local Ray) (default: local).",
        ),
    ] = None,
    samples: Annotated[
        int | None,
        typer.Option(
            "--samples",
            "-k",
            min=1,
            help="Rollouts per task, each with its own seed; metrics add the mean over samples "
            "and pass@k (default: 1).",
        ),
    ] = None,
    cache: Annotated[
        bool | None,
        typer.Option(
            "--cache/--no-cache",
            help="Reuse cached model replies for identical requests (default: on, so a resumed "
            "run asks nothing twice; samples differ by seed, so they never share a reply).",
        ),
    ] = None,
    show_prompt: Annotated[
        bool,
        typer.Option(
            "--show-prompt",
            "--dry-run",
            help="Print the first prompt of the first task and stop, without calling the model "
            "or writing a run folder.",
        ),
    ] = False,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Show the progress bar.")
    ] = True,
) -> None:
    """Run an agent on a benchmark: results, trajectories and metrics in a run folder.

    Before the first task it prints the run header (agent, mode and why, tools, models, budgets,
    dataset, task count, concurrency and the reply cache), also kept in run.json. --concurrency
    N lifts the per-endpoint limit of model calls to N unless models.concurrency is set. After
    3 tasks in a row fail to connect to a model the run stops with a resume hint.
    """
    if resume and out is None:
        raise BenchError("--resume needs --out DIR, the run folder to continue")
    if retry_failed and not resume:
        raise BenchError("--retry-failed needs --resume")
    settings = get_settings().bench
    stored = RunDir(out).read_config() if resume and out and RunDir(out).is_run() else None
    name = _pick(dataset, stored, "dataset", None)
    data_path = _pick(data, stored, "data", None)
    if name is None:
        raise BenchError("name the dataset and its file: omnilab eval DATASET --data PATH")
    protocol_name = _pick(protocol, stored, "protocol", None)
    preset = get_protocol(protocol_name) if protocol_name else None
    preset_agent = preset.agent if preset else "tir"
    timeout_default = (preset and preset.task_timeout_s) or settings.task_timeout_s
    agent_name = _pick(agent, stored, "agent", preset_agent)
    given_judges = split_values(judge) or None
    given_roles = parse_pairs(role, "--role", parse_json=False)
    if stored is None:  # a new run: the configured roles, the flags winning
        given_roles = {**get_settings().agents.roles, **given_roles}
    config = new_config(
        name,
        data_path,
        agent=agent_name,
        model=_pick(model, stored, "model", None) or default_model_name(),
        media_root=_pick(media_root, stored, "media_root", None),
        agent_options=_pick(
            parse_pairs(agent_option, "--agent-option", parse_json=True) or None,
            stored,
            "agent_options",
            {},
        ),
        roles=_pick(given_roles or None, stored, "roles", {}),
        tools=_pick(split_values([tools]) if tools is not None else None, stored, "tools", None),
        budgets=_budgets(
            stored, max_turns=max_turns, max_tokens=max_tokens, max_seconds=max_seconds
        )
        if stored is not None or max_turns or max_tokens or max_seconds
        else None,
        task_timeout_s=_pick(timeout, stored, "task_timeout_s", timeout_default),
        scorer=_pick(scorer, stored, "scorer", None),
        judges=_pick(given_judges, stored, "judges", []),
        seed=_pick(seed, stored, "seed", 0),
        selection=_selection(
            stored,
            levels=split_values(level),
            categories=split_values(category),
            ids=split_values(ids),
            limit=limit,
        ),
        backend=_pick(backend, stored, "backend", "local"),
        concurrency=_pick(concurrency, stored, "concurrency", settings.concurrency),
        samples=_pick(samples, stored, "samples", 1),
        cache=_pick(cache, stored, "cache", True),
        protocol=protocol_name,
        preview=show_prompt,
        search=_pick(search, stored, "search", None),
        missing_media=_pick(_missing_media(missing_media), stored, "missing_media", None),
        allow_outside_media_root=_pick(
            allow_outside_media_root, stored, "allow_outside_media_root", False
        ),
    )
    err = err_console()
    if show_prompt:
        _show_prompt(config)
        return
    run_dir = out or settings.runs_dir / f"{name}-{agent_name}-{_stamp()}"
    plan = plan_run(config, run_dir, resume=resume, retry_failed=retry_failed)
    for note in plan.notes:
        err.print(f"note: {note}")
    try:
        outcome = asyncio.run(_execute(plan, config.concurrency or 1, progress, err))
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
    _render_outcome(outcome, out_console())
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


def _print_header(err: Console) -> Callable[[RunHeader], None]:
    def show(header: RunHeader) -> None:
        for line in render_header(header):
            style = "bold yellow" if line.startswith("warning:") else None
            err.print(line, style=style, markup=False)

    return show


async def _execute(plan: RunPlan, concurrency: int, progress: bool, err: Console) -> RunOutcome:
    on_header = _print_header(err)
    if not progress:
        return await execute(plan, concurrency=concurrency, on_header=on_header)
    selected = {t.id for t in plan.tasks}
    done = [r for r in plan.done if r.task_id in selected]
    total = len(plan.tasks) * plan.config.samples
    bar = RichProgress(total, done=done, console=err)
    with contextlib.ExitStack() as stack:

        def start(header: RunHeader) -> None:
            on_header(header)  # printed above the bar, which starts with the first task
            stack.enter_context(bar)

        return await execute(plan, concurrency=concurrency, on_result=bar.add, on_header=start)


def _missing_media(value: str | None) -> MissingMedia | None:
    if value is None:
        return None
    if value not in ("fail", "drop"):
        raise BenchError(f"--missing-media is fail or drop, not {value!r}")
    return "fail" if value == "fail" else "drop"


def _show_prompt(config: RunConfig) -> None:
    from omnilab.bench.datasets import load_dataset
    from omnilab.bench.preview import first_prompt, render_prompt
    from omnilab.bench.runner import Components, build_executor
    from omnilab.bench.scoring import AnswerSetMatch

    tasks = config.selection.apply(
        load_dataset(
            config.dataset,
            config.data,
            media_root=config.media_root,
            allow_outside_media_root=config.allow_outside_media_root,
        ).tasks
    )
    if not tasks:
        raise BenchError("no task matches the filters (--level, --category, --ids, --limit)")
    # Nothing is scored here: a stand-in scorer, so a judged scorer needs no judge to preview.
    executor = build_executor(config, Components(scorer=AnswerSetMatch()))
    prompt = asyncio.run(first_prompt(executor, tasks[0]))
    # Dataset text is untrusted: its escape sequences (OSC title, clipboard) never act here.
    typer.echo(inert(render_prompt(prompt)))

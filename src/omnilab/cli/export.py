"""``omnilab export sft|rl|rl-groups|...``: run folders and datasets to the files trainers read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from omnilab.cli._console import err_console, out_console, split_values
from omnilab.cli._dataopts import AllowOutsideOpt
from omnilab.cli.export_dpo import dpo
from omnilab.cli.export_groups import rl_groups
from omnilab.errors import OmnilabError

__all__ = ["app", "dpo", "rl", "sft"]

app = typer.Typer(
    help="Turn runs into training data (SFT chats, OmniAgent steps) and datasets into RL "
    "prompts, in the formats TRL, LLaMA-Factory, verl, OpenAI and OmniAgent read.",
    no_args_is_help=True,
)


def _report(
    out: Path, rows: int, what: str, check: bool, fmt: str, written: list[dict[str, Any]]
) -> None:
    err = err_console()
    err.print(f"wrote {rows} {what} to {out}", markup=False)
    if check:
        from omnilab.train.files import check_file

        for line in check_file(out, fmt, written):
            err.print(f"check: {line}", markup=False)


def sft(
    runs: Annotated[list[Path], typer.Argument(help="Run folders (written by omnilab eval).")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="openai (chat JSONL, weight 0/1), sharegpt (LLaMA-Factory), trl (SFTTrainer), "
            "omniagent-steps (OmniAgent's per-step rows).",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The file to write (.jsonl).")],
    correct_only: Annotated[
        bool, typer.Option("--correct-only", help="Keep rollouts judged correct only.")
    ] = False,
    min_score: Annotated[
        float | None, typer.Option("--min-score", help="Keep rollouts scoring at least this.")
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="Drop rollouts with more model calls.")
    ] = None,
    agent: Annotated[
        list[str] | None, typer.Option("--agent", help="Keep runs of this agent (repeatable).")
    ] = None,
    task: Annotated[
        list[str] | None, typer.Option("--task", help="Keep this task id (repeatable).")
    ] = None,
    per_call: Annotated[
        bool,
        typer.Option(
            "--per-call",
            help="One example per model call (its exact input, only its reply trained), also "
            "for contexts that only grew; edited contexts (ota) are always per call.",
        ),
    ] = False,
    reasoning: Annotated[
        bool,
        typer.Option(
            "--reasoning", help="Put each reply's reasoning before it as <think>...</think>."
        ),
    ] = False,
    valid_only: Annotated[
        bool | None,
        typer.Option(
            "--valid-only/--with-refused",
            help="Leave out the turns the agent's environment refused (one row per model call); "
            "default: on for omniagent-steps, off for the chat formats.",
        ),
    ] = None,
    keep_all: Annotated[
        bool,
        typer.Option(
            "--keep-all",
            help="omniagent-steps: every rollout and every turn, not only the release filter's "
            "winners (one correct rollout per task) without refused turns.",
        ),
    ] = False,
    check: Annotated[
        bool,
        typer.Option("--check", help="Read the file back and check it with the trainer's loader."),
    ] = False,
    name: Annotated[
        str, typer.Option("--name", help="Dataset name in the printed dataset_info.json entry.")
    ] = "omnilab_sft",
) -> None:
    """Training chats from runs: the exact contexts the agent saw, loss on its own turns only.

    A context that only grew (tir) is one example; one edited between calls (ota's purged media)
    gives one example per call. Media stay file paths.
    """
    from omnilab.train.runs import RecordFilter
    from omnilab.train.sft import SFT_FORMATS, sft_rows

    if fmt not in SFT_FORMATS:
        raise OmnilabError(f"unknown format {fmt!r}; use one of {', '.join(SFT_FORMATS)}")
    keep = RecordFilter(
        correct_only=correct_only,
        min_score=min_score,
        max_turns=max_turns,
        agents=frozenset(split_values(agent)),
        tasks=frozenset(split_values(task)),
    )
    export = sft_rows(
        runs,
        fmt,
        keep,
        per_call=per_call,
        reasoning=reasoning,
        valid_only=valid_only,
        keep_all=keep_all,
    )
    from omnilab.train.files import write_rows

    write_rows(export.rows, out)
    dropped = ", ".join(f"{k} dropped {n}" for k, n in export.dropped.items())
    what = f"rows from {export.rollouts} rollouts" + (f" ({dropped})" if dropped else "")
    _report(out, len(export.rows), what, check, fmt, export.rows)
    if fmt == "sharegpt":
        from omnilab.train.chat_formats import sharegpt_dataset_info

        err = err_console()
        if export.per_call:
            err.print(
                f"{export.per_call} rows hold one model call each (edited contexts, or "
                "--per-call): train with mask_history: true (only the last turn), and export "
                "with --per-call so that holds for every row"
            )
        err.print(
            "add to LLaMA-Factory's data/dataset_info.json (file_name relative to dataset_dir):"
        )
        out_console().print(
            json.dumps(sharegpt_dataset_info(name, out.name), indent=2), markup=False
        )


def rl(
    data: Annotated[
        str,
        typer.Argument(help="The dataset file, or its URL (s3://, gs://, az://, https://)."),
    ],
    dataset: Annotated[
        str, typer.Option("--dataset", help="Its format (omniagent, mcq, omnigaia, ...).")
    ],
    fmt: Annotated[str, typer.Option("--format", "-f", help="verl or omniagent.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The file to write (.parquet for verl, or .jsonl).")
    ],
    media_root: Annotated[
        str | None,
        typer.Option(
            "--media-root",
            help="Folder or URL the dataset's media paths are in (default: the dataset's folder; "
            "media at URLs are fetched into the media cache to be probed, and rows name their "
            "URLs, without query or user info).",
        ),
    ] = None,
    data_source: Annotated[
        str | None,
        typer.Option(
            "--data-source", help="data_source of every row (default: agent / the dataset name)."
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Read the file back and check it with the trainer's loader."),
    ] = False,
    allow_outside_media_root: AllowOutsideOpt = False,
) -> None:
    """RL prompt rows from a dataset: one per task, media probed for fps, duration and sound."""
    from omnilab._urls import is_remote, public_url
    from omnilab.bench.datasets import load_dataset
    from omnilab.bench.remote_stage import stage_task
    from omnilab.train.rl import RL_FORMATS, rl_rows

    if fmt not in RL_FORMATS:
        raise OmnilabError(f"unknown format {fmt!r}; use one of {', '.join(RL_FORMATS)}")
    remote = is_remote(data)
    if not remote and not Path(data).is_file():
        raise OmnilabError(f"{data} is not a file")
    tasks = load_dataset(
        dataset, data, media_root=media_root, allow_outside_media_root=allow_outside_media_root
    ).tasks
    if not tasks:
        raise OmnilabError(f"{public_url(data) if remote else data} holds no {dataset} tasks")
    # Inputs at URLs are fetched (into the media cache) so that they can be probed.
    tasks = [stage_task(t) for t in tasks]
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    columns = (TextColumn("probing media"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=err_console(), transient=True) as bar:
        job = bar.add_task("probe", total=len(tasks))
        rows = rl_rows(
            tasks,
            fmt,
            data_source=data_source,
            on_probe=lambda n: bar.update(job, completed=n),
        )
    from omnilab.train.files import write_rows

    write_rows(rows, out)
    _report(out, len(rows), "prompt rows", check, fmt, rows)


# Commands, registered last so other exports (dpo, rl-groups) add one line each here.
app.command("sft")(sft)
app.command("rl")(rl)
app.command("rl-groups")(rl_groups)
app.command("dpo")(dpo)

"""``omnilab data ...``: load a benchmark file, report what is wrong with it, show its tasks.

Each command parses its options, calls :func:`omnilab.bench.load_dataset` and renders the result
with rich. A bad file or an unknown dataset is an :class:`~omnilab.errors.OmnilabError`, which
``omnilab.cli.main`` prints as one line with exit status 1.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from omnilab.bench import DatasetLoad, Task, dataset_names, load_dataset
from omnilab.bench.datasets import data_source
from omnilab.cli._console import inert_console
from omnilab.cli._dataopts import AllowOutsideOpt
from omnilab.plural import plural
from omnilab.terminal import inert_json

__all__ = ["app", "check", "show"]

app = typer.Typer(help="Load benchmark files: check them, show their tasks.", no_args_is_help=True)

DatasetArg = Annotated[
    str,
    typer.Argument(help=f"Dataset format: {', '.join(dataset_names())}.", show_default=False),
]
DataOpt = Annotated[
    str | None,
    typer.Option(
        "--data",
        help="The dataset file (JSON or JSON Lines), or its URL (s3://, gs://, az://, https://; "
        "fetched once into the media cache); offline-suite: the folder it is built in "
        "(default: the cache), as omnilab eval takes it.",
        show_default=False,
    ),
]
MediaRootOpt = Annotated[
    str | None,
    typer.Option(
        "--media-root",
        help="Folder or URL the media paths are relative to; default: bench.media_roots, else "
        "the data file's folder (or URL). Media at URLs are not fetched here.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]

_QUESTION_CHARS = 160


def _console() -> Console:
    return inert_console(highlight=False, soft_wrap=True)


def _where(loaded: DatasetLoad) -> str:
    """The dataset file as the user named it: its URL (without query), else its path."""
    return loaded.data_url or str(loaded.path)


def _media_where(loaded: DatasetLoad) -> str:
    return loaded.media_url or str(loaded.media_root)


def _check_json(loaded: DatasetLoad) -> str:
    return json.dumps(
        {
            "dataset": loaded.dataset,
            "path": _where(loaded),
            "media_root": _media_where(loaded),
            "tasks": len(loaded.tasks),
            "skipped": loaded.skip_counts,
            "skipped_items": [s.model_dump() for s in loaded.skipped],
            "missing_media": {
                task_id: [str(f.path) for f in files]
                for task_id, files in loaded.missing_media.items()
            },
            "notes": loaded.notes,
            "warnings": loaded.warnings,
        },
        indent=2,
        ensure_ascii=False,
    )


def check(
    dataset: DatasetArg,
    data: DataOpt = None,
    media_root: MediaRootOpt = None,
    json_out: JsonOpt = False,
    allow_outside_media_root: AllowOutsideOpt = False,
) -> None:
    """Load a dataset and report: tasks loaded, items skipped (by reason), media missing per task."""
    loaded = load_dataset(
        dataset,
        data_source(dataset, data),
        media_root=media_root,
        allow_outside_media_root=allow_outside_media_root,
    )
    if json_out:
        typer.echo(inert_json(_check_json(loaded)))
        return
    console = _console()
    missing_files = sum(len(files) for files in loaded.missing_media.values())
    console.print(
        f"[bold]{loaded.dataset}[/]: {plural(len(loaded.tasks), 'task')} loaded from "
        f"{_where(loaded)}; {plural(len(loaded.skipped), 'item')} skipped; "
        f"{plural(len(loaded.missing_media), 'task')} miss "
        f"{plural(missing_files, 'media file')} (media root {_media_where(loaded)})"
    )
    if loaded.skipped:
        table = Table(title="skipped items", box=None, header_style="bold", title_justify="left")
        table.add_column("reason")
        table.add_column("count", justify="right")
        table.add_column("items (index or id: detail)", overflow="fold")
        for reason, count in loaded.skip_counts.items():
            items = [s for s in loaded.skipped if s.reason == reason]
            shown = "; ".join(f"{s.item_id or s.index}: {s.detail}".rstrip(": ") for s in items[:5])
            more = f"; ... {len(items) - 5} more" if len(items) > 5 else ""
            table.add_row(reason, str(count), shown + more)
        console.print(table)
    if loaded.missing_media:
        table = Table(title="missing media", box=None, header_style="bold", title_justify="left")
        table.add_column("task", no_wrap=True)
        table.add_column("file id")
        table.add_column("kind")
        table.add_column("expected at", overflow="fold")
        for task_id, files in loaded.missing_media.items():
            for f in files:
                table.add_row(task_id, f.id, f.kind, str(f.path))
        console.print(table)
    for note in loaded.notes:
        console.print(f"note: {note}")
    if loaded.warnings:
        console.print(f"[bold yellow]warning:[/] {'; '.join(loaded.warnings)}")


def _task_json(task: Task) -> str:
    return task.model_dump_json(exclude={"original"})


def _answers(task: Task) -> str:
    aliases = task.answers.aliases
    return task.answers.label + (f"  (also: {', '.join(aliases)})" if aliases else "")


def show(
    dataset: DatasetArg,
    data: DataOpt = None,
    media_root: MediaRootOpt = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, help="Show at most this many tasks.")
    ] = 10,
    json_out: JsonOpt = False,
    allow_outside_media_root: AllowOutsideOpt = False,
) -> None:
    """Show the first tasks of a dataset as omnilab reads them (question, inputs, answers)."""
    loaded = load_dataset(
        dataset,
        data_source(dataset, data),
        media_root=media_root,
        allow_outside_media_root=allow_outside_media_root,
    )
    tasks = loaded.tasks[:limit]
    if json_out:
        for task in tasks:
            typer.echo(inert_json(_task_json(task)))
        return
    table = Table(box=None, header_style="bold", show_lines=True)
    table.add_column("id", no_wrap=True)
    table.add_column("level / category / type", overflow="fold")
    table.add_column("inputs", overflow="fold")
    table.add_column("question", overflow="fold", ratio=3)
    table.add_column("answer", overflow="fold", ratio=1)
    for task in tasks:
        meta = task.metadata
        about = " / ".join(v or "-" for v in (meta.level, meta.category, meta.task_type))
        inputs = "\n".join(f"{f.kind}: {f.id}" for f in task.files) or "-"
        question = task.question
        if len(question) > _QUESTION_CHARS:
            question = question[: _QUESTION_CHARS - 1] + "…"
        if meta.options:
            question += "\n" + "\n".join(f"{k}. {v}" for k, v in meta.options.items())
        table.add_row(task.id, about, inputs, question, _answers(task))
    console = _console()
    console.print(table)
    console.print(
        f"{len(tasks)} of {len(loaded.tasks)} tasks shown; `omnilab data check` for problems"
    )


app.command("check")(check)
app.command("show")(show)

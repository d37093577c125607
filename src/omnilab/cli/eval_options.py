"""The options of ``omnilab eval`` (:mod:`omnilab.cli.eval`), one annotated type each: the
command's signature names them, so the command itself stays parse, call, render."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omnilab.bench.rescore import SCORER_NAMES
from omnilab.cli._dataopts import OUTSIDE_HELP

Dataset = Annotated[
    str | None,
    typer.Argument(
        help="Dataset format (omnigaia, omni-deepsearch, omniagent, mcq, jsonl); "
        "taken from the run when resuming.",
        show_default=False,
    ),
]
Data = Annotated[
    str | None,
    typer.Option(
        "--data",
        help="The dataset file, or its URL (s3://, gs://, az://, https://; fetched once into "
        "the media cache); offline-suite: a folder to build it in (default: the cache).",
    ),
]
AllowOutsideMediaRoot = Annotated[
    bool | None, typer.Option("--allow-outside-media-root", help=OUTSIDE_HELP)
]
MediaRoot = Annotated[
    str | None,
    typer.Option(
        "--media-root",
        help="Folder or URL the media paths are relative to (default: the dataset's folder; "
        "inputs at URLs are fetched where each task runs).",
    ),
]
Agent = Annotated[str | None, typer.Option("--agent", help="Agent scaffold (default: tir).")]
Protocol = Annotated[
    str | None,
    typer.Option(
        "--protocol",
        help="Reproduction preset (omnilab protocols lists them): the authors' agent "
        "settings, sampling, loop and scoring rules; options given here win, and the header "
        "lists what differs from the preset.",
    ),
]
AgentOption = Annotated[
    list[str] | None,
    typer.Option(
        "--agent-option",
        "-O",
        help="KEY=VALUE agent option (value read as JSON when it is JSON); repeatable.",
    ),
]
Model = Annotated[
    str | None, typer.Option("--model", "-m", help="The agent's model, provider:model.")
]
Role = Annotated[
    list[str] | None,
    typer.Option("--role", help="ROLE=MODEL for a further model (e.g. perception=...)."),
]
Tools = Annotated[str | None, typer.Option("--tools", help="Tools to offer, comma-separated.")]
Search = Annotated[
    str | None,
    typer.Option(
        "--search",
        help="Web search provider of web_search for this run: serper, brave, tavily, "
        "searxng (keys and URLs from the web settings) or local (the offline corpus or "
        "web.index_dir); kept in run.json and shown in the header (default: "
        "web.search_provider).",
    ),
]
MissingMedia = Annotated[
    str | None,
    typer.Option(
        "--missing-media",
        help="A task whose input files are missing: fail it (default) or drop the missing "
        "files and run it with the rest (OmniGAIA's released code; the presets do).",
    ),
]
Judge = Annotated[
    list[str] | None,
    typer.Option(
        "--judge", help="Judge model; repeat for a majority vote (default: bench.judge_model)."
    ),
]
Scorer = Annotated[
    str | None,
    typer.Option("--scorer", help=f"Scorer ({', '.join(SCORER_NAMES)}) (default: the dataset's)."),
]
Concurrency = Annotated[
    int | None,
    typer.Option("--concurrency", "-c", min=1, help="Tasks at once (default: bench.concurrency)."),
]
Timeout = Annotated[
    float | None,
    typer.Option("--timeout", min=0.001, help="Seconds per task (default: bench.task_timeout_s)."),
]
MaxTurns = Annotated[
    int | None, typer.Option("--max-turns", min=1, help="Agent turns per task (default: 50).")
]
MaxTokens = Annotated[
    int | None, typer.Option("--max-tokens", min=1, help="Agent tokens per task.")
]
MaxSeconds = Annotated[
    float | None,
    typer.Option("--max-seconds", min=0.001, help="Agent's own time budget per task."),
]
Seed = Annotated[int | None, typer.Option("--seed", help="Run seed (default: 0).")]
Level = Annotated[
    list[str] | None, typer.Option("--level", help="Only these Levels (repeat or a,b).")
]
Category = Annotated[list[str] | None, typer.Option("--category", help="Only these categories.")]
Ids = Annotated[
    list[str] | None, typer.Option("--ids", help="Only these task ids (repeat or a,b).")
]
Limit = Annotated[int | None, typer.Option("--limit", min=1, help="The first N selected tasks.")]
Out = Annotated[
    Path | None,
    typer.Option("--out", "-o", help="Run folder (default: bench.runs_dir/DATASET-AGENT-TIME)."),
]
Resume = Annotated[
    bool, typer.Option("--resume", help="Continue the run in --out, skipping finished tasks.")
]
RetryFailed = Annotated[
    bool, typer.Option("--retry-failed", help="With --resume: run failed tasks again.")
]
Backend = Annotated[
    str | None,
    typer.Option(
        "--backend",
        help="Where tasks execute: local (this process), processes (worker processes, "
        "for CPU-heavy tasks) or ray (a Ray cluster: bench.ray_address or RAY_ADDRESS, "
        "else a local Ray) (default: local).",
    ),
]
Samples = Annotated[
    int | None,
    typer.Option(
        "--samples",
        "-k",
        min=1,
        help="Rollouts per task, each with its own seed; metrics add the mean over samples "
        "and pass@k (default: 1).",
    ),
]
Cache = Annotated[
    bool | None,
    typer.Option(
        "--cache/--no-cache",
        help="Reuse cached model replies for identical requests (default: on, so a resumed "
        "run asks nothing twice; samples differ by seed, so they never share a reply).",
    ),
]
ShowPrompt = Annotated[
    bool,
    typer.Option(
        "--show-prompt",
        "--dry-run",
        help="Print the first prompt of the first task and stop, without calling the model "
        "or writing a run folder.",
    ),
]
Progress = Annotated[bool, typer.Option("--progress/--no-progress", help="Show the progress bar.")]

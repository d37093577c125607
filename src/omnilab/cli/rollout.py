"""``omnilab rollout``: token-exact rollouts of an agent on a dataset, one JSONL row per rollout.

Parses the options, calls :func:`omnilab.rl.rollout` and writes the rows; user mistakes are
:class:`~omnilab.errors.OmnilabError` s, printed as one line.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from omnilab.agents.base import Budgets
from omnilab.bench.errors import BenchError
from omnilab.bench.run_dir import write_atomic
from omnilab.cli._console import out_console, split_values
from omnilab.cli._pairs import parse_pairs

__all__ = ["rollout"]


def rollout(
    dataset: Annotated[
        str,
        typer.Argument(
            help="Dataset format (jsonl, omnigaia, omniagent, offline-suite, ...).",
            show_default=False,
        ),
    ],
    agent: Annotated[str, typer.Option("--agent", help="Agent scaffold (tir, ota, coder, ...).")],
    model: Annotated[
        str,
        typer.Option(
            "--model", "-m", help="The policy, provider:model, with a token-exact adapter (local)."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The JSONL file to write (one row per rollout).")
    ],
    samples: Annotated[
        int, typer.Option("--samples", "-G", min=1, help="Rollouts per task (the group size).")
    ] = 1,
    data: Annotated[
        str | None, typer.Option("--data", help="The dataset file, or its URL (s3://, https://).")
    ] = None,
    media_root: Annotated[
        str | None,
        typer.Option("--media-root", help="Folder or URL the media paths are relative to."),
    ] = None,
    protocol: Annotated[
        str | None, typer.Option("--protocol", help="Reproduction preset (omnilab protocols).")
    ] = None,
    agent_option: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-option",
            "-O",
            help="KEY=VALUE agent option (value read as JSON when it is JSON); repeatable.",
        ),
    ] = None,
    tools: Annotated[
        str | None, typer.Option("--tools", help="Tools to offer, comma-separated.")
    ] = None,
    scorer: Annotated[
        str | None, typer.Option("--scorer", help="The reward's scorer (default: the dataset's).")
    ] = None,
    run_dir: Annotated[
        Path | None,
        typer.Option("--run-dir", help="Keep the run (trajectories) here (default: OUT.run/)."),
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="Model calls that may use tools.")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", min=1, help="Rollouts at once.")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Base seed of the samples.")] = 0,
) -> None:
    """Run an agent on every task SAMPLES times through a token-exact policy, in the sandbox as
    eval does, and write one row per rollout: prompt_ids, response_ids, response_mask (1 on the
    sampled tokens), response_logprobs (ids and logprobs base64-packed), reward, num_turns and
    the trajectory it came from."""
    from omnilab.rl.rollout import rollout as run_rollouts

    if out.is_dir():
        raise BenchError(f"--out {out} is a folder; name the JSONL file to write")
    folder = run_dir or out.with_name(out.name + ".run")
    done = asyncio.run(
        run_rollouts(
            dataset,
            agent=agent,
            model=model,
            samples=samples,
            data=data,
            run_dir=folder,
            media_root=media_root,
            protocol=protocol,
            agent_options=parse_pairs(agent_option, "--agent-option", parse_json=True) or None,
            tools=split_values([tools]) if tools else None,
            scorer=scorer,
            budgets=Budgets(max_turns=max_turns) if max_turns is not None else None,
            concurrency=concurrency,
            seed=seed,
        )
    )
    write_atomic(out, "".join(json.dumps(r.to_row()) + "\n" for r in done))
    tokens = sum(len(r.response_ids) for r in done)
    mean = sum(r.reward for r in done) / len(done) if done else 0.0
    out_console().print(
        f"wrote {len(done)} rollouts ({tokens} response tokens, mean reward {mean:.3f}) -> {out}; "
        f"trajectories in {folder}",
        highlight=False,
        soft_wrap=True,
    )

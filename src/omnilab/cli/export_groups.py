"""``omnilab export rl-groups``: trajectory rewards, group advantages and TAURA turn advantages.

Parses the options, calls :func:`omnilab.train.groups.export_groups` and prints one summary line;
user mistakes are :class:`~omnilab.errors.OmnilabError` s, printed as one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, get_args

import typer

from omnilab.bench.errors import BenchError
from omnilab.cli._console import err_console, out_console, split_values
from omnilab.plural import plural

__all__ = ["rl_groups"]


def _choice(flag: str, value: str, kind: Any) -> Any:
    """``value`` checked against the ``Literal`` type ``kind`` (a one-line error otherwise)."""
    allowed = get_args(kind)
    if value not in allowed:
        raise BenchError(f"{flag} {value!r}: use one of {', '.join(allowed)}")
    return value


def rl_groups(
    runs: Annotated[
        list[Path],
        typer.Argument(help="Run folders (made with --samples G).", show_default=False),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The JSONL file to write (and OUT.meta.json).")
    ],
    reward: Annotated[
        str | None,
        typer.Option(
            "--reward",
            help="Score every rollout again with this scorer (e.g. code-x-reward); default: "
            "the run's own score.",
        ),
    ] = None,
    judge: Annotated[
        list[str] | None,
        typer.Option("--judge", help="Judge model of a judged --reward scorer (repeatable)."),
    ] = None,
    advantage: Annotated[
        str,
        typer.Option(
            "--advantage",
            help="grpo (group-normalised, every turn the same), gspo (Code-X: the same, removed "
            "rollouts out of the statistics, zero-variance groups dropped) or taura "
            "(OmniAgent eq. 3-4: scaled by each turn's mean token entropy).",
        ),
    ] = "grpo",
    std: Annotated[
        str,
        typer.Option("--std", help="Reward spread: sample (n-1, as verl and TRL) or population."),
    ] = "sample",
    eps: Annotated[
        float, typer.Option("--eps", min=0.0, help="Added to the std (verl, Code-X: 1e-6).")
    ] = 1e-6,
    entropy: Annotated[
        str,
        typer.Option(
            "--entropy",
            help="Token entropy from the recorded logprobs: renormalized (top-k rescaled to 1), "
            "remainder (top-k plus the missing mass as one outcome) or surprisal (-log p of "
            "the sampled token; needs no top_logprobs).",
        ),
    ] = "renormalized",
    missing_entropy: Annotated[
        str,
        typer.Option(
            "--missing-entropy",
            help="taura, a turn without logprobs: error, or uniform (weight 1, left out of "
            "the group mean).",
        ),
    ] = "error",
    role: Annotated[
        str, typer.Option("--role", help="Whose model calls are turns (default: agent).")
    ] = "agent",
    include_failed: Annotated[
        bool,
        typer.Option(
            "--include-failed",
            help="grpo/taura: keep failed rollouts (reward 0); gspo always reads them as "
            "removed rollouts.",
        ),
    ] = False,
    tasks: Annotated[
        list[str] | None, typer.Option("--tasks", help="Only these task ids (repeat or a,b).")
    ] = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Read the file back and check it with the trainer's loader."),
    ] = False,
) -> None:
    """Rewards and advantages of the --samples G groups of runs, one JSONL row per trajectory.

    Each row holds the reward, the group advantage and every agent turn's mean token entropy,
    weight and advantage; OUT.meta.json says how they were computed. TAURA needs logprobs:
    run the eval with -O 'generate={"top_logprobs": 5}'.
    """
    from omnilab.train.advantages import EntropyMethod, StdKind
    from omnilab.train.groups import AdvantageKind, GroupOptions, MissingEntropy, export_groups
    from omnilab.train.runs import RecordFilter

    if out.is_dir():
        raise BenchError(f"--out {out} is a folder; name the JSONL file to write")
    judges = split_values(judge)
    if reward is not None:
        from omnilab.bench.rescore import resolve_judges

        judges = resolve_judges(reward, judges)
    elif judges:
        raise BenchError("--judge needs --reward SCORER (the run's own scores take no judge)")
    options = GroupOptions(
        advantage=_choice("--advantage", advantage, AdvantageKind),
        std=_choice("--std", std, StdKind),
        eps=eps,
        entropy=_choice("--entropy", entropy, EntropyMethod),
        role=role,
        missing_entropy=_choice("--missing-entropy", missing_entropy, MissingEntropy),
    )
    keep = RecordFilter(include_failed=include_failed, tasks=frozenset(split_values(tasks)))
    done = export_groups(runs, out, options, reward=reward, judges=judges, keep=keep)
    notes = [f"mean reward {done.mean_reward:.3f}"]
    if done.dropped:
        dropped = plural(len(done.dropped), "group")
        notes.append(f"{dropped} dropped (zero variance or <=1 active)")
    if done.removed:
        notes.append(f"{done.removed} removed rollouts")
    if done.singletons:
        notes.append(f"{done.singletons} groups of one (advantage 0; use --samples G >= 2)")
    if done.uniform:
        notes.append(f"{done.uniform} groups with zero entropy (weights 1)")
    # the rows come from the groups kept: a dropped group writes none
    kept = plural(done.groups - len(done.dropped), "group")
    of = f" of {done.groups}" if done.dropped else ""
    out_console().print(
        f"wrote {plural(done.rows, 'trajectory', 'trajectories')} from {kept}{of} "
        f"({options.advantage}, reward "
        f"{reward or 'score'}): {'; '.join(notes)} -> {done.path}",
        highlight=False,
        soft_wrap=True,
    )
    if check:
        from omnilab.train.files import check_file

        for line in check_file(done.path, "rl-groups", done.written):
            err_console().print(f"check: {line}", markup=False)

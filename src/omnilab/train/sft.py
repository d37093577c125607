"""``omnilab export sft``: run folders to one SFT file, in the format a trainer reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from omnilab.bench.errors import BenchError
from omnilab.train.chat_formats import openai_row, sharegpt_row, trl_row
from omnilab.train.examples import examples
from omnilab.train.omniagent import omniagent_step_rows, release_winners
from omnilab.train.runs import RecordFilter, iter_records
from omnilab.train.validity import refused_calls

__all__ = ["SFT_FORMATS", "SftExport", "SftFormat", "sft_rows"]

SftFormat = Literal["openai", "sharegpt", "trl", "omniagent-steps"]
SFT_FORMATS: tuple[SftFormat, ...] = ("openai", "sharegpt", "trl", "omniagent-steps")

_CHAT = {"openai": openai_row, "sharegpt": sharegpt_row, "trl": trl_row}


@dataclass
class SftExport:
    """What an export produced: the rows, and how many rollouts went in or were dropped."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    rollouts: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    per_call: int = 0
    """Rows that hold one model call (an edited context, or ``per_call``) rather than a whole
    context."""


def sft_rows(
    folders: Sequence[str | Path],
    fmt: SftFormat,
    keep: RecordFilter | None = None,
    *,
    per_call: bool = False,
    reasoning: bool = False,
    valid_only: bool | None = None,
    keep_all: bool = False,
) -> SftExport:
    """Rows of ``fmt`` for every kept rollout of ``folders``; :class:`BenchError` (one line,
    naming the filters and what each dropped) when no rollout is left.

    ``valid_only``: leave out every model call the scaffold refused
    (:func:`~omnilab.train.validity.refused_calls`), one row per call; default: on for
    ``omniagent-steps`` (the release's filter), off for the chat formats. ``omniagent-steps``
    also keeps only the release's winners (:func:`~omnilab.train.omniagent.release_winners`)
    unless ``keep_all``, which keeps every rollout and every call (``valid_only`` still applies
    when given)."""
    if fmt not in SFT_FORMATS:
        raise BenchError(f"unknown format {fmt!r}; use one of {', '.join(SFT_FORMATS)}")
    out = SftExport()
    records = list(iter_records(folders, keep, out.dropped))
    out.rollouts = len(records)
    if fmt == "omniagent-steps":
        valid = (not keep_all) if valid_only is None else valid_only
        chosen = records
        if not keep_all:
            chosen, left = release_winners(records)
            if left:
                out.dropped["release filter (one winning rollout per task)"] = left
        for record in chosen:
            rows = omniagent_step_rows(record, valid_only=valid)
            out.rows.extend(rows)
            out.per_call += len(rows)
        records = []
    one_call = per_call or bool(valid_only)
    found = [e for r in records for e in examples(r, per_call=one_call, reasoning=reasoning)]
    if fmt == "trl" and not one_call and any(e.step is not None for e in found):
        # TRL reads one layout per dataset (prompt-completion when a "prompt" column exists):
        # once one context needs per-call rows, every row is per call.
        found = [e for r in records for e in examples(r, per_call=True, reasoning=reasoning)]
    if valid_only and records:
        refused = {r.trajectory.header.run_id: refused_calls(r.trajectory) for r in records}
        found = [
            e
            for e in found
            if e.calls[-1].call.id not in refused[e.record.trajectory.header.run_id]
        ]
    if fmt in _CHAT:
        out.rows = [_CHAT[fmt](e) for e in found]
        out.per_call = sum(e.step is not None for e in found)
    if not out.rows:
        why = ", ".join(f"{name} dropped {n}" for name, n in out.dropped.items())
        where = ", ".join(str(f) for f in folders)
        raise BenchError(
            f"no examples to export from {where}: "
            + (why if why else "the runs have no finished model calls")
        )
    return out

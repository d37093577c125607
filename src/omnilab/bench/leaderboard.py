"""A leaderboard: models x benchmark groups over any number of runs, with 95% intervals.

Each run contributes its benchmark's headline figures (:func:`~.figures.native_figures`:
Pass@1, or OmniAgent's accuracy / mean IoU / mean MRA per question type) and, per value of its
first grouping (OmniGAIA's Levels, Omni-DeepSearch's retrieval modalities), the same measure
over that group. A row is a model (with its agent when several agents appear); runs of the same
model on other benchmarks fill the same row. Every cell carries a percentile-bootstrap interval
over its tasks. :func:`to_markdown`, :func:`to_csv` and :func:`to_latex` render the same table.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from omnilab.bench.errors import BenchError
from omnilab.bench.figures import native_figures, native_groups
from omnilab.bench.metrics import NO_GROUP, accuracy_by, group_key
from omnilab.bench.reports import open_source
from omnilab.bench.results import TaskResult
from omnilab.bench.run_dir import RunDir, load_results, write_atomic
from omnilab.bench.stats import bootstrap_ci

__all__ = [
    "Cell",
    "Leaderboard",
    "Row",
    "build_leaderboard",
    "to_csv",
    "to_latex",
    "to_markdown",
    "write_leaderboard",
]

_BENCHMARK_NAMES = {
    "omnigaia": "OmniGAIA",
    "omni-deepsearch": "Omni-DeepSearch",
    "omniagent": "OmniAgent",
    "mcq": "MCQ",
}
_CONTINUOUS_TYPES = frozenset({"TR", "SIZE"})


class Cell(BaseModel):
    """A measure in [0, 1] over ``n`` tasks and its interval."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0


class Row(BaseModel):
    """One model (and agent) across benchmarks."""

    label: str
    runs: list[str] = Field(default_factory=list)
    """The run folders (or results files) the row's cells come from."""
    cells: dict[str, Cell] = Field(default_factory=dict)


class Leaderboard(BaseModel):
    """Rows of models, columns of benchmark groups, in first-seen order."""

    columns: list[str]
    rows: list[Row]
    confidence: float = 0.95


def _cell(values: Sequence[float], *, confidence: float, resamples: int, seed: int) -> Cell:
    if not values:
        return Cell(value=None)
    ci = bootstrap_ci(values, confidence=confidence, resamples=resamples, seed=seed)
    return Cell(value=ci.point, low=ci.low, high=ci.high, n=ci.n)


def _task_value(result: TaskResult, continuous: bool) -> float | None:
    """One task's contribution: its IoU/MRA for continuous types, else 1/0; ``None`` when the
    verdict is undecided (a judge error)."""
    if result.judged is None:
        return None
    if continuous:
        return result.score.value if result.score is not None else 0.0
    return 1.0 if result.judged else 0.0


def _is_continuous(result: TaskResult, dataset: str | None) -> bool:
    raw = result.metadata.get("question_type") or result.metadata.task_type or ""
    return dataset == "omniagent" and raw.split("_", 1)[0].upper() in _CONTINUOUS_TYPES


def _run_cells(
    results: list[TaskResult],
    *,
    groups: Sequence[str] | None,
    confidence: float,
    resamples: int,
    seed: int,
) -> tuple[str | None, dict[str, Cell]]:
    datasets = [r.dataset for r in results if r.dataset]
    dataset = max(set(datasets), key=datasets.count) if datasets else None
    bench = _BENCHMARK_NAMES.get(dataset or "", dataset or "results")
    cells: dict[str, Cell] = {}
    for figure in native_figures(
        results, dataset, confidence=confidence, resamples=resamples, seed=seed
    ):
        interval = figure.interval
        cells[f"{bench} {figure.name}"] = Cell(
            value=figure.value,
            low=interval.low if interval else None,
            high=interval.high if interval else None,
            n=figure.n,
        )
    # OmniAgent's figures are already per question type; other benchmarks add their first
    # grouping (OmniGAIA's Levels, Omni-DeepSearch's retrieval modalities).
    names = groups if groups is not None else native_groups(dataset)[:1]
    if groups is None and dataset == "omniagent":
        names = ()
    for name in names:
        by_value: dict[str, list[float]] = {}
        for result in results:
            value = _task_value(result, _is_continuous(result, dataset))
            if value is not None:
                by_value.setdefault(group_key(result, name), []).append(value)
        # Groups in the order tables use (Easy, Medium, Hard; then by name).
        for group in accuracy_by(results, name):
            if group in by_value and group != NO_GROUP:
                cells[f"{bench} {group}"] = _cell(
                    by_value[group], confidence=confidence, resamples=resamples, seed=seed
                )
    return dataset, cells


def _label(path: Path, source_label: str) -> tuple[str, str | None]:
    """``(model, agent)`` from the run's config; the source's label for a bare results file."""
    run = RunDir(path if path.is_dir() else path.parent)
    if not run.is_run():
        return source_label, None
    config = run.read_config()
    return config.model.split("@", 1)[0], config.agent


def build_leaderboard(
    runs: Sequence[str | Path],
    *,
    groups: Sequence[str] | None = None,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> Leaderboard:
    """The leaderboard of ``runs`` (run folders or results files); ``groups`` overrides each
    benchmark's default grouping. Raises :class:`BenchError` for no runs or an unreadable one."""
    if not runs:
        raise BenchError("name at least one run folder: omnilab leaderboard RUN [RUN ...]")
    entries = []
    for run in runs:
        path = Path(run)
        source = open_source(path)
        model, agent = _label(path, source.label)
        _, cells = _run_cells(
            load_results(source.results_file),
            groups=groups,
            confidence=confidence,
            resamples=resamples,
            seed=seed,
        )
        entries.append((model, agent, source.label, cells))
    agents_per_model: dict[str, set[str | None]] = {}
    for model, agent, _, _ in entries:
        agents_per_model.setdefault(model, set()).add(agent)
    rows: list[Row] = []
    columns: dict[str, None] = {}
    for model, agent, label, cells in entries:
        name = model if len(agents_per_model[model]) == 1 or agent is None else f"{model} ({agent})"
        # The same model on another benchmark fills its row; on the same one it gets its own.
        row = next((r for r in rows if r.label == name and not set(r.cells) & set(cells)), None)
        if row is None:
            taken = any(r.label == name for r in rows)
            row = Row(label=f"{name} [{label}]" if taken else name)
            rows.append(row)
        row.cells.update(cells)
        row.runs.append(label)
        columns.update(dict.fromkeys(cells))
    return Leaderboard(columns=list(columns), rows=rows, confidence=confidence)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}"


def _text(cell: Cell | None) -> str:
    if cell is None or cell.value is None:
        return "-"
    if cell.low is None or cell.high is None:
        return _pct(cell.value)
    return f"{_pct(cell.value)} [{_pct(cell.low)}, {_pct(cell.high)}]"


def to_markdown(board: Leaderboard) -> str:
    """A Markdown table: ``value [low, high]`` in percent per cell."""
    level = f"{board.confidence * 100:g}%"
    head = ["model", *board.columns]
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---", *("---:" for _ in board.columns)]) + "|",
    ]
    for row in board.rows:
        cells = [_text(row.cells.get(c)) for c in board.columns]
        lines.append("| " + " | ".join([row.label.replace("|", "\\|"), *cells]) + " |")
    return "\n".join(lines) + f"\n\nPercent, with {level} bootstrap intervals in brackets.\n"


def to_csv(board: Leaderboard) -> str:
    """One line per model; per column its value, interval ends and task count (percent)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["model"]
    for column in board.columns:
        header += [column, f"{column} low", f"{column} high", f"{column} n"]
    writer.writerow(header)
    for row in board.rows:
        line = [row.label]
        for column in board.columns:
            cell = row.cells.get(column) or Cell(value=None)
            line += [
                "" if cell.value is None else f"{cell.value * 100:.2f}",
                "" if cell.low is None else f"{cell.low * 100:.2f}",
                "" if cell.high is None else f"{cell.high * 100:.2f}",
                str(cell.n) if cell.value is not None else "",
            ]
        writer.writerow(line)
    return out.getvalue()


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _latex(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def to_latex(board: Leaderboard) -> str:
    """A ``booktabs`` tabular; intervals in a smaller font under each value's line."""
    spec = "l" + "r" * len(board.columns)
    lines = [
        f"% {board.confidence * 100:g}% bootstrap intervals in brackets; needs \\usepackage{{booktabs}}",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(["Model", *(_latex(c) for c in board.columns)]) + " \\\\",
        "\\midrule",
    ]
    for row in board.rows:
        cells = []
        for column in board.columns:
            cell = row.cells.get(column)
            if cell is None or cell.value is None:
                cells.append("--")
            elif cell.low is None or cell.high is None:
                cells.append(_pct(cell.value))
            else:
                cells.append(
                    f"{_pct(cell.value)} {{\\scriptsize [{_pct(cell.low)}, {_pct(cell.high)}]}}"
                )
        lines.append(" & ".join([_latex(row.label), *cells]) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_leaderboard(board: Leaderboard, stem: str | Path) -> list[Path]:
    """Write ``STEM.md``, ``STEM.csv`` and ``STEM.tex``; returns their paths."""
    stem = Path(stem)
    written = []
    for suffix, text in (
        (".md", to_markdown(board)),
        (".csv", to_csv(board)),
        (".tex", to_latex(board)),
    ):
        path = stem.with_name(stem.name + suffix)
        try:
            write_atomic(path, text)
        except OSError as e:
            raise BenchError(f"cannot write {path}: {e.strerror or e}") from None
        written.append(path)
    return written

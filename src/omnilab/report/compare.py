"""The comparison page: each run against the first, task by task (both right, A only, B only,
both wrong), McNemar's test (:func:`omnilab.bench.metrics.compare_runs`), per-group deltas and
links to both trajectories of every task."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from omnilab._atomic import write_atomic
from omnilab.bench.metrics import accuracy_by, compare_runs
from omnilab.report.html import esc, page
from omnilab.report.rows import TaskRow
from omnilab.report.run_page import ACCURACY_GROUPS
from omnilab.report.run_report import RunReport

__all__ = ["PAIRS", "comparison_body", "pair_class"]

PAIRS = ("both-right", "a-only", "b-only", "both-wrong", "undecided")
"""How a task compares across two runs (``undecided``: a verdict is missing in either)."""


def pair_class(a: bool | None, b: bool | None) -> str:
    """One of :data:`PAIRS` from the two verdicts."""
    if a is None or b is None:
        return "undecided"
    if a and b:
        return "both-right"
    if a:
        return "a-only"
    return "b-only" if b else "both-wrong"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _link(report: RunReport, row: TaskRow | None, out: Path, text: str) -> str:
    if row is None:
        return '<span class="muted">absent</span>'
    if row.page is None:
        return esc(text)
    href = Path(os.path.relpath(report.folder, out)) / row.page
    return f'<a href="{esc(href.as_posix())}">{esc(text)}</a>'


def _side_by_side(a: RunReport, b: RunReport, row: TaskRow, other: TaskRow, folder: Path) -> str:
    """A page showing the task's two trajectories side by side; its path from the index."""
    assert row.page is not None and other.page is not None
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{row.stem}.html"
    frames = ""
    for name, report, task in (("A = " + a.label, a, row), ("B = " + b.label, b, other)):
        src = Path(os.path.relpath(report.folder / str(task.page), folder)).as_posix()
        frames += (
            f'<div><h2>{esc(name)}: <span class="state {task.state}">{task.state}</span></h2>'
            f'<iframe src="{esc(src)}"></iframe></div>'
        )
    root = Path(os.path.relpath(folder.parent.parent, folder)).as_posix() + "/"
    body = (
        f'<nav><a href="{root}index.html">← comparison</a></nav><h1>{esc(row.label)}</h1>'
        f'<div class="side-by-side">{frames}</div>'
    )
    write_atomic(target, page(f"{row.label}: A vs B", body, root=root), sync=False)
    return Path(os.path.relpath(target, folder.parent.parent)).as_posix()


def _pair(a: RunReport, b: RunReport, out: Path, number: int) -> str:
    test = compare_runs([r.result for r in a.rows], [r.result for r in b.rows])
    counts = (
        f'<table class="facts pairs"><tr><th></th><th>B right</th><th>B wrong</th></tr>'
        f"<tr><th>A right</th><td>{test.both_correct}</td><td>{test.only_a}</td></tr>"
        f"<tr><th>A wrong</th><td>{test.only_b}</td><td>{test.both_wrong}</td></tr></table>"
        f'<p>McNemar ({esc(test.method)}): p = <b class="pvalue">{test.p_value:.4g}</b> over '
        f"{test.shared} shared tasks ({test.excluded} left out: undecided)</p>"
    )
    deltas = []
    for key, title in ACCURACY_GROUPS:
        by_a = accuracy_by([r.result for r in a.rows], key)
        by_b = accuracy_by([r.result for r in b.rows], key)
        if set(by_a) | set(by_b) <= {"(none)"}:
            continue
        for group in dict.fromkeys([*by_a, *by_b]):
            va = by_a[group].value if group in by_a else None
            vb = by_b[group].value if group in by_b else None
            delta = "–" if va is None or vb is None else f"{100 * (vb - va):+.1f} pts"
            deltas.append(
                f"<tr><td>{esc(title)}</td><td>{esc(group)}</td><td>{_pct(va)}</td>"
                f"<td>{_pct(vb)}</td><td>{esc(delta)}</td></tr>"
            )
    delta_table = (
        '<table class="facts deltas"><tr><th>grouping</th><th>group</th><th>A</th><th>B</th>'
        f"<th>B − A</th></tr>{''.join(deltas)}</table>"
        if deltas
        else ""
    )
    b_rows = {r.result.key: r for r in b.rows}
    rows = []
    for row in a.rows:
        other = b_rows.get(row.result.key)
        kind = pair_class(row.result.judged, other.result.judged if other else None)
        label = esc(row.label)
        if other is not None and row.page is not None and other.page is not None:
            both = _side_by_side(a, b, row, other, out / "pairs" / str(number))
            label = f'<a href="{esc(both)}">{label}</a>'
        rows.append(
            f'<tr data-pair="{kind}" data-search="{esc(row.label.casefold())}">'
            f"<td>{label}</td><td>{kind}</td>"
            f"<td>{_link(a, row, out, row.state)}</td>"
            f"<td>{_link(b, other, out, other.state if other else '')}</td></tr>"
        )
    options = "".join(f'<option value="{p}">{p}</option>' for p in PAIRS)
    table = (
        '<div class="filters"><select data-filter="pair"><option value="">all tasks</option>'
        f'{options}</select><input type="search" placeholder="search task id">'
        f'<span class="shown"></span></div>'
        '<table class="tasks"><thead><tr><th data-type="text">task</th>'
        '<th data-type="text">pair</th><th data-type="text">A</th><th data-type="text">B</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return (
        f'<section class="compare filterable"><h2>A = {esc(a.label)} vs B = {esc(b.label)}</h2>'
        f"<p>Pass@1: A {_pct(a.summary.pass_at_1.value)}, B {_pct(b.summary.pass_at_1.value)}</p>"
        f"{counts}{delta_table}{table}</section>"
    )


def comparison_body(reports: Sequence[RunReport], out: Path) -> str:
    """The index of a multi-run report: each run's headline and link, then each run compared
    with the first."""
    items = "".join(
        f'<tr><td><a href="{esc(Path(os.path.relpath(r.folder, out)).as_posix())}/index.html">'
        f"{esc(r.label)}</a></td><td>{esc(r.agent or '–')}</td><td>{esc(r.model or '–')}</td>"
        f"<td>{r.summary.tasks}</td>"
        f"<td>{_pct(r.summary.pass_at_1.value)}</td><td>{_pct(r.summary.em.value)}</td>"
        f"<td>{r.summary.failed_runs}</td></tr>"
        for r in reports
    )
    runs = (
        '<section><h2>Runs</h2><table class="facts"><tr><th>run</th><th>agent</th><th>model</th>'
        "<th>tasks</th>"
        f"<th>Pass@1</th><th>EM</th><th>failed</th></tr>{items}</table></section>"
    )
    pairs = "".join(
        _pair(reports[0], other, out, n) for n, other in enumerate(reports[1:], start=2)
    )
    return f"<header><h1>Run comparison</h1></header>{runs}{pairs}"

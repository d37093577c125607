"""The index page of one run: summary, charts and the task table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from omnilab.bench.analysis import ErrorAnalysis
from omnilab.bench.metrics import NO_GROUP, RunSummary, accuracy_by, group_key
from omnilab.bench.run_dir import RunConfig
from omnilab.bench.stats import bootstrap_ci
from omnilab.report.charts import Bar, bar_chart, histogram
from omnilab.report.html import esc
from omnilab.report.rows import TaskRow

__all__ = ["ACCURACY_GROUPS", "accuracy_bars", "run_body"]

ACCURACY_GROUPS = (
    ("level", "Level"),
    ("category", "Category"),
    ("modalities", "Modality"),
    ("question_type", "Question type"),
    ("task_type", "Task type"),
)
"""Groupings charted by accuracy, when the tasks carry them: (key, title)."""
_RESAMPLES = 2_000  # per-group intervals: enough for whiskers, quick for many groups


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def accuracy_bars(rows: Sequence[TaskRow], key: str) -> list[Bar]:
    """Pass@1 per group of ``key`` with a 95% bootstrap interval; ``[]`` when no task has a
    value for ``key``."""
    groups: dict[str, list[bool]] = {}
    for row in rows:
        verdict = row.result.judged
        group = group_key(row.result, key)
        groups.setdefault(group, [])
        if verdict is not None:
            groups[group].append(verdict)
    if set(groups) <= {NO_GROUP}:
        return []
    bars = []
    # The metrics' natural order (Easy, Medium, Hard; then by name; "(none)" last).
    order = accuracy_by([r.result for r in rows], key)
    for name in order:
        verdicts = groups[name]
        if not verdicts:
            bars.append(Bar(name, 0.0, "no verdicts", title=f"{name}: no decided tasks"))
            continue
        ci = bootstrap_ci([float(v) for v in verdicts], resamples=_RESAMPLES)
        text = f"{_pct(ci.point)} ({sum(verdicts)}/{len(verdicts)})"
        title = f"{name}: {text}, 95% CI {_pct(ci.low)}–{_pct(ci.high)}"
        bars.append(Bar(name, ci.point, text, low=ci.low, high=ci.high, title=title))
    return bars


def _card(title: str, value: str, detail: str = "") -> str:
    return (
        f'<div class="card"><div class="k">{esc(title)}</div><div class="v">{esc(value)}</div>'
        f'<div class="d">{esc(detail)}</div></div>'
    )


def _time_cards(summary: RunSummary, rows: Sequence[TaskRow]) -> list[str]:
    """The run's wall time (first task start to last task end: tasks run side by side) and the
    task time summed, which is larger with concurrency."""
    spans = [r.span for r in rows if r.span is not None]
    wall = max(e for _, e in spans) - min(s for s, _ in spans) if spans else None
    time = summary.wall_time
    return [
        _card(
            "Wall time",
            "–" if wall is None else f"{wall:,.1f} s",
            "first task start to last task end",
        ),
        _card(
            "Task time (summed)",
            f"{time.total_s:,.1f} s",
            f"median {time.median_s:.2f} s · p90 {time.p90_s:.2f} s per task",
        ),
    ]


def _summary(summary: RunSummary, rows: Sequence[TaskRow], config: RunConfig | None) -> str:
    p, ci = summary.pass_at_1, summary.pass_at_1_ci
    interval = f"95% CI {_pct(ci.low)}–{_pct(ci.high)}" if ci else "no decided tasks"
    em = summary.em
    undecided = p.undecided / summary.tasks if summary.tasks else 0.0
    usage = summary.usage
    cost = "unknown" if usage.cost_usd is None else f"${usage.cost_usd:,.4f}"
    cards = [
        _card("Pass@1", _pct(p.value), f"{p.correct}/{p.total} · {interval}"),
        _card("Exact match", _pct(em.value), f"{em.correct}/{em.total}"),
        _card("Undecided", _pct(undecided), f"{p.undecided} tasks without a verdict"),
        _card("Failed runs", str(summary.failed_runs), "counted as wrong"),
        _card(
            "Tokens",
            f"{usage.total_tokens:,}",
            f"{usage.prompt_tokens:,} in / {usage.completion_tokens:,} out",
        ),
        _card("Cost", cost, f"{usage.tasks_with_cost} tasks priced"),
        *_time_cards(summary, rows),
        _card("Tasks", str(summary.tasks), summary.dataset or ""),
    ]
    figures = "".join(
        _card(f.name, _pct(f.value), f"n={f.n}") for f in summary.figures if f.name != "Pass@1"
    )
    if summary.samples is not None:  # --samples K: pass@k as eval printed it
        figures += "".join(
            _card(
                f"pass@{k}", _pct(v), f"{summary.samples.tasks} tasks x {summary.samples.samples}"
            )
            for k, v in summary.samples.pass_at_k.items()
        )
    about = ""
    if config is not None:
        facts = [
            ("dataset", config.dataset),
            ("agent", config.agent),
            ("model", config.model),
            ("judges", ", ".join(config.judges) or "–"),
            ("scorer", config.scorer),
            ("created", config.created),
        ]
        about = (
            '<table class="facts">'
            + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts)
            + "</table>"
        )
    return f'<section><div class="cards">{"".join(cards)}{figures}</div>{about}</section>'


def _errors(rows: Sequence[TaskRow]) -> str:
    kinds = Counter(r.result.error_kind or "error" for r in rows if r.result.error is not None)
    if not kinds:
        return ""
    bars = [Bar(k, float(n), str(n)) for k, n in kinds.most_common()]
    return _chart("Failed tasks by error kind", bar_chart(bars, name="errors"))


def _chart(title: str, svg: str) -> str:
    return f'<figure class="plot"><figcaption>{esc(title)}</figcaption>{svg}</figure>'


def _charts(summary: RunSummary, rows: Sequence[TaskRow], analysis: ErrorAnalysis | None) -> str:
    out = []
    for key, title in ACCURACY_GROUPS:
        bars = accuracy_bars(rows, key)
        if bars:
            out.append(
                _chart(
                    f"Pass@1 by {title.lower()} (95% CI)", bar_chart(bars, maximum=1.0, name=key)
                )
            )
    tools = summary.tool_calls.by_name
    if tools:
        bars = [Bar(n, float(c), f"{c:,}") for n, c in tools.items()]
        out.append(_chart("Tool calls by tool", bar_chart(bars, name="tools")))
    out.append(_errors(rows))
    if analysis is not None and analysis.frequencies:
        bars = [Bar(k, float(n), str(n)) for k, n in analysis.frequencies.items()]
        out.append(_chart("Error analysis (failed tasks)", bar_chart(bars, name="analysis")))
    dists = [
        ("turns", "Turns per task", [float(r.turns) for r in rows if r.turns is not None], ""),
        ("tool-calls", "Tool calls per task", [float(r.result.tool_call_count) for r in rows], ""),
        ("tokens", "Tokens per task", [float(r.tokens) for r in rows], ""),
        ("wall", "Wall time per task (s)", [r.result.wall_s for r in rows], ""),
        ("latency", "Model-call latency (s)", [v for r in rows for v in r.latencies], ""),
    ]
    for name, title, values, unit in dists:
        if values:
            out.append(_chart(title, histogram(values, name=name, unit=unit)))
    out.extend(_note_charts(rows))
    return (
        f'<section class="charts"><h2>Charts</h2><div class="grid">{"".join(out)}</div></section>'
    )


_NOTE_VALUES = 6  # numeric note fields charted at most (the most frequent)


def _note_charts(rows: Sequence[TaskRow]) -> list[str]:
    """What scaffolds noted (``AgentRun.note``): notes per task by label (OTA's turns, a master
    agent's rounds), and the distribution of each number they carried (a turn's confidence,
    the budget a deep-search step used)."""
    labels: Counter[str] = Counter()
    for row in rows:
        labels.update(row.notes)
    if not labels:
        return []
    bars = [
        Bar(k, n / len(rows), f"{n / len(rows):.2f}", title=f"{n} {k} notes over {len(rows)} tasks")
        for k, n in labels.most_common()
    ]
    out = [_chart("Step notes per task, by label", bar_chart(bars, name="notes"))]
    fields: dict[str, list[float]] = {}
    for row in rows:
        for key, values in row.values.items():
            fields.setdefault(key, []).extend(values)
    # A field with one value throughout (OTA's "step" within "turn 3") has no distribution.
    varied = [k for k in fields if len(set(fields[k])) > 1]
    common = sorted(varied, key=lambda k: -len(fields[k]))[:_NOTE_VALUES]
    for key in common:
        out.append(_chart(f"Noted {key}", histogram(fields[key], name=f"note:{key}")))
    return out


def _options(name: str, plural: str, values: Sequence[str]) -> str:
    opts = "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in values)
    return f'<select id="f-{name}" data-filter="{name}"><option value="">all {plural}</option>{opts}</select>'


def _table(rows: Sequence[TaskRow]) -> str:
    levels = sorted({r.result.metadata.level or "" for r in rows} - {""})
    categories = sorted({r.result.metadata.category or "" for r in rows} - {""})
    filters = (
        '<div class="filters">'
        '<select id="f-state" data-filter="state"><option value="">all results</option>'
        '<option value="correct">correct</option><option value="wrong">wrong</option>'
        '<option value="error">error</option><option value="undecided">undecided</option></select>'
        f"{_options('level', 'levels', levels)}{_options('category', 'categories', categories)}"
        '<input id="f-search" type="search" placeholder="search id, question, answer">'
        f'<span class="shown" id="shown">{len(rows)} of {len(rows)} tasks</span></div>'
    )
    head = (
        "<tr>"
        + "".join(
            f'<th data-sort="{i}" data-type="{t}">{esc(n)}</th>'
            for i, (n, t) in enumerate(
                [
                    ("task", "text"),
                    ("result", "text"),
                    ("level", "text"),
                    ("category", "text"),
                    ("modality", "text"),
                    ("answer", "text"),
                    ("turns", "num"),
                    ("tools", "num"),
                    ("tokens", "num"),
                    ("wall s", "num"),
                ]
            )
        )
        + "</tr>"
    )
    body = "".join(_row(r) for r in rows)
    return (
        f'<section class="filterable"><h2>Tasks</h2>{filters}<table id="tasks" class="tasks"><thead>{head}</thead>'
        f"<tbody>{body}</tbody></table></section>"
    )


def _row(row: TaskRow) -> str:
    r = row.result
    meta = r.metadata
    search = " ".join((row.label, row.question, row.answer, r.error or "")).casefold()
    link = f'<a href="{esc(row.page)}">{esc(row.label)}</a>' if row.page else esc(row.label)
    answer = row.answer if len(row.answer) <= 80 else row.answer[:79] + "…"
    turns = "" if row.turns is None else str(row.turns)
    return (
        f'<tr data-state="{row.state}" data-level="{esc(meta.level or "")}" '
        f'data-category="{esc(meta.category or "")}" data-search="{esc(search[:2000])}">'
        f"<td>{link}</td>"
        f'<td><span class="state {row.state}">{row.state}</span></td>'
        f"<td>{esc(meta.level or '')}</td><td>{esc(meta.category or '')}</td>"
        f"<td>{esc(r.modalities)}</td><td>{esc(answer)}</td>"
        f"<td>{turns}</td><td>{r.tool_call_count}</td><td>{row.tokens}</td>"
        f"<td>{r.wall_s:.2f}</td></tr>"
    )


def run_body(
    title: str,
    summary: RunSummary,
    rows: Sequence[TaskRow],
    *,
    config: RunConfig | None = None,
    analysis: ErrorAnalysis | None = None,
) -> str:
    """The body of a run's index page."""
    return (
        f"<header><h1>{esc(title)}</h1></header>"
        f"{_summary(summary, rows, config)}{_charts(summary, rows, analysis)}{_table(rows)}"
    )

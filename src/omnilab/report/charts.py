"""Plain inline SVG charts: bars with confidence whiskers, and histograms.

No chart library: a bar is one ``<rect class="bar">`` (tests count them), labels are escaped
text, and the SVG scales with the page through its ``viewBox``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from omnilab.report.html import esc

__all__ = ["Bar", "bar_chart", "bins", "histogram"]

_ROW = 22  # pixels per bar
_LABEL = 170  # width of the label column
_PLOT = 360  # width of the bars' area
_VALUE = 150  # width of the value column


@dataclass(frozen=True)
class Bar:
    """One bar: ``value`` on a scale of ``0 .. maximum``, with an optional interval."""

    label: str
    value: float
    text: str
    """What is printed beside the bar (``62.5% (5/8)``)."""
    low: float | None = None
    high: float | None = None
    title: str = ""
    """Hover text."""


def bar_chart(bars: Sequence[Bar], *, maximum: float | None = None, name: str = "") -> str:
    """Horizontal bars (with whiskers where ``low``/``high`` are set) as one ``<svg>``."""
    top = maximum if maximum is not None else max((b.high or b.value for b in bars), default=0)
    top = top or 1.0
    height = _ROW * len(bars) + 6
    width = _LABEL + _PLOT + _VALUE
    parts = [
        f'<svg class="chart" data-chart="{esc(name)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{esc(name)}">'
    ]

    def x(v: float) -> float:
        return _LABEL + _PLOT * max(0.0, min(v, top)) / top

    for i, bar in enumerate(bars):
        y = 3 + i * _ROW
        mid = y + _ROW / 2
        parts.append(
            f'<text class="label" x="{_LABEL - 6}" y="{mid + 4:.1f}" text-anchor="end">'
            f"{esc(_short(bar.label))}</text>"
        )
        parts.append(
            f'<rect class="bar" x="{_LABEL}" y="{y + 3}" width="{x(bar.value) - _LABEL:.1f}" '
            f'height="{_ROW - 6}"><title>{esc(bar.title or bar.label)}</title></rect>'
        )
        if bar.low is not None and bar.high is not None:
            lo, hi = x(bar.low), x(bar.high)
            parts.append(
                f'<path class="whisker" d="M{lo:.1f} {mid:.1f}H{hi:.1f}'
                f'M{lo:.1f} {mid - 5:.1f}V{mid + 5:.1f}M{hi:.1f} {mid - 5:.1f}V{mid + 5:.1f}"/>'
            )
        parts.append(
            f'<text class="value" x="{_LABEL + _PLOT + 6}" y="{mid + 4:.1f}">{esc(bar.text)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _short(label: str, limit: int = 26) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def bins(values: Sequence[float], *, count: int = 10) -> list[tuple[float, float, int]]:
    """``(low, high, n)`` for ``count`` equal-width bins over ``values`` (integers get one bin
    per value when they span fewer than ``count``)."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    if all(float(v).is_integer() for v in values) and hi - lo < count:
        return [(v, v, sum(1 for x in values if x == v)) for v in range(int(lo), int(hi) + 1)]
    if hi == lo:
        return [(lo, hi, len(values))]
    step = (hi - lo) / count
    counts = [0] * count
    for v in values:
        counts[min(count - 1, int((v - lo) / step))] += 1
    return [(lo + i * step, lo + (i + 1) * step, n) for i, n in enumerate(counts)]


def _num(v: float) -> str:
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:,.3g}" if abs(v) < 100 else f"{v:,.0f}"


def histogram(values: Sequence[float], *, name: str, unit: str = "") -> str:
    """A distribution as horizontal bars, one per bin, labelled by the bin's range."""
    found = bins(values)
    bars = [
        Bar(
            label=_num(lo) if lo == hi else f"{_num(lo)}–{_num(hi)}{unit}",
            value=float(n),
            text=str(n),
            title=f"{n} tasks",
        )
        for lo, hi, n in found
    ]
    return bar_chart(bars, name=name)

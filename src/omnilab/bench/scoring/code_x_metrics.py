"""Metrics of TerminalBench-O-style graders (Code-X §4, Appendix F): each in [0, 1].

Temporal segments are matched one-to-one with the Hungarian algorithm (maximum total IoU), with a
tolerance window that widens each predicted segment by ``tolerance`` seconds on both sides
before the IoU is taken (the paper's ±2 s); labels are compared after normalisation; sets give
F1; free text gives 1 - CER. Output files are read from the sandbox-written workspace without
following links.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from omnilab.sandbox import open_folder

__all__ = [
    "char_similarity",
    "f1",
    "hungarian",
    "read_json",
    "read_output",
    "segment_iou",
    "tolerance_score",
]

_MAX_OUTPUT_BYTES = 256 * 1024**2


def hungarian(score: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """The one-to-one assignment of rows to columns with the largest total ``score``.

    The classic O(n^3) Hungarian algorithm on the square cost matrix ``max - score`` (padded
    with zeros); pairs with a padded row or column are left out.
    """
    rows = len(score)
    cols = len(score[0]) if rows else 0
    if rows == 0 or cols == 0:
        return []
    n = max(rows, cols)
    values = np.zeros((n, n))
    values[:rows, :cols] = np.asarray(score, dtype=float)
    cost = values.max() - values
    u = np.zeros(n + 1)
    v = np.zeros(n + 1)
    p = np.zeros(n + 1, dtype=int)  # p[j]: the row matched to column j (1-based; 0 = none)
    way = np.zeros(n + 1, dtype=int)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = np.full(n + 1, np.inf)
        used = np.zeros(n + 1, dtype=bool)
        while True:
            used[j0] = True
            i0 = p[j0]
            delta = np.inf
            j1 = 0
            for j in range(1, n + 1):
                if used[j]:
                    continue
                cur = cost[i0 - 1, j - 1] - u[i0] - v[j]
                if cur < minv[j]:
                    minv[j], way[j] = cur, j0
                if minv[j] < delta:
                    delta, j1 = minv[j], j
            for j in range(n + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
    pairs = [(int(p[j]) - 1, j - 1) for j in range(1, n + 1) if p[j]]
    return sorted((r, c) for r, c in pairs if r < rows and c < cols)


def _iou(a: tuple[float, float], b: tuple[float, float]) -> float:
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union > 0 else 0.0


def _tolerant_iou(pred: tuple[float, float], ref: tuple[float, float], tolerance: float) -> float:
    # Boundaries within the tolerance of the reference's count as exact.
    start = ref[0] if abs(pred[0] - ref[0]) <= tolerance else pred[0]
    end = ref[1] if abs(pred[1] - ref[1]) <= tolerance else pred[1]
    return _iou((start, end), ref) if end > start else 0.0


def segment_iou(
    predicted: Sequence[tuple[float, float]],
    reference: Sequence[tuple[float, float]],
    *,
    tolerance: float = 2.0,
) -> tuple[float, list[tuple[int, int]]]:
    """Mean IoU over the reference segments after Hungarian matching (an unmatched reference or
    extra prediction lowers it: the sum is divided by the larger count), and the matches."""
    if not predicted or not reference:
        return (1.0 if not predicted and not reference else 0.0), []
    table = [[_tolerant_iou(p, r, tolerance) for r in reference] for p in predicted]
    pairs = hungarian(table)
    total = sum(table[i][j] for i, j in pairs)
    return total / max(len(predicted), len(reference)), pairs


def f1(predicted: Sequence[str], reference: Sequence[str]) -> float:
    """F1 of two sets of normalised strings (1.0 when both are empty)."""
    p = {" ".join(x.lower().split()) for x in predicted}
    r = {" ".join(x.lower().split()) for x in reference}
    if not p and not r:
        return 1.0
    hit = len(p & r)
    if hit == 0:
        return 0.0
    precision, recall = hit / len(p), hit / len(r)
    return 2 * precision * recall / (precision + recall)


def char_similarity(predicted: str, reference: str) -> float:
    """1 - character error rate (edit distance over the reference length), at least 0; case and
    runs of whitespace are ignored."""
    a = " ".join(predicted.lower().split())
    b = " ".join(reference.lower().split())
    if not b:
        return 1.0 if not a else 0.0
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return max(0.0, 1.0 - prev[-1] / len(b))


def tolerance_score(value: float, target: float, tolerance: float) -> float:
    """1 within ``tolerance`` of ``target``, falling linearly to 0 at three times it."""
    err = abs(value - target)
    if err <= tolerance:
        return 1.0
    return max(0.0, 1.0 - (err - tolerance) / (2 * tolerance))


def read_output(workspace: Path, relative: str) -> bytes | None:
    """The bytes of ``workspace/relative``, or ``None`` when it is missing, is not a regular file,
    or lies behind a link (an agent's link must not make the grader read a hidden reference)."""
    parts = [p for p in PurePosixPath(relative).parts if p not in ("", ".")]
    if not parts or ".." in parts or PurePosixPath(relative).is_absolute():
        return None
    try:
        with open_folder(workspace, tuple(parts[:-1])) as dirfd:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dirfd)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.EACCES):
            return None
        raise
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        data = f.read(_MAX_OUTPUT_BYTES + 1)
    return data if len(data) <= _MAX_OUTPUT_BYTES else None


def read_json(workspace: Path, relative: str) -> Any:
    """The JSON value of an output file; ``None`` when missing or not JSON."""
    data = read_output(workspace, relative)
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None

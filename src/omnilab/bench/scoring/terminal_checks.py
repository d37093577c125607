"""The named checks of the shipped ``terminal-tasks`` (:mod:`omnilab.bench.datasets.terminal_tasks`):
the ones that need the media itself (a clip's duration, SRT cues, a contact sheet's frames and
times). The grader (:mod:`omnilab.bench.scoring.code_x_tasks`) starts its ``CHECKS`` from
:data:`TERMINAL_CHECKS`."""

from __future__ import annotations

import io
import math
import re
import tempfile
from pathlib import Path

from PIL import Image

from omnilab.bench.scoring.code_x_metrics import (
    char_similarity,
    hungarian,
    read_output,
    segment_iou,
)
from omnilab.bench.scoring.code_x_spec import CheckFn, Dimension, field_values
from omnilab.media import synth

__all__ = ["TERMINAL_CHECKS"]


def _clip_duration(workspace: Path, d: Dimension) -> float:
    from omnilab.bench.scoring.code_x_metrics import tolerance_score
    from omnilab.media.probe import probe

    data = read_output(workspace, d.file)
    if data is None:
        return 0.0
    with tempfile.TemporaryDirectory(prefix="omnilab-grade-") as tmp:
        copy = Path(tmp) / Path(d.file).name
        copy.write_bytes(data)
        try:
            info = probe(copy)
        except Exception:  # not a media file: no credit
            return 0.0
    duration = info.duration if info.duration is not None else 0.0
    return tolerance_score(duration, float(d.reference), d.tolerance)


_TIME = re.compile(r"(\d+):(\d+):(\d+)[,.](\d+)\s*-->\s*(\d+):(\d+):(\d+)[,.](\d+)")


def _cues(workspace: Path, file: str) -> list[tuple[float, float, str]]:
    data = read_output(workspace, file)
    if data is None:
        return []
    cues = []
    for block in re.split(r"\n\s*\n", data.decode(errors="replace").replace("\r\n", "\n").strip()):
        lines = block.strip().splitlines()
        for i, line in enumerate(lines):
            m = _TIME.search(line)
            if m:
                g = [int(x) for x in m.groups()]
                start = g[0] * 3600 + g[1] * 60 + g[2] + g[3] / 10 ** len(m.group(4))
                end = g[4] * 3600 + g[5] * 60 + g[6] + g[7] / 10 ** len(m.group(8))
                cues.append((start, end, " ".join(lines[i + 1 :])))
                break
    return cues


def _srt_timing(workspace: Path, d: Dimension) -> float:
    cues = _cues(workspace, d.file)
    ref = [(c["start"], c["end"]) for c in d.reference]
    return segment_iou([(a, b) for a, b, _ in cues], ref, tolerance=d.tolerance)[0]


def _srt_text(workspace: Path, d: Dimension) -> float:
    cues = _cues(workspace, d.file)
    if not cues:
        return 0.0
    table = [[char_similarity(text, c["text"]) for c in d.reference] for _, _, text in cues]
    pairs = hungarian(table)
    return sum(table[i][j] for i, j in pairs) / max(len(cues), len(d.reference))


def _sheet_frames(workspace: Path, d: Dimension) -> float:

    data = read_output(workspace, d.file)
    if data is None:
        return 0.0
    try:
        sheet = Image.open(io.BytesIO(data)).convert("RGB")
    except OSError:
        return 0.0
    times: list[float] = list(d.reference)
    if sheet.size != (480, 120 * math.ceil(len(times) / 3)):
        return 0.0
    right = 0
    for n, t in enumerate(times):
        x, y = (n % 3) * 160, (n // 3) * 120
        index = synth.read_index(sheet.crop((x, y, x + 160, y + 120)))
        right += abs(index - round(t * 25)) <= 1  # the frame shown, give or take one
    return right / len(times)


def _sheet_times(workspace: Path, d: Dimension) -> float:
    from omnilab.bench.scoring.code_x_metrics import f1, read_json

    tiles = field_values(read_json(workspace, d.file), "tiles")
    if not isinstance(tiles, list):
        return 0.0
    got = [f"{float(t.get('time', -1)):.1f}" for t in tiles if isinstance(t, dict)]
    return f1(got, [f"{t:.1f}" for t in d.reference])


TERMINAL_CHECKS: dict[str, CheckFn] = {
    "clip_duration": _clip_duration,
    "srt_timing": _srt_timing,
    "srt_text": _srt_text,
    "sheet_frames": _sheet_frames,
    "sheet_times": _sheet_times,
}

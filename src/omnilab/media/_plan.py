"""How :func:`omnilab.media.frames` shares one request among decoding workers.

Sorted times are cut into groups, runs that one forward decode serves (no gap wider than the
seek distance of the walk in :mod:`omnilab.media._picker`), so cutting between groups never
decodes a GOP twice. A sparse request has many groups; they are dealt to workers largest
first by their decoding cost in frames.

A dense request (samples closer than the GOP: 512 frames of a half-hour video, any count on a
one-minute one) is a single group. Served by one worker, FFmpeg's frame threads spread its
decoding, but converting and shrinking the frames (most of the work on real footage) ran on
the calling thread alone. Such a group is cut further, **at keyframes**: between two consecutive times
with a keyframe after the first and at or before the second. The worker of the later piece
seeks to that keyframe (the one at or before its first time) and decodes from there, and no
picture it decodes was needed by the earlier piece; the earlier piece's worker decodes at most
the few pictures up to the one after its last time. The keyframes come from demuxing one GOP
around each ideal cut (packet flags and timestamps; no picture is decoded). The container's
index would be cheaper still but is not usable as such: in MP4 its times are decoding times
(off by the B-frame delay), and Matroska reads its cues only when it first seeks.

Every worker walks its pieces exactly like the single walk does after a seek, so the frames
(pictures and timestamps) are the single walk's.
"""

from __future__ import annotations

import bisect
import itertools
import math

import av
import av.container

from omnilab.media._open import only_read, open_input
from omnilab.media._picker import EPS
from omnilab.media.budget import cores
from omnilab.media.probe import MediaInfo, _is_cover_art

__all__ = [
    "UNKNOWN_GOP_SECONDS",
    "keyframe_times",
    "keyframes_around",
    "plan",
    "seek_gap",
    "threads_for",
    "worker_threads",
]

# Without a probed keyframe interval probe saw fewer than two keyframes in its scan (about a
# minute of video at 25 fps), so keyframes are at least that sparse: decode onward up to this far.
UNKNOWN_GOP_SECONDS = 60.0
# Decoding workers at most: each holds a container and a decoder.
_MAX_WORKERS = 4
# Below this many frames of estimated decoding a request stays in one worker.
_PARALLEL_MIN_FRAMES = 150
# Decoding cost of a keyframe (plus its seek) in P-frame units, for sharing work among workers.
_KEYFRAME_COST = 4.0

# Batches of groups of sorted times: one batch per decoding worker.
Batches = list[list[list[float]]]


def plan(info: MediaInfo, times: list[float], keyframes_only: bool) -> Batches:
    """Split sorted ``times`` into batches of groups, one batch per decoding worker.

    Small requests stay in one worker, where starting a thread and opening the file again
    would cost more than they save. A group too large to balance the workers (more than one
    worker's share by over half a GOP: cutting happens at keyframes, so finer imbalance cannot
    be fixed) is cut at keyframes into pieces of about one share each.
    """
    fps = info.fps or 25.0
    gop = seek_gap(info)
    groups = _groups(times, max(gop, 1.0 / fps))

    def cost(group: list[float]) -> float:
        if keyframes_only:
            return _KEYFRAME_COST * len(group)
        return (gop / 2 + group[-1] - group[0]) * fps

    workers = _workers()
    total = sum(map(cost, groups))
    if workers < 2 or total < _PARALLEL_MIN_FRAMES:
        return [groups]
    share = total / workers
    if math.isfinite(share):
        slack = _KEYFRAME_COST if keyframes_only else gop * fps / 2
        groups = [
            piece
            for group in groups
            for piece in (
                _cut(info, group, math.ceil(cost(group) / share), keyframes_only)
                if cost(group) > share + slack
                else [group]
            )
        ]
    workers = min(workers, len(groups))
    if workers < 2:
        return [groups]
    loads = [0.0] * workers
    batches: Batches = [[] for _ in range(workers)]
    for group in sorted(groups, key=cost, reverse=True):
        i = loads.index(min(loads))
        batches[i].append(group)
        loads[i] += cost(group)
    return [sorted(b) for b in batches if b]


def seek_gap(info: MediaInfo) -> float:
    """How far ahead a walk decodes on instead of seeking: one keyframe interval."""
    return info.keyframe_interval or UNKNOWN_GOP_SECONDS


def _groups(times: list[float], gap: float) -> list[list[float]]:
    groups: list[list[float]] = []
    for t in times:
        if groups and t - groups[-1][-1] <= gap:
            groups[-1].append(t)
        else:
            groups.append([t])
    return groups


def _cut(
    info: MediaInfo, group: list[float], pieces: int, keyframes_only: bool
) -> list[list[float]]:
    """``group`` cut into at most ``pieces`` runs of about equal cost, only where a keyframe
    lies after one time and at or before the next.

    Only the keyframes around each ideal cut are read (one GOP of packets each), not the
    group's whole span: that would cost 0.4 CPU s on 30 minutes of 720p.
    """
    if pieces < 2 or len(group) < 2:
        return [group]
    # Where each time lies in the group's cost: frames from its start, or keyframes decoded.
    at = [float(i) for i in range(len(group))] if keyframes_only else [t - group[0] for t in group]
    goals = [at[-1] * j / pieces for j in range(1, pieces)]
    near = [group[min(bisect.bisect_left(at, goal), len(group) - 1)] for goal in goals]
    cuts: set[int] = set()  # indices of the first time of a later piece
    for goal, keys in zip(goals, keyframes_around(info, near), strict=True):
        # The first time at or after each keyframe: the keyframe lies after the time before.
        found = [bisect.bisect_left(group, key - EPS) for key in keys]
        found = [i for i in found if 0 < i < len(group)]
        if found:
            cuts.add(min(found, key=lambda i: abs(at[i] - goal)))
    bounds = [0, *sorted(cuts), len(group)]
    return [group[a:b] for a, b in itertools.pairwise(bounds)]


def keyframe_times(info: MediaInfo, start: float, end: float) -> list[float]:
    """Media times of the video keyframes from the one at or before ``start`` through the first
    one after ``end``, read from packet flags (demuxing only; nothing is decoded).

    A damaged file ends the list where reading stops: the walk that follows reports the damage.
    """
    with open_input(info.path) as container:
        return _keyframes(container, info, start, end)


def keyframes_around(info: MediaInfo, times: list[float]) -> list[list[float]]:
    """For each of ``times``, the keyframe at or before it and the first one after it (fewer
    at the ends of the stream), from one opening of the file."""
    with open_input(info.path) as container:
        return [_keyframes(container, info, t, t) for t in times]


def _keyframes(
    container: av.container.InputContainer, info: MediaInfo, start: float, end: float
) -> list[float]:
    found: list[float] = []
    vs = next(s for s in container.streams.video if not _is_cover_art(s))
    only_read(container, vs)
    tb = float(vs.time_base) if vs.time_base else 1.0 / av.time_base
    try:
        container.seek(
            math.floor((start + info.start_time) / tb + EPS),
            stream=vs,
            backward=True,
            any_frame=False,
        )
        for packet in container.demux(vs):
            if not packet.is_keyframe or packet.pts is None or packet.size == 0:
                continue
            found.append(packet.pts * tb - info.start_time)
            if found[-1] > end + EPS:
                break
    except (av.FFmpegError, EOFError):
        pass  # what was read so far is the answer
    return sorted(found)


def _workers() -> int:
    """Cores this process may run on, at most ``_MAX_WORKERS``."""
    return max(1, min(_MAX_WORKERS, cores()))


def threads_for(batch: list[list[float]]) -> str:
    """Decoder threading for a worker that serves ``batch`` alone.

    Frame threads overlap consecutive frames of one long decode, but after every seek their
    pipeline is flushed and refilled: for many short decodes they cost more CPU (measured
    on 50 seeks through a 720p H.264 file: 2.6 CPU s with frame threads, 1.7 without) and
    no wall-clock time.
    """
    return "AUTO" if len(batch) == 1 else "NONE"


def worker_threads(batch: list[list[float]], batches: int) -> tuple[str, int]:
    """Decoder threading and thread count for one of ``batches`` workers that run at once.

    With no more cores than workers every core already has a worker: single-threaded
    decoders. With spare cores (more than 4, or few batches), a worker serving one long run
    (a piece of a dense request) also gets frame threads on its share of them, so decoding
    that outweighs converting and shrinking still uses every core.
    """
    share = cores() // batches
    return ("AUTO", share) if len(batch) == 1 and share >= 2 else ("NONE", 0)

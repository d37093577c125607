"""Every float32 in a range through the soundtrack's PCM16 filters and through numpy (issue 48).

``omnilab.media._bulk_audio.PCM16_FILTERS`` (FFmpeg: hard clip, times 32767/32768, s16) must
give the bytes of ``omnilab.media._float_audio.to_pcm16`` (numpy: clip, times 32767, round
half to even) for every sample. This feeds every float32 with ``lo <= |x| <= hi`` (both signs)
through both and counts the samples that differ. The default range, 2**-16 to 1.5, is every
value whose PCM16 is not 0 and not a plain clip: 276,824,066 values, a few minutes of CPU.

    python bench/pcm16_exhaustive.py [--lo 1.52587890625e-05] [--hi 1.5]
"""

from __future__ import annotations

import argparse
from fractions import Fraction
from itertools import pairwise

import av
import numpy as np
from av.filter import Graph
from numpy.typing import NDArray

from omnilab.media._bulk_audio import PCM16_FILTERS
from omnilab.media._float_audio import to_pcm16

RATE = 16_000
CHUNK = 1 << 22


def through_filters(x: NDArray[np.float32]) -> bytes:
    """``x`` (mono float32) through ``PCM16_FILTERS``, as PCM16 bytes."""
    graph = Graph()
    tb = Fraction(1, RATE)
    chain = [graph.add_abuffer(format="flt", sample_rate=RATE, layout="mono", time_base=tb)]
    chain += [graph.add(name, **options) for name, options in PCM16_FILTERS]
    chain.append(graph.add("abuffersink"))
    for a, b in pairwise(chain):
        a.link_to(b)
    graph.configure()
    out = bytearray()
    frame = av.AudioFrame.from_ndarray(x[None, :], format="flt", layout="mono")
    frame.sample_rate, frame.pts, frame.time_base = RATE, 0, tb
    graph.push(frame)
    graph.push(None)
    while True:
        try:
            got = graph.pull()
        except (av.BlockingIOError, EOFError):
            break
        assert isinstance(got, av.AudioFrame)
        out += bytes(got.planes[0])[: 2 * got.samples]
    return bytes(out)


def count_differences(lo: float, hi: float) -> tuple[int, int]:
    """(values checked, values whose PCM16 differs) over every float32 in ``[lo, hi]``, +-."""
    first = int(np.float32(lo).view(np.uint32))
    last = int(np.float32(hi).view(np.uint32))
    checked = differ = 0
    for start in range(first, last + 1, CHUNK):
        bits = np.arange(start, min(start + CHUNK, last + 1), dtype=np.uint32)
        for sign in (0, 0x8000_0000):
            x = (bits | np.uint32(sign)).view(np.float32)
            ffmpeg = np.frombuffer(through_filters(x), np.int16)
            numpy = np.frombuffer(to_pcm16(x[None, :]), np.int16)
            assert ffmpeg.size == numpy.size == x.size
            differ += int(np.count_nonzero(ffmpeg != numpy))
            checked += x.size
    return checked, differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lo", type=float, default=2.0**-16, help="smallest magnitude")
    parser.add_argument("--hi", type=float, default=1.5, help="largest magnitude")
    args = parser.parse_args()
    if not 0 < args.lo <= args.hi:
        raise SystemExit("need 0 < --lo <= --hi")
    checked, differ = count_differences(args.lo, args.hi)
    print(f"{checked:,} float32 values checked, {differ:,} differ")
    if differ:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

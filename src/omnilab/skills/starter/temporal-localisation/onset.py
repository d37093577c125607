"""onset.py MEDIA [--threshold-db D] [--min-gap G]: stretches of sound, by short-time energy."""

import argparse

import av
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("media")
p.add_argument("--threshold-db", type=float, default=-40.0, help="dBFS a 20 ms window must exceed")
p.add_argument("--min-gap", type=float, default=0.2, help="merge stretches closer than this (s)")
a = p.parse_args()
rate = 16000
chunks: list[np.ndarray] = []
with av.open(a.media) as c:
    if not c.streams.audio:
        raise SystemExit(f"{a.media} has no audio stream")
    resampler = av.AudioResampler(format="flt", layout="mono", rate=rate)
    for frame in c.decode(c.streams.audio[0]):
        for out in resampler.resample(frame):
            chunks.append(out.to_ndarray().reshape(-1))
    for out in resampler.resample(None):
        chunks.append(out.to_ndarray().reshape(-1))
x = np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, dtype=np.float32)
win = rate // 50
n = len(x) // win
rms = np.sqrt(np.mean(x[: n * win].reshape(n, win) ** 2, axis=1) + 1e-12)
db = 20 * np.log10(rms)
loud = db > a.threshold_db
spans: list[list[float]] = []
i = 0
while i < n:
    if loud[i]:
        j = i
        while j < n and loud[j]:
            j += 1
        start, end = i * win / rate, j * win / rate
        if spans and start - spans[-1][1] < a.min_gap:
            spans[-1][1] = end
        else:
            spans.append([start, end])
        i = j
    else:
        i += 1
for start, end in spans:
    level = db[int(start * 50) : max(int(start * 50) + 1, int(end * 50))].max()
    print(f"{start:.2f}-{end:.2f} s  peak {level:.1f} dB")
print(f"{len(spans)} stretches of sound in {len(x) / rate:.2f} s")

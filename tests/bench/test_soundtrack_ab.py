"""``bench/soundtrack_ab.py``: omnilab at a revision and from the checkout, against ffmpeg."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from omnilab.media import synth

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    path = ROOT / "bench" / "soundtrack_ab.py"
    spec = importlib.util.spec_from_file_location("soundtrack_ab", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ab = _load()


def _in_git() -> bool:
    probe = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, check=False
    )
    return shutil.which("git") is not None and probe.returncode == 0


def test_ratios_are_per_round_medians() -> None:
    assert ab.ratios([2.0, 3.0, 1.1], [1.0, 2.0, 1.0]) == "1.500x (rounds 1.10-2.00x)"


@pytest.mark.slow
@pytest.mark.skipif(not _in_git() or shutil.which("ffmpeg") is None, reason="needs git, ffmpeg")
def test_one_round_compares_the_same_wav(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sound = synth.make_audio(tmp_path / "a.m4a", duration=1.0)
    src = ab.unpack_src("HEAD", tmp_path / "head")
    assert (src / "omnilab" / "media" / "audio.py").is_file()
    argv = ["soundtrack_ab.py", "--video", str(sound), "--before", "HEAD", "--rounds", "1"]
    monkeypatch.setattr(sys, "argv", argv)
    ab.main()
    out = capsys.readouterr().out
    assert "byte-identical: yes" in out
    assert "after   CPU median" in out and "/ ffmpeg" in out


def test_the_exhaustive_check_counts_every_float_in_its_range() -> None:
    path = ROOT / "bench" / "pcm16_exhaustive.py"
    spec = importlib.util.spec_from_file_location("pcm16_exhaustive", path)
    assert spec is not None and spec.loader is not None
    exhaustive = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exhaustive)
    # [0.5, 0.5 + 4095 steps]: 4,096 floats of each sign, around PCM16 16,383-16,384.
    bits = np.array([np.float32(0.5).view(np.uint32) + 4095], dtype=np.uint32)
    hi = float(bits.view(np.float32)[0])
    assert exhaustive.count_differences(0.5, hi) == (8192, 0)

"""Perception benchmark: ASR word error rate and speed, OCR character error rate, digest speed.

Usage::

    python bench/perception.py [--minutes 10] [--data-dir DIR] [--skip-digest]

- ASR: the speech sample in ``tests/data/speech/two_cities_part1.wav``, 20.8 s of read
  English, against its ``.txt``, case and punctuation ignored; every backend that can run here
  (``whisper`` when ``perception.whisper_model`` is set, ``openai`` when a key or a local
  base URL is configured). Real-time factor = processing time / audio duration.
- OCR: single lines rendered with Pillow in four fonts (Pillow's own and DejaVu Sans, Serif and
  Mono when installed), 12-40 px, rotated 0, 4 and -8 degrees, on light, dark, noisy
  photo-like and low-contrast grey backgrounds; character error rate per font size. Target: under 5 % at 20 px and above.
- Digest: a talk video (slides with on-screen text, the speech sample repeated under it) of
  ``--minutes`` minutes, digested twice into an empty cache: wall time, real-time factor, and
  the second run's time as a share of the first (target: under 5 %).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from omnilab.config import get_settings
from omnilab.media.audio import audio_samples
from omnilab.perception import BackendUnavailableError, PerceptionError, digest, ocr, transcribe
from omnilab.perception.metrics import char_error_rate, word_error_rate
from omnilab.perception.samples import Slide, make_talk

SPEECH = Path(__file__).resolve().parents[1] / "tests" / "data" / "speech" / "two_cities_part1"
FONT_FILES = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
]
SIZES = [12, 14, 20, 28, 40]
ROTATIONS = [0.0, 4.0, -8.0]
BACKGROUNDS = ["light", "dark", "photo", "low-contrast"]
WORDS = [
    "revenue",
    "quarter",
    "market",
    "report",
    "agent",
    "video",
    "audio",
    "frame",
    "scene",
    "speaker",
    "total",
    "price",
    "order",
    "station",
    "river",
    "mountain",
    "summer",
    "winter",
    "north",
    "south",
    "budget",
    "energy",
    "model",
    "result",
    "chapter",
]
MAX_CER_AT_20PX = 0.05
MAX_CACHED_SHARE = 0.05


def main() -> None:
    args = _parse_args()
    print(machine())
    bench_asr()
    bench_ocr()
    if not args.skip_digest:
        bench_digest(args.data_dir, args.minutes)


def _parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="length of the digest video")
    p.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "omnilab-bench")
    p.add_argument("--skip-digest", action="store_true", help="only ASR and OCR")
    return p.parse_args()


def machine() -> str:
    """One line about where the numbers were taken."""
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}"


def bench_asr() -> None:
    reference = SPEECH.with_suffix(".txt").read_text(encoding="utf-8")
    wav = SPEECH.with_suffix(".wav")
    duration = audio_samples(wav).size / 16_000
    print(f"\nASR on {wav.name} ({duration:.1f} s), WER against its .txt")
    for backend in ("pocketsphinx", "whisper", "openai"):
        try:
            transcribe(wav, backend=backend)  # warm-up: model load is not part of the RTF
            started = time.perf_counter()
            text = transcribe(wav, backend=backend).text
            took = time.perf_counter() - started
        except (BackendUnavailableError, PerceptionError) as e:
            print(f"  {backend:12s} skipped: {e}")
            continue
        wer = word_error_rate(reference, text)
        print(f"  {backend:12s} WER {wer:.3f}  RTF {took / duration:.3f}  ({took:.2f} s)")


def _fonts() -> list[tuple[str, str]]:
    """(name, file) of each font to render with; "" is Pillow's built-in scalable font."""
    named = [(Path(f).stem, f) for f in FONT_FILES if Path(f).is_file()]
    return [("pillow-default", ""), *named]


def _font(path: str, size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size) if not path else ImageFont.truetype(path, size)


def _background(kind: str, size: tuple[int, int], rng: random.Random) -> Image.Image:
    w, h = size
    if kind == "light":
        return Image.new("RGB", size, (235, 235, 225))
    if kind == "dark":
        return Image.new("RGB", size, (25, 35, 70))
    if kind == "low-contrast":
        return Image.new("RGB", size, (110, 110, 120))
    # A photo-like background: a colour gradient with noise.
    x = np.linspace(0, 1, w)[None, :, None]
    y = np.linspace(0, 1, h)[:, None, None]
    base = 60 + 120 * (0.6 * x + 0.4 * y) * np.array([1.0, 0.7, 0.4])
    noise = np.random.default_rng(rng.randrange(1 << 30)).normal(0, 12, (h, w, 3))
    return Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8))


def bench_ocr() -> None:
    rng = random.Random(7)
    per_size: dict[int, list[float]] = {s: [] for s in SIZES}
    took: list[float] = []
    fonts = _fonts()
    print(f"\nOCR (rapidocr) on rendered lines: fonts {', '.join(n for n, _ in fonts)}")
    ocr(Image.new("RGB", (64, 64)))  # warm-up: model load
    for size in SIZES:
        for _name, path in fonts:
            for background in BACKGROUNDS:
                for angle in ROTATIONS:
                    text = (
                        " ".join(rng.choice(WORDS) for _ in range(4))
                        + f" {rng.randrange(100, 9999)}"
                    )
                    font = _font(path, size)
                    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
                    box = probe.textbbox((0, 0), text, font=font)
                    canvas = (int(box[2]) + 2 * size + 40, int(box[3]) + 2 * size + 40)
                    image = _background(background, canvas, rng)
                    colour = {"light": (15, 15, 15), "low-contrast": (170, 170, 170)}.get(
                        background, (255, 255, 240)
                    )
                    ImageDraw.Draw(image).text((size + 20, size + 20), text, fill=colour, font=font)
                    if angle:
                        image = image.rotate(angle, expand=True, resample=Image.Resampling.BICUBIC)
                    started = time.perf_counter()
                    found = ocr(image)
                    took.append(time.perf_counter() - started)
                    per_size[size].append(char_error_rate(text, " ".join(b.text for b in found)))
    for size, cers in per_size.items():
        print(
            f"  {size:3d} px: CER {statistics.mean(cers):.3%} (worst {max(cers):.1%}, {len(cers)} images)"
        )
    big = [c for s, cs in per_size.items() if s >= 20 for c in cs]
    verdict = "ok" if statistics.mean(big) < MAX_CER_AT_20PX else "MISSED"
    print(f"  >= 20 px: CER {statistics.mean(big):.3%} (target < {MAX_CER_AT_20PX:.0%}: {verdict})")
    print(f"  time per image: median {statistics.median(took) * 1000:.0f} ms")


def ensure_talk(data_dir: Path, minutes: float) -> Path:
    """A talk video of ``minutes`` minutes (generated once): 30 s slides over repeated speech."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"talk-{minutes:g}min.mp4"
    if path.exists():
        return path
    speech = audio_samples(SPEECH.with_suffix(".wav"))
    gap = np.zeros(2 * 16_000, dtype=np.float32)
    total = round(minutes * 60 * 16_000)
    repeats = total // (speech.size + gap.size) + 1
    track = np.concatenate([np.concatenate([speech, gap])] * repeats)[:total]
    n = max(1, round(minutes * 2))
    colours = [(20, 40, 90), (120, 30, 30), (10, 90, 40), (70, 70, 70), (90, 20, 90)]
    slides = [
        Slide(f"Part {i + 1}\nSlide title number {i + 1}", 30.0, background=colours[i % 5])
        for i in range(n)
    ]
    started = time.perf_counter()
    make_talk(path.with_suffix(".tmp.mp4"), slides, speech=track)
    path.with_suffix(".tmp.mp4").rename(path)
    print(f"  (generated {path.name} in {time.perf_counter() - started:.0f} s)")
    return path


def bench_digest(data_dir: Path, minutes: float) -> None:
    print(f"\nDigest of a {minutes:g}-minute talk video (640x360, 25 fps, speech throughout)")
    video = ensure_talk(data_dir, minutes)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["OMNILAB_CACHE_DIR"] = cache
        get_settings.cache_clear()
        started = time.perf_counter()
        first = digest([video]).files[0]
        cold = time.perf_counter() - started
        started = time.perf_counter()
        second = digest([video]).files[0]
        warm = time.perf_counter() - started
    duration = first.info.duration or minutes * 60
    words = len(first.transcript.words) if first.transcript else 0
    shots = len(first.shots or [])
    texts = len(first.screen_text or [])
    print(
        f"  first run: {cold:.1f} s, RTF {cold / duration:.3f} ({words} words, {shots} shots, {texts} text lines)"
    )
    share = warm / cold
    verdict = "ok" if second.cached and share < MAX_CACHED_SHARE else "MISSED"
    print(
        f"  second run (cache): {warm:.3f} s = {share:.2%} of the first (target < {MAX_CACHED_SHARE:.0%}: {verdict})"
    )


if __name__ == "__main__":
    main()

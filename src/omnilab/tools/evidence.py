"""Text evidence for models that cannot take media: speech, sounds and on-screen text.

Uses :mod:`omnilab.perception` when it is installed; a backend that is missing or failing does
not fail the tool: the text says which evidence is unavailable and why, and the timestamps and
file facts still go back to the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from omnilab.errors import OmnilabError
from omnilab.media.errors import fmt_s

__all__ = ["frames_text", "image_text", "sound_text"]


def _quote(text: str) -> str:
    return '"' + " ".join(text.split()) + '"'


def _span(start: float, end: float) -> str:
    return f"{start:.1f}-{end:.1f} s"


def sound_text(path: Path, start: float, end: float) -> str:
    """What is heard in ``[start, end)`` of ``path``: timed speech and sound events, as text."""
    try:
        from omnilab.media.audio import audio_samples
        from omnilab.perception import audio_events, detect_speech, transcribe
        from omnilab.perception.errors import PerceptionError
    except ImportError as e:  # the perception layer itself is not installed
        return f"Speech and sounds: unavailable (omnilab.perception cannot load: {e.name or e})."
    samples = audio_samples(path, start, end, sample_rate=16_000)
    lines: list[str] = []
    try:
        speech = detect_speech(samples)
        transcript = transcribe(samples, speech=speech)
    except (PerceptionError, OmnilabError, ImportError) as e:
        lines.append(f"Speech (ASR): unavailable ({e}).")
    else:
        said = [s for s in transcript.segments if s.text.strip()]
        if said:
            lines.append(f"Speech (ASR, {transcript.backend}):")
            lines.extend(
                f"- {_span(start + s.start, start + s.end)}: {_quote(s.text)}" for s in said
            )
        else:
            lines.append(f"Speech (ASR, {transcript.backend}): none recognised.")
    try:
        events = audio_events(samples)
    except (PerceptionError, OmnilabError, ImportError) as e:
        lines.append(f"Sound events: unavailable ({e}).")
    else:
        spans = ", ".join(
            f"{_span(start + ev.start, start + ev.end)} {ev.label.value}" for ev in events
        )
        lines.append(f"Sound events: {spans or 'none'}.")
    return "\n".join(lines)


def _read(image: Image.Image) -> list[str]:
    from omnilab.perception import ocr

    return [box.text for box in ocr(image)]


def image_text(image: Image.Image) -> str:
    """The text found in ``image`` (OCR), one quoted line per text line, or why there is none."""
    try:
        from omnilab.perception.errors import PerceptionError
    except ImportError as e:
        return (
            f"Text in the image (OCR): unavailable (omnilab.perception cannot load: {e.name or e})."
        )
    try:
        found = _read(image)
    except (PerceptionError, OmnilabError, ImportError) as e:
        return f"Text in the image (OCR): unavailable ({e})."
    if not found:
        return "Text in the image (OCR): none found."
    return "Text in the image (OCR): " + "; ".join(_quote(t) for t in found)


def frames_text(frames: Sequence[tuple[float, Image.Image]]) -> str:
    """On-screen text of ``(time, frame)`` pairs, each distinct text with the times it shows."""
    times = ", ".join(f"{t:.1f}" for t, _ in frames)
    head = f"On-screen text (OCR of frames at {times} s)"
    try:
        from omnilab.perception.errors import PerceptionError
    except ImportError as e:
        return f"{head}: unavailable (omnilab.perception cannot load: {e.name or e})."
    seen: dict[str, list[float]] = {}
    try:
        for t, frame in frames:
            text = " / ".join(" ".join(line.split()) for line in _read(frame))
            if text:
                seen.setdefault(text, []).append(t)
    except (PerceptionError, OmnilabError, ImportError) as e:
        return f"{head}: unavailable ({e})."
    if not seen:
        return f"{head}: none found."
    lines = [f"{head}:"]
    for text, at in seen.items():
        shown = f"at {fmt_s(at[0])}" if len(at) == 1 else f"from {fmt_s(at[0])} to {fmt_s(at[-1])}"
        lines.append(f"- {_quote(text)} {shown}")
    return "\n".join(lines)

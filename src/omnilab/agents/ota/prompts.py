"""The ota agent's texts: the system prompt with its runtime parameters, the first message, step
notices, errors and format warnings (files under ``agents/prompts/ota_*.txt``), under omnilab's
rules (Figure 4 as the paper prints it) or the release's (:mod:`.release`)."""

from __future__ import annotations

import json
import re

from omnilab.agents.base import AgentTask
from omnilab.agents.ota import release
from omnilab.agents.ota.options import OtaOptions
from omnilab.agents.ota.protocol import OtaError
from omnilab.agents.question import question_text
from omnilab.agents.templates import load_template, render
from omnilab.plural import plural

__all__ = ["error_text", "first_message", "notice", "system_prompt", "warning_text"]

_BRACES = re.compile(r"\{(max_frames_len|max_audio_len|max_clip_len)\}")


def release_seconds(value: float, options: OtaOptions) -> int | float:
    """A length limit as the release holds it: its worker makes the limits ``int``; the
    randomised ones are floats (``210.0``)."""
    return float(value) if options.random_resources else int(value)


def system_prompt(options: OtaOptions) -> str:
    """Figure 4 verbatim (omnilab's rules; seconds without a needless ``.0``: ``Max 300s``) or
    ``video_prompt.py``'s text (the release's, its numbers as it prints them), with
    ``{max_frames_len}``, ``{max_audio_len}``, ``{max_clip_len}`` filled."""
    if options.rules == "release":
        name = "ota_release_system"
        audio = str(release_seconds(options.max_audio_len, options))
        clip = str(release_seconds(options.max_clip_len, options))
    else:
        name = "ota_system"
        audio, clip = f"{options.max_audio_len:g}", f"{options.max_clip_len:g}"
    values = {"max_frames_len": str(options.max_frames_len), "max_audio_len": audio}
    values["max_clip_len"] = clip
    return _BRACES.sub(lambda m: values[m.group(1)], load_template(name).template)


def notice(step: int, total: int, options: OtaOptions) -> str:
    """The ``[NOTICE]`` before turn ``step`` of ``total``: omnilab's ``Step step/total.
    total-step steps remaining.`` (FINAL STEP on the last), or the release's (:mod:`.release`)."""
    if options.rules == "release":
        return release.notice(step, total)
    if step >= total:
        return render("ota_final_notice", step=total, total=total)
    return render("ota_notice", step=step, total=total, remaining=plural(total - step, "step"))


def first_message(
    task: AgentTask, options: OtaOptions, *, duration: float, fps: float | None, has_audio: bool
) -> str:
    """Video META and the question with its options and answer format (the notice is a part
    of its own): omnilab's layout (duration and fps rounded to 2 decimals), or the release's
    ``Video META:`` block (truncated)."""
    if options.rules == "release":
        return release.first_message(task, duration=duration, fps=fps, has_audio=has_audio)
    meta = {
        "duration": round(duration, 2),
        "fps": round(fps, 2) if fps else None,
        "has_audio": has_audio,
    }
    return render("ota_first", meta=json.dumps(meta), question=question_text(task))


def error_text(error: OtaError, options: OtaOptions, *, retry: bool = True) -> str:
    """``[ERROR] Err.CODE: message`` (omnilab's rules), or the release's ``[ERROR]`` line with
    its ``[SYSTEM]`` line."""
    if options.rules == "release":
        return release.error_text(error, retry=retry)
    return render("ota_error", code=error.code, message=error.message)


def warning_text(warnings: list[str]) -> str:
    """``[WARNING] Err.FORMAT: ...`` for a reply read out of fences or surrounding text."""
    return render("ota_format_warning", detail="; ".join(warnings))

"""The ota agent's texts: Figure 4's system prompt with its runtime parameters, the first
message, step notices, errors and format warnings (files under ``agents/prompts/ota_*.txt``)."""

from __future__ import annotations

import json
import re

from omnilab.agents.base import AgentTask
from omnilab.agents.ota.options import OtaOptions
from omnilab.agents.ota.protocol import OtaError
from omnilab.agents.question import question_text
from omnilab.agents.templates import load_template, render
from omnilab.plural import plural

__all__ = ["error_text", "first_message", "notice", "system_prompt", "warning_text"]

_BRACES = re.compile(r"\{(max_frames_len|max_audio_len|max_clip_len)\}")


def system_prompt(options: OtaOptions) -> str:
    """Figure 4 verbatim with ``{max_frames_len}``, ``{max_audio_len}``, ``{max_clip_len}``
    filled (seconds without a needless ``.0``: ``Max 300s``)."""
    values = {
        "max_frames_len": str(options.max_frames_len),
        "max_audio_len": f"{options.max_audio_len:g}",
        "max_clip_len": f"{options.max_clip_len:g}",
    }
    return _BRACES.sub(lambda m: values[m.group(1)], load_template("ota_system").template)


def notice(step: int, total: int) -> str:
    """The ``[NOTICE]`` line before turn ``step`` of ``total`` (FINAL STEP on the last)."""
    if step >= total:
        return render("ota_final_notice", step=total, total=total)
    return render("ota_notice", step=step, total=total, remaining=plural(total - step, "step"))


def first_message(task: AgentTask, meta: dict[str, object], total: int) -> str:
    """Video META, the question with its options and answer format, and the first notice."""
    return render(
        "ota_first",
        meta=json.dumps(meta),
        question=question_text(task),
        notice=notice(1, total),
    )


def error_text(error: OtaError) -> str:
    """``[ERROR] Err.CODE: message``."""
    return render("ota_error", code=error.code, message=error.message)


def warning_text(warnings: list[str]) -> str:
    """``[WARNING] Err.FORMAT: ...`` for a reply read out of fences or surrounding text."""
    return render("ota_format_warning", detail="; ".join(warnings))

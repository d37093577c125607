"""OmniAgent's environment rules as the authors' released code applies them (``rules="release"``).

HarryHsing/OmniAgent ``agent_system/environments/env_package/video_env.py`` reads a reply
strictly (``_parse_action``: no code fence, nothing around the object, no unknown key, typed
fields), checks each action in its own order with its own codes (``FRAME_TS_OOB``,
``CLIP_NEG_LEN``, ``AUDIO_RANGE``, ...), checks an answer's form (``EARLY_ANSWER`` at step 1, a TR
answer that is not JSON spans, a NUM/SIZE answer without a number) and answers every refusal with
``[ERROR] CODE: message`` and the ``[SYSTEM]`` retry line. Every text it sends is in
``prompts/ota_release_texts.txt`` (verbatim); this module only fills them as the release does.
"""

from __future__ import annotations

import json
import math
import string
from functools import cache
from typing import Any

from omnilab.agents.base import AgentTask
from omnilab.agents.ota.protocol import ACTIONS, NUMBER, Action, OtaError, Turn
from omnilab.agents.templates import load_template

__all__ = [
    "answer_error",
    "check_action",
    "error_text",
    "first_message",
    "notice",
    "parse_reply",
    "question_type",
    "text",
    "truncate",
]

_TYPES = ("MCQ", "TR", "FF", "NUM", "SIZE")


@cache
def _table() -> dict[str, string.Template]:
    table: dict[str, string.Template] = {}
    for line in load_template("ota_release_texts").template.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            table[key.strip()] = string.Template(value.replace("\\n", "\n"))
    return table


def text(key: str, **values: object) -> str:
    """The release's text ``key`` with ``values`` filled."""
    return _table()[key].substitute(values)


def truncate(value: float | None) -> str:
    """``trunc`` of ``reset``: two decimals cut, not rounded (30.069 -> ``30.06``)."""
    if value is None:
        return "unknown"
    return f"{math.floor(value * 100) / 100:.2f}"


def question_type(task: AgentTask) -> str:
    """The release's base type (``question_type.split("_", 1)[0].upper()``); a type it does not
    know (or none) is free-form, where the release would refuse the sample."""
    raw = (task.metadata.question_type or "FF").split("_", 1)[0].upper()
    return raw if raw in _TYPES else "FF"


def first_message(task: AgentTask, *, duration: float, fps: float | None, has_audio: bool) -> str:
    """The first user message of ``reset`` (without its notice, a part of its own)."""
    kind = question_type(task)
    meta = text("meta", duration=truncate(duration), fps=truncate(fps), has_audio=str(has_audio))
    options = task.metadata.options or {}
    listed = "\n".join(f"{letter}. {value}" for letter, value in options.items())
    guide = text("guide.MCQ", options=listed) if kind == "MCQ" else text(f"guide.{kind}")
    return meta + text("question", question=task.question) + guide


def notice(step: int, total: int) -> str:
    """The notice before turn ``step`` of ``total``: ``Step step-1/total. total-step+1 steps
    remaining.``, and ``FINAL STEP!`` when one turn is left."""
    remaining = total - (step - 1)
    if remaining == 1:
        return text("notice.final")
    return text("notice", done=step - 1, total=total, remaining=remaining)


def error_text(error: OtaError, *, retry: bool) -> str:
    """``[ERROR] MARKER: message`` (the marker alone when there is no message), with the
    ``[SYSTEM]`` line when the run goes on."""
    marker = error.marker or error.code
    line = f"{marker}: {error.message}" if error.message and error.message != marker else marker
    return text("error", text=line) + (text("error.retry") if retry else "")


# -- the reply --------------------------------------------------------------------------------


def _parse_error(code: str, key: str, **values: object) -> OtaError:
    # step() reports every _parse_action failure under the INVALID_JSON marker, with "." added.
    return OtaError(code, text(f"parse.{key}", **values) + ".", marker="INVALID_JSON")


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float)


def _read(raw: str, require_confidence: bool) -> tuple[dict[str, Any] | None, OtaError | None]:
    s = raw.strip()
    if s.startswith("```") or s.endswith("```"):
        return None, _parse_error("INVALID_JSON", "fence")
    if (s.startswith('"') and s.endswith('"')) or (s.startswith("'") and s.endswith("'")):
        return None, _parse_error("INVALID_JSON", "fence")
    if not (s.startswith("{") and s.rstrip().endswith("}")):
        return None, _parse_error("INVALID_JSON", "braces")
    try:
        obj, end = json.JSONDecoder().raw_decode(s)
    except json.JSONDecodeError as e:
        return None, _parse_error("INVALID_JSON", "decode", error=e)
    if s[end:].strip():
        return None, _parse_error("TRAILING_GARBAGE", "trailing")
    if not isinstance(obj, dict):  # "{...}" always decodes to an object; kept for the types
        return None, _parse_error("INVALID_JSON", "braces")
    required = {"observation", "think", "action"} | (
        {"confidence"} if require_confidence else set()
    )
    missing = required - set(obj)
    if missing:
        return None, _parse_error("INVALID_JSON", "missing", keys=sorted(missing))
    extra = set(obj) - {"observation", "think", "action", "confidence"}
    if extra:
        return None, _parse_error("INVALID_JSON", "unknown", keys=sorted(extra))
    for name in ("observation", "think"):
        if not isinstance(obj[name], str):
            return None, _parse_error("INVALID_JSON", name)
    if "confidence" in obj and not _numeric(obj["confidence"]):
        return None, _parse_error("INVALID_JSON", "confidence")
    return obj, None


def _read_action(act: Any) -> tuple[Action | None, OtaError | None]:
    if not isinstance(act, dict):
        return None, _parse_error("INVALID_JSON", "action")
    kind = act.get("type")
    if kind not in ACTIONS:
        return None, _parse_error("UNKNOWN_ACTION_TYPE", "action_type", type=kind)
    if kind == "get_frames":
        for name in ("start", "end"):
            if not _numeric(act.get(name)):
                return None, _parse_error("INVALID_JSON", "frames_field", field=name)
        if not isinstance(act.get("num"), int):
            return None, _parse_error("INVALID_JSON", "frames_num")
        return Action("get_frames", float(act["start"]), float(act["end"]), int(act["num"])), None
    if kind in ("get_clip", "get_audio"):
        for name in ("start", "end"):
            if not _numeric(act.get(name)):
                code = "CLIP_ARG_TYPE" if kind == "get_clip" else "AUDIO_ARG_TYPE"
                return None, _parse_error(code, "span_field", field=name)
        return Action(kind, float(act["start"]), float(act["end"])), None
    if not isinstance(act.get("content"), str):
        return None, _parse_error("ANSWER_NOT_STRING", "content")
    return Action("answer", content=act["content"]), None


def parse_reply(raw: str, *, require_confidence: bool) -> Turn:
    """Read a reply as ``_parse_action`` does; ``Turn.error`` holds its refusal."""
    turn = Turn()
    obj, error = _read(raw, require_confidence)
    if obj is None:
        turn.error = error
        return turn
    turn.observation, turn.think = obj["observation"], obj["think"]
    confidence = obj.get("confidence")
    turn.confidence = float(confidence) if isinstance(confidence, int | float) else None
    turn.action, turn.error = _read_action(obj["action"])
    return turn


# -- checks -----------------------------------------------------------------------------------


def _fail(code: str, key: str | None = None, **values: object) -> OtaError:
    return OtaError(code, text(f"err.{key or code}", **values) if key or values else code)


def check_action(
    action: Action,
    *,
    duration: float,
    fps: float | None,
    has_audio: bool,
    limits: tuple[int, float, float],
) -> OtaError | None:
    """The release's checks of a sensing action, in its order; ``None`` when it may run.
    ``limits`` are max_frames_len, max_audio_len and max_clip_len as the release holds them."""
    frames_max, audio_max, clip_max = limits
    s, e = action.start, action.end
    if action.type == "get_frames":
        if s < 0 or e > duration:
            return _fail("FRAME_TS_OOB", start=s, end=e, duration=duration)
        if e < s:
            return _fail("CLIP_NEG_LEN", "CLIP_NEG_LEN.frames", start=s, end=e)
        if action.num > frames_max:
            return _fail("TOO_MANY_FRAMES", num=action.num, max=frames_max)
        if action.num < 1:
            return _fail("INVALID_FRAME_NUM", "INVALID_FRAME_NUM")
        return None
    if action.type == "get_audio":
        if not has_audio:
            return OtaError("NO_AUDIO", "NO_AUDIO")
        if s < 0:
            return _fail("AUDIO_RANGE", "AUDIO_RANGE.start", start=f"{s:.3f}")
        if e > duration:
            return _fail(
                "AUDIO_RANGE", "AUDIO_RANGE.end", end=f"{e:.3f}", duration=f"{duration:.3f}"
            )
        length = e - s
        if length <= 0:
            return OtaError("CLIP_NEG_LEN", "CLIP_NEG_LEN")
        if length < 0.1:
            return _fail("AUDIO_TOO_SHORT", length=f"{length:.3f}", min=0.1)
        if length > audio_max:
            return _fail("AUDIO_TOO_LONG", length=f"{length:.3f}", max=audio_max)
        return None
    assert action.type == "get_clip", action.type
    if s < 0:
        return _fail("CLIP_RANGE", "CLIP_RANGE.start", start=f"{s:.3f}")
    if e > duration:
        return _fail("CLIP_RANGE", "CLIP_RANGE.end", end=f"{e:.3f}", duration=f"{duration:.3f}")
    if e <= s:
        return OtaError("CLIP_NEG_LEN", "CLIP_NEG_LEN")
    length = e - s
    if length > clip_max:
        return _fail("CLIP_TOO_LONG", length=f"{length:.3f}", max=clip_max)
    if fps and fps >= 2 and length * fps < 3.999:
        return _fail("CLIP_TOO_SHORT", length=f"{length:.3f}", min=f"{4.0 / fps:.3f}")
    return None


def _span_problem(value: Any) -> str | None:
    """``_spans_to_ndarray``'s refusal of a parsed TR answer, with its message; ``None`` when
    it reads (an empty list and ``null`` read as no span, as there)."""
    if value is None:
        return None
    if isinstance(value, list | tuple):
        if not value:
            return None
        if isinstance(value[0], list | tuple):
            try:
                pairs = [[float(x), float(y)] for x, y in value]
            except (TypeError, ValueError) as e:
                return str(e)
            if any(not math.isfinite(v) for pair in pairs for v in pair):
                return "span contains NaN or Inf"
            return None
        if len(value) == 2 and all(_numeric(x) for x in value):
            if any(not math.isfinite(float(x)) for x in value):
                return "span contains NaN or Inf"
            return None
    return f"Invalid span format: {value!r}"


def answer_error(content: str, kind: str) -> OtaError | None:
    """The release's refusal of an answer's form for question type ``kind``: a TR answer that
    is not JSON (``ANSWER_JSON_PARSE``) or not spans (``SPAN_FORMAT``), a NUM/SIZE answer
    without a number (``ANSWER_NOT_STRING``); MCQ and FF answers are never refused."""
    if kind == "TR":
        try:
            value = json.loads(content)
        except ValueError as e:
            return OtaError("ANSWER_JSON_PARSE", str(e))
        problem = _span_problem(value)
        return None if problem is None else OtaError("SPAN_FORMAT", problem)
    if kind in ("NUM", "SIZE") and not NUMBER.search(content):
        return _fail("ANSWER_NOT_STRING", "ANSWER_NOT_STRING.number")
    return None

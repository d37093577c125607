"""What the model writes each turn: one JSON object ``{observation, think, confidence, action}``
(OmniAgent Figure 4), read tolerantly, and the stable error codes the environment answers with.

Reading: a reply that is exactly one JSON object is clean. A reply whose object sits inside
fences or other text is still read (the first object that parses), with a format warning; so is
one written over several lines (Figure 4's "One-Line Mandate"). Anything else is an error the
model sees as ``[ERROR] Err.CODE: message`` and can correct next turn. B.3 names two codes
(``Err.TS_OOB``, ``Err.INVALID_JSON``); the rest follow the same style.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ACTIONS",
    "ERROR_CODES",
    "NUMBER",
    "RELEASE_CODES",
    "Action",
    "ActionType",
    "OtaError",
    "Turn",
    "parse_turn",
    "turn_schema",
]

ActionType = Literal["get_frames", "get_audio", "get_clip", "answer"]
ACTIONS: tuple[ActionType, ...] = ("get_frames", "get_audio", "get_clip", "answer")
_FIELDS: dict[str, tuple[str, ...]] = {
    "get_frames": ("start", "end", "num"),
    "get_audio": ("start", "end"),
    "get_clip": ("start", "end"),
    "answer": ("content",),
}
_TOP = ("observation", "think", "confidence", "action")
NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
"""A number as the release reads one from an answer (``re.findall`` in ``video_env.py``)."""

ERROR_CODES: dict[str, str] = {
    "INVALID_JSON": "the reply holds no JSON object (B.3's Err.INVALID_JSON)",
    "MULTIPLE_ACTIONS": "more than one action in one turn",
    "MISSING_FIELD": "a required key is missing (top level or action)",
    "INVALID_FIELD": "a key has the wrong type or value (confidence outside 0-1, num < 1, empty answer)",
    "UNKNOWN_ACTION": "action.type is none of get_frames, get_audio, get_clip, answer",
    "TS_OOB": "a timestamp before 0 or past the duration (B.3's Err.TS_OOB)",
    "INVALID_RANGE": "end <= start",
    "TOO_MANY_FRAMES": "num > max_frames_len",
    "AUDIO_TOO_LONG": "get_audio longer than max_audio_len",
    "CLIP_TOO_LONG": "get_clip longer than max_clip_len",
    "NO_AUDIO": "get_audio (or nothing to hear) on a video without sound (has_audio false)",
    "NO_VIDEO": "get_frames or get_clip on an input without pictures",
    "REPEAT_ACTION": "the exact action and range of an earlier turn",
    "LOW_CONFIDENCE": "answer below the opt-in confidence_threshold before the final step",
    "EARLY_ANSWER": "an answer at step 1, before any evidence (refuse_early_answer)",
    "ANSWER_FORMAT": "a TR answer without a [start, end] pair or a NUM/SIZE answer without a number",
    "TOKEN_LIMIT": "the prompt reached max_prompt_tokens (the run ends)",
    "MEDIA_ERROR": "the media could not be read (the message carries the media layer's code)",
    "FINAL_STEP": "no answer at the final step (recorded; the run ends without an answer)",
}
"""Every code the environment reports under ``rules="omnilab"``, with its meaning (stable:
tests and analyses match on codes, never on message text)."""

RELEASE_CODES: dict[str, str] = {
    "STEP_LIMIT_REACHED": "no answer at the final step (the run ends)",
    "TOKEN_LIMIT_EXCEEDED": "the prompt reached max_prompt_tokens (the run ends)",
    "FFMPEG_AUDIO_FAIL": "get_audio could not be extracted or checked (the run ends)",
    "FFMPEG_CLIP_FAIL": "get_clip could not be extracted or checked (the run ends)",
    "FFMPEG_FRAME_FAIL": "get_frames could not be extracted (the run ends)",
    "EARLY_ANSWER": "an answer at step 1",
    "INVALID_JSON": "the reply is not one bare JSON object with the four keys, typed",
    "TRAILING_GARBAGE": "text after the JSON object",
    "UNKNOWN_ACTION_TYPE": "action.type is none of the four",
    "FRAME_TS_OOB": "get_frames outside [0, duration]",
    "TOO_MANY_FRAMES": "num > max_frames_len",
    "INVALID_FRAME_NUM": "num < 1",
    "AUDIO_ARG_TYPE": "get_audio start or end not a number",
    "NO_AUDIO": "get_audio on a video without sound",
    "AUDIO_RANGE": "get_audio outside [0, duration]",
    "AUDIO_TOO_SHORT": "get_audio shorter than 0.1 s",
    "AUDIO_TOO_LONG": "get_audio longer than max_audio_len",
    "CLIP_ARG_TYPE": "get_clip start or end not a number",
    "CLIP_RANGE": "get_clip outside [0, duration]",
    "CLIP_NEG_LEN": "end before (get_frames) or not after (get_audio, get_clip) start",
    "CLIP_TOO_LONG": "get_clip longer than max_clip_len",
    "CLIP_TOO_SHORT": "get_clip of fewer than 4 frames",
    "ANSWER_NOT_STRING": "answer content not a string, or a NUM/SIZE answer without a number",
    "ANSWER_JSON_PARSE": "a TR answer that is not JSON",
    "SPAN_FORMAT": "a TR answer that is not [start, end] pairs",
    "NO_VIDEO": "get_frames or get_clip on an input without pictures (omnilab's; the release "
    "takes only videos)",
}
"""The codes of the authors' ``video_env.py`` (its ``Err`` enum), used under
``rules="release"``; their texts are in ``prompts/ota_release_texts.txt``."""


@dataclass(frozen=True)
class OtaError:
    """One ``[ERROR]``: a code of :data:`ERROR_CODES` and a message the model can act on."""

    code: str
    message: str
    marker: str | None = None
    """The word the release prints instead of the code (every reply-parsing refusal is shown
    as ``INVALID_JSON`` there, whatever its code)."""

    def __post_init__(self) -> None:
        assert self.code in ERROR_CODES or self.code in RELEASE_CODES, self.code


@dataclass(frozen=True)
class Action:
    """One action; ``start``/``end``/``num`` for the sensing actions, ``content`` for answer."""

    type: ActionType
    start: float = 0.0
    end: float = 0.0
    num: int = 0
    content: str = ""

    def key(self) -> tuple[object, ...]:
        """What makes two actions "the exact same action and range" (Figure 4)."""
        if self.type == "answer":
            return (self.type, self.content)
        return (self.type, round(self.start, 2), round(self.end, 2), self.num)

    def summary(self) -> str:
        """One line: ``get_frames 10.00s-20.00s num=5`` or ``answer "B"``."""
        if self.type == "answer":
            return f"answer {json.dumps(self.content, ensure_ascii=False)}"
        num = f" num={self.num}" if self.type == "get_frames" else ""
        return f"{self.type} {self.start:.2f}s-{self.end:.2f}s{num}"

    def to_dict(self) -> dict[str, Any]:
        """The action as the model would write it (only its own keys)."""
        out: dict[str, Any] = {"type": self.type}
        for name in _FIELDS[self.type]:
            out[name] = getattr(self, name)
        return out


@dataclass
class Turn:
    """One reply, read: its fields as far as they could be read, and the first problem."""

    observation: str | None = None
    think: str | None = None
    confidence: float | None = None
    action: Action | None = None
    error: OtaError | None = None
    warnings: list[str] = field(default_factory=list)


def turn_schema(max_frames_len: int) -> dict[str, Any]:
    """The JSON schema of a reply, for constrained decoding (``response_format``): the four
    top-level keys and exactly one of the four actions with its own keys."""

    def action(kind: str, props: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"type": {"const": kind}, **props},
            "required": ["type", *props],
            "additionalProperties": False,
        }

    span = {"start": {"type": "number"}, "end": {"type": "number"}}
    num = {"type": "integer", "minimum": 1, "maximum": max_frames_len}
    return {
        "type": "object",
        "properties": {
            "observation": {"type": "string"},
            "think": {"type": "string"},
            "confidence": {"type": "number"},
            "action": {
                "anyOf": [
                    action("get_frames", {**span, "num": num}),
                    action("get_audio", span),
                    action("get_clip", span),
                    action("answer", {"content": {"type": "string"}}),
                ]
            },
        },
        "required": list(_TOP),
        "additionalProperties": False,
    }


_FENCE = re.compile(r"```[a-zA-Z]*")


def _objects(text: str) -> list[tuple[Any, int, int]]:
    """Every JSON value that starts at a ``{`` or ``[`` and parses, left to right, with its span."""
    decoder = json.JSONDecoder()
    found: list[tuple[Any, int, int]] = []
    i = 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = decoder.raw_decode(text, i)
            except ValueError:
                i += 1
                continue
            found.append((value, i, end))
            i = end
        else:
            i += 1
    return found


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip().removesuffix("s"))
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _read_json(text: str, turn: Turn) -> dict[str, Any] | None:
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        if "\n" in stripped:
            turn.warnings.append("the reply spans several lines")
        return whole
    if isinstance(whole, list):
        turn.error = _many_or_invalid(whole)
        return None
    found = [(v, s, e) for v, s, e in _objects(stripped) if isinstance(v, dict | list)]
    if not found:
        detail = "no JSON object found" if "{" not in stripped else _json_problem(stripped)
        turn.error = OtaError("INVALID_JSON", f"{detail}; reply with one JSON object")
        return None
    turns = [(v, s, e) for v, s, e in found if isinstance(v, dict) and "action" in v]
    if len(turns) > 1:
        turn.error = OtaError(
            "MULTIPLE_ACTIONS",
            f"{len(turns)} JSON objects with an action in one reply; exactly ONE per turn",
        )
        return None
    value, start, end = turns[0] if turns else found[0]
    if isinstance(value, list):
        turn.error = _many_or_invalid(value)
        return None
    outside = (stripped[:start] + stripped[end:]).strip()
    turn.warnings.append(
        "the JSON object was inside a code fence"
        if _FENCE.sub("", outside).strip() == ""
        else f"text outside the JSON object ({len(outside)} characters)"
    )
    return value


def _json_problem(text: str) -> str:
    start = text.index("{")
    try:
        json.loads(text[start : text.rindex("}") + 1] if "}" in text else text[start:])
    except ValueError as e:
        return f"invalid JSON ({e})"
    return "invalid JSON"


def _many_or_invalid(value: list[Any]) -> OtaError:
    if len(value) > 1 and all(isinstance(v, dict) for v in value):
        return OtaError("MULTIPLE_ACTIONS", f"a list of {len(value)} objects; exactly ONE per turn")
    return OtaError("INVALID_JSON", "the reply is a JSON array, not one JSON object")


def _read_top(data: dict[str, Any], turn: Turn, require_confidence: bool) -> dict[str, Any] | None:
    for name in ("observation", "think"):
        value = data.get(name)
        if isinstance(value, str):
            setattr(turn, name, value)
        elif value is not None:
            setattr(turn, name, json.dumps(value, ensure_ascii=False))
    missing = [k for k in _TOP if k not in data]
    if not require_confidence and missing == ["confidence"]:
        missing = []
    if missing:
        turn.error = OtaError(
            "MISSING_FIELD",
            f"missing top-level key(s) {', '.join(missing)}; every reply has observation, "
            "think, confidence (0.0-1.0) and action",
        )
        return None
    if "confidence" in data:
        confidence = _number(data["confidence"])
        if confidence is None or not 0.0 <= confidence <= 1.0:
            turn.error = OtaError(
                "INVALID_FIELD",
                f"confidence must be a number from 0.0 to 1.0 (got {data['confidence']!r})",
            )
            return None
        turn.confidence = confidence
    action = data["action"]
    if isinstance(action, list):
        turn.error = OtaError(
            "MULTIPLE_ACTIONS", f"action is a list of {len(action)}; exactly ONE action per turn"
        )
        return None
    if not isinstance(action, dict):
        turn.error = OtaError("INVALID_FIELD", "action must be an object with a type")
        return None
    return action


def _read_action(data: dict[str, Any], turn: Turn) -> None:
    kind = data.get("type")
    if kind is None:
        turn.error = OtaError(
            "MISSING_FIELD", "action has no type; use one of " + ", ".join(ACTIONS)
        )
        return
    if kind not in ACTIONS:
        turn.error = OtaError(
            "UNKNOWN_ACTION", f"unknown action {kind!r}; use one of {', '.join(ACTIONS)}"
        )
        return
    missing = [k for k in _FIELDS[kind] if k not in data]
    if missing:
        turn.error = OtaError(
            "MISSING_FIELD",
            f"{kind} needs {', '.join(_FIELDS[kind])}; missing {', '.join(missing)}",
        )
        return
    if kind == "answer":
        content = data["content"]
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        if not text.strip():
            turn.error = OtaError("INVALID_FIELD", "answer content is empty; give the answer")
            return
        turn.action = Action(type="answer", content=text.strip())
        return
    start, end = _number(data["start"]), _number(data["end"])
    if start is None or end is None:
        turn.error = OtaError("INVALID_FIELD", f"{kind} start and end must be numbers of seconds")
        return
    num = 0
    if kind == "get_frames":
        raw = _number(data["num"])
        if raw is None or raw != int(raw) or raw < 1:
            turn.error = OtaError(
                "INVALID_FIELD", f"get_frames num must be a whole number >= 1 (got {data['num']!r})"
            )
            return
        num = int(raw)
    turn.action = Action(type=kind, start=start, end=end, num=num)


def parse_turn(text: str, *, require_confidence: bool = True) -> Turn:
    """Read one reply (see the module docstring); ``Turn.error`` says what was wrong. Without
    ``require_confidence`` a reply may leave ``confidence`` out."""
    turn = Turn()
    data = _read_json(text, turn)
    if data is None:
        return turn
    action = _read_top(data, turn, require_confidence)
    if action is not None:
        _read_action(action, turn)
    return turn

"""``scripted``: a model that replays a list of outputs, with injected faults.

Steps come from Python (the helpers below) or a JSON/YAML file (``scripted:path/to/script.json``).
A file holds a list, or ``{"outputs": [...]}``, of steps in short form::

    "Hello!"                                              # a text answer
    {"text": "Hi", "reasoning": "...", "usage": {...}}    # text with reasoning / token counts
    {"tool_call": {"name": "search", "arguments": {"q": "cats"}}}
    {"error": 429, "times": 2, "retry_after": 0.1}        # HTTP-like errors, N calls in a row
    {"timeout": true, "seconds": 5}                        # hang (or fail at once without seconds)
    {"empty": true}                                        # an empty assistant message
    {"malformed_tool_call": {"name": "search", "arguments": {"q": "cats"}}}  # call cut off in text
    {"output": {...}}                                      # a full ModelOutput

Each call takes the next step; running out is an error, so a test sees extra calls. A file of the
form ``{"outputs": [...], "repeat": true}`` starts again from the first step instead, so one
script can serve every task of an evaluation run (e.g. a judge that always says ``Correct``).

A call with a ``response_format`` is honoured as a constrained server would: a scripted answer
that is not JSON matching the schema fails the call (``bad_response``) instead of reaching the
caller, so a test sees a script that breaks its own contract. Logprobs are returned when the
step's output carries them (``{"output": {..., "logprobs": [...]}}``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from omnilab.models.adapter import AdapterSpec
from omnilab.models.cache import ResponseCache
from omnilab.models.capabilities import Capabilities
from omnilab.models.errors import ErrorKind, ModelConfigError, ProviderError, kind_for_status
from omnilab.models.events import EventSink
from omnilab.models.model import Model
from omnilab.models.retry import RetryPolicy
from omnilab.models.structured import schema_problem
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec, Usage

__all__ = [
    "ScriptStep",
    "ScriptedAdapter",
    "create",
    "empty",
    "error",
    "load_script",
    "malformed_tool_call",
    "parse_steps",
    "scripted_model",
    "text",
    "timeout",
    "tool_call",
]


class OutputStep(BaseModel):
    kind: Literal["output"] = "output"
    output: ModelOutput


class ErrorStep(BaseModel):
    kind: Literal["error"] = "error"
    status: int = Field(ge=400, le=599)
    times: int = Field(default=1, ge=1)
    retry_after: float | None = Field(default=None, ge=0)
    message: str = "scripted error"


class TimeoutStep(BaseModel):
    kind: Literal["timeout"] = "timeout"
    times: int = Field(default=1, ge=1)
    seconds: float | None = Field(default=None, ge=0)
    """Hang this long (so the caller's timeout fires); unset: fail as a timeout at once."""


class MalformedStep(BaseModel):
    kind: Literal["malformed_tool_call"] = "malformed_tool_call"
    text: str
    """The answer text holding the broken call."""


ScriptStep = Annotated[
    OutputStep | ErrorStep | TimeoutStep | MalformedStep, Field(discriminator="kind")
]
_STEPS: TypeAdapter[list[ScriptStep]] = TypeAdapter(list[ScriptStep])


def text(answer: str, *, reasoning: str | None = None, usage: Usage | None = None) -> OutputStep:
    """A step answering ``answer``."""
    return OutputStep(output=ModelOutput.from_text(answer, reasoning=reasoning, usage=usage))


def tool_call(
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    text: str = "",
    usage: Usage | None = None,
) -> OutputStep:
    """A step calling tool ``name`` natively."""
    return OutputStep(output=ModelOutput.tool_call(name, arguments, text=text, usage=usage))


def error(
    status: int,
    *,
    times: int = 1,
    retry_after: float | None = None,
    message: str = "scripted error",
) -> ErrorStep:
    """``times`` calls in a row fail with HTTP ``status`` (429, 500, 400, ...)."""
    return ErrorStep(status=status, times=times, retry_after=retry_after, message=message)


def timeout(*, times: int = 1, seconds: float | None = None) -> TimeoutStep:
    """``times`` calls in a row time out (hang ``seconds``, or fail as timed out at once)."""
    return TimeoutStep(times=times, seconds=seconds)


def empty() -> OutputStep:
    """A step returning an empty assistant message."""
    return OutputStep(output=ModelOutput(finish_reason="stop"))


def malformed_tool_call(
    name: str, arguments: dict[str, Any] | None = None, *, style: str = "truncated"
) -> MalformedStep:
    """A step that writes a call to ``name`` in the answer text instead of calling natively.

    ``style``: ``truncated`` (a ``<tool_call>`` block cut before its last brace, recoverable),
    ``hermes`` (a complete ``<tool_call>`` block), ``fenced`` (a json code fence), or ``broken``
    (cut inside a string: not recoverable, stays text).
    """
    body = json.dumps({"name": name, "arguments": arguments or {}})
    styles = {
        "truncated": f"<tool_call>\n{body[:-1]}",
        "hermes": f"<tool_call>\n{body}\n</tool_call>",
        "fenced": f"```json\n{body}\n```",
        "broken": f"<tool_call>\n{body[: max(body.find(':') + 4, 1)]}",
    }
    if style not in styles:
        raise ValueError(f"style must be one of {', '.join(styles)} (got {style!r})")
    return MalformedStep(text=styles[style])


def _expand_short_form(item: object) -> object:
    if isinstance(item, str):
        return text(item).model_dump(mode="json")
    if not isinstance(item, dict) or "kind" in item:
        return item
    usage = item.get("usage")
    if "text" in item:
        out = {"message": {"role": "assistant", "content": item["text"]}, "finish_reason": "stop"}
        return {
            "kind": "output",
            "output": {**out, "reasoning": item.get("reasoning"), "usage": usage or {}},
        }
    if "tool_call" in item:
        call = item["tool_call"]
        msg = {"role": "assistant", "content": item.get("content", ""), "tool_calls": [call]}
        return {
            "kind": "output",
            "output": {"message": msg, "finish_reason": "tool_calls", "usage": usage or {}},
        }
    if "error" in item:
        rest = {k: v for k, v in item.items() if k != "error"}
        return {"kind": "error", "status": item["error"], **rest}
    if "timeout" in item:
        return {"kind": "timeout", **{k: v for k, v in item.items() if k != "timeout"}}
    if "empty" in item:
        return empty().model_dump(mode="json")
    if "malformed_tool_call" in item:
        spec = item["malformed_tool_call"]
        if isinstance(spec, dict) and "name" in spec:
            made = malformed_tool_call(
                spec["name"], spec.get("arguments"), style=spec.get("style", "truncated")
            )
            return made.model_dump(mode="json")
    if "output" in item:
        return {"kind": "output", "output": item["output"]}
    return item


def load_script(path: Path) -> list[ScriptStep]:
    """Read the steps of a JSON or YAML script file."""
    return parse_steps(_read_script(path), source=f"scripted:{path}")


def _read_script(path: Path) -> object:
    try:
        raw_text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ModelConfigError(
            f"scripted:{path}", f"cannot read script ({e.strerror or e})", advice="check the path"
        ) from None
    source = f"scripted:{path}"
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data: object = yaml.safe_load(raw_text)
        except yaml.YAMLError as e:
            raise ModelConfigError(source, f"script is not valid YAML ({e})") from None
    else:
        try:
            data = json.loads(raw_text)
        except ValueError as e:
            raise ModelConfigError(source, f"script is not valid JSON ({e})") from None
    return data


def parse_steps(data: object, *, source: str = "scripted") -> list[ScriptStep]:
    """Steps from decoded JSON/YAML: a list, or a mapping with an ``outputs`` list."""
    items = data.get("outputs") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ModelConfigError(source, 'a script is a list of outputs, or {"outputs": [...]}')
    try:
        return _STEPS.validate_python([_expand_short_form(i) for i in items])
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ModelConfigError(source, f"bad script step at {where} ({first['msg']})") from None


class ScriptedAdapter:
    """Replays steps in order; records every request it was given in ``requests``."""

    def __init__(
        self,
        steps: Sequence[ScriptStep],
        *,
        name: str = "scripted",
        capabilities: Capabilities | None = None,
        repeat: bool = False,
    ) -> None:
        self.endpoint = name
        self.secrets: tuple[str, ...] = ()
        self.capabilities = capabilities or Capabilities(
            image=True, audio=True, video=True, documents=True
        )
        self._queue: list[OutputStep | ErrorStep | TimeoutStep | MalformedStep] = []
        for step in steps:
            repeats = step.times if isinstance(step, ErrorStep | TimeoutStep) else 1
            self._queue.extend([step] * repeats)
        self._total = len(self._queue)
        # With repeat, running out starts the script again (never when it has no step at all).
        self._replay = list(self._queue) if repeat else []
        self.requests: list[tuple[list[Message], list[ToolSpec], GenerateConfig]] = []

    @property
    def remaining(self) -> int:
        """Steps not yet replayed."""
        return len(self._queue)

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        """Replay the next step."""
        self.requests.append((list(messages), list(tools), config))
        if not self._queue and self._replay:
            self._queue.extend(self._replay)
        if not self._queue:
            raise ProviderError(
                ErrorKind.EXHAUSTED, f"all {self._total} scripted outputs were already used"
            )
        step = self._queue.pop(0)
        if isinstance(step, OutputStep):
            return _conform(step.output, config)
        if isinstance(step, MalformedStep):
            return _conform(ModelOutput.from_text(step.text), config)
        if isinstance(step, ErrorStep):
            raise ProviderError(
                kind_for_status(step.status),
                step.message,
                status=step.status,
                retry_after=step.retry_after,
            )
        if step.seconds is not None:
            await asyncio.sleep(step.seconds)
        raise ProviderError(ErrorKind.TIMEOUT, "scripted timeout")


def _conform(output: ModelOutput, config: GenerateConfig) -> ModelOutput:
    fmt = config.response_format
    if fmt is not None and not output.tool_calls:
        problem = schema_problem(output.text, fmt.json_schema)
        if problem is not None:
            raise ProviderError(
                ErrorKind.BAD_RESPONSE,
                f"scripted output breaks the response format: {problem}",
                advice="make the script's answer JSON that matches the schema asked for",
            )
    if not config.logprobs and output.logprobs is not None:
        output = output.model_copy(update={"logprobs": None})
    return output


def scripted_model(
    steps: Sequence[ScriptStep],
    *,
    name: str = "scripted:inline",
    retry: RetryPolicy | None = None,
    timeout_s: float = 30.0,
    cache: ResponseCache | None = None,
    sink: EventSink | None = None,
) -> Model:
    """A :class:`Model` over a :class:`ScriptedAdapter` (tests, demos, agent development)."""
    adapter = ScriptedAdapter(steps, name=name)
    return Model(adapter, name=name, retry=retry, timeout_s=timeout_s, cache=cache, sink=sink)


def create(spec: AdapterSpec) -> ScriptedAdapter:
    """The adapter for ``scripted:FILE``."""
    path = Path(spec.model).expanduser()
    data = _read_script(path)
    return ScriptedAdapter(
        parse_steps(data, source=spec.name),
        name=spec.name,
        capabilities=spec.capabilities,
        repeat=isinstance(data, dict) and data.get("repeat") is True,
    )

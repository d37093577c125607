"""Tools: typed Python functions with Google docstrings, turned into model-callable tools.

``@tool`` derives the JSON schema from the signature and docstring and checks it at definition
time (a missing description or annotation is a programming error, raised at once). A call
validates the model's arguments before running the function, and *never raises into the agent
loop*: bad arguments, media errors and crashes all come back as a :class:`ToolResult` whose
``error`` a model can read and act on.

Construction options belong on an outer factory, model-visible arguments on the inner function::

    def read_video_tool(inputs: TaskInputs) -> Tool:
        @tool
        def read_video(video_id: str, t_start: float, t_end: float) -> list[Content]:
            '''Read a segment of a video.

            Args:
                video_id: Id of the video, as listed in the task.
                t_start: Start time in seconds.
                t_end: End time in seconds.
            '''
            ...
        return read_video
"""

from __future__ import annotations

import asyncio
import inspect
import json
import traceback
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from omnilab._memo import IdentityMemo
from omnilab.content import Content, Text
from omnilab.models.types import ToolSpec
from omnilab.tools._docstring import parse_docstring

__all__ = ["Tool", "ToolError", "ToolResult", "tool"]

ToolFn = Callable[..., Any]


class ToolError(BaseModel):
    """A failure the model can read: a stable ``code`` and a one-line ``message``."""

    model_config = ConfigDict(frozen=True)

    code: str
    """E.g. ``INVALID_ARGS``, ``TS_OOB``, ``NOT_FOUND``, ``TIMEOUT``, ``TOOL_FAILED``."""
    message: str


class ToolResult(BaseModel):
    """What a tool call produced: content for the model, or an error; plus run metadata."""

    content: list[Content] = Field(default_factory=list)
    error: ToolError | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    """For trajectories and viewers (timestamps, paths, tracebacks); never shown to the model."""

    @classmethod
    def fail(cls, code: str, message: str, **metadata: Any) -> ToolResult:
        """A result that reports an error."""
        return cls(error=ToolError(code=code, message=message), metadata=metadata)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def text(self) -> str:
        """What a text-only reader sees: the error line, or the text parts joined."""
        if self.error is not None:
            return f"Error [{self.error.code}]: {self.error.message}"
        return "\n".join(p.text for p in self.content if isinstance(p, Text))


def _to_content(value: object) -> list[Content]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Text(text=value)]
    if isinstance(value, list | tuple):
        return [part for item in value for part in _to_content(item)]
    content_types = typing.get_args(typing.get_args(Content)[0])
    if isinstance(value, content_types):
        return [typing.cast("Content", value)]
    if isinstance(value, BaseModel):
        return [Text(text=value.model_dump_json(indent=1))]
    return [Text(text=json.dumps(value, ensure_ascii=False, default=str, indent=1))]


def _simplify(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles and the ``null`` branch of optional arguments: models read less."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        variants = prop.get("anyOf")
        if variants and len(variants) == 2 and {"type": "null"} in variants:
            (kept,) = [v for v in variants if v != {"type": "null"}]
            prop.pop("anyOf")
            prop.update(kept)
        if prop.get("default", ...) is None:
            prop.pop("default")
    schema["additionalProperties"] = False
    return schema


def _error_line(err: ValidationError) -> str:
    parts = []
    for e in err.errors()[:3]:
        where = ".".join(str(x) for x in e["loc"]) or "arguments"
        if e["type"] == "extra_forbidden":
            parts.append(f"unknown argument {where!r}")
        elif e["type"] == "missing":
            parts.append(f"missing required argument {where!r}")
        else:
            parts.append(f"argument {where!r}: {e['msg']} (got {e.get('input')!r})")
    return "; ".join(parts)


_Derived = tuple[str, type[BaseModel], dict[str, Any], ToolSpec]
_DERIVED: dict[tuple[object, ...], _Derived] = {}
# Factories pass the same paper schema object for every task: dumping it each time cost more
# than the rest of building the tool.
_FROZEN: IdentityMemo[str] = IdentityMemo(512)


def _freeze(parameters: Mapping[str, Any] | None) -> str | None:
    if parameters is None:
        return None
    return _FROZEN.get((parameters,), lambda: json.dumps(parameters, sort_keys=True))


def _derive(
    fn: ToolFn, name: str, description: str | None, parameters: Mapping[str, Any] | None
) -> _Derived:
    """Description, argument model and JSON schema of ``fn``, checked (TypeError if unfit)."""
    doc = parse_docstring(fn.__doc__)
    text = description or doc.description
    if not text:
        raise TypeError(f"tool {name}: needs a docstring description")
    args_model = _args_model(fn, name, doc.args)
    derived = _simplify(args_model.model_json_schema())
    if parameters is not None:
        given = set(parameters.get("properties", {}))
        if given != set(derived["properties"]):
            raise TypeError(
                f"tool {name}: schema properties {sorted(given)} do not match the "
                f"function's arguments {sorted(derived['properties'])}"
            )
    schema = dict(parameters) if parameters is not None else derived
    return text, args_model, schema, ToolSpec(name=name, description=text, parameters=schema)


def _args_model(fn: ToolFn, name: str, docs: Mapping[str, str]) -> type[BaseModel]:
    hints = typing.get_type_hints(fn)
    fields: dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args/**kwargs cannot be described to a model")
        if p.name not in hints:
            raise TypeError(f"tool {name}: argument {p.name!r} needs a type annotation")
        if not docs.get(p.name):
            raise TypeError(f"tool {name}: argument {p.name!r} is not described in Args:")
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (hints[p.name], Field(default, description=docs[p.name]))
    model: type[BaseModel] = create_model(
        f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


class Tool:
    """A callable tool: ``await tool(arguments) -> ToolResult``; ``tool.spec`` for the model."""

    def __init__(
        self,
        fn: ToolFn,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        # Factories build the same closures for every task: derive each schema once per code.
        key = (fn.__code__, fn.__defaults__, self.name, description, _freeze(parameters))
        derived = _DERIVED.get(key)
        if derived is None:
            derived = _derive(fn, self.name, description, parameters)
            _DERIVED[key] = derived
        # One spec object for every build of a tool: the reply cache and the trajectory
        # encoder keep the JSON of a tool list by the identity of its specs.
        self.description, self._args_model, self.parameters, self.spec = derived

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    async def __call__(self, arguments: Mapping[str, Any] | str | None = None) -> ToolResult:
        """Validate ``arguments`` and run the tool; every failure becomes an error result."""
        try:
            raw = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
            if not isinstance(raw, dict):
                raise TypeError("arguments must be a JSON object")
            args = self._args_model.model_validate(raw)
        except ValidationError as e:
            return ToolResult.fail("INVALID_ARGS", f"{self.name}: {_error_line(e)}")
        except (TypeError, ValueError) as e:
            return ToolResult.fail(
                "INVALID_ARGS", f"{self.name}: arguments are not valid JSON ({e})"
            )
        kwargs = {k: getattr(args, k) for k in type(args).model_fields}
        try:
            if inspect.iscoroutinefunction(self.fn):
                value = await typing.cast("Callable[..., Awaitable[Any]]", self.fn)(**kwargs)
            else:
                # Media decoding and file work are blocking: keep the event loop free.
                value = await asyncio.to_thread(self.fn, **kwargs)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a tool never raises into the agent loop
            return _failure(self.name, e)
        if isinstance(value, ToolResult):
            return value
        return ToolResult(content=_to_content(value))


def _failure(name: str, err: Exception) -> ToolResult:
    code = getattr(err, "code", None)
    if code is not None:  # errors made for users/models (MediaError, ...) carry a stable code
        return ToolResult.fail(str(code), str(err))
    return ToolResult.fail(
        "TOOL_FAILED",
        f"{name} failed: {type(err).__name__}: {err}",
        traceback="".join(traceback.format_exception(err)),
    )


@overload
def tool(fn: ToolFn, /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> Callable[[ToolFn], Tool]: ...
def tool(
    fn: ToolFn | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> Tool | Callable[[ToolFn], Tool]:
    """Make a :class:`Tool` of a typed function with a Google-style docstring.

    ``parameters`` replaces the derived JSON schema when a paper fixes the exact schema; its
    properties must still match the function's arguments (checked here).
    """
    if fn is not None:
        return Tool(fn)

    def wrap(f: ToolFn) -> Tool:
        return Tool(f, name=name, description=description, parameters=parameters)

    return wrap

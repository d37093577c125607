"""What a client of ``omnilab serve`` may choose: the operator decides, the client picks within.

- **Models**: the server's ``--model`` and the names or patterns given with ``--allow-model``.
  A pattern (``vllm:*``, shell-style) never admits a ``scripted:`` or ``local:`` name (those are
  file paths on the server) nor a name with its own ``@base_url`` unless the pattern has one too;
  only an exact name the operator wrote admits those.
- **Agent options**: per agent, an allow-list of harmless options (how it reasons, how many
  turns); never sandbox settings (isolation, network, timeouts), tool lists, paths, URLs, search
  providers or generation settings. Agents of plugins take no options from clients.
- **Turns**: ``max_turns`` (and an agent's own step or round count) at most ``--max-turns``.

Each refusal is a :class:`ClientChoiceError`: one line naming what was refused and what is allowed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from omnilab._urls import beneath, public_url
from omnilab.errors import OmnilabError

__all__ = [
    "AGENT_OPTIONS",
    "MAX_OPTIONS_DEPTH",
    "ClientChoiceError",
    "ClientPolicy",
    "parse_agent_options",
]

MAX_OPTIONS_DEPTH = 16
"""Deepest nesting of arrays and objects ``agent_options`` may have (none of the options needs
more than three; deeper JSON would only exhaust the parser's recursion)."""

AGENT_OPTIONS: Mapping[str, frozenset[str]] = {
    "tir": frozenset({"mode", "variant", "on_empty", "on_bad_call", "max_observation_chars"}),
    "coder": frozenset({"max_reminders", "max_observation_chars"}),
    "deepsearch": frozenset({"budget_scope", "top_k", "audio", "images", "keyframes"}),
    "master": frozenset({"max_rounds", "perception", "format_retries"}),
    "ota": frozenset(
        {
            "max_steps",
            "min_steps",
            "dynamic_steps",
            "step_rounding",
            "confidence_threshold",
            "strict_confidence",
        }
    ),
}
"""Options a client may set, by agent. Everything else (``isolation``, ``network``,
``command_timeout``, ``skills``, ``index_dir``, ``search``, ``generate``, ...) is the operator's."""

_TURN_OPTIONS = {"ota": "max_steps", "master": "max_rounds"}
"""Agent options that count turns: held to the same cap as ``max_turns``."""

_SERVER_SIDE = ("scripted", "local")
_GLOB = frozenset("*?[")


class ClientChoiceError(OmnilabError):
    """A client asked for something the server's operator did not allow (HTTP 400)."""


def _matches(asked: str, pattern: str) -> bool:
    """Whether the client's ``asked`` fits the operator's ``pattern``.

    A name with an ``@`` fits only a pattern with one, and the model and the base URL are
    matched each on its own, split where the model layer splits them (the last ``@``): a ``*``
    in the pattern's URL never spans another ``@URL`` put into the name
    (``vllm:*@http://gpu:8000/*`` must not admit ``vllm:a@http://gpu:8000/v1@http://evil/x``,
    whose base URL is ``http://evil/x``).
    """
    if "@" not in pattern:
        return "@" not in asked and fnmatchcase(asked, pattern)
    model, at, url = asked.rpartition("@")
    want_model, _, want_url = pattern.rpartition("@")
    return (
        bool(at)
        and "@" not in model
        and fnmatchcase(model, want_model)
        and (fnmatchcase(url, want_url))
    )


@dataclass(frozen=True)
class ClientPolicy:
    """The operator's choices for one server."""

    model: str | None = None
    """The default model (``--model``); ``None``: the configured default."""
    allow_models: tuple[str, ...] = ()
    """More names or shell-style patterns a client may ask for (``--allow-model``)."""
    max_turns: int = 50
    """The most turns a client may ask for (``--max-turns``)."""
    allow_urls: tuple[str, ...] = ()
    """URL prefixes (``s3://bucket/media/``, ``https://host/data/``) whose objects a request may
    name as inputs (``--allow-url``); none by default: a client never makes the server fetch
    from a host of its choosing."""

    def url_for(self, given: str) -> str:
        """``given`` (a URL a request names as an input) if it lies beneath an allowed prefix."""
        if any(beneath(prefix, given) for prefix in self.allow_urls):
            return given
        if not self.allow_urls:
            raise ClientChoiceError(
                "this server takes no URLs as inputs (the operator allows prefixes with "
                "--allow-url)"
            )
        raise ClientChoiceError(
            f"{public_url(given)} is not beneath a URL this server allows "
            f"({', '.join(public_url(p) for p in self.allow_urls)})"
        )

    def model_for(self, asked: str | None) -> str | None:
        """The model to run: the default, or ``asked`` if the operator allowed it."""
        asked = (asked or "").strip()
        if not asked or asked == self.model or asked in self.allow_models:
            return asked or self.model
        provider = asked.partition(":")[0]
        if provider not in _SERVER_SIDE:
            for pattern in self.allow_models:
                if _GLOB & set(pattern) and _matches(asked, pattern):
                    return asked
        allowed = [self.model or "the server's default model", *self.allow_models]
        raise ClientChoiceError(
            f"model {asked!r} is not allowed on this server; allowed: {', '.join(allowed)} "
            "(the operator adds more with --allow-model)"
        )

    def options_for(self, agent: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """``options`` if each is on ``agent``'s allow-list and within the turn cap."""
        given = dict(options or {})
        allowed = AGENT_OPTIONS.get(agent, frozenset())
        for name in given:
            if name not in allowed:
                which = ", ".join(sorted(allowed)) or "none"
                raise ClientChoiceError(
                    f"agent option {name!r} cannot be set by a client of this server "
                    f"({agent} takes: {which}); the operator sets it in omnilab.toml"
                )
        turns = _TURN_OPTIONS.get(agent)
        value = given.get(turns) if turns else None
        # Only a JSON integer is held to the cap: the agent's options would also take "200",
        # 200.0 or true (pydantic's lax mode), which a type check here would let past it.
        if turns in given and (type(value) is not int or value < 1):
            raise ClientChoiceError(
                f"agent option {turns!r} must be a whole number of turns from 1 to "
                f"{self.max_turns}, not {value!r}"
            )
        if isinstance(value, int) and value > self.max_turns:
            raise ClientChoiceError(
                f"agent option {turns!r} = {value} is over this server's cap of "
                f"{self.max_turns} turns (--max-turns)"
            )
        return given

    def turns_for(self, asked: int | None, default: int) -> int:
        """The run's turn budget: ``asked`` (at most the cap), else ``default`` held to it."""
        if asked is None:
            return min(default, self.max_turns)
        if asked > self.max_turns:
            raise ClientChoiceError(
                f"max_turns {asked} is over this server's cap of {self.max_turns} (--max-turns)"
            )
        return asked


def parse_agent_options(text: str | None) -> dict[str, Any] | None:
    """A client's ``agent_options`` JSON: an object nested at most :data:`MAX_OPTIONS_DEPTH`
    deep (checked before parsing, so no depth reaches the parser's recursion). Raises
    :class:`ClientChoiceError` (400) with one line."""
    if not text:
        return None
    if _depth(text) > MAX_OPTIONS_DEPTH:
        raise ClientChoiceError(f"agent_options is nested deeper than {MAX_OPTIONS_DEPTH} levels")
    try:
        options = json.loads(text)
    except ValueError as e:
        raise ClientChoiceError(f"agent_options is not JSON: {e}") from None
    if not isinstance(options, dict):
        raise ClientChoiceError("agent_options must be a JSON object")
    return options


def _depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON ``text`` (outside strings)."""
    deepest = depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest

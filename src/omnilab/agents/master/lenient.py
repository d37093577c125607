"""The master's replies read as Agent-Omni's release reads them (``rules="release"``).

huawei-lin/Agent-Omni ``src/nodes.py`` parses each reasoning and decision reply with
LangChain's ``PydanticOutputParser`` over the stage's pydantic model, and a reply it refuses goes
to ``OutputFixingParser`` with ``repr()`` of the ``OutputParserException`` as the fixing prompt's
error text. That parser is lenient where omnilab's strict reader is not: text before a fenced
JSON block, raw newlines inside strings, JSON cut off before its end (closed for it), text after
the JSON, ``"true"`` for a bool (pydantic's lax mode). Rather than imitate those rules this
module calls ``langchain-core``'s own parser, an optional dependency
(``pip install 'omnilab[release]'``); without it the release's rules refuse to run.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from pydantic import BaseModel

from omnilab.agents.base import AgentConfigError
from omnilab.agents.master.structured import Parse

__all__ = ["available", "langchain_parse", "require"]

_MISSING = (
    "rules=release reads the master's replies with langchain-core's PydanticOutputParser, as "
    "Agent-Omni's release does, and langchain-core is not installed: "
    "pip install 'omnilab[release]'"
)


def available() -> bool:
    """Whether ``langchain-core`` can be imported."""
    return importlib.util.find_spec("langchain_core") is not None


def require() -> None:
    """Refuse (:class:`AgentConfigError`, one line) when ``langchain-core`` is missing."""
    if not available():
        raise AgentConfigError(_MISSING)


def langchain_parse(model: type[BaseModel]) -> Parse:
    """A reader of replies for ``model``: ``PydanticOutputParser(pydantic_object=model)``'s
    value (``.dict()``, as the release takes it), or ``repr`` of its
    ``OutputParserException`` (the text ``OutputFixingParser`` puts in its prompt)."""
    # The optional dependency is imported when a release-rules run starts, not with omnilab.
    from langchain_core.exceptions import OutputParserException
    from langchain_core.output_parsers import PydanticOutputParser

    parser: PydanticOutputParser[BaseModel] = PydanticOutputParser(pydantic_object=model)

    def parse(text: str) -> tuple[dict[str, Any] | None, str | None]:
        try:
            value = parser.parse(text)
        except OutputParserException as e:
            return None, repr(e)
        return value.model_dump(), None

    return parse

"""Media parts a context still holds whose files sandboxed code has since replaced.

The views of a run (contact sheets, frames, shrunk images) and the perception store's copies
live in the workspace, which sandboxed code can write. A provider adapter re-reads them for
every model call by the safe-open rules (:mod:`omnilab._wsread`): a view replaced by a link, a
FIFO or a folder is refused there, so nothing outside the workspace is sent, but the refusal
would end the whole run with a model-call error. Before each call such a part is replaced by a
short notice instead (the call goes on with the rest, and the model learns why the view went).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from omnilab import _wsread
from omnilab.content import Content, Text
from omnilab.models.types import Message

__all__ = ["vet_views"]

_NOTICE = (
    "[{name} was removed from this conversation: code in the workspace replaced the file "
    "({why}); it is no longer shown]"
)


def _broken(part: Content) -> str | None:
    """Why ``part`` (a media file in a workspace) can no longer be read, or None."""
    path = getattr(part, "path", None)
    if path is None or getattr(part, "data", None) is not None:
        return None
    if _wsread.untrusted_root(path) is None:
        return None  # the user's own files and the media cache: not the sandbox's to change
    try:
        fd, _ = _wsread.open_file(path)
    except OSError as exc:
        return str(exc.strerror or exc)
    os.close(fd)
    return None


def vet_views(messages: Sequence[Message]) -> dict[int, Message]:
    """The messages (by index) that hold a workspace media part that cannot be read by the
    safe-open rules any more, each with those parts replaced by a notice."""
    edits: dict[int, Message] = {}
    for index, message in enumerate(messages):
        parts: list[Content] = []
        changed = False
        for part in message.content:
            why = _broken(part)
            if why is None:
                parts.append(part)
                continue
            changed = True
            name = getattr(part, "path", None)
            label = name.name if name is not None else part.type
            parts.append(Text(text=_NOTICE.format(name=label, why=why)))
        if changed:
            edits[index] = message.model_copy(update={"content": parts})
    return edits

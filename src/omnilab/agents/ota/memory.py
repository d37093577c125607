"""Memory consolidation (OmniAgent B.4): the labels media carry and the placeholders that
replace them once the model has written its observation.

Every medium the environment returns comes after a label (``Frames 10.00s-12.00s (num=5).
Timestamps: [...]``, ``Audio 230.00s-280.00s``, ``Clip 45.00s-60.00s``; each frame is preceded
by its time). After the model's next turn the whole message is rewritten to its placeholder: the
label, with the frames' exact timestamps, followed by ``[MEDIA OMITTED - Refer to your
Observation]``, and the message's other text (a format warning) as it was; the step notice goes,
as only the latest notice stays in the context (the release's ``_append_step_notice``). The labels and the
marker are Figure 4's, kept in ``prompts/ota_media_labels.txt``.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from functools import cache

from omnilab.agents.templates import load_template
from omnilab.content import Content, Text
from omnilab.models.types import Message

__all__ = ["Percept", "clock", "label", "placeholder_message"]


@cache
def _labels() -> dict[str, string.Template]:
    table: dict[str, string.Template] = {}
    for line in load_template("ota_media_labels").template.splitlines():
        key, sep, text = line.partition(": ")
        if sep:
            table[key.strip()] = string.Template(text)
    return table


def clock(seconds: float) -> str:
    """Seconds as the paper writes them: ``10.00s``."""
    return f"{seconds:.2f}s"


def label(kind: str, **values: object) -> str:
    """The label of ``kind`` (``frames``, ``audio``, ``clip``, ``frame``, ``omitted``)."""
    return _labels()[kind].substitute(values)


class Percept:
    """What one sensing action returned: its label and the parts that follow it.

    ``parts`` are media (or, for a model without that modality, the text evidence standing in
    for them): all of them go when the turn is consolidated; ``label`` stays.
    """

    def __init__(
        self, label_text: str, parts: Sequence[Content], *, placeholder: str | None = None
    ) -> None:
        self.label = label_text
        self.parts = list(parts)
        self._placeholder = placeholder

    @property
    def placeholder(self) -> str:
        """What the model sees of this percept in later turns: the label with the marker, or
        the text given (the release's frames placeholder adds the timestamps to its label)."""
        return self._placeholder or f"{self.label} {label('omitted')}"


def placeholder_message(percept: Percept, trailer: Sequence[str]) -> Message:
    """The user message a consolidated percept becomes: placeholder, then ``trailer`` texts."""
    parts: list[Content] = [Text(text=percept.placeholder)]
    parts += [Text(text=t) for t in trailer]
    return Message(role="user", content=parts)

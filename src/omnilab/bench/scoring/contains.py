"""``answer_in_reply``: a lenient match for short free-text replies of small models.

Right when an acceptable answer occurs in the reply as whole words (case and punctuation
ignored) and the reply is short (at most :data:`MAX_WORDS` words), so a reply cannot score by
listing every candidate; a reply that also names a wrong choice (a task's options that are not
an answer, or the ``wrong_answers`` attribute, ``|``-separated) is wrong too ("either silence or
a sound" does not answer "silence or sound?"). The ``<answer>`` span is used when there is one. Used by the offline
suite, where tiny embedded models answer in a sentence ("The word on screen is SUNFLOWER.")
more often than in tags; benchmarks keep their own, stricter scorers.
"""

from __future__ import annotations

import re

from omnilab.bench.scoring.base import Score, extract_answer
from omnilab.bench.task import Task

__all__ = ["MAX_WORDS", "AnswerInReply", "words"]

MAX_WORDS = 30
"""Longer replies are wrong: the label must be the point of the reply, not one word among many."""

_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")


def words(text: str) -> list[str]:
    """Lower-case words and numbers of ``text`` (``3.5`` and ``don't`` stay whole)."""
    return _WORD.findall(text.lower())


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def _wrong_choices(task: Task) -> list[str]:
    right = {" ".join(words(a)) for a in task.answers.all}
    listed = list((task.metadata.options or {}).values())
    listed += task.metadata.attributes.get("wrong_answers", "").split("|")
    return [c for c in listed if c.strip() and " ".join(words(c)) not in right]


class AnswerInReply:
    """Right when an acceptable answer appears as whole words in a short reply."""

    name = "answer_in_reply"

    async def score(self, task: Task, prediction: str) -> Score:
        """See the module docstring."""
        extracted = extract_answer(prediction)
        candidate = (extracted if extracted is not None else prediction).strip()
        reply = words(candidate)
        found = next((a for a in task.answers.all if _contains(reply, words(a))), None)
        named = next((w for w in _wrong_choices(task) if _contains(reply, words(w))), None)
        correct = len(reply) <= MAX_WORDS and found is not None and named is None
        if len(reply) > MAX_WORDS:
            reason = (
                f"wrong: the reply has {len(reply)} words; {self.name} reads at most {MAX_WORDS}"
            )
        elif found is None:
            reason = "wrong: no acceptable answer occurs in the reply as whole words"
        elif named is not None:
            reason = f"wrong: the reply also names {named!r}, which is not an answer"
        else:
            reason = f"right: {found!r} occurs in the reply as whole words"
        return Score(
            reason=reason,
            scorer=self.name,
            value=1.0 if correct else 0.0,
            correct=correct,
            exact_match=correct and any(reply == words(a) for a in task.answers.all),
            extracted=candidate,
        )

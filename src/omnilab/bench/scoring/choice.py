"""Multiple-choice letter extraction and scoring.

Models answer a choice in many shapes: ``B``, ``(B)``, ``**B**``, ``Answer: b``, ``The answer is
B`` (Agent-Omni's requested form), ``B. Paris`` or just ``Paris``. :func:`extract_choice` tries
the unambiguous shapes first and gives up (``None``) rather than guess between two letters.
"""

from __future__ import annotations

import re
import string

from omnilab.bench._parse import option_prefix
from omnilab.bench.scoring.base import Score, answer_body, normalize_answer
from omnilab.bench.task import Task

__all__ = ["MultipleChoice", "extract_choice"]

_WRAPPING = " \t\r\n*_`'\".,:;!()[]{}"
# "answer is B", "Answer: b", "final answer - (C)", "answer is **D**"
_ANSWER_IS = re.compile(
    r"answer\s*(?:is|:|-|=)?\s*(?:option\s*)?[\(\[*\s]*([A-Za-z])(?![A-Za-z])(\s+[a-z])?",
    re.IGNORECASE,
)
_PAREN = re.compile(r"[\(\[]([A-Za-z])[\)\]]")
_LONE_CAPITAL = re.compile(r"(?<![A-Za-z'])([A-Z])(?![A-Za-z'])")


def extract_choice(text: str, options: dict[str, str] | None = None) -> str | None:
    """The option letter a reply picks (upper case), or ``None`` when unclear.

    The ``<answer>`` span is read when present (:func:`~.base.answer_body`). Letters outside ``options`` (default A-Z) never
    count. Tried in order: the whole reply is a letter; "answer is/: X"; a single distinct
    "(X)"; a leading "X." / "X)"; the reply equals one option's text; a single distinct
    stand-alone capital letter.
    """
    allowed = set(options) if options else set(string.ascii_uppercase)
    body = answer_body(text)
    core = body.strip(_WRAPPING)
    if len(core) == 1 and core.upper() in allowed:
        return core.upper()
    for match in reversed(list(_ANSWER_IS.finditer(body))):
        letter: str = match.group(1)
        next_word: str | None = match.group(2)
        # "the answer is a cat": a lower-case letter followed by a word is an article.
        if letter.upper() in allowed and not (letter.islower() and next_word):
            return letter.upper()
    in_parens = {str(m).upper() for m in _PAREN.findall(body)} & allowed
    if len(in_parens) == 1:
        return in_parens.pop()
    prefixed = option_prefix(core)
    if prefixed is not None and prefixed[0] in allowed:
        return prefixed[0]
    if options:
        norm = normalize_answer(core)
        named = [k for k, v in options.items() if normalize_answer(v.strip(_WRAPPING)) == norm]
        if len(named) == 1:
            return named[0]
    capitals = {str(m) for m in _LONE_CAPITAL.findall(body)} & allowed
    if len(capitals) == 1:
        return capitals.pop()
    return None


class MultipleChoice:
    """Right when the extracted letter is the task's answer letter (OmniAgent MCQ, Agent-Omni)."""

    name = "mcq"

    async def score(self, task: Task, prediction: str) -> Score:
        """Compare the extracted letter with the label (a letter, or an option's text)."""
        options = task.metadata.options
        letter = extract_choice(prediction, options)
        label = task.answers.label.strip()
        gold = label.upper() if len(label) == 1 else extract_choice(label, options)
        if gold is None:
            raise ValueError(f"task {task.id}: answer {label!r} is not an option letter")
        correct = letter == gold
        read = f"letter {letter}" if letter else "no option letter"
        return Score(
            reason=f"{'right' if correct else 'wrong'}: {read} read, {gold} expected",
            scorer=self.name,
            value=1.0 if correct else 0.0,
            correct=correct,
            exact_match=correct,
            extracted=letter,
            details={"expected": gold},
        )

"""LLM judges: the OmniGAIA protocol (exact match, then a judge on the last 20 words) and a
majority vote of several judges (Omni-DeepSearch).

Both ask with the OmniGAIA B.1 prompt. A verdict counts only when the reply is exactly one of
the words Correct or Incorrect (ignoring case, surrounding punctuation and markdown emphasis);
anything else is asked again with a one-line reminder and, after the last attempt, recorded as a
judge error. The reference implementation instead counts any reply without "Incorrect" as
correct, which turns a rambling or truncated judge into a right answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from omnilab.bench.scoring.base import (
    JudgeCall,
    Score,
    Verdict,
    extract_answer,
    last_words,
    matches_any,
)
from omnilab.bench.scoring.judging import (
    REFERENCE_RULES,
    STRICT_RULES,
    ScoringRules,
    em_candidate,
    judge_input,
    offline_verdict,
    reference_verdict,
)
from omnilab.bench.task import Task
from omnilab.bench.templates import render
from omnilab.config import get_settings
from omnilab.models import ErrorKind, GenerateConfig, Message, Model, ModelConfigError, ModelError

__all__ = ["LLMJudge", "MajorityVote", "OmniGaiaScorer", "parse_verdict"]

# Characters a clear one-word verdict may be wrapped in: quotes, markdown, final punctuation.
_WRAPPING = " \t\r\n*_`'\"“”‘’.,!:;()[]{}<>"
# Errors that will fail every task alike: a wrong name, key or URL is the user's to fix now.
_SETUP_ERRORS = frozenset({ErrorKind.AUTH, ErrorKind.NOT_FOUND})


def parse_verdict(reply: str) -> Verdict | None:
    """``"correct"`` or ``"incorrect"`` when the reply is exactly that word; else ``None``.

    ``"Correct."``, ``"**Incorrect**"`` and ``"'correct'"`` count; ``"The answer is correct"``,
    ``"Correct, but ..."`` and ``"Incorrect / Correct"`` do not.
    """
    core = reply.strip(_WRAPPING).lower()
    if core == "correct":
        return "correct"
    if core == "incorrect":
        return "incorrect"
    return None


class LLMJudge:
    """A model that judges answer equivalence with the OmniGAIA B.1 prompt.

    ``attempts`` (default: ``bench.judge_attempts``) is how many replies are read before giving
    up on a clear verdict (transport
    failures are retried by the :class:`~omnilab.models.Model` itself). Temperature 0 by default,
    so a cached verdict is the verdict the judge would give again.
    """

    def __init__(
        self, model: Model, *, attempts: int | None = None, config: GenerateConfig | None = None
    ) -> None:
        self.attempts = attempts if attempts is not None else get_settings().bench.judge_attempts
        if self.attempts < 1:
            raise ValueError("attempts must be >= 1")
        self.model = model
        self.config = config or GenerateConfig(temperature=0.0)

    @property
    def name(self) -> str:
        """The judge model's name."""
        return self.model.name

    async def judge(self, question: str, predicted: str, standard: str) -> JudgeCall:
        """Ask whether ``predicted`` is equivalent to ``standard`` for ``question``."""
        prompt = render("omnigaia_judge", question=question, predicted=predicted, standard=standard)
        messages = [Message.user(prompt)]
        replies: list[str] = []
        for _ in range(self.attempts):
            try:
                output = await self.model.generate(messages, config=self.config)
            except ModelConfigError:
                raise
            except ModelError as e:
                if e.kind in _SETUP_ERRORS:
                    raise
                return JudgeCall(judge=self.name, replies=replies, error=f"judge call failed: {e}")
            replies.append(output.text)
            verdict = parse_verdict(output.text)
            if verdict is not None:
                return JudgeCall(judge=self.name, replies=replies, verdict=verdict)
            # A changed conversation is a new cache key: asking the same prompt again would
            # replay the cached ramble.
            messages = [
                *messages,
                Message.assistant(output.text),
                Message.user(render("judge_reminder")),
            ]
        return JudgeCall(
            judge=self.name,
            replies=replies,
            error=f"no clear Correct/Incorrect verdict in {self.attempts} replies",
        )


def _as_judge(judge: LLMJudge | Model) -> LLMJudge:
    return judge if isinstance(judge, LLMJudge) else LLMJudge(judge)


class OmniGaiaScorer:
    """The OmniGAIA evaluation protocol (Appendix A.2, prompt B.1).

    1. Extract the last ``<answer>`` span; if it matches the label (normalised), it is correct and
       no judge is asked.
    2. Otherwise the last ``words`` (20) words of the whole output go to the judge, with the
       question and the label; Correct/Incorrect is the verdict.

    ``rules`` switches each of those choices to the authors' released evaluation
    (:mod:`omnilab.bench.scoring.judging`: the tag span to the judge, the lenient verdict,
    exact match on untagged text). An empty output is wrong without asking. ``exact_match`` and
    ``correct`` are both recorded, so EM and judged accuracy can be reported side by side, and
    so are the verdicts of the strict and the reference rules where one judge reply decides
    both (``details["strict"]``, ``details["reference"]``; ``None``: only a new call could tell).
    """

    name = "omnigaia"

    def __init__(
        self,
        judge: LLMJudge | Model,
        *,
        words: int | None = None,
        rules: ScoringRules | None = None,
    ) -> None:
        rules = rules or ScoringRules()
        if words is not None:
            rules = rules.model_copy(update={"words": words})
        self.rules = rules
        if isinstance(judge, LLMJudge):
            self.judge = judge
        else:
            # The reference reads the first reply only: asking again would only cost calls.
            attempts = 1 if rules.verdict == "reference" else None
            self.judge = LLMJudge(judge, attempts=attempts, config=rules.judge_generate)

    @property
    def words(self) -> int:
        """How many last words stand for an untagged message."""
        return self.rules.words

    def _both(
        self, task: Task, prediction: str, asked: str | None, call: JudgeCall | None
    ) -> dict[str, float | str | None]:
        first = call.replies[0] if call is not None and call.replies else None
        verdict = call.verdict if call is not None else None
        out: dict[str, float | str | None] = {}
        for name, rules in (("strict", STRICT_RULES), ("reference", REFERENCE_RULES)):
            same_words = rules.model_copy(update={"words": self.rules.words})
            got = offline_verdict(
                prediction,
                task.answers.all,
                same_words,
                asked=asked,
                first_reply=first,
                strict_verdict=verdict,
            )
            out[name] = None if got is None else float(got)
        return out

    async def score(self, task: Task, prediction: str) -> Score:
        """Exact match first, then the judge."""
        rules = self.rules
        extracted = extract_answer(prediction)
        candidate = em_candidate(prediction, rules)
        if candidate is not None and matches_any(candidate, task.answers.all):
            return Score(
                scorer=self.name,
                value=1.0,
                correct=True,
                exact_match=True,
                extracted=extracted,
                reason="right: equals an acceptable answer (exact match, no judge asked)",
                details=self._both(task, prediction, None, None),
            )
        shown = judge_input(prediction, rules)
        if not shown:
            return Score(
                scorer=self.name,
                value=0.0,
                correct=False,
                exact_match=False,
                extracted=extracted,
                reason="wrong: the output is empty",
                details={"reason": "empty output", **self._both(task, prediction, None, None)},
            )
        call = await self.judge.judge(task.question, shown, task.answers.label)
        if rules.verdict == "reference":
            first = call.replies[0] if call.replies else None
            correct: bool | None = first is not None and reference_verdict(first) == "correct"
        else:
            correct = None if call.verdict is None else call.verdict == "correct"
        return Score(
            scorer=self.name,
            value=1.0 if correct else 0.0,
            correct=correct,
            exact_match=False,
            extracted=extracted,
            judge_input=shown,
            judges=[call],
            error=call.error if correct is None else None,
            reason=(
                "undecided: the judge gave no verdict"
                if correct is None
                else f"{'right' if correct else 'wrong'}: the judge ({call.judge}) said so; "
                "no exact match"
            ),
            details=self._both(task, prediction, shown, call),
        )


class MajorityVote:
    """Several judges decide independently; the verdict is the strict majority of all judges.

    Omni-DeepSearch (§4.2) uses three judges and a majority vote. Each judge sees the ``<answer>``
    span, or the last ``words`` words when there is none. A judge error counts as no vote, so with
    three judges two agreeing verdicts decide; with no strict majority the task is undecided
    (``correct=None``) rather than wrong.
    """

    name = "majority_vote"

    def __init__(self, judges: Sequence[LLMJudge | Model], *, words: int = 20) -> None:
        if not judges:
            raise ValueError("a majority vote needs at least one judge")
        self.judges = [_as_judge(j) for j in judges]
        self.words = words

    async def score(self, task: Task, prediction: str) -> Score:
        """Ask every judge at once and count the votes."""
        extracted = extract_answer(prediction)
        judge_input = extracted or last_words(prediction, self.words)
        exact = extracted is not None and matches_any(extracted, task.answers.all)
        if not judge_input:
            return Score(
                scorer=self.name,
                value=0.0,
                correct=False,
                exact_match=False,
                extracted=extracted,
                details={"reason": "empty output"},
            )
        calls = await asyncio.gather(
            *(j.judge(task.question, judge_input, task.answers.label) for j in self.judges)
        )
        yes = sum(c.verdict == "correct" for c in calls)
        no = sum(c.verdict == "incorrect" for c in calls)
        total = len(calls)
        correct = True if 2 * yes > total else False if 2 * no > total else None
        error = None
        if correct is None:
            error = f"no majority: {yes} correct, {no} incorrect, {total - yes - no} judge errors"
        return Score(
            scorer=self.name,
            value=1.0 if correct else 0.0,
            correct=correct,
            exact_match=exact,
            extracted=extracted,
            judge_input=judge_input,
            judges=list(calls),
            error=error,
            details={"votes_correct": float(yes), "votes_incorrect": float(no)},
        )

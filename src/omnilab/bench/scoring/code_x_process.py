"""``code-x-process``: the step-level process judge of Code-X (papers/001, Appendix G, Table 9).

A judge model replays the trajectory under the Table 9 rubric with error propagation and gives
each assistant step a reward in {-1, 0, +1}. The rubric judges each step "using only
information visible up to that step (no hindsight)", so there is one judge call per step
(``bench/prompts/code_x_process_step.txt``): it sees the task, the steps before it with their
evidence (user and tool messages), the step itself and the rewards already given (for error
propagation), never the reference, the final answer or anything after the step. A wrong answer
then gets its primary error type (the six failure modes) from one more call that sees the whole
trajectory, the reference and the answer (``code_x_process_error.txt``): that is a verdict on
the finished run, where hindsight is the point.

The rewards are written as ``StepScore`` events (``target_id``: the model call of the step,
``name``: ``process_reward``) to ``<trajectory>.process.jsonl`` beside the trajectory, replaced
on each scoring; the score's ``value`` is the mean step reward and ``correct`` says whether no
step was harmful (-1).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from omnilab.bench.run_dir import write_atomic
from omnilab.bench.scoring.base import Score, extract_answer, matches_any
from omnilab.bench.task import Task
from omnilab.bench.templates import render
from omnilab.content import Text
from omnilab.models import Message, Model
from omnilab.textcut import cut_text
from omnilab.trajectory import EventAdapter, StepScore, Trajectory

__all__ = ["ERROR_TYPES", "ProcessJudge", "step_transcripts", "transcript"]

ERROR_TYPES = (
    "Audio Perception and Extraction Error",
    "Video Perception and Extraction Error",
    "Insufficient Exploration of Modal Content",
    "Knowledge Retrieval and Factual Error",
    "Logical Reasoning and Calculation Error",
    "Tool and Environment Infrastructure Failure",
)
"""The six failure modes of §2.2 / Appendix G."""

_EVIDENCE_CHARS = 1500
_JSON = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def _blocks(messages: list[Message]) -> list[tuple[int, str]]:
    """Each message as the judge reads it, with the number of assistant steps up to it."""
    blocks: list[tuple[int, str]] = []
    step = 0
    for message in messages:
        if message.role == "system":
            continue
        body = "\n".join(
            p.text if isinstance(p, Text) else f"[{p.type}]" for p in message.content
        ).strip()
        if message.role == "assistant":
            step += 1
            calls = [
                f"-> {c.name}({json.dumps(c.arguments, ensure_ascii=False)})"
                for c in message.tool_calls
            ]
            text = f"### Step {step} (assistant)\n" + "\n".join(x for x in [body, *calls] if x)
            blocks.append((step, text))
        else:
            blocks.append((step, f"[{message.role}] {cut_text(body, _EVIDENCE_CHARS)}"))
    return blocks


def transcript(messages: list[Message]) -> tuple[str, int]:
    """The whole conversation as the judge reads it, and the number of assistant steps."""
    blocks = _blocks(messages)
    return "\n\n".join(b for _, b in blocks), max((n for n, _ in blocks), default=0)


def step_transcripts(messages: list[Message]) -> list[str]:
    """For each assistant step, what was visible up to it: every message before it and the
    step itself (not the tool results it produced, not later steps)."""
    blocks = _blocks(messages)
    count = max((n for n, _ in blocks), default=0)
    out: list[str] = []
    for k in range(1, count + 1):
        end = next(i for i, (n, _) in enumerate(blocks) if n == k)
        out.append("\n\n".join(b for _, b in blocks[: end + 1]))
    return out


def _json(reply: str, what: str) -> dict[str, object]:
    found = _JSON.findall(reply)
    raw = found[-1] if found else reply[reply.find("{") : reply.rfind("}") + 1]
    try:
        data = json.loads(raw)
    except ValueError:
        raise ValueError(f"the process judge's reply for {what} holds no JSON object") from None
    if not isinstance(data, dict):
        raise ValueError(f"the process judge's reply for {what} is not a JSON object")
    return data


def _reward(reply: str, step: int) -> int:
    reward = _json(reply, f"step {step}").get("reward")
    if isinstance(reward, bool) or reward not in (-1, 0, 1):
        raise ValueError(
            f"the process judge gave step {step} the reward {reward!r}, not -1, 0 or 1"
        )
    assert isinstance(reward, int)
    return reward


class ProcessJudge:
    """The Code-X step-level process judge (see the module docstring)."""

    name = "code-x-process"
    needs_trajectory = True

    def __init__(self, judge: Model) -> None:
        self.judge = judge

    async def _ask(self, prompt: str) -> str:
        return (await self.judge.generate([Message.user(prompt)])).text

    async def score(
        self, task: Task, prediction: str, *, trajectory: Trajectory | None = None
    ) -> Score:
        """Step rewards for ``trajectory``; written beside it as ``StepScore`` events."""
        if trajectory is None:
            raise ValueError("code-x-process needs the run's trajectory")
        messages = trajectory.messages()
        prefixes = step_transcripts(messages)
        if not prefixes:
            raise ValueError("the trajectory has no assistant step to judge")
        rewards: list[int] = []
        # One call per step, in order: a step's prompt shows the rewards of the steps before it.
        for k, prefix in enumerate(prefixes, start=1):
            earlier = " ".join(f"step {i}: {r:+d}" for i, r in enumerate(rewards, start=1))
            prompt = render(
                "code_x_process_step",
                step=str(k),
                question=task.question,
                earlier=earlier or "(none: this is the first step)",
                transcript=prefix,
            )
            rewards.append(_reward(await self._ask(prompt), k))
        answer = extract_answer(prediction) or ""
        correct_answer = bool(answer) and matches_any(answer, task.answers.all)
        primary = None if correct_answer else await self._primary_error(task, answer, messages)
        calls = [
            c for c in trajectory.model_calls if c.role in (None, "agent") and c.output is not None
        ]
        events = [
            StepScore(
                target_id=calls[i].id if i < len(calls) else f"step-{i + 1}",
                value=float(r),
                name="process_reward",
                details={"step": i + 1, "judge": self.judge.name},
            )
            for i, r in enumerate(rewards)
        ]
        if trajectory.path is not None:
            _write(trajectory.path.with_suffix(".process.jsonl"), events)
        return Score(
            scorer=self.name,
            value=round(sum(rewards) / len(rewards), 6),
            correct=all(r >= 0 for r in rewards),
            extracted=answer or None,
            details={
                "steps": " ".join(f"{r:+d}" for r in rewards),
                "harmful_steps": float(sum(1 for r in rewards if r < 0)),
                "primary_error": primary,
            },
        )

    async def _primary_error(self, task: Task, answer: str, messages: list[Message]) -> str | None:
        """The failure mode of a wrong answer (one of :data:`ERROR_TYPES`, else ``None``)."""
        text, count = transcript(messages)
        prompt = render(
            "code_x_process_error",
            question=task.question,
            reference=task.answers.label,
            answer=answer or "(none)",
            count=str(count),
            transcript=text,
        )
        primary = _json(await self._ask(prompt), "the error type").get("primary_error")
        return primary if isinstance(primary, str) and primary in ERROR_TYPES else None


def _write(path: Path, events: list[StepScore]) -> None:
    write_atomic(path, "".join(EventAdapter.dump_json(e).decode() + "\n" for e in events))

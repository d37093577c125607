"""``code-x-process``: the step-level process judge of Code-X (papers/001, Appendix G, Table 9).

A judge model replays the trajectory (assistant steps numbered; user and tool messages as
evidence) under the Table 9 rubric with error propagation (``bench/prompts/
code_x_process_judge.txt``) and gives each assistant step a reward in {-1, 0, +1}, plus the
primary error type of a wrong answer (the six failure modes). The rewards are written as
``StepScore`` events (``target_id``: the model call of the step, ``name``:
``process_reward``) to ``<trajectory>.process.jsonl`` beside the trajectory, replaced on each
scoring; the score's ``value`` is the mean step reward and ``correct`` says whether no step was
harmful (-1).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from omnilab.bench.scoring.base import Score, extract_answer, matches_any
from omnilab.bench.task import Task
from omnilab.bench.templates import render
from omnilab.content import Text
from omnilab.models import Message, Model
from omnilab.trajectory import EventAdapter, StepScore, Trajectory

__all__ = ["ERROR_TYPES", "ProcessJudge", "transcript"]

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


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[: limit // 2]}\n[...]\n{text[-limit // 2 :]}"


def transcript(messages: list[Message]) -> tuple[str, int]:
    """The conversation as the judge reads it, and the number of assistant steps."""
    lines: list[str] = []
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
            lines.append(
                f"### Step {step} (assistant)\n" + "\n".join(x for x in [body, *calls] if x)
            )
        else:
            lines.append(f"[{message.role}] {_cut(body, _EVIDENCE_CHARS)}")
    return "\n\n".join(lines), step


def _parse(reply: str, count: int) -> tuple[list[int], str | None]:
    found = _JSON.findall(reply)
    raw = found[-1] if found else reply[reply.find("{") : reply.rfind("}") + 1]
    try:
        data = json.loads(raw)
    except ValueError:
        raise ValueError("the process judge's reply holds no JSON object") from None
    steps = data.get("steps") if isinstance(data, dict) else None
    if not isinstance(steps, list):
        raise ValueError("the process judge's reply has no 'steps' list")
    rewards: dict[int, int] = {}
    for item in steps:
        if (
            isinstance(item, dict)
            and isinstance(item.get("step"), int)
            and item.get("reward") in (-1, 0, 1)
        ):
            rewards[item["step"]] = int(item["reward"])
    if sorted(rewards) != list(range(1, count + 1)):
        raise ValueError(f"the process judge scored steps {sorted(rewards)}, not 1..{count}")
    primary = data.get("primary_error")
    return [rewards[k] for k in range(1, count + 1)], primary if primary in ERROR_TYPES else None


class ProcessJudge:
    """The Code-X step-level process judge (see the module docstring)."""

    name = "code-x-process"
    needs_trajectory = True

    def __init__(self, judge: Model) -> None:
        self.judge = judge

    async def score(
        self, task: Task, prediction: str, *, trajectory: Trajectory | None = None
    ) -> Score:
        """Step rewards for ``trajectory``; written beside it as ``StepScore`` events."""
        if trajectory is None:
            raise ValueError("code-x-process needs the run's trajectory")
        messages = trajectory.messages()
        text, count = transcript(messages)
        if count == 0:
            raise ValueError("the trajectory has no assistant step to judge")
        answer = extract_answer(prediction) or ""
        prompt = render(
            "code_x_process_judge",
            question=task.question,
            reference=task.answers.label,
            answer=answer or "(none)",
            count=str(count),
            transcript=text,
        )
        reply = (await self.judge.generate([Message.user(prompt)])).text
        rewards, primary = _parse(reply, count)
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
        correct_answer = bool(answer) and matches_any(answer, task.answers.all)
        return Score(
            scorer=self.name,
            value=round(sum(rewards) / len(rewards), 6),
            correct=all(r >= 0 for r in rewards),
            extracted=answer or None,
            details={
                "steps": " ".join(f"{r:+d}" for r in rewards),
                "harmful_steps": float(sum(1 for r in rewards if r < 0)),
                "primary_error": None if correct_answer else primary,
            },
        )


def _write(path: Path, events: list[StepScore]) -> None:
    lines = "".join(EventAdapter.dump_json(e).decode() + "\n" for e in events)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(lines, encoding="utf-8")
    tmp.replace(path)

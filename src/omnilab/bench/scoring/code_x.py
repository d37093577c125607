"""``code-x-reward``: the process-aware verifiable reward of Code-X (papers/001, §3.2, H.1).

For a rollout tau of task x::

    R = 0                                   if tau is removed (no <answer>, and the exit was a
                                            timeout, the step limit or a context overflow)
    R = base(tau) + r_mod(tau) + r_tool(tau) otherwise

- base: ``w_correct`` (1.0) if gated-correct (normalised exact match against the answer set, the
  task's modalities engaged, at least one tool call, no escape attempt); else ``w_fmt+`` (0.2)
  for a clean ``task_complete`` exit with a non-empty ``<answer>``; else ``w_fmt-`` (-0.2).
- r_mod: ``w_mod`` (-0.3) when the task has video (or audio) and no command that ran used a tool
  of the video-or-image (or audio) universe. Charged once, whichever is missing.
- r_tool: ``-w_tool * P_bad`` with ``P_bad = (n_unparseable + n_disallowed + n_escape +
  n_syntax_fail) / (1 + n_tool)``; an unparseable call is counted once and skips the other checks.

It reads the trajectory (``needs_trajectory``), so ``omnilab score RUN --scorer code-x-reward``
re-scores any run; the checks are in :mod:`.code_x_rules`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omnilab.agents.answer import looks_like_tool_call
from omnilab.bench.scoring.base import Score, extract_answer, matches_any
from omnilab.bench.scoring.code_x_rules import (
    ALLOWED_TOOLS,
    AUDIO_TOOLS,
    IMAGE_TOOLS,
    VIDEO_TOOLS,
    WEIGHTS,
    escapes,
    matches_universe,
    syntax_failed,
    uses_network,
)
from omnilab.bench.task import Task
from omnilab.trajectory import StepNote, Trajectory

__all__ = ["CodeXReward", "ToolAudit", "audit_tools", "exit_reason"]

_REMOVED_EXITS = frozenset({"timeout", "step_limit", "context_overflow"})


@dataclass
class ToolAudit:
    """The tool calls of one trajectory, as the reward counts them."""

    n_tool: int = 0
    unparseable: int = 0
    disallowed: int = 0
    escape: int = 0
    syntax_fail: int = 0
    commands: list[str] = field(default_factory=list)
    """Keystrokes of the execute_commands calls that ran, in order."""
    images_read: int = 0
    escapes: list[str] = field(default_factory=list)

    @property
    def p_bad(self) -> float:
        bad = self.unparseable + self.disallowed + self.escape + self.syntax_fail
        return bad / (1 + self.n_tool)


def audit_tools(trajectory: Trajectory, workspace: str | None = None) -> ToolAudit:
    """Counts the bad-tool categories of H.1 over the trajectory's tool results (and the calls
    a model wrote as text that could not be parsed)."""
    audit = ToolAudit()
    for message in trajectory.messages():
        written = message.role == "assistant" and not message.tool_calls
        if written and looks_like_tool_call(message.text):
            audit.n_tool += 1
            audit.unparseable += 1
    for event in trajectory.tool_results:
        audit.n_tool += 1
        error = event.result.error
        if (
            error is not None
            and error.code == "INVALID_ARGS"
            and "not a JSON object" in error.message
        ):
            audit.unparseable += 1  # never ran: the other checks are skipped
            continue
        if event.name not in ALLOWED_TOOLS:
            audit.disallowed += 1
            continue
        if event.name == "image_read" and error is None:
            audit.images_read += 1
        ran = event.name == "execute_commands" and event.result.metadata.get("ran") is True
        if not ran:
            continue
        command = str(event.arguments.get("keystrokes", ""))
        audit.commands.append(command)
        if uses_network(command):
            audit.disallowed += 1
        found = escapes(command, workspace)
        if found:
            audit.escape += 1
            audit.escapes.extend(found)
        if syntax_failed(event.result.text):
            audit.syntax_fail += 1
    return audit


def exit_reason(trajectory: Trajectory) -> str:
    """How the rollout ended: the coder agent's ``exit`` note, else read from the status."""
    for event in reversed(trajectory.events):
        if isinstance(event, StepNote) and event.label == "exit":
            return event.text
    status = trajectory.status
    if status == "budget":
        return "step_limit"
    if status == "answered":
        calls = trajectory.tool_results
        return "completion" if calls and calls[-1].name == "task_complete" else "no_tool_call"
    return "runtime_error"


def _kinds(task: Task) -> set[str]:
    return {str(f.kind) for f in task.files}


class CodeXReward:
    """The Code-X reward of one rollout (see the module docstring); ``value`` is R."""

    name = "code-x-reward"
    needs_trajectory = True

    async def score(
        self, task: Task, prediction: str, *, trajectory: Trajectory | None = None
    ) -> Score:
        """R for ``trajectory``; the gated verdict is ``correct``, the parts are in ``details``."""
        if trajectory is None:
            raise ValueError("code-x-reward needs the run's trajectory")
        start = trajectory.run_start
        workspace = (
            str(start.config.get("workspace")) if start and start.config.get("workspace") else None
        )
        audit = audit_tools(trajectory, workspace)
        answer = extract_answer(prediction)
        reason = exit_reason(trajectory)
        exact = bool(answer) and matches_any(answer or "", task.answers.all)
        kinds = _kinds(task)
        video_ok = (
            "video" not in kinds
            or audit.images_read > 0
            or matches_universe(audit.commands, VIDEO_TOOLS + IMAGE_TOOLS)
        )
        audio_ok = "audio" not in kinds or matches_universe(audit.commands, AUDIO_TOOLS)
        engaged = video_ok and audio_ok
        gated = exact and engaged and audit.n_tool >= 1 and audit.escape == 0
        removed = not answer and reason in _REMOVED_EXITS
        clean = reason == "completion" and bool(answer)
        if gated:
            base = WEIGHTS["correct"]
        elif clean:
            base = WEIGHTS["fmt_plus"]
        else:
            base = WEIGHTS["fmt_minus"]
        r_mod = 0.0 if engaged else WEIGHTS["mod"]
        r_tool = -WEIGHTS["tool"] * audit.p_bad
        value = 0.0 if removed else base + r_mod + r_tool
        return Score(
            scorer=self.name,
            value=round(value, 6),
            correct=gated,
            exact_match=exact,
            extracted=answer,
            details={
                "removed": "yes" if removed else "no",
                "exit_reason": reason,
                "base": base,
                "r_mod": r_mod,
                "r_tool": round(r_tool, 6) + 0.0,  # no "-0.0"
                "p_bad": round(audit.p_bad, 6),
                "n_tool": float(audit.n_tool),
                "n_unparseable": float(audit.unparseable),
                "n_disallowed": float(audit.disallowed),
                "n_escape": float(audit.escape),
                "n_syntax_fail": float(audit.syntax_fail),
                "escapes": ", ".join(audit.escapes[:5]) or None,
            },
        )

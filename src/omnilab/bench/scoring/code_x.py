"""``code-x-reward``: the process-aware verifiable reward of Code-X (papers/001, §3.2, H.1).

For a rollout tau of task x::

    R = 0                                   if tau is removed (no <answer> was ever emitted, and
                                            the exit was a timeout, the step limit or a context
                                            overflow)
    R = base(tau) + r_mod(tau) + r_tool(tau) otherwise

- the answer: the last ``<answer>`` wrapper the model emitted in any turn (its text or the
  ``task_complete`` argument), as the authors' grader reads it (``extract_answer_from_messages``
  in Dongping-Chen/OmniCoding ``rl/reward.py``); a reply without the wrapper is no answer
  (Appendix I.1), so a run stopped at the step limit after a wrapped answer keeps it;
- base: ``w_correct`` (1.0) if gated-correct (normalised exact match against the answer set, the
  task's modalities engaged, at least one tool call, no escape attempt); else ``w_fmt+`` (0.2)
  for a clean ``task_complete`` exit with a non-empty ``<answer>``; else ``w_fmt-`` (-0.2).
- r_mod: ``w_mod`` (-0.3) when the task has video (or audio) and no command that ran used a tool
  of the video-or-image (or audio) universe. Charged once, whichever is missing.
- r_tool: ``-w_tool * P_bad`` with ``P_bad = (n_unparseable + n_disallowed + n_escape +
  n_syntax_fail) / (1 + n_tool)``; an unparseable call is counted once and skips the other checks.
  A call with empty arguments parses (as ``{}``, the authors' grader's reading): it counts as a
  tool call and as nothing bad.

It reads the trajectory (``needs_trajectory``), so ``omnilab score RUN --scorer code-x-reward``
re-scores any run; the checks are in :mod:`.code_x_rules`, the group-level length penalty of
Table 10 in :mod:`.code_x_group`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omnilab.agents.answer import extract_answer, looks_like_tool_call
from omnilab.bench.scoring.base import Score, matches_any
from omnilab.bench.scoring.code_x_rules import (
    ALLOWED_TOOLS,
    WEIGHTS,
    engaged,
    escapes,
    syntax_failed,
    uses_network,
)
from omnilab.bench.task import Task
from omnilab.trajectory import ErrorEvent, StepNote, Trajectory

__all__ = ["CodeXReward", "ToolAudit", "audit_tools", "emitted_answer", "exit_reason"]

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


def emitted_answer(trajectory: Trajectory) -> str | None:
    """The last ``<answer>`` the model emitted in any turn: in its text or in the ``answer``
    argument of a ``task_complete`` call (which, read after the text, wins within a turn);
    ``None`` when it never wrapped one. Tool results are not read (a ``cat`` of a file with an
    answer tag in it is not the model's answer)."""
    found: str | None = None
    for message in trajectory.messages():
        if message.role != "assistant":
            continue
        texts = [message.text] + [
            str(c.arguments.get("answer", "") or "")
            for c in message.tool_calls
            if c.name == "task_complete"
        ]
        for text in texts:
            answer = extract_answer(text)
            if answer is not None:
                found = answer
    return found


def exit_reason(trajectory: Trajectory) -> str:
    """How the rollout ended: the coder agent's ``exit`` note, else read from the status (a run
    the harness stopped at its time limit is a ``timeout``; one whose context overflowed is a
    ``context_overflow``)."""
    for event in reversed(trajectory.events):
        if isinstance(event, StepNote) and event.label == "exit":
            return event.text
    status = trajectory.status
    if status == "error":
        errors = [e for e in trajectory.events if isinstance(e, ErrorEvent)]
        failed = [c for c in trajectory.model_calls if c.error is not None]
        if errors and errors[-1].error_kind == "timeout":
            return "timeout"
        if failed and failed[-1].error_kind == "context_length":
            return "context_overflow"
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
        del prediction  # the answer is read from every turn of the trajectory, not the last
        answer = emitted_answer(trajectory)
        reason = exit_reason(trajectory)
        exact = bool(answer) and matches_any(answer or "", task.answers.all)
        kinds = _kinds(task)
        video_ok = "video" not in kinds or audit.images_read > 0 or engaged(audit.commands, "video")
        audio_ok = "audio" not in kinds or engaged(audit.commands, "audio")
        modality_ok = video_ok and audio_ok
        gated = exact and modality_ok and audit.n_tool >= 1 and audit.escape == 0
        removed = answer is None and reason in _REMOVED_EXITS
        clean = reason == "completion" and bool(answer)
        if gated:
            base = WEIGHTS["correct"]
        elif clean:
            base = WEIGHTS["fmt_plus"]
        else:
            base = WEIGHTS["fmt_minus"]
        r_mod = 0.0 if modality_ok else WEIGHTS["mod"]
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
                "modality_match": "yes" if modality_ok else "no",
                "steps": float(len(trajectory.model_calls)),
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

"""Token sequences rebuilt from a trajectory's token-exact model calls.

Each call's :class:`~omnilab.models.token_trace.TokenTrace` names the sequence its prompt extends;
following those links gives one growing sequence per conversation: the first call's prompt, then
every call's sampled ids (mask 1, their logprobs) and, between them, the template tokens and tool
observations the next prompt added (mask 0, logprob 0). A call whose prompt extends no earlier
call (a purged or rewritten context, another role's context) starts a sequence of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from omnilab.models.events import ModelCallEvent
from omnilab.models.token_trace import TokenTrace

__all__ = ["TokenSequence", "TrajectoryTokenError", "linked", "sequences"]


class TrajectoryTokenError(ValueError):
    """A trajectory's token traces do not link up (a base that no earlier call made)."""


@dataclass
class TokenSequence:
    """One conversation as ids: ``prompt_ids`` then ``response_ids`` with their mask and
    logprobs (same length as ``response_ids``)."""

    tokenizer: str
    prompt_ids: list[int]
    response_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    response_logprobs: list[float] = field(default_factory=list)
    call_ids: list[str] = field(default_factory=list)
    """The trajectory events of the model calls whose samples the sequence holds, in order."""

    @property
    def calls(self) -> int:
        """Model calls whose samples the sequence holds."""
        return len(self.call_ids)

    @property
    def ids(self) -> list[int]:
        """Prompt then response."""
        return [*self.prompt_ids, *self.response_ids]

    def _cut(self, length: int) -> TokenSequence:
        keep = length - len(self.prompt_ids)
        mask = self.response_mask[:keep]
        runs = sum(1 for i, m in enumerate(mask) if m and (i == 0 or not mask[i - 1]))
        return TokenSequence(
            self.tokenizer,
            list(self.prompt_ids),
            self.response_ids[:keep],
            mask,
            self.response_logprobs[:keep],
            self.call_ids[:runs],
        )

    def _add_sample(self, call: str, trace: TokenTrace) -> None:
        self.call_ids.append(call)
        sampled = trace.sampled()
        self.response_ids += sampled
        self.response_mask += [1] * len(sampled)
        self.response_logprobs += trace.sampled_logprobs()

    def _extend(self, call: str, tail: list[int], trace: TokenTrace) -> None:
        self.response_ids += tail
        self.response_mask += [0] * len(tail)
        self.response_logprobs += [0.0] * len(tail)
        self._add_sample(call, trace)


def sequences(calls: Sequence[ModelCallEvent]) -> list[TokenSequence]:
    """The sequences of ``calls`` (in order), one per conversation; calls without a token
    trace (plain or failed calls) are skipped."""
    return linked(
        (call.id, call.output.tokens)
        for call in calls
        if call.output is not None and call.output.tokens is not None
    )


def linked(
    traces: Iterable[tuple[str, TokenTrace]], opened: dict[str, list[int]] | None = None
) -> list[TokenSequence]:
    """The sequences of ``(call id, trace)`` pairs in call order (what
    :func:`~omnilab.trajectory.token_calls.read_token_calls` reads), one per conversation.
    ``opened``: the ids of packed first prompts already unpacked, shared by the calls of many
    trajectories (the samples of a task open with the same prompt); each sequence gets its own
    copy."""
    found: list[TokenSequence] = []
    ends: dict[str, int] = {}  # the digest of each call's sequence -> where it lives in found
    for call_id, trace in traces:
        if trace.base is None:
            if opened is None:
                tail = trace.prompt_tail()
            else:
                known = opened.get(trace.prompt)
                if known is None:
                    known = opened[trace.prompt] = trace.prompt_tail()
                tail = list(known)
            seq = TokenSequence(trace.tokenizer, tail)
            seq._add_sample(call_id, trace)
            found.append(seq)
            ends[trace.sequence] = len(found) - 1
            continue
        tail = trace.prompt_tail()
        at = ends.get(trace.base)
        if at is None:
            raise TrajectoryTokenError(
                f"a call's prompt extends a token sequence ({trace.base}) no earlier call made"
            )
        seq = found[at]
        if len(seq.prompt_ids) + len(seq.response_ids) != trace.base_len:
            # A branch: an earlier point of a sequence that has grown since.
            seq = seq._cut(trace.base_len)
            found.append(seq)
            at = len(found) - 1
        seq._extend(call_id, tail, trace)
        ends[trace.sequence] = at
    return found

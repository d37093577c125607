"""Which model calls a scaffold refused: the turns an SFT export leaves out.

OmniAgent's released SFT filter (HarryHsing/OmniAgent
``inference/results_final_v1/filter_and_export_sft.py``) drops every step whose environment
answer carried an error code: a reply the environment refused is not one to imitate. In a
trajectory that is

* a call followed by a ``StepNote`` whose ``data["error"]`` is set (``ota`` notes every turn
  this way; the note belongs to the latest call of the ``agent`` role, else the latest call),
* a call whose structured reply did not validate (an ``ErrorEvent`` of kind ``format`` in the
  call's context, as ``master`` records one).
"""

from __future__ import annotations

from omnilab.trajectory import ErrorEvent, ModelCall, StepNote, Trajectory

__all__ = ["refused_calls"]


def refused_calls(trajectory: Trajectory) -> set[str]:
    """The ids of the model calls of ``trajectory`` that its scaffold refused."""
    refused: set[str] = set()
    last: str | None = None
    last_agent: str | None = None
    by_context: dict[str | None, str] = {}
    for event in trajectory.events:
        if isinstance(event, ModelCall):
            last = event.id
            if event.role == "agent":
                last_agent = event.id
            by_context[event.context_id] = event.id
        elif isinstance(event, StepNote) and event.data.get("error"):
            target = last_agent or last
            if target is not None:
                refused.add(target)
        elif isinstance(event, ErrorEvent) and event.error_kind == "format":
            call = by_context.get(event.context_id)
            if call is not None:
                refused.add(call)
    return refused

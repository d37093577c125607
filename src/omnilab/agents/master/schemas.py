"""The JSON schemas of the master agent's structured replies.

``MasterReasoningStructure`` and ``MasterDecisionStructure`` are Agent-Omni's own (Lin et al.,
2025), Appendix B, Figure 6 ("The JSON schema of reasoning stage output") and Figure 7 ("The
JSON schema of decision stage output"), copied verbatim: class names, field names, types and
descriptions. The reasoning schema's ``agent_name`` description is an f-string over the agent
pool in the paper, so that class is built per run by :func:`reasoning_structure`.

The paper prints no schema for the perception summary nor for a modality agent's answers;
``InputSummary`` and :func:`answers_schema` are omnilab's (§2.2 says only that perception
"summarizes them into a concise JSON structure, where each modality is represented with a
semantic description", and that execution pairs "each sub-question ... with its corresponding
answer").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, conlist

__all__ = ["InputSummary", "MasterDecisionStructure", "answers_schema", "reasoning_structure"]


def reasoning_structure(available_agent_info: str, *, release: bool = False) -> type[BaseModel]:
    """Figure 6, with the agent pool filled into ``agent_name``'s description; ``release``: the
    released ``src/nodes.py`` wording of that description ("that are most suitable")."""
    verb = "are" if release else "is"

    # --- Figure 6, verbatim ------------------------------------------------------------------
    class MasterReasoningStructure(BaseModel):
        class AgentInstruction(BaseModel):
            agent_name: str = Field(
                description=f"The identifier for the agent (selected from agent pool: {available_agent_info}) that {verb} most suitable for handling this intent."
            )
            questions: conlist(str, min_length=1) = Field(  # type: ignore[valid-type]
                description="A list of specific questions or instructions for this agent."
            )

        user_intent: str = Field(
            description="The user's goal or intention, typically inferred from a multimodal input or query."
        )
        agent_instructions: conlist(AgentInstruction, min_length=1) = Field(  # type: ignore[valid-type]
            description="A list of instructions for each agent, containing the agent name and related questions."
        )

    # -----------------------------------------------------------------------------------------
    return MasterReasoningStructure


# --- Figure 7, verbatim ----------------------------------------------------------------------
class MasterDecisionStructure(BaseModel):
    final_answer: str = Field(
        description="The synthesized answer intended for showing to the end user. If the user's query includes output format requirements, please follow them strictly."
    )
    is_final: bool = Field(
        description="Indicates whether this is a complete and final answer (True), or if more work/follow-up is needed (False)."
    )
    suggestions_for_next_round: conlist(str, min_length=1) = Field(  # type: ignore[valid-type]
        description="You must always include non-empty 'suggestions_for_next_round'. Even if the answer is final, you must still provide suggestions for improvement, validation, or alternative framing."
    )


# -----------------------------------------------------------------------------------------------


class InputSummary(BaseModel):
    """omnilab's perception reply: one input's semantic description (no schema in the paper)."""

    description: str = Field(
        description="A concise semantic description of this input: what it contains, with the "
        "details (people, objects, text, speech, sounds, events and their times) a later "
        "question may need."
    )


def answers_schema(count: int) -> dict[str, Any]:
    """omnilab's execution reply: exactly one answer per sub-question, in the questions' order."""
    return {
        "title": "AgentAnswers",
        "type": "object",
        "properties": {
            "answers": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": count,
                "maxItems": count,
                "description": "One answer per question, in the order the questions were asked.",
            }
        },
        "required": ["answers"],
    }

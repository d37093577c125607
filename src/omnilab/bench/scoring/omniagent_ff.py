"""OmniAgent's free-form (FF) reward as the release computes it (the ``omniagent-release``
scorer's FF branch).

HarryHsing/OmniAgent ``verl/utils/reward_score/omni_agent.py`` ``compute_score_free_form``, which
``video_env.py`` calls for an FF answer: one user message, the consistency prompt with seven
in-context examples (``prompts/omniagent_ff_judge.txt``, verbatim), sent with no sampling
settings; the reply's text after its last ``Judgement:`` scores 1 when it holds a "1" (else 0),
a reply without ``Judgement:`` scores 1 only when it is exactly "1"; an answer of 1,000
characters or more scores 0 whatever the judge says (its guard against judge hacking). The
sample is correct when the reward is above 0.5.
"""

from __future__ import annotations

from omnilab.bench.scoring.base import JudgeCall, Score
from omnilab.bench.scoring.omniagent import CORRECT_ABOVE
from omnilab.bench.task import Task
from omnilab.bench.templates import render
from omnilab.models import GenerateConfig, Message, Model, ModelConfigError, ModelError

__all__ = ["LONG_ANSWER", "OmniAgentFreeForm", "ff_reward"]

LONG_ANSWER = 1000
"""``len(output_ans) >= 1000``: the reward is 0."""


def ff_reward(reply: str, predicted: str) -> float:
    """The release's reward of an FF answer ``predicted`` given the judge's ``reply``."""
    if "Judgement:" in reply:
        reward = 1.0 if "1" in reply.split("Judgement:")[-1].strip() else 0.0
    else:
        reward = 1.0 if reply == "1" else 0.0
    return 0.0 if len(predicted) >= LONG_ANSWER else reward


class OmniAgentFreeForm:
    """The release's FF judge (see the module docstring) with ``judge`` as its model."""

    name = "omniagent-ff"

    def __init__(self, judge: Model) -> None:
        self.judge = judge
        # gpt_api's payload has model, stream and messages only: no sampling, no seed.
        self.config = GenerateConfig(send_seed=False)

    async def score(self, task: Task, prediction: str) -> Score:
        """The reward of ``prediction`` (the answer text) for the FF item ``task``."""
        predicted = prediction.strip()  # video_env.py: pred_text = content.strip()
        prompt = render(
            "omniagent_ff_judge",
            question=task.question,
            standard=task.answers.label,
            predicted=predicted,
        )
        try:
            output = await self.judge.generate([Message.user(prompt)], config=self.config)
        except ModelConfigError:
            raise
        except ModelError as e:
            call = JudgeCall(judge=self.judge.name, replies=[], error=f"judge call failed: {e}")
            return Score(scorer=self.name, value=0.0, correct=None, judges=[call], error=call.error)
        reward = ff_reward(output.text, predicted)
        verdict = "correct" if reward > CORRECT_ABOVE else "incorrect"
        call = JudgeCall(judge=self.judge.name, replies=[output.text], verdict=verdict)
        return Score(
            scorer=self.name,
            value=reward,
            correct=reward > CORRECT_ABOVE,
            extracted=predicted,
            judges=[call],
            details={"reference": reward, "long_answer": float(len(predicted) >= LONG_ANSWER)},
        )

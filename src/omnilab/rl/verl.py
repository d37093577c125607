"""omnilab's agents as verl agent loops: ``omnilab_tir``, ``omnilab_ota``, ``omnilab_coder``,
``omnilab_deepsearch``.

Importing this module registers the loops with verl (``actor_rollout_ref.rollout.agent.
agent_loop_config_path`` can name them, or a dataset row's ``agent_name``). Each run turns the
row into an omnilab task (the last user message of ``raw_prompt`` is the question,
``reward_model.ground_truth`` the answers), runs the scaffold in the sandbox as ``eval`` does,
with its model calls sampled by verl's server manager (``server_manager.generate`` with token
ids: token-in/token-out, the policy's chat template applied with verl's tokenizer through
:class:`~omnilab.models.token_adapter.HFTokenizer`), scores it with the dataset's paper scorer,
and returns the conversation's first token sequence as an ``AgentLoopOutput`` (mask 1 exactly on
the sampled ids, their logprobs there). Needs ``omnilab[verl]``-style installs: verl, torch,
transformers.

Pictures go the way verl's own agent loops send them: with a processor (a vision-language
policy), the chat is rendered by the processor's template, each picture's placeholder expanded by
the processor (:class:`~omnilab.models.token_adapter.HFProcessor`, with verl's
``data.mm_processor_kwargs``), the pictures passed to ``server_manager.generate`` as
``image_data`` and returned in ``AgentLoopOutput.multi_modal_data["images"]`` (all of the
sequence's pictures, in order, as verl's tool agent loop collects them), from which verl's
post-processing computes the model's image inputs. A video reaches the policy as frames (pictures),
as omnilab sends video to a model without video input. The row's own pictures (image blocks of
``raw_prompt``, read by verl's ``process_multi_modal_info``) become the task's image files
``image_1``, ... that the agent reads with its tools. Without a processor, media are refused.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

from omnilab.agents.registry import get_agent
from omnilab.bench.executor import TaskExecutor, TaskJob
from omnilab.bench.rescore import default_scorer, make_scorer
from omnilab.bench.task import AnswerSet, Task
from omnilab.inputs import InputFile
from omnilab.models.model import Model
from omnilab.models.token_adapter import CallbackTokenAdapter, HFProcessor, HFTokenizer
from omnilab.models.tokens import Sampled
from omnilab.models.types import GenerateConfig
from omnilab.rl.sequences import sequences
from omnilab.trajectory.store import read_trajectory

__all__ = [
    "OmnilabAgentLoop",
    "OmnilabCoderLoop",
    "OmnilabDeepSearchLoop",
    "OmnilabOtaLoop",
    "OmnilabTirLoop",
    "row_task",
]


def row_task(row: dict[str, Any], index: str, pictures: Sequence[Path] = ()) -> Task:
    """The omnilab task of a verl dataset row, with ``pictures`` (files) as its images."""
    users = [m for m in row.get("raw_prompt") or [] if m.get("role") == "user"]
    if not users:
        raise ValueError("a verl row without a user message in raw_prompt has no question")
    content = users[-1].get("content")
    question = (
        content
        if isinstance(content, str)
        else " ".join(str(p.get("text", "")) for p in content or [] if p.get("type") == "text")
    )
    truth = (row.get("reward_model") or {}).get("ground_truth", "")
    values = [str(v) for v in truth] if isinstance(truth, list) else [str(truth)]
    return Task(
        id=index,
        dataset=str(row.get("data_source") or "jsonl"),
        question=question,
        answers=AnswerSet(label=values[0], aliases=tuple(values[1:])),
        files=tuple(
            InputFile(id=f"image_{i}", kind="image", path=p, given=p.name)
            for i, p in enumerate(pictures, 1)
        ),
    )


def _sequence_images(ids: list[int], asked: list[tuple[list[int], list[Any]]]) -> list[Any]:
    # The pictures of the longest prompt the sequence continues (a later prompt holds all the
    # pictures of the earlier ones, in order).
    found: list[Any] = []
    longest = -1
    for prompt, images in asked:
        if len(prompt) > longest and ids[: len(prompt)] == prompt:
            found, longest = images, len(prompt)
    return found


class OmnilabAgentLoop(AgentLoopBase):  # type: ignore[misc]
    """An omnilab scaffold (``agent``) as a verl agent loop."""

    agent = "tir"
    agent_options: dict[str, Any] = {}  # noqa: RUF012 -- read-only class default
    tools: list[str] | None = None
    """The tools offered (``None``: the agent's own)."""

    async def _sample(self, ids: list[int], params: dict[str, Any], images: list[Any]) -> Sampled:
        out = await self.server_manager.generate(
            request_id=uuid4().hex,
            prompt_ids=ids,
            sampling_params=params,
            image_data=images or None,
        )
        tokens = [int(t) for t in out.token_ids]
        logprobs = [float(p) for p in out.log_probs] if out.log_probs else [0.0] * len(tokens)
        return Sampled(tokens, logprobs, str(out.stop_reason or "stop"))

    async def _row_pictures(self, row: dict[str, Any], folder: Path) -> list[Path]:
        """The row's pictures as verl's dataset class reads them from ``raw_prompt`` (with a
        processor only), written as PNG files for the task."""
        found = await self.process_multi_modal_info(list(row.get("raw_prompt") or []))
        if found.get("videos") or found.get("audios"):
            raise ValueError("omnilab's verl loops take a row's pictures, not its video or audio")
        paths = []
        for i, picture in enumerate(found.get("images") or [], 1):
            folder.mkdir(parents=True, exist_ok=True)
            paths.append(folder / f"image_{i}.png")
            picture.convert("RGB").save(paths[-1], format="PNG")
        return paths

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """One rollout of the row ``kwargs`` (verl's dataset fields)."""

        asked: list[tuple[list[int], list[Any]]] = []

        async def sample(ids: list[int], config: GenerateConfig, images: list[Any]) -> Sampled:
            params = dict(sampling_params)
            if config.max_tokens is not None:
                params["max_tokens"] = config.max_tokens
            asked.append((ids, images))
            return await self._sample(ids, params, images)

        mm_kwargs: dict[str, Any] = self._get_mm_processor_kwargs()
        backend = (
            HFProcessor(self.processor, self.tokenizer, processor_kwargs=mm_kwargs)
            if self.processor is not None
            else HFTokenizer(self.tokenizer)
        )
        model = Model(CallbackTokenAdapter(backend, sample), name="verl:policy")
        folder = Path(tempfile.mkdtemp(prefix="omnilab-verl-"))
        pictures = await self._row_pictures(kwargs, folder / "media")
        task = row_task(kwargs, str(kwargs.get("index", uuid4().hex[:8])), pictures)
        executor = TaskExecutor(
            agent=get_agent(self.agent, **self.agent_options),
            model=model,
            scorer=make_scorer(default_scorer(task.dataset)),
            tools=list(self.tools) if self.tools is not None else None,
        )
        job = TaskJob(
            task=task,
            sample=0,
            seed=0,
            trajectory=folder / "trajectory.jsonl",
            workspace=folder / "workspace",
        )
        result = await executor.run(job)
        found = sequences(read_trajectory(job.trajectory).model_calls)
        if not found:
            raise RuntimeError(f"the agent made no token-exact call ({result.error})")
        seq = found[0]
        limit = int(self.rollout_config.response_length)
        images = _sequence_images(seq.ids, asked)
        return AgentLoopOutput(
            multi_modal_data={"images": images} if images else {},
            mm_processor_kwargs=mm_kwargs if images else None,
            prompt_ids=seq.prompt_ids,
            response_ids=seq.response_ids[:limit],
            response_mask=seq.response_mask[:limit],
            response_logprobs=seq.response_logprobs[:limit],
            reward_score=result.score.value if result.score is not None else 0.0,
            num_turns=2 * seq.calls,
            metrics=AgentLoopMetrics(),
            extra_fields={"omnilab_trajectory": str(job.trajectory)},
        )


@register("omnilab_tir")
class OmnilabTirLoop(OmnilabAgentLoop):
    """OmniGAIA's tool-integrated reasoning agent."""

    agent = "tir"


@register("omnilab_ota")
class OmnilabOtaLoop(OmnilabAgentLoop):
    """OmniAgent's think-act-observe agent (its purged contexts: the first sequence)."""

    agent = "ota"


@register("omnilab_coder")
class OmnilabCoderLoop(OmnilabAgentLoop):
    """Code-X's coder agent."""

    agent = "coder"


@register("omnilab_deepsearch")
class OmnilabDeepSearchLoop(OmnilabAgentLoop):
    """Omni-DeepSearch's agent."""

    agent = "deepsearch"

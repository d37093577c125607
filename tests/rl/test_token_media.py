"""Pictures in token-exact calls, the way a vision-language processor takes them: the chat's
image blocks render as the processor's placeholders, the processor expands each for its picture,
the sampler gets the pictures of the whole sequence, and a tool result's picture extends the
conversation's one sequence. A video goes as frames. Without a processor, media are refused in
one line. No transformers here: a stand-in processor (tests/rl/hf_standin.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hf_standin import PictureProcessor

from omnilab.content import Image, Video
from omnilab.models.capabilities import Capabilities
from omnilab.models.errors import ProviderError
from omnilab.models.model import Model
from omnilab.models.token_adapter import CallbackTokenAdapter, HFProcessor, HFTokenizer
from omnilab.models.token_media import chat_images, media_chat
from omnilab.models.tokens import Sampled
from omnilab.models.types import GenerateConfig, Message, ToolSpec

LOOK = ToolSpec(
    name="look",
    description="Show a picture.",
    parameters={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
)
CALL = '<tool_call>\n{"name": "look", "arguments": {"id": "image_1"}}\n</tool_call>'


class Policy:
    """A sampler answering a tool call, then a text; it keeps what it was given."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.asked: list[tuple[list[int], list[Any]]] = []

    async def __call__(self, ids: list[int], config: GenerateConfig, images: list[Any]) -> Sampled:
        self.asked.append((ids, images))
        text = CALL if len(self.asked) == 1 else "Red."
        out = [*self.tok.encode(text, add_special_tokens=False), 2]
        return Sampled(out, [-0.5] * len(out), "stop")


def test_a_tool_results_picture_extends_the_sequence(image_file: Path) -> None:
    processor = PictureProcessor()
    policy = Policy(processor.tokenizer)
    adapter = CallbackTokenAdapter(HFProcessor(processor), policy)
    assert adapter.capabilities.image  # agents send the pictures to this policy

    async def run() -> None:
        model = Model(adapter, name="verl:policy")
        msgs = [Message.user("What colour is image_1?")]
        first = await model.generate(msgs, tools=[LOOK])
        seen = Message.tool(first.tool_calls[0].id, "image_1:", Image(path=image_file))
        second = await model.generate([*msgs, first.message, seen], tools=[LOOK])
        assert second.text == "Red."

    asyncio.run(run())
    (ids0, images0), (ids1, images1) = policy.asked
    assert images0 == [] and len(images1) == 1 and images1[0].size == (320, 240)
    sampled = [*processor.tokenizer.encode(CALL, add_special_tokens=False), 2]
    assert ids1[: len(ids0) + len(sampled)] == ids0 + sampled
    tail = ids1[len(ids0) + len(sampled) :]
    # The placeholder expanded for the picture: 10 x 7 blocks of 32 pixels.
    assert tail.count(3) == 70 and 3 not in ids0
    text = processor.tokenizer.decode([t for t in tail if t != 3])
    assert text == "\n<|im_start|>tool\nimage_1:<|im_end|>\n<|im_start|>assistant\n"
    # Only the new message's text and picture went through the processor.
    assert len(processor.calls) == 1 and processor.calls[0][1] == images1
    assert not processor.calls[0][0].startswith("<|im_start|>system")


def test_a_video_goes_as_frames_and_text_only_tokenizers_refuse_media(
    video: Path, image_file: Path
) -> None:
    caps = Capabilities(image=True, video_frames=3, max_image_edge=64)
    asked = media_chat([Message.user("Watch.", Video(path=video))], [], caps)
    (message,) = asked.chat
    kinds = [b["type"] for b in message["content"]]
    assert kinds == ["text", "text", "text", "image", "text", "image", "text", "image"]
    assert message["content"][1]["text"].startswith("[video video.mp4, 0.0-4.0 s: 3 frames]")
    keys = chat_images(asked.chat)
    assert len(asked.images()) == 3 and all(max(p.size) <= 64 for p in asked.images())
    again = media_chat([Message.user("Watch.", Video(path=video))], [], caps)
    # The same picture, the same key (the ledger finds the conversation again), and the picture
    # decoded once for the calls of a conversation.
    assert len(set(keys)) == 3 and keys == chat_images(again.chat)
    assert all(a is b for a, b in zip(asked.images(), again.images(), strict=True))
    tokenizer_only = CallbackTokenAdapter(HFTokenizer(PictureProcessor().tokenizer), Policy(None))
    with pytest.raises(ProviderError, match="media only with a multi-modal processor"):
        asyncio.run(
            tokenizer_only.generate([Message.user(Image(path=image_file))], [], GenerateConfig())
        )

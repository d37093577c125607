"""A stand-in for a Hugging Face ChatML tokenizer (no transformers needed): special tokens by
name, every other character one id. Like SmolLM2's tokenizer read from its GGUF by transformers,
its ``eos_token`` is ``<|im_start|>`` while the template closes a turn with ``<|im_end|>``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|image_pad|>"]
_SPLIT = re.compile("(" + "|".join(re.escape(s) for s in SPECIAL) + ")")


@dataclass(frozen=True)
class Added:
    content: str
    special: bool = True


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        b["text"] if b["type"] == "text" else "<|image_pad|>" for b in content
    )  # a processor's template writes one placeholder per picture


class ChatMLTokenizer:
    """``apply_chat_template``, ``encode``, ``decode`` and the special-token attributes."""

    name_or_path = "standin-chatml"
    eos_token = "<|im_start|>"
    eos_token_id = 1
    all_special_ids = [0, 1]  # noqa: RUF012 -- as transformers lists them: <|im_end|> missing
    added_tokens_decoder = {i: Added(s) for i, s in enumerate(SPECIAL)}  # noqa: RUF012

    def __init__(self, close: str = "<|im_end|>") -> None:
        self.close = close

    def apply_chat_template(
        self, chat: list[dict[str, Any]], *, tokenize: bool, add_generation_prompt: bool
    ) -> str:
        text = "".join(
            f"<|im_start|>{m['role']}\n{_text(m['content'])}{self.close}\n" for m in chat
        )
        return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        ids = [1] if add_special_tokens else []
        for piece in _SPLIT.split(text):
            ids += [SPECIAL.index(piece)] if piece in SPECIAL else [1000 + ord(c) for c in piece]
        return ids

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return "".join(
            ("" if skip_special_tokens else SPECIAL[i]) if i < 1000 else chr(i - 1000) for i in ids
        )


class PictureProcessor:
    """A stand-in for a vision-language ``AutoProcessor``: the tokenizer's template writes one
    ``<|image_pad|>`` per image block and a call expands each into one id per 32x32 pixels of
    its picture (at least one), as Qwen2-VL's processor expands by the picture's grid."""

    def __init__(self) -> None:
        self.tokenizer = ChatMLTokenizer()
        self.calls: list[tuple[str, list[Any]]] = []

    def apply_chat_template(
        self, chat: list[dict[str, Any]], *, tokenize: bool, add_generation_prompt: bool
    ) -> str:
        return self.tokenizer.apply_chat_template(
            chat, tokenize=tokenize, add_generation_prompt=add_generation_prompt
        )

    def __call__(
        self, *, text: list[str], images: list[Any], add_special_tokens: bool = True
    ) -> dict[str, Any]:
        self.calls.append((text[0], list(images)))
        pictures = iter(images)
        ids: list[int] = []
        for t in self.tokenizer.encode(text[0], add_special_tokens=add_special_tokens):
            if t == 3:
                w, h = next(pictures).size
                ids += [3] * max(1, (w // 32) * (h // 32))
            else:
                ids.append(t)
        assert next(pictures, None) is None, "more pictures than placeholders"
        return {"input_ids": [ids]}

"""Token-in/token-out calls to an OpenAI-compatible server (vLLM, SGLang), the chat template
applied on the client side.

The policy's tokenizer (a Hugging Face tokenizer, :class:`HFTokenizer`, or any
:class:`~omnilab.models.tokens.TokenBackend`) renders the conversation; a
:class:`~omnilab.models.tokens.TokenLedger` keeps it one growing sequence; the ids go to the
server's ``/completions`` with the prompt as a list of token ids, asking for the sampled ids
(vLLM's ``return_token_ids``; its ``return_tokens_as_token_ids`` logprob tokens ``token_id:N``
are read too) and one logprob per sampled token. Tools are described in the system prompt and
calls are read back from the text (Hermes ``<tool_call>`` blocks), as for servers without native
tool calls. Text only: media parts are refused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from omnilab.content import Text
from omnilab.models.errors import ErrorKind, ProviderError
from omnilab.models.parsing import postprocess
from omnilab.models.providers.openai import OpenAIAdapter
from omnilab.models.providers.openai_http import ChatHTTP, HTTPStatusError
from omnilab.models.providers.openai_wire import tool_prompt
from omnilab.models.token_trace import TokenTrace
from omnilab.models.tokens import Chat, TokenBackend, TokenLedger
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolSpec, Usage

__all__ = ["HFTokenizer", "ServerTokenAdapter", "exact", "server_chat"]


class HFTokenizer:
    """A Hugging Face tokenizer (anything with ``apply_chat_template``, ``encode`` and
    ``eos_token``) as a :class:`~omnilab.models.tokens.TokenBackend`."""

    def __init__(self, tokenizer: Any, name: str | None = None) -> None:
        self.hf = tokenizer
        self.tokenizer = f"hf:{name or getattr(tokenizer, 'name_or_path', '') or 'tokenizer'}"

    async def render(self, chat: Chat, *, generation: bool) -> tuple[str, bool]:
        """The tokenizer's chat template applied to ``chat`` (it writes its own BOS)."""
        text = self.hf.apply_chat_template(chat, tokenize=False, add_generation_prompt=generation)
        return str(text), True

    async def encode(self, text: str, *, first: bool) -> list[int]:
        """Ids of ``text`` (special tokens in the text parsed as such)."""
        return [int(t) for t in self.hf.encode(text, add_special_tokens=first)]

    async def end_of_turn(self) -> tuple[int, str]:
        """The end-of-sequence id and text."""
        return int(self.hf.eos_token_id), str(self.hf.eos_token)


def server_chat(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Chat:
    """The messages as plain chat dicts for a chat template: tool calls written as Hermes
    ``<tool_call>`` blocks in the assistant's text, tools described in the system prompt."""
    chat: Chat = []
    for m in messages:
        if any(not isinstance(p, Text) for p in m.content):
            raise ProviderError(
                ErrorKind.UNSUPPORTED_MEDIA, "token-exact server calls take text only"
            )
        text = m.text
        if m.role == "assistant" and m.tool_calls:
            blocks = [
                "<tool_call>\n"
                + json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
                + "\n</tool_call>"
                for c in m.tool_calls
            ]
            text = "\n".join([text, *blocks]).strip()
        chat.append({"role": m.role, "content": text})
    if tools:
        described = tool_prompt(tools)
        if chat and chat[0]["role"] == "system":
            chat[0] = {"role": "system", "content": f"{chat[0]['content']}\n\n{described}"}
        else:
            chat.insert(0, {"role": "system", "content": described})
    return chat


def _sampled(choice: dict[str, Any]) -> tuple[list[int], list[float]]:
    logprobs = choice.get("logprobs") or {}
    values = [float(v) if v is not None else 0.0 for v in logprobs.get("token_logprobs") or []]
    ids = choice.get("token_ids")
    if ids is None:
        tokens = logprobs.get("tokens") or []
        if not all(isinstance(t, str) and t.startswith("token_id:") for t in tokens):
            raise ProviderError(
                ErrorKind.BAD_REQUEST,
                "the server returned no token ids (vLLM: return_token_ids, or "
                "return_tokens_as_token_ids with logprobs)",
            )
        ids = [int(t.split(":", 1)[1]) for t in tokens]
    ids = [int(t) for t in ids]
    if len(values) != len(ids):
        raise ProviderError(
            ErrorKind.BAD_REQUEST,
            f"the server returned {len(ids)} token ids but {len(values)} logprobs",
        )
    return ids, values


class ServerTokenAdapter:
    """An OpenAI-compatible endpoint called with token ids through ``/completions``."""

    def __init__(self, plain: OpenAIAdapter, backend: TokenBackend) -> None:
        self.plain = plain
        self.capabilities = plain.capabilities
        self.endpoint = plain.endpoint
        self.secrets = plain.secrets
        self.backend = backend
        self.ledger = TokenLedger(backend)
        self._http = ChatHTTP(plain.base_url, plain._api_key)
        self._http.url = plain.base_url.rstrip("/") + "/completions"

    def _body(self, ids: list[int], config: GenerateConfig) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.plain.model_id,
            "prompt": ids,
            "logprobs": 0,
            "return_token_ids": True,
            "return_tokens_as_token_ids": True,
            "skip_special_tokens": False,
        }
        for field in ("temperature", "top_p", "max_tokens", "stop", "seed"):
            value = getattr(config, field)
            if value is not None:
                body[field] = value
        body.update(config.extra_body)
        return body

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: GenerateConfig
    ) -> ModelOutput:
        """One token-in/token-out call continuing the conversation's sequence."""
        offered = list(tools) if config.tool_choice != "none" else []
        chat = server_chat(messages, offered)
        prompt = await self.ledger.prompt(chat)
        try:
            reply = await self._http.post(
                self._body(prompt.ids, config), timeout_s=config.timeout_s or 120.0
            )
        except HTTPStatusError as e:
            raise ProviderError(
                ErrorKind.BAD_REQUEST, f"/completions refused: {e.detail()}"
            ) from None
        if not isinstance(reply, dict) or not reply.get("choices"):
            raise ProviderError(ErrorKind.SERVER, "the server's /completions reply has no choices")
        choice = reply["choices"][0]
        ids, logprobs = _sampled(choice)
        eot, eot_text = await self.backend.end_of_turn()
        closed = bool(ids) and ids[-1] == eot
        text = str(choice.get("text") or "")
        if closed and text.endswith(eot_text):
            text = text[: -len(eot_text)]
        raw = ModelOutput(
            message=Message(role="assistant", content=[Text(text=text)] if text else []),
            usage=Usage(prompt_tokens=len(prompt.ids), completion_tokens=len(ids)),
            finish_reason=choice.get("finish_reason"),
            response_id=reply.get("id"),
            model=reply.get("model"),
        )
        # Calls are read from the text now, so the conversation the agent continues is the one
        # remembered here (the Model's own pass finds nothing more to do).
        output = postprocess(raw, offered)
        trace = TokenTrace.build(
            self.backend.tokenizer, prompt.ids, ids, logprobs, base_len=prompt.base_len
        )
        answered = server_chat([*messages, output.message], offered)
        self.ledger.remember(answered, [*prompt.ids, *ids], closed=closed)
        return output.model_copy(update={"tokens": trace})


def exact(plain: Any, tokenizer: Any = None) -> ServerTokenAdapter:
    """The token-exact twin of an OpenAI-compatible adapter; ``tokenizer`` is a
    :class:`~omnilab.models.tokens.TokenBackend`, a Hugging Face tokenizer, or the name or
    folder of one (loaded with ``transformers.AutoTokenizer``)."""
    if not isinstance(plain, OpenAIAdapter):
        raise TypeError(f"not an OpenAI-compatible adapter: {type(plain).__name__}")
    if tokenizer is None:
        tokenizer = plain.model_id
    if isinstance(tokenizer, str):
        from transformers import AutoTokenizer  # optional: omnilab[train]

        tokenizer = HFTokenizer(AutoTokenizer.from_pretrained(tokenizer), tokenizer)
    elif not hasattr(tokenizer, "render"):
        tokenizer = HFTokenizer(tokenizer)
    return ServerTokenAdapter(plain, tokenizer)

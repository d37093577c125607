"""Token-in/token-out calls to an OpenAI-compatible server (vLLM, SGLang, llama.cpp's
``llama-server``), the chat template applied on the client side.

The policy's tokenizer (a Hugging Face tokenizer or any
:class:`~omnilab.models.tokens.TokenBackend`) renders the conversation and
:class:`~omnilab.models.token_adapter.TokenAdapter` keeps it one growing sequence; the ids go to
the server's ``/completions`` with the prompt as a list of token ids, asking for the sampled ids
(vLLM's ``return_token_ids``; its ``return_tokens_as_token_ids`` logprob tokens ``token_id:N``
are read too) and one logprob per sampled token. llama.cpp's server returns neither field; it
answers each sampled token's ``id`` and ``logprob`` in ``logprobs.content`` once asked for
probabilities (``n_probs``), which the adapter does for ``llamacpp-server:`` models.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from omnilab.models.errors import ErrorKind, ModelConfigError, ProviderError
from omnilab.models.providers.openai import OpenAIAdapter
from omnilab.models.providers.openai_http import ChatHTTP, HTTPStatusError
from omnilab.models.token_adapter import HFTokenizer, TokenAdapter
from omnilab.models.tokens import Sampled, TokenBackend
from omnilab.models.types import GenerateConfig

__all__ = ["ServerTokenAdapter", "exact"]

_LLAMA_SERVER = "llamacpp-server"


def _sampled(choice: dict[str, Any]) -> tuple[list[int], list[float]]:
    logprobs = choice.get("logprobs") or {}
    values = [float(v) if v is not None else 0.0 for v in logprobs.get("token_logprobs") or []]
    ids = choice.get("token_ids")
    content = logprobs.get("content")
    if (
        ids is None
        and isinstance(content, list)
        and content
        and all(isinstance(e, dict) and "id" in e for e in content)
    ):  # llama.cpp's server: one {"id", "token", "logprob", ...} per sampled token
        ids = [e["id"] for e in content]
        values = [float(e.get("logprob") or 0.0) for e in content]
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


_PLACEHOLDER = "\x00omnilab-prompt-ids\x00"
"""Stands for the prompt in the body dumped as JSON; its JSON text is then replaced by the ids'."""
_PLACEHOLDER_JSON = json.dumps(_PLACEHOLDER)


class _PromptTexts:
    """The JSON text of recent prompts' ids (``json.dumps`` of the list), by the ids.

    Writing a list of ids as JSON costs about 0.1 us an id, the largest part of a token-exact
    call's client work on a short prompt; the samples of one task (an RL group: GRPO's G) send
    the same first prompt, written here once. Prompts longer than ``longest`` ids (a long
    conversation's later turns, never repeated) are written each time and not kept."""

    def __init__(self, *, keep: int = 32, longest: int = 8192) -> None:
        self._keep, self._longest = keep, longest
        self._texts: OrderedDict[tuple[int, ...], str] = OrderedDict()

    def text(self, ids: list[int]) -> str:
        """``json.dumps(ids)``."""
        if len(ids) > self._longest:
            return json.dumps(ids)
        key = tuple(ids)
        found = self._texts.get(key)
        if found is None:
            found = self._texts[key] = json.dumps(ids)
            if len(self._texts) > self._keep:
                self._texts.popitem(last=False)
        else:
            self._texts.move_to_end(key)
        return found


class ServerTokenAdapter(TokenAdapter):
    """An OpenAI-compatible endpoint called with token ids through ``/completions``."""

    def __init__(self, plain: OpenAIAdapter, backend: TokenBackend) -> None:
        super().__init__(backend)
        self.plain = plain
        self._extra: dict[str, Any] = {"n_probs": 1} if plain.provider == _LLAMA_SERVER else {}
        self.capabilities = plain.capabilities
        self.endpoint = plain.endpoint
        self.secrets = plain.secrets
        self._http = ChatHTTP(plain.base_url, plain._api_key)
        self._http.url = plain.base_url.rstrip("/") + "/completions"
        self._prompts = _PromptTexts()

    def _body(self, ids: list[int] | str, config: GenerateConfig) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.plain.model_id,
            "prompt": ids,
            "logprobs": 0,
            "return_token_ids": True,
            "return_tokens_as_token_ids": True,
            "skip_special_tokens": False,
            **self._extra,
        }
        for field in ("temperature", "top_p", "max_tokens", "stop", "seed"):
            value = getattr(config, field)
            if value is not None:
                body[field] = value
        body.update(config.extra_body)
        return body

    def _encoded(self, ids: list[int], config: GenerateConfig) -> bytes:
        """The request body as JSON, byte for byte ``json.dumps(self._body(ids, config))``; the
        prompt's ids written once per distinct prompt (see :class:`_PromptTexts`)."""
        body = self._body(_PLACEHOLDER, config)
        text = json.dumps(body, ensure_ascii=False)
        if body.get("prompt") != _PLACEHOLDER or text.count(_PLACEHOLDER_JSON) != 1:
            # extra_body set the prompt, or the placeholder's text is somewhere else too
            return json.dumps(self._body(ids, config), ensure_ascii=False).encode()
        return text.replace(_PLACEHOLDER_JSON, self._prompts.text(ids), 1).encode()

    async def sample(
        self, ids: list[int], config: GenerateConfig, images: Sequence[Any] = ()
    ) -> Sampled:
        """One ``/completions`` request with a token-id prompt (text only: its tokenizer
        backend refuses pictures before this)."""
        try:
            reply = await self._http.post(
                self._encoded(ids, config), timeout_s=config.timeout_s or 120.0
            )
        except HTTPStatusError as e:
            raise ProviderError(
                ErrorKind.BAD_REQUEST, f"/completions refused: {e.detail()}"
            ) from None
        if not isinstance(reply, dict) or not reply.get("choices"):
            raise ProviderError(ErrorKind.SERVER, "the server's /completions reply has no choices")
        choice = reply["choices"][0]
        sampled, logprobs = _sampled(choice)
        return Sampled(sampled, logprobs, str(choice.get("finish_reason") or "stop"))


def _hf_tokenizer(model: str, name: str) -> Any:
    try:
        from transformers import AutoTokenizer  # optional: omnilab[train]
    except ImportError:
        raise ModelConfigError(
            model,
            "a token-exact server call needs the policy's tokenizer (transformers)",
            advice="pip install 'omnilab[train]', or pass tokenizer= to token_exact",
        ) from None
    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as e:
        raise ModelConfigError(
            model, f"cannot load the tokenizer {name!r} ({e})", advice="pass tokenizer="
        ) from None


def exact(plain: Any, tokenizer: Any = None) -> ServerTokenAdapter:
    """The token-exact twin of an OpenAI-compatible adapter; ``tokenizer`` is a
    :class:`~omnilab.models.tokens.TokenBackend`, a Hugging Face tokenizer, or the name or
    folder of one (loaded with ``transformers.AutoTokenizer``)."""
    if not isinstance(plain, OpenAIAdapter):
        raise TypeError(f"not an OpenAI-compatible adapter: {type(plain).__name__}")
    if tokenizer is None:
        tokenizer = plain.model_id
    if isinstance(tokenizer, str):
        tokenizer = HFTokenizer(_hf_tokenizer(plain.name, tokenizer), tokenizer)
    elif not hasattr(tokenizer, "render"):
        tokenizer = HFTokenizer(tokenizer)
    return ServerTokenAdapter(plain, tokenizer)

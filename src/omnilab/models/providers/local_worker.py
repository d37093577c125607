"""The child process that runs llama.cpp for the ``local`` model (run as a script; it imports
nothing of omnilab).

llama.cpp is native code: a build for another CPU dies with SIGILL, a bad file or a bug with
SIGSEGV, a model too big for the machine is killed by the kernel. In the harness process any of
these would end omnilab (and an evaluation's other tasks) without a word, so llama.cpp is only
ever loaded here, and the parent (:mod:`omnilab.models.providers.local_runtime`) turns the death
of this process into a one-line error.

Protocol: one JSON object per line on stdin, one JSON reply per line on the protocol stream
(the original stdout; fd 1 is pointed at stderr so that native code printing to stdout cannot
corrupt it). A request is ``{"load": {path, n_ctx, threads, logits_all}, "chat": [...],
"schema": JSON text or null, "params": {...}}``; a reply is ``{"result": <completion>}`` or
``{"error": "value" | "grammar", "message": "..."}``. End of input ends the process.

Token-exact calls (:mod:`~omnilab.models.providers.local_tokens`) send ``"op"`` requests instead:
``render`` (the GGUF's chat template applied to ``chat``), ``encode`` (text to ids, special tokens
parsed), ``eot`` (the end-of-generation id and text) and ``sample`` (generate from
``prompt_ids``, replying with the sampled ids and their logprobs under the model's own
distribution).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any, TextIO

__all__ = ["CRASH_ENV", "main"]

CRASH_ENV = "OMNILAB_TEST_LOCAL_CRASH"
"""For tests only: a signal name (``SIGILL``, ``SIGSEGV``, ``SIGKILL``) this process sends itself
before generating, to simulate a runtime built for another CPU, a native bug or the OOM killer."""

_models: dict[tuple[str, int, int | None, bool], Any] = {}
_formatters: dict[tuple[int, bool], Any] = {}


def _simulated_crash() -> None:
    name = os.environ.get(CRASH_ENV)
    if name:
        os.kill(os.getpid(), signal.Signals[name])


def _model(load: dict[str, Any]) -> Any:
    from llama_cpp import Llama

    key = (str(load["path"]), int(load["n_ctx"]), load.get("threads"), bool(load["logits_all"]))
    if key not in _models:
        _models[key] = Llama(
            model_path=key[0], n_ctx=key[1], n_threads=key[2], logits_all=key[3], verbose=False
        )
    return _models[key]


def _formatter(llm: Any, generation: bool) -> Any:
    # Compiling the Jinja template costs more than rendering it: once per model and flag.
    key = (id(llm), generation)
    if key not in _formatters:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ValueError("the GGUF file has no chat template (tokenizer.chat_template)")
        text = llm.detokenize
        _formatters[key] = Jinja2ChatFormatter(
            template=template,
            eos_token=text([llm.token_eos()], special=True).decode(errors="replace"),
            bos_token=text([llm.token_bos()], special=True).decode(errors="replace"),
            add_generation_prompt=generation,
        )
    return _formatters[key]


def _render(llm: Any, request: dict[str, Any]) -> dict[str, Any]:
    out = _formatter(llm, bool(request["generation"]))(messages=request["chat"])
    return {"text": out.prompt, "special": bool(out.added_special)}


def _sample(llm: Any, request: dict[str, Any], grammar: Any) -> dict[str, Any]:
    import numpy as np
    from llama_cpp import llama_get_logits_ith

    params = request["params"]
    prompt = [int(t) for t in request["prompt_ids"]]
    window = llm.n_ctx()
    if len(prompt) >= window:
        raise ValueError(f"Requested tokens ({len(prompt)}) exceed context window of {window}")
    if params.get("seed") is not None:
        llm.set_seed(int(params["seed"]))
    eot = llm.token_eos()
    vocab = llm.n_vocab()
    ids: list[int] = []
    logprobs: list[float] = []
    finish = "length"
    tokens = llm.generate(
        prompt,
        temp=params["temperature"],
        top_p=params["top_p"],
        repeat_penalty=params["repeat_penalty"],
        grammar=grammar,
    )
    for token in tokens:
        # The logits the token was sampled from: the last evaluated position's, read from the
        # context (the model needs no logits kept for every position, ``logits_all``).
        last = np.ctypeslib.as_array(llama_get_logits_ith(llm.ctx, -1), shape=(vocab,))
        row = last.astype(np.float64)
        top = row.max()
        logprobs.append(float(row[token] - top - np.log(np.exp(row - top).sum())))
        ids.append(int(token))
        if token == eot:
            finish = "stop"
            break
        if len(ids) >= params["max_tokens"] or len(prompt) + len(ids) >= window:
            break
    return {"ids": ids, "logprobs": logprobs, "finish_reason": finish}


def _op(request: dict[str, Any], grammar: Any) -> dict[str, Any]:
    llm = _model(request["load"])
    op = request["op"]
    if op == "render":
        return _render(llm, request)
    if op == "encode":
        data = request["text"].encode("utf-8")
        return {"ids": llm.tokenize(data, add_bos=bool(request["first"]), special=True)}
    if op == "eot":
        eot = llm.token_eos()
        return {"id": eot, "text": llm.detokenize([eot], special=True).decode(errors="replace")}
    if op == "decode":
        return {"text": llm.detokenize(request["ids"], special=True).decode(errors="replace")}
    return _sample(llm, request, grammar)


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    from llama_cpp.llama_grammar import LlamaGrammar

    grammar = None
    if request.get("schema") is not None:
        try:
            grammar = LlamaGrammar.from_json_schema(request["schema"], verbose=False)
        except (ValueError, KeyError, TypeError, NotImplementedError) as e:
            return {"error": "grammar", "message": str(e)}
    _simulated_crash()
    try:
        if "op" in request:
            return {"result": _op(request, grammar)}
        llm = _model(request["load"])
        result = llm.create_chat_completion(
            messages=request["chat"], grammar=grammar, **request["params"]
        )
    except ValueError as e:  # a prompt longer than the context, a file llama.cpp cannot load
        return {"error": "value", "message": str(e)}
    return {"result": result}


def serve(requests: TextIO, replies: TextIO) -> None:
    """Answer requests until the input ends."""
    for line in requests:
        if not line.strip():
            continue
        reply = _answer(json.loads(line))
        # llama-cpp-python reports numpy float32 logprobs: JSON numbers here.
        replies.write(json.dumps(reply, default=float) + "\n")
        replies.flush()


def main() -> None:
    """Keep the protocol stream private, then serve stdin."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    serve(sys.stdin, replies)


if __name__ == "__main__":
    main()

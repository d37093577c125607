"""The embedded model's token-exact sampling (the worker's ``sample`` op) reports, for each
sampled id, its logprob under the model's own distribution at that position, without keeping
logits for every position (``logits_all``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from omnilab.models.providers import local_worker
from omnilab.models.providers.local_files import smollm2_path

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(smollm2_path() is None, reason="the [local] extra is not installed"),
]

_TURN = "<|im_start|>user\nName three colours.<|im_end|>\n<|im_start|>assistant\n"


def _result(request: dict[str, Any]) -> dict[str, Any]:
    reply = local_worker._answer(request)
    assert "result" in reply, reply
    result: dict[str, Any] = reply["result"]
    return result


def test_sampled_logprobs_are_the_models_distribution_at_each_position() -> None:
    load = {"path": str(smollm2_path()), "n_ctx": 512, "threads": 1, "logits_all": False}
    prompt = _result({"op": "encode", "load": load, "text": _TURN, "first": True})["ids"]
    params = {"max_tokens": 12, "temperature": 0.8, "top_p": 0.95, "repeat_penalty": 1.0,
              "seed": 7}  # fmt: skip
    request = {"op": "sample", "load": load, "prompt_ids": prompt, "schema": None, "params": params}
    out = _result(request)
    ids = out["ids"]
    assert len(ids) > 1 and len(out["logprobs"]) == len(ids)

    # Reference: the same sequence evaluated token by token (as it was sampled; a batched
    # evaluation rounds differently), logits kept for every position.
    reference = local_worker._model({**load, "logits_all": True})
    reference.reset()
    reference.eval(prompt)
    expected = []
    for token in ids:
        row = np.asarray(reference.scores[reference.n_tokens - 1], np.float64)
        top = row.max()
        expected.append(float(row[token] - top - np.log(np.exp(row - top).sum())))
        reference.eval([token])
    assert out["logprobs"] == pytest.approx(expected, abs=1e-6)

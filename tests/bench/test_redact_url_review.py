"""Issue 42's reviewer: tokens never reach run.json. A model URL may carry its key in the query
(``?api-key=...``, as some gateways take it) as well as in ``user:password@``; run.json kept the
query as written."""

from __future__ import annotations

import pytest

from omnilab.bench.run_dir import redact_url


@pytest.mark.parametrize(
    "name",
    [
        "openai:gpt-4o@https://gw.example/v1?api-key=SECRET123",
        "openai:gpt-4o@https://gw.example/v1?x=1&access_token=SECRET123#f",
        "openai:gpt-4o@https://u:SECRET123@gw.example/v1?key=SECRET123",
    ],
)
def test_no_key_in_a_model_urls_query_or_userinfo(name: str) -> None:
    shown = redact_url(name)
    assert "SECRET123" not in shown
    assert shown.startswith("openai:gpt-4o@https://")


def test_a_plain_model_name_is_unchanged() -> None:
    for name in ("openai:gpt-4o", "vllm:qwen@http://127.0.0.1:8000/v1", "local:smollm2"):
        assert redact_url(name) == name

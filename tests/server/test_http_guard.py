"""``omnilab serve`` is safe by default: each of issue 33's reproductions, tried against a live
server on 127.0.0.1 as an attacker would, is refused with one line, and nothing runs.

1. no token: 401 on every route but /v1/health (``test_http.py``), and a cross-origin form POST
   is refused before the token is even looked at;
2. a client-chosen model URL: refused, and the server's OpenAI key never reaches the listener,
   not even when the operator allowed that URL;
3. client-chosen sandbox settings (and any option off the agent's allow-list): 400 naming it;
4. ``scripted:``/``local:`` file paths from a client: refused, the file never read;
5. unknown Host (DNS rebinding), foreign Origin (CSRF), and runs past --max-concurrent-runs (429).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from test_http import AUTH, TOKEN, client, script, serving

from omnilab.models.fake_server import FakeOpenAIServer
from omnilab.server.http import ClientPolicy
from omnilab.server.policy import ClientChoiceError

SECRET = "sk-servers-own-openai-key-0123456789"


def no_runs(runs: Path) -> bool:
    return not runs.exists() or not any(runs.iterdir())


def detail(reply: httpx.Response) -> str:
    text: str = reply.json()["detail"]
    assert "\n" not in text and "Traceback" not in text
    return text


def test_2_a_client_chosen_model_url_never_gets_the_servers_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>ok</answer>"])
    with FakeOpenAIServer() as evil:
        asked = f"openai:gpt-4o@{evil.base_url}"
        policy = ClientPolicy(model=model, allow_models=("openai:*", "vllm:qwen*"))
        with serving(runs, policy=policy) as url, client(url) as http:
            for name in (
                asked,
                "openai:gpt-4o@http://127.0.0.1:1/v1",
                "vllm:qwen@" + evil.base_url,
            ):
                reply = http.post("/v1/ask", data={"question": "hi", "model": name})
                assert reply.status_code == 400, reply.text
                text = detail(reply)
                assert "is not allowed on this server" in text and "openai:*" in text
                assert "--allow-model" in text
            assert evil.chat_requests == [] and no_runs(runs)
        # The operator allowed that URL by name: the run goes there, but with no key.
        policy = ClientPolicy(model=model, allow_models=(asked,))
        with serving(runs, policy=policy) as url, client(url) as http:
            reply = http.post("/v1/ask", data={"question": "hi", "model": asked, "max_turns": 1})
            assert reply.status_code == 200, reply.text
        assert evil.chat_requests, "the allowed model was called"
        headers = [dict(r.headers) for r in evil.chat_requests]
        assert all(h["authorization"] == "Bearer EMPTY" for h in headers)
        assert SECRET not in json.dumps(headers)


@pytest.mark.parametrize(
    ("agent", "options", "named"),
    [
        ("coder", {"isolation": "process", "network": True}, "isolation"),
        ("coder", {"network": True}, "network"),
        ("coder", {"command_timeout": 99999}, "command_timeout"),
        ("coder", {"skills": "/etc"}, "skills"),
        ("tir", {"mode": "native", "generate": {"extra_body": {"x": 1}}}, "generate"),
        ("deepsearch", {"index_dir": "/"}, "index_dir"),
        ("deepsearch", {"search": "serper"}, "search"),
    ],
)
def test_3_a_client_cannot_choose_the_sandbox_or_other_unsafe_options(
    tmp_path: Path, agent: str, options: dict[str, object], named: str
) -> None:
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>ran</answer>"])
    with serving(runs, model) as url, client(url) as http:
        reply = http.post(
            "/v1/ask",
            data={"question": "q", "agent": agent, "agent_options": json.dumps(options)},
        )
    assert reply.status_code == 400, reply.text
    text = detail(reply)
    assert f"agent option '{named}' cannot be set by a client" in text
    assert "ran" not in text and no_runs(runs)


def test_an_unknown_agent_or_a_body_without_length_writes_nothing(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    with serving(runs, script(tmp_path, ["<answer>x</answer>"])) as url, client(url) as http:
        reply = http.post("/v1/ask", data={"question": "q", "agent": "no-such-agent"})
        assert reply.status_code == 400 and "unknown agent 'no-such-agent'" in detail(reply)
        assert "tir" in detail(reply)

        def chunks() -> Iterator[bytes]:
            yield b"--b\r\nContent-Disposition: form-data; name=question\r\n\r\nq\r\n--b--\r\n"

        headers = {"Content-Type": "multipart/form-data; boundary=b"}
        reply = http.post("/v1/ask", content=chunks(), headers=headers)
        assert reply.status_code == 411 and "Content-Length" in detail(reply)
    assert no_runs(runs)


def test_3_harmless_options_pass_and_turns_are_capped(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>fine</answer>"])
    policy = ClientPolicy(model=model, max_turns=5)
    with serving(runs, policy=policy) as url, client(url) as http:
        ok = http.post(
            "/v1/ask",
            data={"question": "q", "agent_options": '{"mode": "native"}', "max_turns": 5},
        )
        assert ok.status_code == 200 and ok.json()["answer"] == "fine", ok.text
        over = http.post("/v1/ask", data={"question": "q", "max_turns": 6})
        assert over.status_code == 400 and "over this server's cap of 5" in detail(over)
        steps = http.post(
            "/v1/ask",
            data={"question": "q", "agent": "ota", "agent_options": '{"max_steps": 50}'},
        )
        assert steps.status_code == 400 and "'max_steps' = 50" in detail(steps)
    assert len(list(runs.iterdir())) == 1  # only the allowed request ran


def test_4_scripted_or_local_file_paths_from_a_client_are_refused(tmp_path: Path) -> None:
    secret = tmp_path / "root-only.json"
    secret.write_text(json.dumps(["<answer>TOP SECRET CONTENTS</answer>"]))
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>ok</answer>"])
    # Even an operator's catch-all pattern does not admit server-side file paths.
    policy = ClientPolicy(model=model, allow_models=("*", "scripted:*", "local:*"))
    with serving(runs, policy=policy) as url, client(url) as http:
        for name in (f"scripted:{secret}", f"local:{tmp_path}/model.gguf", "local:smollm2"):
            reply = http.post("/v1/ask", data={"question": "q", "model": name})
            assert reply.status_code == 400, reply.text
            assert "is not allowed" in detail(reply) and "TOP SECRET" not in reply.text
    assert no_runs(runs)


def test_5_unknown_hosts_and_foreign_origins_are_refused(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>ok</answer>"])
    form = {"question": "q"}
    with serving(runs, model, hosts=("omni.lan",)) as url:
        port = url.rsplit(":", 1)[1]
        # DNS rebinding: a page on attacker.example whose name now resolves to 127.0.0.1.
        for host in (
            f"attacker.example:{port}",
            "attacker.example",
            f"127.0.0.1.nip.io:{port}",
            f"localhost:{port}@attacker.example",  # not a port: the whole value is the name
            "localhost.",
            "",
        ):
            for path in ("/v1/health", "/v1/runs"):
                reply = httpx.get(f"{url}{path}", headers={**AUTH, "Host": host})
                assert reply.status_code == 403 and "unknown Host" in detail(reply)
        for host in (f"localhost:{port}", f"omni.lan:{port}", f"[::1]:{port}"):
            assert httpx.get(f"{url}/v1/runs", headers={**AUTH, "Host": host}).status_code == 200
        # CSRF: a browser's request from another origin, another port of this host included.
        for headers in (
            {"Origin": "http://attacker.example"},
            {"Origin": "http://127.0.0.1:1"},
            {"Origin": f"https://127.0.0.1:{port}"},
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site"},
        ):
            for auth in ({}, AUTH):  # refused whether or not the page knows the token
                reply = httpx.post(f"{url}/v1/ask", data=form, headers={**auth, **headers})
                assert reply.status_code == 403, headers
                assert "cross-origin request refused" in detail(reply)
        assert no_runs(runs)
        own = {**AUTH, "Origin": url, "Sec-Fetch-Site": "same-origin"}
        assert httpx.post(f"{url}/v1/ask", data=form, headers=own, timeout=60).status_code == 200


def test_5_runs_past_the_limit_get_429_until_one_ends(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    slow = script(tmp_path, [{"timeout": True, "seconds": 60}])
    quick = script(tmp_path, ["<answer>done</answer>"])
    policy = ClientPolicy(model=slow, allow_models=(quick,))
    slow_ask = {"question": "slow?", "stream": "true"}
    with serving(runs, policy=policy, max_concurrent_runs=2) as url, client(url) as http:
        with (
            http.stream("POST", "/v1/ask", data=slow_ask),
            http.stream("POST", "/v1/ask", data=slow_ask),
        ):
            for _ in range(3):
                busy = http.post("/v1/ask", data={"question": "q", "model": quick})
                assert busy.status_code == 429, busy.text
                assert "at most 2 agents at once" in detail(busy)
                assert busy.headers["retry-after"] == "5"
            assert len(list(runs.iterdir())) == 2
        # Both clients left: their runs are cancelled and the slots come back.
        deadline = time.monotonic() + 20
        while True:
            reply = http.post("/v1/ask", data={"question": "q", "model": quick})
            if reply.status_code != 429 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert reply.status_code == 200 and reply.json()["answer"] == "done", reply.text


def test_the_token_is_compared_whole_and_health_needs_none(tmp_path: Path) -> None:
    with serving(tmp_path / "runs") as url:
        assert httpx.get(f"{url}/v1/health").json() == {"status": "ok"}
        for wrong in (TOKEN[:-1], TOKEN + "0", TOKEN.upper(), TOKEN[:1]):
            headers = {"Authorization": f"Bearer {wrong}"}
            assert httpx.get(f"{url}/v1/runs", headers=headers).status_code == 401


def test_the_policy_rules_on_their_own() -> None:
    policy = ClientPolicy(
        model="vllm:a", allow_models=("vllm:qwen*", "openai:gpt-4o@http://gpu:8/v1")
    )
    assert policy.model_for(None) == "vllm:a" and policy.model_for(" ") == "vllm:a"
    assert policy.model_for("vllm:qwen-7b") == "vllm:qwen-7b"
    assert policy.model_for("openai:gpt-4o@http://gpu:8/v1") == "openai:gpt-4o@http://gpu:8/v1"
    for refused in ("vllm:qwen@http://evil:1/v1", "openai:gpt-4o@http://gpu:9/v1", "vllm:b"):
        with pytest.raises(ClientChoiceError, match="allowed: vllm:a, vllm:qwen\\*"):
            policy.model_for(refused)
    # An agent of a plugin takes no options from clients.
    with pytest.raises(ClientChoiceError, match=r"'depth' cannot be set.*takes: none"):
        policy.options_for("my-plugin-agent", {"depth": 3})
    assert policy.options_for("my-plugin-agent", None) == {}
    assert ClientPolicy(max_turns=7).turns_for(None, 50) == 7


def test_turn_options_are_capped_whatever_json_type_they_come_as() -> None:
    # The agents' options would take "20", 20.0 or true (pydantic's lax mode): each is refused
    # here rather than slipping past the cap, which compared integers only.
    policy = ClientPolicy(max_turns=5)
    for value in ("20", 20.0, True, 0, -3, None, [20]):
        with pytest.raises(ClientChoiceError, match=r"'max_rounds' must be a whole number"):
            policy.options_for("master", {"max_rounds": value})
    with pytest.raises(ClientChoiceError, match="over this server's cap of 5"):
        policy.options_for("master", {"max_rounds": 6})
    assert policy.options_for("master", {"max_rounds": 5}) == {"max_rounds": 5}
    assert policy.options_for("ota", {"min_steps": 3}) == {"min_steps": 3}


def test_a_string_turn_option_is_refused_by_a_live_server(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>ok</answer>"])
    with serving(runs, policy=ClientPolicy(model=model, max_turns=5)) as url, client(url) as http:
        options = json.dumps({"max_rounds": "20"})
        form = {"question": "q", "agent": "master", "agent_options": options}
        reply = http.post("/v1/ask", data=form)
        assert reply.status_code == 400 and "'max_rounds' must be a whole number" in detail(reply)
        assert no_runs(runs)


def test_bad_fields_get_one_line_and_the_bearer_scheme_is_case_insensitive(
    tmp_path: Path,
) -> None:
    model = script(tmp_path, ["<answer>ok</answer>"])
    with serving(tmp_path / "runs", model) as url:
        reply = httpx.post(
            f"{url}/v1/ask", data={"question": "q", "max_turns": "many"}, headers=AUTH
        )
        assert reply.status_code == 422
        assert detail(reply).startswith("max_turns: Input should be a valid integer")
        assert "many" not in detail(reply)
        for scheme in ("bearer", "BEARER"):
            headers = {"Authorization": f"{scheme} {TOKEN}"}
            assert httpx.get(f"{url}/v1/runs", headers=headers).status_code == 200


def test_a_pattern_with_a_url_never_admits_another_url_put_into_the_name() -> None:
    # The model layer takes the base URL after the last @: a * at the end of the operator's URL
    # would otherwise span "v1@http://evil/x" and send the run to http://evil/x.
    policy = ClientPolicy(model="vllm:a", allow_models=("vllm:*@http://gpu:8000/*",))
    assert policy.model_for("vllm:qwen@http://gpu:8000/v1") == "vllm:qwen@http://gpu:8000/v1"
    for refused in (
        "vllm:qwen@http://gpu:8000/v1@http://evil.example/x",
        "vllm:qwen@http://evil.example/v1",
        "vllm:qwen",
    ):
        with pytest.raises(ClientChoiceError, match="is not allowed on this server"):
            policy.model_for(refused)


def test_deeply_nested_agent_options_get_a_400_not_a_500(tmp_path: Path) -> None:
    """Issue 42: JSON nested past the parser's recursion was a 500 (RecursionError)."""
    runs = tmp_path / "runs"
    with serving(runs, script(tmp_path, ["<answer>x</answer>"])) as url, client(url) as http:
        for nested in ("[" * 100_000, '{"a":' * 50_000 + "1" + "}" * 50_000, "[" * 17 + "]" * 17):
            reply = http.post("/v1/ask", data={"question": "q", "agent_options": nested})
            assert reply.status_code == 400, reply.text
            assert "nested deeper than 16 levels" in detail(reply)
        assert no_runs(runs)
        # Brackets inside strings do not count; a shallow object passes on to the policy.
        text = json.dumps({"mode": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})
        reply = http.post("/v1/ask", data={"question": "q", "agent_options": text})
        assert "nested deeper" not in reply.text


@pytest.mark.parametrize(
    ("command", "named"), [(None, "omnilab serve"), ("omnilab mcp --http", "omnilab mcp --http")]
)
def test_the_401_names_the_command_that_printed_the_token(command: str | None, named: str) -> None:
    """Issue 44.18: ``omnilab mcp --http``'s refusal named ``omnilab serve``."""
    import asyncio

    from omnilab.server.guard import Guard

    async def app(scope: object, receive: object, send: object) -> None:
        raise AssertionError("a refused request reaches no app")

    extra = {} if command is None else {"command": command}
    guard = Guard(app, token="t" * 24, hosts=(), max_upload=1 << 20, **extra)  # type: ignore[arg-type]
    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": "GET", "path": "/mcp", "query_string": b"",
             "headers": [(b"host", b"127.0.0.1:9")]}  # fmt: skip
    asyncio.run(guard(scope, receive, send))  # type: ignore[arg-type]
    assert sent[0]["status"] == 401
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")  # type: ignore[misc]
    assert f"printed by {named} at start" in body.decode()

"""``omnilab serve``: a live server on 127.0.0.1, asked with httpx: uploads, streamed steps,
runs and trajectories, bad and oversized uploads, a token, and a client that leaves mid-run.
The server's operator names the model (a scripted one); clients send the token."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
import uvicorn

from omnilab.media import synth
from omnilab.server.http import ClientPolicy, create_app
from omnilab.trajectory import read_trajectory


class Live:
    def __init__(self, app: object) -> None:
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error")
        )  # type: ignore[arg-type]
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)


def script(tmp_path: Path, steps: list[object]) -> str:
    path = tmp_path / f"script-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(steps))
    return f"scripted:{path}"


TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def serving(runs: Path, model: str | None = None, **options: Any) -> Live:
    """A live server whose operator chose ``model``, with the test token."""
    policy = options.pop("policy", None) or ClientPolicy(model=model)
    return Live(create_app(runs_dir=runs, token=TOKEN, policy=policy, **options))


def client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers=AUTH, timeout=60)


@pytest.fixture()
def image(tmp_path: Path) -> Path:
    return synth.make_image(tmp_path / "photo.png", size=(64, 48), index=2)


def test_ask_with_an_upload_and_read_the_run_back(tmp_path: Path, image: Path) -> None:
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>a square</answer>"])
    with serving(runs, model, media_root=tmp_path, max_upload_mb=1) as url, client(url) as http:
        with image.open("rb") as f:
            reply = http.post(
                "/v1/ask",
                data={"question": "What is shown?"},
                files={"files": ("photo.png", f, "image/png")},
            )
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert (body["answer"], body["status"]) == ("a square", "answered")
        run = runs / body["run"]
        assert (run / "inputs" / "photo.png").is_file() and not (run / "workspace").exists()
        listed = http.get("/v1/runs").json()
        assert {"run": body["run"]} in listed
        info = http.get(f"/v1/runs/{body['run']}").json()
        assert info["question"] == "What is shown?" and info["answer"] == "a square"
        lines = http.get(f"/v1/runs/{body['run']}/trajectory").text.splitlines()
        assert json.loads(lines[-1])["kind"] == "run_end"
        assert http.get(f"{url}/v1/runs/../../etc").status_code == 404
        assert http.get("/v1/runs/..%2F..%2Fetc/trajectory").status_code == 404


def test_streamed_steps_then_the_result(tmp_path: Path) -> None:
    (tmp_path / "media").mkdir()
    synth.make_image(tmp_path / "media" / "pic.png", size=(32, 32), index=1)
    model = script(tmp_path, ["thinking... <answer>4</answer>"])
    kinds: list[str] = []
    result = None
    with (
        serving(tmp_path / "runs", model, media_root=tmp_path) as url,
        client(url) as http,
        http.stream(
            "POST",
            "/v1/ask",
            data={"question": "2+2?", "stream": "true", "paths": "media/pic.png"},
        ) as reply,
    ):
        assert reply.headers["content-type"].startswith("text/event-stream")
        event = None
        for line in reply.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event == "step":
                kinds.append(json.loads(line.removeprefix("data: "))["kind"])
            elif line.startswith("data: ") and event == "result":
                result = json.loads(line.removeprefix("data: "))
    assert kinds[0] == "run_start" and "model_call" in kinds and kinds[-1] == "run_end"
    assert result is not None and result["answer"] == "4"


def test_bad_requests_are_refused_cleanly(tmp_path: Path, image: Path) -> None:
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>x</answer>"])
    with serving(runs, model, media_root=tmp_path, max_upload_mb=1) as url, client(url) as http:
        big = b"\0" * (2 << 20)  # over the 1 MiB limit (and its slack for the form's fields)
        reply = http.post(
            "/v1/ask", data={"question": "q"}, files={"files": ("big.wav", big, "audio/wav")}
        )
        assert reply.status_code == 413 and "larger than the 1 MiB" in reply.json()["detail"]
        # Two uploads under the request's limit together but over it once saved: refused too.
        halves = [("files", (f"half{i}.wav", b"\0" * (700 << 10), "audio/wav")) for i in (1, 2)]
        reply = http.post("/v1/ask", data={"question": "q"}, files=halves)
        assert reply.status_code == 413 and "uploads larger than 1 MiB" in reply.json()["detail"]
        assert not runs.exists() or not any(runs.iterdir())  # the partial run folder is gone
        outside = http.post("/v1/ask", data={"question": "q", "paths": "../../etc/passwd"})
        assert outside.status_code == 400 and "no such file under the media root" in outside.text
        bad_json = http.post("/v1/ask", data={"question": "q", "agent_options": "{nope"})
        assert bad_json.status_code == 400 and "not JSON" in bad_json.text
        with image.open("rb") as f:
            empty = http.post(
                "/v1/ask", data={"question": "  "}, files={"files": ("photo.png", f, "image/png")}
            )
        assert empty.status_code == 400 and "the question is empty" in empty.text
        assert http.post("/v1/ask", data={"model": model}).status_code == 422


def test_a_token_is_required_on_every_route_but_health(tmp_path: Path) -> None:
    with serving(tmp_path / "runs") as url:
        assert httpx.get(f"{url}/v1/health").status_code == 200
        for path in ("/v1/runs", "/v1/runs/x", "/v1/runs/x/trajectory", "/v1/runs/x/report/"):
            refused = httpx.get(f"{url}{path}")
            assert refused.status_code == 401, path
            assert refused.headers["www-authenticate"] == "Bearer"
            assert "missing or wrong bearer token" in refused.json()["detail"]
        assert httpx.post(f"{url}/v1/ask", data={"question": "q"}).status_code == 401
        for wrong in ("Bearer nope", f"Bearer {TOKEN}x", TOKEN, f"Basic {TOKEN}"):
            assert httpx.get(f"{url}/v1/runs", headers={"Authorization": wrong}).status_code == 401
        assert httpx.get(f"{url}/v1/runs", headers=AUTH).status_code == 200


def test_a_client_that_leaves_mid_run_cancels_it(tmp_path: Path, image: Path) -> None:
    runs = tmp_path / "runs"
    model = script(tmp_path, [{"timeout": True, "seconds": 60}])
    with serving(runs, model) as url, client(url) as http:
        with (
            image.open("rb") as f,
            http.stream(
                "POST",
                "/v1/ask",
                data={"question": "slow?", "stream": "true"},
                files={"files": ("photo.png", f, "image/png")},
            ) as reply,
        ):
            for line in reply.iter_lines():
                if line.startswith("data: "):
                    break  # the first step arrived: leave
        deadline = time.monotonic() + 15
        while True:
            (run,) = list(runs.iterdir())
            traj = read_trajectory(run / "trajectory.jsonl")
            if traj.run_end is not None or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert traj.run_end is not None and traj.status == "error"
        assert http.get("/v1/health").status_code == 200  # the server carries on


def test_a_browser_opening_runs_gets_links_to_the_reports(tmp_path: Path) -> None:
    """Issue 44.17: ``/v1/runs?token=...`` in a browser is an HTML index, not bare JSON; API
    clients still get JSON."""
    runs = tmp_path / "runs"
    for name in ("20260101-000000-aaaa", "20260102-000000-bbbb"):
        (runs / name).mkdir(parents=True)
        (runs / name / "trajectory.jsonl").write_text("")
    browser = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
    with serving(runs) as url:
        page = httpx.get(f"{url}/v1/runs?token={TOKEN}", headers=browser)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert '<a href="/v1/runs/20260102-000000-bbbb/report/">' in page.text
        assert page.text.index("bbbb") < page.text.index("aaaa")  # newest first
        assert "set-cookie" in page.headers  # the links then open without the token
        listed = httpx.get(f"{url}/v1/runs", headers=AUTH).json()
        assert [r["run"] for r in listed] == ["20260101-000000-aaaa", "20260102-000000-bbbb"]

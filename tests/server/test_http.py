"""``omnilab serve``: a live server on 127.0.0.1, asked with httpx: uploads, streamed steps,
runs and trajectories, bad and oversized uploads, a token, and a client that leaves mid-run."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
import uvicorn

from omnilab.media import synth
from omnilab.server.http import create_app
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


@pytest.fixture()
def image(tmp_path: Path) -> Path:
    return synth.make_image(tmp_path / "photo.png", size=(64, 48), index=2)


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    runs = tmp_path / "runs"
    app = create_app(runs_dir=runs, media_root=tmp_path, max_upload_mb=1)
    with Live(app) as url:
        yield url, runs


def test_ask_with_an_upload_and_read_the_run_back(
    served: tuple[str, Path], tmp_path: Path, image: Path
) -> None:
    url, runs = served
    model = script(tmp_path, ["<answer>a square</answer>"])
    with image.open("rb") as f:
        reply = httpx.post(
            f"{url}/v1/ask",
            data={"question": "What is shown?", "model": model},
            files={"files": ("photo.png", f, "image/png")},
            timeout=60,
        )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert (body["answer"], body["status"]) == ("a square", "answered")
    run = runs / body["run"]
    assert (run / "inputs" / "photo.png").is_file() and not (run / "workspace").exists()
    listed = httpx.get(f"{url}/v1/runs").json()
    assert {"run": body["run"]} in listed
    info = httpx.get(f"{url}/v1/runs/{body['run']}").json()
    assert info["question"] == "What is shown?" and info["answer"] == "a square"
    lines = httpx.get(f"{url}/v1/runs/{body['run']}/trajectory").text.splitlines()
    assert json.loads(lines[-1])["kind"] == "run_end"
    assert httpx.get(f"{url}/v1/runs/../../etc").status_code == 404


def test_streamed_steps_then_the_result(served: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = served
    (tmp_path / "media").mkdir()
    synth.make_image(tmp_path / "media" / "pic.png", size=(32, 32), index=1)
    model = script(tmp_path, ["thinking... <answer>4</answer>"])
    kinds: list[str] = []
    result = None
    with httpx.stream(
        "POST",
        f"{url}/v1/ask",
        data={"question": "2+2?", "model": model, "stream": "true", "paths": "media/pic.png"},
        timeout=60,
    ) as reply:
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


def test_bad_requests_are_refused_cleanly(
    served: tuple[str, Path], tmp_path: Path, image: Path
) -> None:
    url, runs = served
    model = script(tmp_path, ["<answer>x</answer>"])
    big = b"\0" * (2 << 20)  # over the 1 MiB limit
    reply = httpx.post(
        f"{url}/v1/ask",
        data={"question": "q", "model": model},
        files={"files": ("big.wav", big, "audio/wav")},
        timeout=60,
    )
    assert reply.status_code == 413 and "larger than 1 MiB" in reply.json()["detail"]
    assert not runs.exists() or not any(runs.iterdir())  # the partial run folder is gone
    outside = httpx.post(
        f"{url}/v1/ask", data={"question": "q", "model": model, "paths": "../../etc/passwd"}
    )
    assert outside.status_code == 400 and "no such file under the media root" in outside.text
    bad_json = httpx.post(
        f"{url}/v1/ask", data={"question": "q", "model": model, "agent_options": "{nope"}
    )
    assert bad_json.status_code == 400 and "not JSON" in bad_json.text
    with image.open("rb") as f:
        empty = httpx.post(
            f"{url}/v1/ask",
            data={"question": "  ", "model": model},
            files={"files": ("photo.png", f, "image/png")},
        )
    assert empty.status_code == 400 and "the question is empty" in empty.text
    assert httpx.post(f"{url}/v1/ask", data={"model": model}).status_code == 422


def test_a_token_is_required_when_set(tmp_path: Path) -> None:
    app = create_app(runs_dir=tmp_path / "runs", token="s3cret")
    with Live(app) as url:
        assert httpx.get(f"{url}/v1/health").status_code == 200
        assert httpx.get(f"{url}/v1/runs").status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert httpx.get(f"{url}/v1/runs", headers=wrong).status_code == 401
        right = {"Authorization": "Bearer s3cret"}
        assert httpx.get(f"{url}/v1/runs", headers=right).status_code == 200


def test_a_client_that_leaves_mid_run_cancels_it(
    served: tuple[str, Path], tmp_path: Path, image: Path
) -> None:
    url, runs = served
    model = script(tmp_path, [{"timeout": True, "seconds": 60}])
    with (
        image.open("rb") as f,
        httpx.stream(
            "POST",
            f"{url}/v1/ask",
            data={"question": "slow?", "model": model, "stream": "true"},
            files={"files": ("photo.png", f, "image/png")},
            timeout=60,
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
    assert httpx.get(f"{url}/v1/health").status_code == 200  # the server carries on

"""``omnilab serve`` answers a question about an uploaded video (made with ``omnilab.media.synth``)
and serves the run's report page (``omnilab.report``) with its stylesheet and media, built once
per trajectory state, guarded by the token and confined to the run's report folder."""

from __future__ import annotations

import re
from pathlib import Path

import httpx2 as httpx
from test_http import Live, script

from omnilab.media import synth
from omnilab.server.http import create_app


def test_ask_about_an_uploaded_video_and_read_its_report(tmp_path: Path) -> None:
    clip = synth.make_video(tmp_path / "clip.mp4", duration=2.0, fps=5, size=(96, 64), text="42")
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>the number 42</answer>"])
    with Live(create_app(runs_dir=runs, max_upload_mb=4)) as url:
        with clip.open("rb") as f:
            reply = httpx.post(
                f"{url}/v1/ask",
                data={"question": "Which number is on screen?", "model": model},
                files={"files": ("clip.mp4", f, "video/mp4")},
                timeout=120,
            )
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert (body["answer"], body["status"]) == ("the number 42", "answered")
        run_id = body["run"]
        assert (runs / run_id / "inputs" / "clip.mp4").read_bytes() == clip.read_bytes()
        info = httpx.get(f"{url}/v1/runs/{run_id}").json()
        assert info["report"] == f"/v1/runs/{run_id}/report/"

        page = httpx.get(f"{url}/v1/runs/{run_id}/report", follow_redirects=True, timeout=60)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert str(page.url).endswith(f"/v1/runs/{run_id}/report/")
        assert "Which number is on screen?" in page.text and "the number 42" in page.text
        css = httpx.get(f"{url}/v1/runs/{run_id}/report/assets/report.css")
        assert css.status_code == 200 and "text/css" in css.headers["content-type"]
        media = re.findall(r'(?:src|href)="(media/[^"]+)"', page.text)
        assert media, "the video's frames or the video itself appear in the page"
        got = httpx.get(f"{url}/v1/runs/{run_id}/report/{media[0]}")
        assert got.status_code == 200 and got.content

        built = runs / run_id / "report" / "trajectory.html"
        stamp = built.stat().st_mtime_ns
        assert httpx.get(f"{url}/v1/runs/{run_id}/report/").status_code == 200
        assert built.stat().st_mtime_ns == stamp  # unchanged trajectory: not built again

        for escape in ("..%2Ftrajectory.jsonl", "%2E%2E/inputs/clip.mp4", "nope.html"):
            assert httpx.get(f"{url}/v1/runs/{run_id}/report/{escape}").status_code == 404
        assert httpx.get(f"{url}/v1/runs/no-such-run/report/").status_code == 404


def test_the_report_needs_the_token(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>ok</answer>"])
    auth = {"Authorization": "Bearer s3cret"}
    with Live(create_app(runs_dir=runs, token="s3cret")) as url:
        reply = httpx.post(
            f"{url}/v1/ask", data={"question": "Hi?", "model": model}, headers=auth, timeout=60
        )
        run_id = reply.json()["run"]
        assert httpx.get(f"{url}/v1/runs/{run_id}/report/").status_code == 401
        assert httpx.get(f"{url}/v1/runs/{run_id}/report/", headers=auth).status_code == 200

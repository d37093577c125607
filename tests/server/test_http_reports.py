"""``omnilab serve`` answers a question about an uploaded video (made with ``omnilab.media.synth``)
and serves the run's report page (``omnilab.report``) with its stylesheet and media, built once
per trajectory state, guarded by the token (a header, or the cookie a browser gets by opening a
page once with ``?token=``) and confined to the run's report folder."""

from __future__ import annotations

import re
from pathlib import Path

import httpx2 as httpx
from test_http import AUTH, TOKEN, client, script, serving

from omnilab.media import synth


def test_ask_about_an_uploaded_video_and_read_its_report(tmp_path: Path) -> None:
    clip = synth.make_video(tmp_path / "clip.mp4", duration=2.0, fps=5, size=(96, 64), text="42")
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>the number 42</answer>"])
    with serving(runs, model, max_upload_mb=4) as url, client(url) as http:
        with clip.open("rb") as f:
            reply = http.post(
                f"{url}/v1/ask",
                data={"question": "Which number is on screen?"},
                files={"files": ("clip.mp4", f, "video/mp4")},
                timeout=120,
            )
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert (body["answer"], body["status"]) == ("the number 42", "answered")
        run_id = body["run"]
        assert (runs / run_id / "inputs" / "clip.mp4").read_bytes() == clip.read_bytes()
        info = http.get(f"{url}/v1/runs/{run_id}").json()
        assert info["report"] == f"/v1/runs/{run_id}/report/"

        page = http.get(f"{url}/v1/runs/{run_id}/report", follow_redirects=True, timeout=60)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert str(page.url).endswith(f"/v1/runs/{run_id}/report/")
        assert "Which number is on screen?" in page.text and "the number 42" in page.text
        css = http.get(f"{url}/v1/runs/{run_id}/report/assets/report.css")
        assert css.status_code == 200 and "text/css" in css.headers["content-type"]
        media = re.findall(r'(?:src|href)="(media/[^"]+)"', page.text)
        assert media, "the video's frames or the video itself appear in the page"
        got = http.get(f"{url}/v1/runs/{run_id}/report/{media[0]}")
        assert got.status_code == 200 and got.content
        # The page may not be framed by another site; a copied file opened as a page of its
        # own runs sandboxed (no script next to the API); no response hands on its address.
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        for served in (got, css):
            assert served.headers["content-security-policy"] == "sandbox"
            assert served.headers["x-content-type-options"] == "nosniff"
        for served in (page, got, css, http.get(f"{url}/v1/runs")):
            assert served.headers["referrer-policy"] == "no-referrer", served.url

        built = runs / run_id / "report" / "trajectory.html"
        stamp = built.stat().st_mtime_ns
        assert http.get(f"{url}/v1/runs/{run_id}/report/").status_code == 200
        assert built.stat().st_mtime_ns == stamp  # unchanged trajectory: not built again

        for escape in ("..%2Ftrajectory.jsonl", "%2E%2E/inputs/clip.mp4", "nope.html"):
            assert http.get(f"{url}/v1/runs/{run_id}/report/{escape}").status_code == 404
        assert http.get(f"{url}/v1/runs/no-such-run/report/").status_code == 404


def test_the_report_needs_the_token(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>ok</answer>"])
    with serving(runs, model) as url:
        reply = httpx.post(f"{url}/v1/ask", data={"question": "Hi?"}, headers=AUTH, timeout=60)
        run_id = reply.json()["run"]
        page = f"{url}/v1/runs/{run_id}/report/"
        assert httpx.get(page).status_code == 401
        assert httpx.get(page, headers=AUTH).status_code == 200
        # A wrong token in the address gets nothing, and no cookie, even on the open path.
        for wrong in (f"{page}?token=nope", f"{url}/v1/health?token=nope"):
            got = httpx.get(wrong)
            assert "set-cookie" not in got.headers and TOKEN not in got.text
        assert httpx.get(f"{page}?token=nope").status_code == 401
        # The right one (a browser opening the printed address) sets an HttpOnly, SameSite=Strict
        # cookie that the page's stylesheet and later pages are then served with.
        with httpx.Client() as browser:
            first = browser.get(f"{page}?token={TOKEN}")
            assert first.status_code == 200
            cookie = first.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
            assert browser.get(f"{page}assets/report.css").status_code == 200
            assert browser.get(f"{url}/v1/runs").status_code == 200
        assert httpx.post(f"{page}?token={TOKEN}").status_code == 401  # POST: no query token
        assert httpx.post(f"{url}/v1/ask?token={TOKEN}", data={"question": "q"}).status_code == 401


def test_an_uploaded_html_file_is_served_sandboxed_in_the_report(tmp_path: Path) -> None:
    # The report copies each input into media/ under its own suffix: an uploaded page would be
    # an HTML document of the API's origin, whose script could call the API with the cookie.
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>ok</answer>"])
    hostile = b'<script>fetch("/v1/runs").then(r => r.text()).then(alert)</script>'
    with serving(runs, model) as url, client(url) as http:
        reply = http.post(
            "/v1/ask",
            data={"question": "What is this?"},
            files={"files": ("page.html", hostile, "text/html")},
        )
        run_id = reply.json()["run"]
        page = http.get(f"/v1/runs/{run_id}/report/")
        (copied,) = set(re.findall(r'(?:src|href)="(media/[^"]+\.html)"', page.text))
        served = http.get(f"/v1/runs/{run_id}/report/{copied}")
        assert served.content == hostile
        assert served.headers["content-security-policy"] == "sandbox"

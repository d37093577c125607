"""``omnilab serve`` with inputs at URLs: refused unless the operator allows their prefix
(``--allow-url``), fetched into the media cache when allowed, recorded without a signature."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from omnilab.media import synth
from omnilab.server.http import ClientPolicy

sys.path.insert(0, str(Path(__file__).parent.parent / "media"))
from remote_stores import http_store
from test_http import client, script, serving


@pytest.fixture()
def picture(tmp_path: Path) -> bytes:
    return synth.make_image(tmp_path / "pic.png", size=(32, 32), index=1).read_bytes()


def test_urls_are_refused_without_the_operator_s_allow_list(tmp_path: Path, picture: bytes) -> None:
    model = script(tmp_path, ["<answer>4</answer>"])
    with http_store() as store:
        store.objects["media/pic.png"] = picture
        with serving(tmp_path / "runs", model) as url, client(url) as http:
            reply = http.post(
                "/v1/ask", data={"question": "q", "paths": store.url("media/pic.png")}
            )
        assert reply.status_code == 400
        assert reply.json()["detail"] == (
            "this server takes no URLs as inputs (the operator allows prefixes with --allow-url)"
        )
        policy = ClientPolicy(model=model, allow_urls=(store.url("media/"),))
        with serving(tmp_path / "runs", policy=policy) as url, client(url) as http:
            other = http.post("/v1/ask", data={"question": "q", "paths": store.url("secret.png")})
            assert other.status_code == 400
            assert "is not beneath a URL this server allows" in other.json()["detail"]
            ok = http.post(
                "/v1/ask",
                data={"question": "2+2?", "paths": store.url("media/pic.png", "sig=SIGNED")},
            )
    assert ok.status_code == 200, ok.text
    assert ok.json()["answer"] == "4"
    for path in (tmp_path / "runs").rglob("*"):
        if path.is_file():
            assert b"SIGNED" not in path.read_bytes()
    trajectories = list((tmp_path / "runs").rglob("trajectory.jsonl"))
    assert len(trajectories) == 1
    assert f'"url":"{store.base}/media/pic.png"' in trajectories[0].read_text().replace(" ", "")

"""The browser's way in without a token in any address or command line (issue 42, reproduction
15): ``/login`` is a form; posting the right token sets the HttpOnly cookie and goes on to the
runs; a wrong one, a cross-site post or an oversized form gets nothing."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
from test_http import TOKEN, serving


def test_the_login_form_sets_the_cookie_for_the_right_token_only(tmp_path: Path) -> None:
    with serving(tmp_path / "runs") as url, httpx.Client(base_url=url) as browser:
        form = browser.get("/login")
        assert form.status_code == 200 and 'action="/login"' in form.text
        assert TOKEN not in form.text and "set-cookie" not in form.headers
        assert form.headers["referrer-policy"] == "no-referrer"
        assert browser.get("/v1/runs").status_code == 401
        wrong = browser.post("/login", data={"token": TOKEN[:-1] + "x"})
        assert wrong.status_code == 401 and "set-cookie" not in wrong.headers
        right = browser.post("/login", data={"token": TOKEN}, follow_redirects=False)
        assert right.status_code == 303 and right.headers["location"] == "/v1/runs"
        cookie = right.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert browser.get("/v1/runs").status_code == 200  # the cookie jar carries it now


def test_a_cross_site_or_oversized_login_is_refused(tmp_path: Path) -> None:
    with serving(tmp_path / "runs") as url:
        evil = {"Origin": "http://attacker.example"}
        reply = httpx.post(f"{url}/login", data={"token": TOKEN}, headers=evil)
        assert reply.status_code == 403 and "set-cookie" not in reply.headers
        rebound = httpx.post(f"{url}/login", data={"token": TOKEN}, headers={"Host": "evil.test"})
        assert rebound.status_code == 403
        big = httpx.post(f"{url}/login", data={"token": TOKEN, "pad": "x" * 10_000})
        assert big.status_code == 413 and "set-cookie" not in big.headers

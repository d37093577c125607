"""``omnilab serve`` against a real browser: headless Chromium (the ``browser`` fixture of
``tests/conftest.py``) opens an attacker's page on another origin, another port of this very host
(the hardest case: same site, so even a SameSite=Strict cookie goes along), which tries to run an
agent with an auto-submitted form POST and with ``fetch`` (CORS and no-cors), knowing the token.
All fail and no run starts; the same ``fetch`` from the server's own page works (the control that
shows the attack would have run without the Origin check). Skipped, saying why, without Chromium;
CI installs it (.ci/run)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from test_http import TOKEN, script, serving

pytestmark = pytest.mark.browser

ATTACK = """<!doctype html><meta charset="utf-8"><title>cute cats</title>
<form id="csrf" method="POST" enctype="multipart/form-data" action="{api}/v1/ask?token={token}">
  <input name="question" value="pwned?"><input name="model" value="{model}">
</form>
<script>
function body() {{
  const fd = new FormData();
  fd.append("question", "pwned by fetch?");
  return fd;
}}
window.attempts = (async () => {{
  const out = {{}};
  try {{
    const r = await fetch("{api}/v1/ask", {{method: "POST", body: body(), credentials: "include",
      headers: {{"Authorization": "Bearer {token}"}}}});
    out.cors = "status " + r.status + " " + await r.text();
  }} catch (e) {{ out.cors = "blocked: " + e; }}
  try {{
    const r = await fetch("{api}/v1/ask", {{method: "POST", body: body(), mode: "no-cors",
      credentials: "include"}});
    out.nocors = "opaque " + r.type;
  }} catch (e) {{ out.nocors = "blocked: " + e; }}
  try {{
    const r = await fetch("{api}/v1/runs", {{credentials: "include"}});
    out.read = "status " + r.status + " " + await r.text();
  }} catch (e) {{ out.read = "blocked: " + e; }}
  return out;
}})();
</script>"""


class Attacker:
    """A plain web server on another port of 127.0.0.1 serving ``folder``."""

    def __init__(self, folder: Path) -> None:
        handler = partial(_Quiet, directory=str(folder))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No request lines on the test's output."""


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    yield context.new_page()
    context.close()


def test_a_page_on_another_origin_cannot_run_an_agent(page: Any, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    model = script(tmp_path, ["<answer>ran</answer>"])
    site = tmp_path / "site"
    site.mkdir()
    with serving(runs, model) as api, Attacker(site) as evil:
        (site / "attack.html").write_text(ATTACK.format(api=api, token=TOKEN, model=model))
        # The user opened the server's printed address once: the browser holds the cookie.
        page.goto(f"{api}/v1/runs?token={TOKEN}")
        # A browser gets the runs' HTML index (issue 44.17); no run is there yet.
        shown = page.evaluate("document.body.innerText")
        assert shown.startswith("omnilab runs") and "report" not in shown.lower(), shown

        page.goto(f"{evil}/attack.html")
        tried = page.evaluate("window.attempts")
        assert tried["cors"].startswith("blocked"), tried  # its preflight got no CORS answer
        assert tried["nocors"] == "opaque opaque", tried  # sent, unreadable, and refused:
        assert tried["read"].startswith("blocked"), tried  # nothing of the server's is readable
        with page.expect_navigation():
            page.evaluate("document.getElementById('csrf').submit()")
        shown = page.evaluate("document.body.innerText")
        assert "cross-origin request refused" in shown, shown
        assert not runs.exists() or not any(runs.iterdir()), "no agent ran"

        # Control: the server's own page, same browser, same cookie, same request: it runs.
        page.goto(f"{api}/v1/health")
        status = page.evaluate(
            """async () => {
                const fd = new FormData();
                fd.append("question", "from my own page");
                const r = await fetch("/v1/ask", {method: "POST", body: fd});
                return r.status + " " + (await r.json()).answer;
            }"""
        )
        assert status == "200 ran"
        assert len(list(runs.iterdir())) == 1

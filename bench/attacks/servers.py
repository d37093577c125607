"""Issue 42, omnilab's local servers against other users of the host: a token read from a
process's command line, a file of ``omnilab mcp``'s folder swapped for a link to a root-only
file while tools read it, and ``omnilab report --serve`` read without a token or through a run
folder another user planted. The verdicts do not depend on the level."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import io
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from attacks.registry import ALL, Ctx, Verdict, attack
from omnilab.media import synth
from omnilab.report.serve import ReportServer
from omnilab.server.reports import report_app
from omnilab.server.token import announce, bearer_token

_EXCHANGE = 2  # renameat2's RENAME_EXCHANGE
_AT_FDCWD = -100


@contextlib.contextmanager
def private_state(ctx: Ctx) -> Iterator[Path]:
    """``$XDG_STATE_HOME`` in a scratch folder for the block (token files go there)."""
    folder = ctx.root / f"state-{uuid.uuid4().hex[:8]}"
    old = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(folder)
    try:
        yield folder
    finally:
        if old is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = old


@attack("read serve's token from its printed command lines", ALL)
def token_in_argv(ctx: Ctx) -> Verdict:
    token, generated = bearer_token(None, False, False, what="run agents")
    assert token is not None
    printed = io.StringIO()
    with private_state(ctx), contextlib.redirect_stderr(printed):
        kept = announce(
            token,
            generated,
            what="run agents",
            name="attack",
            usage=lambda header: [f"curl -H {header} http://127.0.0.1:1/v1/ask"],
        )
    if kept is not None:
        kept.unlink(missing_ok=True)
    lines = [line for line in printed.getvalue().splitlines() if token in line]
    commands = [line for line in lines if "curl" in line or "http" in line]
    return not commands, f"{len(lines)} line(s) show the token; in a command or URL: {commands}"


def _asgi_get(app: Any, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    """One GET through an ASGI app, in process."""
    sent: list[dict[str, Any]] = []
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "query_string": b"",
        "scheme": "http",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body


@attack("read report --serve's pages without a token, or through a planted run", ALL)
def report_serve_reads(ctx: Ctx) -> Verdict:
    runs = ctx.root / f"runs-{uuid.uuid4().hex[:8]}"
    private = ctx.root / f"private-{uuid.uuid4().hex[:8]}"
    private.mkdir(mode=0o700)
    (private / "results.jsonl").write_text('{"ROOTONLY": 1}\n')
    (runs / "planted").mkdir(parents=True)
    (runs / "planted" / "results.jsonl").symlink_to(private / "results.jsonl")
    (runs / "linked").symlink_to(private)
    out = ctx.root / f"out-{uuid.uuid4().hex[:8]}"
    app = report_app(ReportServer(runs, out), token="attack-token-0123456789")
    host = {"Host": "127.0.0.1:8765"}
    status, _ = _asgi_get(app, "/", host)
    if status != 401:
        return False, f"the index without a token: {status}"
    auth = host | {"Authorization": "Bearer attack-token-0123456789"}
    listing = _asgi_get(app, "/", auth)[1].decode()
    leaked = [name for name in ("planted", "linked") if name in listing]
    pages = [p for p in ("/planted/index.html", "/linked/index.html")
             if _asgi_get(app, p, auth)[0] == 200]  # fmt: skip
    return not leaked and not pages, f"listed {leaked}, served {pages}"


@attack("swap a file of omnilab mcp's folder for a link while tools read it", ALL)
def mcp_swap(ctx: Ctx) -> Verdict:
    try:
        from omnilab.server.mcp import McpTools
    except ImportError:
        return True, "n/a: the mcp extra is not installed"
    top = ctx.root / f"mcp-{uuid.uuid4().hex[:8]}"
    (top / "private").mkdir(parents=True, mode=0o700)
    secret = synth.make_image(top / "private" / "secret.png", size=(40, 40), index=6)
    root = top / "served"
    root.mkdir()
    synth.make_image(root / "photo.png", size=(64, 48), index=3)
    (root / "swap.png").symlink_to(secret)
    libc = ctypes.CDLL(None, use_errno=True)
    a, b = str(root / "photo.png").encode(), str(root / "swap.png").encode()
    stop = threading.Event()

    def swapping() -> None:
        while not stop.is_set():
            libc.renameat2(_AT_FDCWD, a, _AT_FDCWD, b, _EXCHANGE)

    async def calls() -> tuple[int, int]:
        served = leaked = 0
        with McpTools(root, ["read_image"]) as tools:
            racer = threading.Thread(target=swapping)
            racer.start()
            try:
                end = time.monotonic() + 1.0
                while time.monotonic() < end:
                    out = await tools.call("read_image", {"image_ids": ["photo.png"]})
                    served += not out.is_error
                    leaked += any("40x40" in getattr(b, "text", "") for b in out.content)
            finally:
                stop.set()
                racer.join()
        return served, leaked

    try:
        served, leaked = asyncio.run(calls())
    except Exception as e:  # an exception out of McpTools.call is an escape too
        return False, f"{type(e).__name__} escaped McpTools.call: {e}"
    return leaked == 0, f"{served} reads served, {leaked} of the root-only image"


@attack("a sparse file in omnilab mcp's folder copied out dense", ALL)
def mcp_sparse(ctx: Ctx) -> Verdict:
    """Issue 42's reviewer, reproduction 10 through mcp's private copies: another user's 1 GiB
    sparse file (no disk) must not cost the server 1 GiB of disk."""
    try:
        from omnilab.server.mcp import folder_inputs
        from omnilab.server.mcp_files import PrivateCopies
    except ImportError:
        return True, "n/a: the mcp extra is not installed"
    root = ctx.root / f"mcp-sparse-{uuid.uuid4().hex[:8]}"
    root.mkdir()
    with (root / "talk.mp4").open("wb") as f:
        f.truncate(1024**3)
    copies = PrivateCopies(root, folder_inputs(root))
    try:
        problem = copies.refresh(["talk.mp4"])
        used = sum(p.stat().st_blocks * 512 for p in copies.folder.rglob("*") if p.is_file())
    finally:
        copies.close()
    return used < 16 * 1024**2, f"{problem or 'copied'}; {used >> 20} MiB on disk"


@attack("serve --runs-dir is a link another user planted in /tmp", ALL)
def serve_linked_runs_dir(ctx: Ctx) -> Verdict:
    """Issue 42's leftover: serve resolved ``--runs-dir`` before its ownership check, so alice's
    link ``runs`` in ``/tmp`` (sticky: the link is hers to repoint) made a private folder of
    root's the server's runs folder. Without root: a link in a folder every user can write."""
    from omnilab._ownfolders import UnsafeFolderError
    from omnilab.server.http import create_app

    scratch = ctx.root / f"serve-runs-{uuid.uuid4().hex[:8]}"
    private = scratch / "private"
    private.mkdir(parents=True, mode=0o700)
    shared = scratch / "tmp"
    shared.mkdir()
    shared.chmod(0o1777 if os.geteuid() == 0 else 0o777)
    link = shared / "runs"
    link.symlink_to(private)
    if os.geteuid() == 0:
        os.lchown(link, 65534, 65534)
    try:
        create_app(runs_dir=link, token="t" * 32)
    except UnsafeFolderError as exc:
        return True, f"refused: {str(exc)[-90:]}"
    return False, f"{private} (root's, 0700) became the server's runs folder through the link"


@attack("serve --media-root is a link another user planted in /tmp", ALL)
def serve_linked_media_root(ctx: Ctx) -> Verdict:
    """Issue 42's leftover: serve resolved ``--media-root`` before anything was checked, so
    alice's link ``media`` in ``/tmp`` (sticky: hers to repoint) chose the folder whose files
    the server's clients may name (``paths=id_ed25519``)."""
    if os.geteuid() != 0:
        return True, "n/a (another user's link needs a root harness)"
    from omnilab._ownfolders import UnsafeFolderError
    from omnilab.server.http import create_app

    scratch = ctx.root / f"serve-media-{uuid.uuid4().hex[:8]}"
    private = scratch / "private"
    private.mkdir(parents=True, mode=0o700)
    (private / "id_ed25519").write_bytes(b"root's key\n")
    shared = scratch / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    link = shared / "media"
    link.symlink_to(private)
    os.lchown(link, 65534, 65534)
    try:
        create_app(runs_dir=scratch / "runs", token="t" * 32, media_root=link)
    except UnsafeFolderError as exc:
        return True, f"refused: {str(exc)[-90:]}"
    return False, f"{private} (root's, 0700) became the media root clients may read"

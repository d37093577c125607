"""``omnilab serve``: ask an agent over HTTP and watch each step as it happens.

- ``POST /v1/ask`` (multipart form): ``question``, ``files`` (uploads) and/or ``paths`` (files
  under the server's ``--media-root``, given relative to it, or URLs beneath a prefix the
  operator allows with ``--allow-url``, fetched into the media cache), optional ``model``, ``agent``,
  ``agent_options`` (JSON), ``max_turns``, ``stream``. With ``stream=true`` the reply is
  server-sent events: one ``event: step`` per trajectory event (its JSON), then ``event: result``;
  without it, the result as JSON once the run ends.
- ``GET /v1/runs``, ``GET /v1/runs/{id}``, ``GET /v1/runs/{id}/trajectory`` (the JSONL file).
- ``GET /v1/runs/{id}/report/``: the run's trajectory as a report page (:mod:`omnilab.report`:
  each context as a conversation, frames and audio inline), built into the run folder's
  ``report/`` when first asked for and again once the trajectory has grown; its stylesheet and
  media are served from that folder only.
- ``GET /v1/health``.

Each request gets a run folder under ``runs_dir`` holding its uploads (``inputs/``) and its
trajectory; the agent's workspace is removed when the run ends. ``runs_dir`` is checked when the
app is made, on the path as given (a link another user owns, or a folder above it that others
can write, is refused: no link is followed before its owner is known), then resolved and made
0700 (:func:`omnilab._ownfolders.resolved_folder`). Uploads past ``max_upload_mb``
(together, per request) are refused (413) and their partial files removed; referenced paths
outside the media root (absolute, ``..``, or through a link) are refused (400). A client that
disconnects from a stream cancels its run, which still records its end.

Safe by default (see ``docs/mcp.md``): every request passes :class:`~omnilab.server.guard.Guard`
(Host and Origin checks, body size, and the bearer token on every path but ``/v1/health``); what a
client may choose (model, agent options, turns) is the operator's :class:`ClientPolicy`; at most
``max_concurrent_runs`` runs go at once, and a request past that gets 429. The server binds to
127.0.0.1 unless told otherwise (``omnilab serve --host``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import shutil
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, File, Form, HTTPException, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    StreamingResponse,
)

from omnilab import _wsread
from omnilab._atomic import write_atomic
from omnilab._datapath import DataPath, DataPathError
from omnilab._ownfolders import own_links_resolved, resolved_folder
from omnilab._private_paths import add_private_paths
from omnilab._urls import is_remote
from omnilab.agents.registry import AGENTS, agent_names
from omnilab.api import AskResult, ask_async, new_run_dir
from omnilab.config import get_settings
from omnilab.errors import OmnilabError
from omnilab.server.guard import Guard
from omnilab.server.policy import ClientPolicy, parse_agent_options
from omnilab.server.runs_index import runs_page, wants_html
from omnilab.trajectory import Event, EventAdapter, read_trajectory

__all__ = ["ClientPolicy", "create_app"]

_CHUNK = 1 << 20
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def _result_json(run_id: str, result: AskResult) -> dict[str, Any]:
    return {
        "run": run_id,
        "answer": result.answer,
        "status": result.status,
        "turns": result.trajectory.run_end.turns if result.trajectory.run_end else None,
    }


async def _save_uploads(uploads: list[UploadFile], folder: Path, limit: int) -> list[Path]:
    """Write ``uploads`` into ``folder``; 413 once they pass ``limit`` bytes together."""
    saved: list[Path] = []
    size = 0
    for upload in uploads:
        name = _SAFE_NAME.sub("_", Path(upload.filename or "upload").name).strip("._") or "upload"
        target = folder / name
        stem, suffix, n = target.stem, target.suffix, 1
        while target.exists():  # two uploads with one name keep both
            target, n = folder / f"{stem}_{n}{suffix}", n + 1
        with target.open("wb") as out:
            while chunk := await upload.read(_CHUNK):
                size += len(chunk)
                if size > limit:
                    raise HTTPException(
                        413, f"{upload.filename}: uploads larger than {limit >> 20} MiB"
                    )
                out.write(chunk)
        saved.append(target)
    return saved


def create_app(
    *,
    runs_dir: Path,
    token: str | None,
    policy: ClientPolicy | None = None,
    media_root: Path | None = None,
    max_upload_mb: int = 512,
    max_concurrent_runs: int = 4,
    hosts: tuple[str, ...] = (),
) -> Guard:
    """The HTTP API (see the module docstring) behind its :class:`Guard`.

    ``token`` is required on every path but ``/v1/health``; ``None`` turns that off and must be
    the operator's explicit choice. ``policy`` is what clients may choose (default: only the
    configured model, the agents' allow-listed options, 50 turns). ``hosts`` are names the
    ``Host`` header may carry besides loopback's.
    """
    policy = policy or ClientPolicy()
    # Checked as given (a link of another user's is refused, never followed), then resolved.
    runs_dir = resolved_folder(runs_dir, what="--runs-dir")
    # Likewise, and resolved once: later reads go through the real folder, not the name.
    root = own_links_resolved(media_root, what="--media-root") if media_root else None
    if root is not None:
        _wsread.mark_untrusted(root)  # what requests name there is opened through no link
    # Every client's runs and uploads, and the media root: hidden from every run's sandboxes.
    add_private_paths(runs_dir, root)
    limit = max_upload_mb << 20
    app = FastAPI(title="omnilab", docs_url=None, redoc_url=None)
    running = 0  # runs in flight; one event loop, so a plain counter is enough
    building = threading.Lock()  # one report build at a time; a second request waits for it

    @app.exception_handler(OmnilabError)
    async def user_error(request: Request, exc: OmnilabError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.exception_handler(RequestValidationError)
    async def bad_field(request: Request, exc: RequestValidationError) -> JSONResponse:
        # One line naming the field, like every other refusal (FastAPI's default is a list of
        # objects that echoes the input back).
        problems = [
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'request'}: {e.get('msg', '')}"
            for e in exc.errors()
        ]
        return JSONResponse({"detail": "; ".join(problems)}, status_code=422)

    @app.get("/v1/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    def _referenced(paths: list[str]) -> list[str | Path]:
        out: list[str | Path] = []
        for given in paths:
            if is_remote(given):  # only beneath the operator's --allow-url prefixes
                out.append(policy.url_for(given))
                continue
            if root is None:
                raise HTTPException(
                    400, "this server takes uploads only (start it with --media-root)"
                )
            try:
                found = DataPath.beneath(root, given, item="paths")
            except DataPathError as e:
                raise HTTPException(
                    400, f"{given}: no such file under the media root ({e})"
                ) from None
            # Beneath the root through no link (the root is marked: later reads keep the rule).
            if not _wsread.regular_file(found):
                raise HTTPException(400, f"{given}: no such file under the media root")
            out.append(found.shown())
        return out

    @app.post("/v1/ask")
    async def ask(
        question: Annotated[str, Form()],
        files: Annotated[list[UploadFile] | None, File()] = None,
        paths: Annotated[list[str] | None, Form()] = None,
        model_name: Annotated[str | None, Form(alias="model")] = None,
        agent: Annotated[str, Form()] = "tir",
        agent_options: Annotated[str | None, Form()] = None,
        max_turns: Annotated[int | None, Form(ge=1)] = None,
        stream: Annotated[bool, Form()] = False,
    ) -> Any:
        nonlocal running
        options = parse_agent_options(agent_options)
        # The operator's choices first: nothing is written for a request that breaks them.
        if agent not in AGENTS:
            raise HTTPException(400, f"unknown agent {agent!r}; agents: {', '.join(agent_names())}")
        chosen_model = policy.model_for(model_name)
        options = policy.options_for(agent, options)
        turns = policy.turns_for(max_turns, get_settings().agents.max_turns)
        referenced = _referenced(paths or [])
        if running >= max_concurrent_runs:
            raise HTTPException(
                429,
                f"this server runs at most {max_concurrent_runs} agents at once "
                "(--max-concurrent-runs); try again when one has ended",
                headers={"Retry-After": "5"},
            )
        running += 1
        try:
            folder = new_run_dir(runs_dir)
            uploads = folder / "inputs"
            uploads.mkdir()
            try:
                saved = await _save_uploads(files or [], uploads, limit)
            except HTTPException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
        except BaseException:
            running -= 1
            raise
        inputs = [*saved, *referenced]
        queue: asyncio.Queue[Event] = asyncio.Queue()

        async def run() -> AskResult:
            try:
                return await ask_async(
                    inputs,
                    question,
                    model=chosen_model,
                    agent=agent,
                    agent_options=options,
                    max_turns=turns,
                    run_dir=folder,
                    on_event=queue.put_nowait,
                )
            finally:
                from omnilab.sandbox import remove_tree

                # Any depth (the run's code may have left a tree rmtree cannot recurse into).
                for problem in remove_tree(folder / "workspace"):
                    logging.getLogger("omnilab.server").warning("%s", problem)

        def release(_: object = None) -> None:
            nonlocal running
            running -= 1

        if not stream:
            try:
                result = await run()
            finally:
                release()
            return _result_json(folder.name, result)
        # Released when the task ends, however it ends (even cancelled before it started).
        task = asyncio.create_task(run())
        task.add_done_callback(release)

        async def events() -> AsyncIterator[str]:
            try:
                while not (task.done() and queue.empty()):
                    getter = asyncio.ensure_future(queue.get())
                    done, _ = await asyncio.wait(
                        {getter, task}, return_when=asyncio.FIRST_COMPLETED
                    )
                    if getter in done:
                        data = EventAdapter.dump_json(getter.result()).decode()
                        yield f"event: step\ndata: {data}\n\n"
                    else:
                        getter.cancel()
                try:
                    body = json.dumps(_result_json(folder.name, task.result()))
                except OmnilabError as e:
                    body = json.dumps({"run": folder.name, "error": str(e)})
                yield f"event: result\ndata: {body}\n\n"
            finally:
                # The client went away (or the stream ended): a run still going is cancelled,
                # and records its end before the cancellation goes on.
                if not task.done():
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)

        return StreamingResponse(events(), media_type="text/event-stream")

    def _run_folder(run_id: str) -> Path:
        folder = runs_dir / run_id
        if not _RUN_ID.match(run_id) or not (folder / "trajectory.jsonl").is_file():
            raise HTTPException(404, f"no run {run_id}")
        return folder

    @app.get("/v1/runs", response_model=None)
    async def runs(request: Request) -> list[dict[str, Any]] | HTMLResponse:
        found = []
        if runs_dir.is_dir():
            found = sorted(p.name for p in runs_dir.iterdir() if (p / "trajectory.jsonl").is_file())
        if wants_html(request.headers.get("accept", "")):  # a browser: links to the reports
            return HTMLResponse(runs_page(found), headers=_PAGE_HEADERS)
        return [{"run": name} for name in found]

    @app.get("/v1/runs/{run_id}")
    async def run_info(run_id: str) -> dict[str, Any]:
        traj = read_trajectory(_run_folder(run_id) / "trajectory.jsonl")
        return {
            "run": run_id,
            "question": traj.run_start.question if traj.run_start else None,
            "status": traj.status,
            "answer": traj.answer,
            "events": len(traj.events),
            "report": f"/v1/runs/{run_id}/report/",
        }

    @app.get("/v1/runs/{run_id}/trajectory")
    async def trajectory(run_id: str) -> FileResponse:
        path = _run_folder(run_id) / "trajectory.jsonl"
        return FileResponse(path, media_type="application/jsonl")

    @app.get("/v1/runs/{run_id}/report")
    async def report_root(run_id: str) -> RedirectResponse:
        _run_folder(run_id)
        # The page links its stylesheet and media relative to its folder.
        return RedirectResponse(f"/v1/runs/{run_id}/report/", status_code=307)

    @app.get("/v1/runs/{run_id}/report/{name:path}")
    async def report(run_id: str, name: str) -> FileResponse:
        folder = _run_folder(run_id)
        out = folder / _REPORT
        media = (root,) if root is not None else ()  # the operator's --media-root
        page = await asyncio.to_thread(
            _report_page, folder / "trajectory.jsonl", out, building, media
        )
        if name in ("", "index.html"):
            return FileResponse(page, media_type="text/html", headers=_PAGE_HEADERS)
        path = (out / name).resolve()
        if not path.is_relative_to(out.resolve()) or not path.is_file():
            raise HTTPException(404, f"no report file {name}")
        # Media and assets are loaded by the page, never opened as pages of this origin: a
        # copied input that is HTML or SVG would otherwise run script next to the API.
        return FileResponse(path, headers=_FILE_HEADERS)

    return Guard(app, token=token, hosts=hosts, max_upload=limit, home="/v1/runs")


_REPORT = "report"
_STAMP = ".built-from"
_PAGE_HEADERS = {
    # The page's own policy (omnilab.report.html), as a header, and no framing by other sites.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; media-src 'self'; "
    "style-src 'self'; script-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}
_FILE_HEADERS = {"Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff"}


def _report_page(
    trajectory: Path, out: Path, lock: threading.Lock, media_roots: tuple[Path, ...] = ()
) -> Path:
    """The report page of ``trajectory`` in ``out``, rebuilt when the trajectory changed since."""
    from omnilab.report import write_trajectory_page

    with lock:
        stat = trajectory.stat()
        stamp = f"{stat.st_size} {stat.st_mtime_ns}"
        page = out / f"{trajectory.stem}.html"
        marker = out / _STAMP
        if page.is_file() and marker.is_file() and marker.read_text("utf-8") == stamp:
            return page
        built = write_trajectory_page(trajectory, out, media_roots=media_roots)
        write_atomic(marker, stamp, sync=False)
        return built

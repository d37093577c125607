"""``omnilab serve``: the HTTP API (ask with uploads, streamed steps, runs and trajectories)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omnilab.errors import OmnilabError

__all__ = ["serve"]


class ServeSetupError(OmnilabError):
    """The HTTP server cannot start (missing extra, bad options)."""


def serve(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (default: this machine only).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8360,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Default agent model, provider:model.")
    ] = None,
    runs_dir: Annotated[
        Path | None,
        typer.Option("--runs-dir", help="Where runs are kept (default: agents.runs_dir)."),
    ] = None,
    media_root: Annotated[
        Path | None,
        typer.Option("--media-root", help="Folder whose files requests may name by relative path."),
    ] = None,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env",
            help="Name of an environment variable holding a bearer token every request must send.",
        ),
    ] = None,
    max_upload_mb: Annotated[int, typer.Option("--max-upload-mb", min=1)] = 512,
) -> None:
    """Serve agents over HTTP: POST /v1/ask (multipart: question, files, stream=true for
    server-sent events of each step), GET /v1/runs, /v1/runs/ID, /v1/runs/ID/trajectory and
    /v1/runs/ID/report/ (the run's report page)."""
    import os

    try:
        import uvicorn

        from omnilab.server.http import create_app
    except ImportError as e:
        raise ServeSetupError(
            f"omnilab serve needs the server extra ({e.name} is missing): "
            "pip install 'omnilab[server]'"
        ) from None
    from omnilab.config import get_settings

    token = None
    if token_env is not None:
        token = os.environ.get(token_env)
        if not token:
            raise ServeSetupError(f"--token-env {token_env}: that variable is not set or empty")
    if media_root is not None and not media_root.is_dir():
        raise ServeSetupError(f"--media-root {media_root} is not a folder")
    if host not in ("127.0.0.1", "localhost", "::1") and token is None:
        typer.echo(
            f"warning: serving on {host} without a token: anyone who can reach it can run agents",
            err=True,
        )
    app = create_app(
        runs_dir=runs_dir or get_settings().agents.runs_dir,
        model=model,
        token=token,
        media_root=media_root,
        max_upload_mb=max_upload_mb,
    )
    typer.echo(f"omnilab API on http://{host}:{port}/v1", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")

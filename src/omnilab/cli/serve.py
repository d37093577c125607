"""``omnilab serve``: the HTTP API (ask with uploads, streamed steps, runs and trajectories)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omnilab.errors import OmnilabError

__all__ = ["serve"]

_WILDCARD = ("0.0.0.0", "::", "")  # noqa: S104 (names compared, nothing bound here)


class ServeSetupError(OmnilabError):
    """The HTTP server cannot start (missing extra, bad options)."""


def _shown(host: str, port: int) -> str:
    """The address clients on this machine use."""
    if host in _WILDCARD:
        host = "127.0.0.1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (default: this machine only).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8360,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Default agent model, provider:model.")
    ] = None,
    allow_model: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-model",
            help="A model name or shell-style pattern (vllm:*) clients may ask for besides "
            "--model; repeatable.",
        ),
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
            help="Environment variable holding the bearer token (default: a random one, "
            "printed once).",
        ),
    ] = None,
    no_token: Annotated[
        bool,
        typer.Option("--no-token", help="Serve without a token (needs the flag below too)."),
    ] = False,
    understood: Annotated[
        bool,
        typer.Option(
            "--i-understand-anyone-on-this-host-can-run-code",
            help="Confirms --no-token.",
        ),
    ] = False,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            help="A name the Host header may carry besides loopback's and --host (the name "
            "clients use to reach this server); repeatable.",
        ),
    ] = None,
    allow_url: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-url",
            help="A URL prefix (s3://bucket/media/, https://host/data/) whose objects requests "
            "may name in paths (fetched into the media cache); repeatable. None by default: "
            "requests name no URLs.",
        ),
    ] = None,
    max_upload_mb: Annotated[
        int, typer.Option("--max-upload-mb", min=1, help="Uploads of one request, together.")
    ] = 512,
    max_concurrent_runs: Annotated[
        int,
        typer.Option("--max-concurrent-runs", min=1, help="Runs at once; more get HTTP 429."),
    ] = 4,
    max_turns: Annotated[
        int, typer.Option("--max-turns", min=1, help="The most turns a client may ask for.")
    ] = 50,
) -> None:
    """Serve agents over HTTP: POST /v1/ask (multipart: question, files, stream=true for
    server-sent events of each step), GET /v1/runs, /v1/runs/ID, /v1/runs/ID/trajectory and
    /v1/runs/ID/report/ (the run's report page). Every request but /v1/health needs the bearer
    token; clients choose only the models and agent options the operator allows."""
    try:
        import uvicorn

        from omnilab.server.http import create_app
        from omnilab.server.policy import ClientPolicy
    except ImportError as e:
        raise ServeSetupError(
            f"omnilab serve needs the server extra ({e.name} is missing): "
            "pip install 'omnilab[server]'"
        ) from None
    from omnilab.config import get_settings
    from omnilab.server.token import announce, bearer_token, removed_at_exit

    token, generated = bearer_token(
        token_env, no_token, understood, what="run agents with your keys and models"
    )
    if media_root is not None and not media_root.is_dir():
        raise ServeSetupError(f"--media-root {media_root} is not a folder")
    hosts = [*(allow_host or []), *([host] if host not in _WILDCARD else [])]
    policy = ClientPolicy(
        model=model,
        allow_models=tuple(allow_model or ()),
        max_turns=max_turns,
        allow_urls=tuple(allow_url or ()),
    )
    app = create_app(
        runs_dir=runs_dir or get_settings().agents.runs_dir,
        token=token,
        policy=policy,
        media_root=media_root,
        max_upload_mb=max_upload_mb,
        max_concurrent_runs=max_concurrent_runs,
        hosts=tuple(hosts),
    )
    url = _shown(host, port)
    typer.echo(f"omnilab API on {url}/v1", err=True)
    kept = announce(
        token,
        generated,
        what="run agents, and code, with this server's keys",
        name=f"serve-{port}",
        usage=lambda header: [
            f"curl -H {header} -F question='What is shown?' -F files=@photo.jpg {url}/v1/ask",
            f"in a browser: {url}/login (paste the token)",
        ],
    )
    if host in _WILDCARD and not allow_host:
        typer.echo(
            f"note: bound to {host or 'all addresses'}; requests must name a loopback Host: "
            "add --allow-host NAME for each name clients use to reach this machine",
            err=True,
        )
    with removed_at_exit(kept):
        uvicorn.run(app, host=host, port=port, log_level="warning")

"""``omnilab report --serve``: start the report server (token, guard, uvicorn)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import typer

from omnilab.bench.errors import BenchError

__all__ = ["serve_reports"]


def serve_reports(runs: Path, *, port: int, token_env: str | None) -> None:
    """Serve the reports of the runs under ``runs`` on 127.0.0.1:``port`` until interrupted."""
    try:
        import uvicorn
    except ImportError as e:
        raise BenchError(
            f"omnilab report --serve needs the server extra ({e.name} is missing): "
            "pip install 'omnilab[server]'"
        ) from None
    from omnilab.report.serve import ReportServer
    from omnilab.server.reports import report_app
    from omnilab.server.token import announce, bearer_token, removed_at_exit

    token, generated = bearer_token(token_env, False, False, what="read the reports")
    with tempfile.TemporaryDirectory(prefix="omnilab-report-") as tmp:
        reports = ReportServer(runs, Path(tmp))
        reports.write_root()
        url = f"http://127.0.0.1:{port}"
        typer.echo(f"serving the runs in {runs} at {url}/ (Ctrl-C stops)", err=True)
        kept = announce(
            token,
            generated,
            what="read the reports",
            name=f"report-{port}",
            usage=lambda header: [
                f"in a browser: {url}/login (paste the token)",
                f"or: curl -H {header} {url}/",
            ],
        )
        app = report_app(reports, token=token)
        try:
            with removed_at_exit(kept):
                uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        except OSError as e:
            raise BenchError(f"cannot serve on 127.0.0.1:{port}: {e.strerror or e}") from None

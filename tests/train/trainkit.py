"""Helpers of the export tests: the CLI in-process, OmniAgent replies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

runner = CliRunner()


def cli(*args: str | Path, code: int = 0) -> str:
    """Run ``omnilab ARGS`` in-process; the exit code must be ``code``. Stdout and stderr, or
    for a user error (``code=1``) the one-line message ``omnilab`` prints."""
    from omnilab.cli.main import app
    from omnilab.errors import OmnilabError

    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    if code == 1 and isinstance(result.exception, OmnilabError):
        return str(result.exception)
    assert result.exit_code == code, (result.output, result.exception)
    return result.output


def omnilab(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m omnilab ARGS`` in a process of its own (what a user sees on stderr)."""
    return subprocess.run(
        [sys.executable, "-m", "omnilab", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


def ota_turn(action: dict[str, object], confidence: float = 0.3) -> str:
    """One reply as OmniAgent's Figure 4 asks for it."""
    reply = {"observation": "seen", "think": "t", "confidence": confidence, "action": action}
    return json.dumps(reply)

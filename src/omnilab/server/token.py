"""The bearer token of omnilab's local servers (``omnilab serve``, ``omnilab mcp --http``).

A random one is made and shown once unless the operator names an environment variable holding
their own; serving without any takes two flags, because then every process and user on the host
can use the server (run agents with its keys, run code, read its folder).
"""

from __future__ import annotations

import os
import secrets
import signal
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import platformdirs

from omnilab._atomic import write_atomic
from omnilab.errors import OmnilabError

__all__ = [
    "MIN_TOKEN",
    "NO_TOKEN_CONFIRM",
    "TokenSetupError",
    "announce",
    "bearer_token",
    "header_file",
    "removed_at_exit",
]

MIN_TOKEN = 16
NO_TOKEN_CONFIRM = "--i-understand-anyone-on-this-host-can-run-code"  # noqa: S105 - a flag name


class TokenSetupError(OmnilabError):
    """The token options contradict each other or name no usable token."""


def bearer_token(
    token_env: str | None, no_token: bool, understood: bool, *, what: str
) -> tuple[str | None, bool]:
    """The bearer token and whether it was generated here (and so must be shown once).

    ``what`` says what the server lets others do, for the ``--no-token`` refusal.
    """
    if no_token:
        if token_env is not None:
            raise TokenSetupError("--no-token and --token-env contradict each other; pick one")
        if not understood:
            raise TokenSetupError(
                f"--no-token lets any process or user on this host {what}; "
                f"add {NO_TOKEN_CONFIRM} to do it anyway"
            )
        return None, False
    if token_env is None:
        return secrets.token_urlsafe(32), True
    token = os.environ.get(token_env, "").strip()
    if not token:
        raise TokenSetupError(f"--token-env {token_env}: that variable is not set or empty")
    if len(token) < MIN_TOKEN:
        raise TokenSetupError(
            f"--token-env {token_env}: the token is shorter than {MIN_TOKEN} characters; "
            "use a long random one (python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token, False


def header_file(name: str) -> Path:
    """Where a generated token is kept while its server runs, as a ``curl -H @FILE`` header
    line: in the user's own state folder (0700), the file 0600."""
    return platformdirs.user_state_path("omnilab") / "tokens" / f"{name}.header"


def announce(
    token: str | None,
    generated: bool,
    *,
    what: str,
    name: str,
    usage: Callable[[str], list[str]],
) -> Path | None:
    """Tell the operator on stderr: a warning when there is no token (anyone on this host can
    ``what``), or where a generated token is kept and how to use it without putting it on a
    command line (other users read every process's argv in ``/proc``): ``usage(header)``'s
    lines, where ``header`` is a curl ``-H`` argument reading the header from the 0600 file.
    The token itself is shown once, for the browser's login page. Returns the file written
    (the caller removes it when the server stops)."""
    if token is None:
        print(
            f"warning: serving WITHOUT a token (--no-token): any process or user on this host "
            f"can {what}",
            file=sys.stderr,
        )
        return None
    if not generated:
        return None
    path = header_file(name)
    _private_folder(path.parent)
    write_atomic(path, f"Authorization: Bearer {token}\n", mode=0o600)
    print(f"token (shown once): {token}", file=sys.stderr)
    for line in usage(f"@{path}"):
        print(f"  {line}", file=sys.stderr)
    print(f"  the header file {path} (0600) is removed when the server stops", file=sys.stderr)
    return path


def _private_folder(folder: Path) -> None:
    """``folder`` created 0700, and refused unless it is a real folder of this user."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    found = os.lstat(folder)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid():
        raise TokenSetupError(f"{folder} is not a folder of this user; remove it and start again")
    folder.chmod(0o700)


@contextmanager
def removed_at_exit(path: Path | None) -> Iterator[None]:
    """Remove ``path`` (a token's header file) when the block ends, also when the server is
    stopped by SIGTERM (uvicorn re-raises the signal it caught once it has shut down: here that
    ends the block instead of the process)."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if path is not None:
            path.unlink(missing_ok=True)

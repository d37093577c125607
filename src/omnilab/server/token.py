"""The bearer token of omnilab's local servers (``omnilab serve``, ``omnilab mcp --http``).

A random one is made and shown once unless the operator names an environment variable holding
their own; serving without any takes two flags, because then every process and user on the host
can use the server (run agents with its keys, run code, read its folder).
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Callable

from omnilab.errors import OmnilabError

__all__ = ["MIN_TOKEN", "NO_TOKEN_CONFIRM", "TokenSetupError", "announce", "bearer_token"]

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


def announce(
    token: str | None, generated: bool, *, what: str, usage: Callable[[str], list[str]]
) -> None:
    """Tell the operator on stderr: a warning when there is no token (anyone on this host can
    ``what``), or a generated token, shown once (never written anywhere, like Jupyter's), with
    ``usage(token)``'s lines of how to use it."""
    if token is None:
        print(
            f"warning: serving WITHOUT a token (--no-token): any process or user on this host "
            f"can {what}",
            file=sys.stderr,
        )
    elif generated:
        print(f"token (shown once): {token}", file=sys.stderr)
        for line in usage(token):
            print(f"  {line}", file=sys.stderr)

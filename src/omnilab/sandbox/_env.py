"""The environment a sandboxed program sees: an allow-list, never the harness's secrets."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["looks_secret", "sandbox_env"]

# Copied from the harness when set: what programs need to find binaries and decode text.
_INHERITED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")

# Names that commonly hold credentials. Matching is on the name only: a value is never inspected,
# so a secret under an innocent name given explicitly by the caller does pass (the caller's choice).
_SECRET = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE|"
    r"^OPENAI_|^ANTHROPIC_|^AZURE_|^AWS_|^GOOGLE_|^GCP_|^GH_|^GITHUB_|^HF_|^HUGGING|^OMNILAB_|"
    r"^SSH_|^GPG_|^NPM_|^PYPI_|^TWINE_|^DOCKER_|^KUBE|_PROXY$|^PROXY",
    re.IGNORECASE,
)

_FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"


def looks_secret(name: str) -> bool:
    """Whether an environment variable's name looks like it holds a credential."""
    return bool(_SECRET.search(name))


def sandbox_env(
    workspace: Path,
    extra: Mapping[str, str] | None = None,
    *,
    allow: Iterable[str] = (),
    path_prefix: Iterable[str] = (),
) -> tuple[dict[str, str], list[str]]:
    """The environment for a sandboxed program and the names that were refused.

    Starts from a small allow-list of the harness's variables, points ``HOME`` and ``TMPDIR`` into
    the workspace, then adds ``extra`` (the caller's variables) except names that look like
    secrets, unless a name is in ``allow``.
    """
    allowed = set(allow)
    env: dict[str, str] = {}
    for name in _INHERITED:
        if name in os.environ:
            env[name] = os.environ[name]
    path = env.get("PATH", _FALLBACK_PATH)
    prefix = [p for p in path_prefix if p not in path.split(os.pathsep)]
    env["PATH"] = os.pathsep.join([*prefix, path])
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        {
            "HOME": str(workspace),
            "TMPDIR": str(workspace / "tmp"),
            "PWD": str(workspace),
            # Unbuffered so that output written before a kill (timeout) is not lost.
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "MPLBACKEND": "Agg",
        }
    )
    refused: list[str] = []
    for name, value in (extra or {}).items():
        if looks_secret(name) and name not in allowed:
            refused.append(name)
            continue
        env[name] = value
    return env, refused

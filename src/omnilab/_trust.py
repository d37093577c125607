"""Which project configuration files the user trusts: ``omnilab trust`` (as direnv and mise do).

A project-level ``omnilab.toml`` (one that came with a cloned repository) may set ordinary options
but no security-relevant one until the user trusts it. Trust is keyed by the file's real path and
the SHA-256 of its content: an edit revokes it. The store is a JSON file in the user's own state
folder (``$XDG_STATE_HOME/omnilab``), created 0600 in a 0700 folder; nothing in a project can
write it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Literal

import platformdirs

from omnilab._atomic import write_atomic
from omnilab.errors import OmnilabError

__all__ = [
    "TrustState",
    "content_hash",
    "foreign_writer",
    "others_can_write",
    "read_config_bytes",
    "revoke",
    "trust",
    "trust_state",
    "trust_store",
    "trusted_files",
]

TrustState = Literal["trusted", "untrusted", "changed"]
"""``changed``: the file was trusted, but its content differs from what was trusted."""

_MAX_CONFIG_BYTES = 1024 * 1024


def trust_store() -> Path:
    """The file the trusted configurations are recorded in."""
    return platformdirs.user_state_path("omnilab") / "trusted-configs.json"


def content_hash(data: bytes) -> str:
    """The key a configuration's content is trusted by (hex SHA-256)."""
    return hashlib.sha256(data).hexdigest()


def read_config_bytes(path: Path) -> bytes:
    """A configuration file's bytes, read once (the same bytes are hashed and parsed, so the file
    cannot change between the two). Opened non-blocking and checked to be a regular file: a FIFO
    or a device named ``omnilab.toml`` cannot block or flood the command."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise OmnilabError(f"cannot read config file {path}: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OmnilabError(f"config file {path} is not a regular file")
        data = f.read(_MAX_CONFIG_BYTES + 1)
    if len(data) > _MAX_CONFIG_BYTES:
        raise OmnilabError(f"config file {path} is larger than {_MAX_CONFIG_BYTES} bytes")
    return data


def trusted_files() -> dict[str, str]:
    """Real path -> trusted content hash, as recorded (empty when nothing is trusted, and when
    the store is one another user can change: it would trust their files for this user)."""
    store = trust_store()
    if store.exists() and foreign_writer(store) is not None:
        return {}
    try:
        loaded = json.loads(store.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise OmnilabError(f"cannot read the trust store {store}: {e}") from None
    files = loaded.get("files") if isinstance(loaded, dict) else None
    if not isinstance(files, dict):
        raise OmnilabError(f"the trust store {store} is malformed; remove it and trust again")
    return {str(k): str(v) for k, v in files.items()}


def trust_state(path: Path, data: bytes) -> TrustState:
    """Whether ``data`` (the content of ``path``) is what the user trusted at that path."""
    recorded = trusted_files().get(os.path.realpath(path))
    if recorded is None:
        return "untrusted"
    return "trusted" if recorded == content_hash(data) else "changed"


def trust(path: Path) -> str:
    """Trust the current content of ``path``; returns the hash recorded."""
    digest = content_hash(read_config_bytes(path))
    _save(trusted_files() | {os.path.realpath(path): digest})
    return digest


def revoke(path: Path) -> bool:
    """Forget ``path`` (by its real path, or as written when it no longer exists); whether it was
    trusted."""
    files = trusted_files()
    found = [key for key in {os.path.realpath(path), str(path.absolute())} if key in files]
    for key in found:
        del files[key]
    if found:
        _save(files)
    return bool(found)


def _save(files: dict[str, str]) -> None:
    store = trust_store()
    store.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = json.dumps({"version": 1, "files": dict(sorted(files.items()))}, indent=1) + "\n"
    write_atomic(store, text, mode=0o600)


def foreign_writer(path: Path) -> str | None:
    """Why someone other than the user (or root) can change the file ``path``, else None: one
    owned by another user (``sudo -E`` keeping the caller's ``XDG_CONFIG_HOME`` or
    ``XDG_STATE_HOME``), writable by others or by a group not the user's own, or in a folder
    they can write without a sticky bit (they can replace the file)."""
    real = Path(os.path.realpath(path))
    me = os.geteuid()
    try:
        file, folder = real.stat(), real.parent.stat()
    except OSError:
        return None  # gone since: whoever reads it says so
    if file.st_uid not in (me, 0):
        return f"owned by uid {file.st_uid}"
    if others_can_write(file):
        return f"writable by other users (mode {stat.S_IMODE(file.st_mode):o})"
    if folder.st_mode & stat.S_ISVTX:
        return None
    if folder.st_uid not in (me, 0):
        return f"in {real.parent}, owned by uid {folder.st_uid}"
    if others_can_write(folder):
        return f"in {real.parent}, writable by other users"
    return None


def others_can_write(st: os.stat_result) -> bool:
    """Writable by others, or by a group other than the user's own (umask 002 gives a user's
    files to their private group: that is not someone else). The one rule for "another user can
    change it": config files here, run and cache folders and those above them in
    :mod:`omnilab._ownfolders`."""
    return bool(st.st_mode & 0o002 or (st.st_mode & 0o020 and st.st_gid != os.getegid()))

"""``omnilab trust``: let a project's ``omnilab.toml`` set security-relevant options."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from omnilab._config_files import SECURITY_KEYS, project_config_file, refused_keys
from omnilab._trust import read_config_bytes, revoke, trust, trust_state, trusted_files
from omnilab.cli._console import inert_console
from omnilab.errors import OmnilabError

__all__ = ["trust_command"]


def trust_command(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="The config file to trust (default: ./omnilab.toml).", show_default=False
        ),
    ] = None,
    list_: Annotated[
        bool, typer.Option("--list", help="List the trusted files and whether each still matches.")
    ] = False,
    revoke_: Annotated[
        bool,
        typer.Option("--revoke", help="Stop trusting the file (its settings are refused again)."),
    ] = False,
) -> None:
    """Trust a project's omnilab.toml, as it is now (keyed by its content hash, as direnv and
    mise do): an edit revokes the trust.

    An omnilab.toml in the folder a command runs in came with that folder (a cloned repository)
    and is not trusted: it may set ordinary options, but naming a security-relevant one (sandbox
    isolation and network, unsafe_* opt-ins, API keys and their routing, URLs that receive keys,
    cache and runs folders, models read from files such as scripted:FILE) refuses the run. Read
    the file first: trusting it lets it do all of that. Your own file
    (~/.config/omnilab/omnilab.toml), $OMNILAB_CONFIG as an absolute path, OMNILAB_* variables and
    flags are trusted while only you can change them; a relative $OMNILAB_CONFIG (omnilab.toml)
    names the current folder's file, which is trusted as a project's is: by this command. The
    record is kept in your state folder (~/.local/state/omnilab).
    """
    console = inert_console(highlight=False, emoji=False)
    if list_:
        files = trusted_files()
        if not files:
            console.print("no trusted config files")
        for name, digest in files.items():
            line = f"{escape(name)}  {_state(Path(name))}  sha256:{digest[:16]}"
            console.print(line, soft_wrap=True)
        return
    target = path if path is not None else project_config_file()
    if revoke_:
        found = revoke(target)
        said = "revoked" if found else "was not trusted"
        console.print(f"{said}: {escape(str(target))}", soft_wrap=True)
        return
    if not target.is_file():
        raise OmnilabError(f"no config file at {target}: name one (omnilab trust PATH)")
    digest = trust(target)
    import tomllib

    try:
        data = tomllib.loads(read_config_bytes(target).decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = {}  # trusted as it is; reading the settings reports the error
    granted = refused_keys(data)
    console.print(f"trusted: {escape(str(target))} (sha256:{digest[:16]})", soft_wrap=True)
    if granted:
        console.print(f"  it may now set: {escape(', '.join(granted))}", soft_wrap=True)
    else:
        which = ", ".join(SECURITY_KEYS)
        console.print(f"  it sets none of the security-relevant settings ({escape(which)})")


def _state(path: Path) -> str:
    try:
        data = read_config_bytes(path)
    except OmnilabError:
        return "missing"
    return "ok" if trust_state(path, data) == "trusted" else "changed (untrusted again)"

"""Configuration files and how far each is trusted (the layers under :mod:`omnilab.config`).

Trusted: the user's own file (``$XDG_CONFIG_HOME/omnilab/omnilab.toml``), a file the user names
by its absolute path with ``$OMNILAB_CONFIG`` (then the only file read), the environment and the
command line. Not trusted: the project's ``./omnilab.toml``, which came with whatever folder the
command runs in, and a file a relative ``$OMNILAB_CONFIG`` names (``OMNILAB_CONFIG=omnilab.toml``
in a shell profile names every clone's file in turn), until the user runs ``omnilab trust`` on
that content. An untrusted file may set ordinary options; naming a security-relevant one
(:data:`SECURITY_KEYS`, or a model that names a file) refuses the run with one line naming the
key and the trust command.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import platformdirs

from omnilab._trust import TrustState, foreign_writer, read_config_bytes, trust_state
from omnilab.errors import OmnilabError

__all__ = [
    "MODEL_KEYS",
    "SECURITY_KEYS",
    "ConfigError",
    "ConfigLayer",
    "check_trust",
    "config_layers",
    "describe_config",
    "project_config_file",
    "refused_keys",
    "user_config_file",
]


class ConfigError(OmnilabError):
    """A setting in the environment or the config file has an invalid value, or an untrusted
    config file names a security-relevant setting."""


SECURITY_KEYS: dict[str, str] = {
    "cache_dir": "cache location",
    "models.cache": "response cache",
    "models.api_keys": "API key",
    "models.api_key_env": "API key routing",
    "perception.openai_base_url": "endpoint that receives an API key",
    "perception.openai_api_key": "API key",
    "perception.whisper_model": "local model path",
    "sandbox.isolation": "sandbox isolation",
    "sandbox.network": "sandbox network",
    "sandbox.unsafe_*": "unsafe sandbox opt-in",
    "sandbox.allow_env": "secrets passed to the sandbox",
    "sandbox.uid_base": "sandbox uids",
    "sandbox.limits.*": "resource limits of model code",
    "web.*_url": "endpoint that receives an API key",
    "web.allow_private_urls": "network reach of page_browser",
    "bench.runs_dir": "runs location",
    "bench.media_roots": "media location",
    "bench.ray_address": "cluster that receives the run",
    "agents.runs_dir": "runs location",
    "remote.*": "object-store endpoints and the keys sent to them",
}
"""Settings only a trusted source may set, by dotted name (``fnmatch`` patterns), with what they
control. A table that holds one (``[sandbox]`` with ``network``) counts by its keys."""

MODEL_KEYS = ("model", "bench.judge_model", "bench.judge_models", "bench.analyst_model")
"""Settings holding ``provider:model`` names (and ``agents.roles``, a table of them): an
untrusted file may name a provider's model, never one read from a file (``scripted:...``,
``local:/path/model.gguf``) nor one at an endpoint it names (``openai:x@http://host/v1``: no key
goes there, but the user's prompts and files do, and its replies drive the agent)."""

_FILE_PROVIDERS = ("scripted",)


@dataclass
class ConfigLayer:
    """One configuration file: where it is, who it belongs to, and what it sets."""

    path: Path
    role: Literal["explicit", "user", "project"]
    """``explicit``: named by ``$OMNILAB_CONFIG``; ``user``: the user's own; ``project``: the
    folder's ``omnilab.toml``."""
    exists: bool
    trust: TrustState
    data: dict[str, Any] = field(default_factory=dict)
    foreign: str | None = None
    """For the user's or an explicit file: why another user can change it (then it is
    untrusted: its security-relevant settings are refused)."""

    @property
    def relative(self) -> bool:
        """Named by a relative ``$OMNILAB_CONFIG``: whichever file the current folder holds, so
        trusted only as a project's file is (by ``omnilab trust`` on its content)."""
        return self.role == "explicit" and not self.path.is_absolute()

    @property
    def trusted(self) -> bool:
        """Whether every setting in it is taken."""
        return self.trust == "trusted"

    def keys(self) -> list[str]:
        """The dotted names of the settings it sets (leaves)."""
        return [name for name, value in _walk(self.data, "") if not isinstance(value, dict)]


def user_config_file() -> Path:
    """The user's own configuration file (trusted)."""
    return platformdirs.user_config_path("omnilab") / "omnilab.toml"


def project_config_file() -> Path:
    """The project's configuration file: ``./omnilab.toml`` (untrusted until trusted)."""
    return Path("omnilab.toml")


def config_layers() -> list[ConfigLayer]:
    """The configuration files read, lowest precedence first: ``$OMNILAB_CONFIG`` alone when it
    is set, else the user's file and then the project's. Raises :class:`ConfigError` for a file
    that cannot be read or parsed."""
    return [_layer(path, role) for path, role in _sources()]


_Role = Literal["explicit", "user", "project"]


def _sources() -> list[tuple[Path, _Role]]:
    explicit = os.environ.get("OMNILAB_CONFIG")
    if explicit:
        return [(Path(explicit), "explicit")]
    user, project = user_config_file(), project_config_file()
    if os.path.realpath(project) == os.path.realpath(user):  # run in ~/.config/omnilab
        return [(user, "user")]
    return [(user, "user"), (project, "project")]


def _layer(path: Path, role: _Role) -> ConfigLayer:
    if not path.exists() and not path.is_symlink():
        return ConfigLayer(path, role, exists=False, trust="trusted")
    try:
        raw = read_config_bytes(path)
        data = tomllib.loads(raw.decode("utf-8"))
    except OmnilabError as e:
        raise ConfigError(str(e)) from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read config file {path}: {e}") from None
    # A relative $OMNILAB_CONFIG is found in the current folder: trusted as a project's file.
    by_content = role == "project" or not path.is_absolute()
    trust: TrustState = trust_state(path, raw) if by_content else "trusted"
    foreign = foreign_writer(path) if not by_content else None
    if foreign is not None:  # the operator named it, but someone else can write it
        trust = "untrusted"
    return ConfigLayer(path, role, exists=True, trust=trust, data=data, foreign=foreign)


def describe_config() -> list[dict[str, Any]]:
    """Every configuration source, for ``omnilab doctor``: each file with its role, whether it is
    trusted, the settings it sets and those refused (an unreadable file: its error), then the
    ``OMNILAB_*`` variables set. Never raises."""
    found: list[dict[str, Any]] = []
    for path, role in _sources():
        entry: dict[str, Any] = {"source": str(path), "role": role}
        try:
            layer = _layer(path, role)
        except OmnilabError as e:
            found.append(entry | {"exists": True, "trust": "unreadable", "error": str(e)})
            continue
        refused = [] if layer.trusted else refused_keys(layer.data)
        found.append(
            entry
            | {"exists": layer.exists, "trust": layer.trust}
            | {"sets": layer.keys(), "refused": refused}
            | ({"note": _relative_note(path)} if layer.relative else {})
        )
    names = sorted(k for k in os.environ if k.startswith("OMNILAB_") and k != "OMNILAB_CONFIG")
    found.append({"source": "environment", "role": "env", "exists": True, "trust": "trusted"})
    found[-1] |= {"sets": names, "refused": []}
    return found


def _relative_note(path: Path) -> str:
    """Why a file named by a relative ``$OMNILAB_CONFIG`` is trusted only as a project's is."""
    return (
        f"OMNILAB_CONFIG is relative: read from the current folder ({path.absolute()}), so "
        "trusted only by `omnilab trust`; give an absolute path to trust your own file"
    )


def refused_keys(data: dict[str, Any]) -> list[str]:
    """The settings in ``data`` that only a trusted source may set, as ``name`` or
    ``name = value`` for a model naming a file."""
    refused: list[str] = []
    for name, value in _walk(data, ""):
        # Matched without case: the settings' names are (TOML ``[SANDBOX]`` sets ``sandbox``).
        if any(fnmatch.fnmatchcase(name.lower(), pattern) for pattern in SECURITY_KEYS):
            refused.append(name)
        elif _refused_model(name, value):
            refused.append(f"{name} = {value!r}")
    return refused


def check_trust(layer: ConfigLayer) -> None:
    """Raise :class:`ConfigError` when an untrusted ``layer`` names a security-relevant setting."""
    if layer.trusted:
        return
    refused = refused_keys(layer.data)
    if not refused:
        return
    why = "changed since it was trusted" if layer.trust == "changed" else "not trusted"
    shown = ", ".join(refused[:4]) + (f" (and {len(refused) - 4} more)" if len(refused) > 4 else "")
    if layer.foreign is not None:
        raise ConfigError(
            f"{layer.path} is {layer.foreign}, so it may not set {shown}: make it yours and "
            "writable only by you (chown, chmod go-w), or set these in OMNILAB_* variables or flags"
        )
    if layer.relative:
        raise ConfigError(
            f"OMNILAB_CONFIG={layer.path} is relative, so it names whichever file the current "
            f"folder holds ({layer.path.absolute()}, {why}); it may not set {shown}: set "
            f"OMNILAB_CONFIG to an absolute path, or run `omnilab trust {layer.path}`"
        )
    raise ConfigError(
        f"{layer.path} ({why}) sets {shown}, which only a trusted config may set: read it, then "
        f"run `omnilab trust {layer.path}`, or set these in {user_config_file()}, OMNILAB_* "
        "variables or flags"
    )


def _refused_model(name: str, value: Any) -> bool:
    name = name.lower()
    if name.startswith("agents.roles.") and isinstance(value, str):
        return _model_refused(value)
    if name in MODEL_KEYS and isinstance(value, str):
        return _model_refused(value)
    if name in MODEL_KEYS and isinstance(value, list):
        return any(isinstance(v, str) and _model_refused(v) for v in value)
    return False


def _model_refused(spec: str) -> bool:
    provider, _, model = spec.partition(":")
    if provider.strip().lower() in _FILE_PROVIDERS:
        return True
    model, at, endpoint = model.rpartition("@") if "@" in model else (model, "", "")
    if at and endpoint.strip():
        return True  # a served model at an endpoint the file chose
    # local:smollm2 is an alias; local:/path/x.gguf, local:~/x.gguf, local:x.gguf are files.
    return provider.strip().lower() == "local" and (
        any(c in model for c in "/\\~") or model.lower().endswith(".gguf")
    )


def _walk(table: dict[str, Any], prefix: str) -> Iterator[tuple[str, Any]]:
    for key, value in table.items():
        name = prefix + str(key)
        yield name, value
        if isinstance(value, dict):
            yield from _walk(value, name + ".")

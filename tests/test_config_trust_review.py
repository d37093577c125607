"""Issue 42's reviewer on configuration trust: variants of reproductions 1-3.

A file is only as trusted as whoever can write it: a ``$OMNILAB_CONFIG`` or user config file that
another user can write, or that another user owns (``sudo`` keeping the invoking user's
``HOME``/``XDG_CONFIG_HOME``: root then read that user's file as its own), must not choose root's
isolation level. Two wider gaps are written down as strict expected failures."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from omnilab.config import ConfigError, get_settings

ROOT_CODE = '[sandbox]\nisolation = "process"\nunsafe_process_as_root = true\n'


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty current folder and private config/state folders; no $OMNILAB_CONFIG."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.delenv("OMNILAB_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "home-state"))
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def _error() -> str:
    get_settings.cache_clear()
    with pytest.raises(ConfigError) as caught:
        get_settings()
    return str(caught.value)


def _taken() -> str:
    get_settings.cache_clear()
    return get_settings().sandbox.isolation


def _taken_model() -> str:
    get_settings.cache_clear()
    return get_settings().model


def test_an_explicit_config_anyone_can_write_sets_no_security_option(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = home / "shared"
    shared.mkdir()
    config = shared / "omnilab.toml"
    config.write_text(ROOT_CODE)
    monkeypatch.setenv("OMNILAB_CONFIG", str(config))
    assert _taken() == "process"  # the operator's own file, as before
    config.chmod(0o666)  # ... but any local user can edit it
    error = _error()
    assert "sandbox.isolation" in error and "writable by" in error
    assert "\n" not in error


def test_an_explicit_config_in_a_folder_anyone_can_write_is_not_trusted(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = home / "drop"
    shared.mkdir()
    shared.chmod(0o777)  # another user can replace the file (no sticky bit)
    config = shared / "omnilab.toml"
    config.write_text(ROOT_CODE)
    monkeypatch.setenv("OMNILAB_CONFIG", str(config))
    assert "sandbox.isolation" in _error()


def test_ordinary_options_from_such_a_file_are_still_taken(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = home / "omnilab.toml"
    config.write_text("[media]\nmax_frames = 12\n")
    config.chmod(0o666)
    monkeypatch.setenv("OMNILAB_CONFIG", str(config))
    get_settings.cache_clear()
    assert get_settings().media.max_frames == 12


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_user_config_another_user_owns_is_not_roots(home: Path) -> None:
    """``sudo -E omnilab ask ...``: XDG_CONFIG_HOME still names the invoking user's folder."""
    own = home / "home-config" / "omnilab"
    own.mkdir(parents=True)
    config = own / "omnilab.toml"
    config.write_text(ROOT_CODE)
    assert _taken() == "process"
    os.chown(config, 65534, 65534)
    error = _error()
    assert "sandbox.isolation" in error and "owned by" in error


def test_an_untrusted_project_cannot_raise_the_sandbox_limits(home: Path) -> None:
    """Issue 42 review: a cloned repository lifted the limits that hold model code."""
    Path("omnilab.toml").write_text(
        "[sandbox.limits]\nmemory_bytes = 1099511627776\nwall_seconds = 1e9\n"
        "max_processes = 1000000\nworkspace_bytes = 1099511627776\n"
    )
    assert "sandbox.limits" in _error()


def test_an_untrusted_project_cannot_send_the_users_files_to_its_host(home: Path) -> None:
    """Issue 42 review: no key went to a model endpoint the project named, but the user's
    prompts and files did, and its replies drove the agent (as a refused scripted: model's)."""
    for line in (
        'model = "openai:gpt-4o@http://127.0.0.2:19999/v1"',
        '[bench]\njudge_model = "vllm:judge@http://127.0.0.2:8000/v1"',
        '[agents.roles]\nplanner = "openai:x@https://example.invalid/v1"',
    ):
        Path("omnilab.toml").write_text(line + "\n")
        assert "model" in _error() or "judge_model" in _error() or "planner" in _error(), line
    Path("omnilab.toml").write_text('model = "openai:gpt-4o"\n')
    assert _taken_model() == "openai:gpt-4o"  # a provider's own model stays an ordinary option


def test_a_file_writable_by_the_users_own_group_stays_trusted(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """umask 002 gives a user's files to their private group: still their own file."""
    config = home / "omnilab.toml"
    config.write_text(ROOT_CODE)
    os.chown(config, -1, os.getegid())
    config.chmod(0o664)
    monkeypatch.setenv("OMNILAB_CONFIG", str(config))
    assert _taken() == "process"


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_trust_store_another_user_owns_trusts_nothing(home: Path) -> None:
    """``sudo -E``: XDG_STATE_HOME names the caller's folder, where the caller can write a trust
    store that trusts their own project file for root."""
    from omnilab._trust import content_hash, trust_store

    Path("omnilab.toml").write_text(ROOT_CODE)
    store = trust_store()
    store.parent.mkdir(parents=True)
    real = os.path.realpath("omnilab.toml")
    store.write_text(json.dumps({"version": 1, "files": {real: content_hash(ROOT_CODE.encode())}}))
    assert _taken() == "process"  # root's own store: trusted
    os.chown(store, 65534, 65534)
    assert "sandbox.isolation" in _error()
    os.chown(store, 0, 0)
    store.chmod(0o666)
    assert "sandbox.isolation" in _error()


# Issue 42's leftover: a relative $OMNILAB_CONFIG (``export OMNILAB_CONFIG=omnilab.toml`` in a
# shell profile) names whichever file the current folder holds: every clone's omnilab.toml was
# read as the operator's own. It is now trusted only as a project's file is.


def test_a_relative_explicit_config_is_not_trusted(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("omnilab.toml").write_text(ROOT_CODE)  # the clone's file
    monkeypatch.setenv("OMNILAB_CONFIG", "omnilab.toml")
    error = _error()
    assert "sandbox.isolation" in error and "OMNILAB_CONFIG=omnilab.toml is relative" in error
    assert "absolute path" in error and "omnilab trust omnilab.toml" in error
    assert "\n" not in error
    Path("sub").mkdir()
    for spelling in ("./omnilab.toml", "sub/../omnilab.toml"):
        monkeypatch.setenv("OMNILAB_CONFIG", spelling)
        assert "is relative" in _error(), spelling


def test_a_relative_explicit_config_still_sets_ordinary_options(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("omnilab.toml").write_text("[media]\nmax_frames = 12\n")
    monkeypatch.setenv("OMNILAB_CONFIG", "omnilab.toml")
    get_settings.cache_clear()
    assert get_settings().media.max_frames == 12


def test_a_relative_explicit_config_is_trusted_once_its_content_is(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnilab._trust import trust

    Path("omnilab.toml").write_text(ROOT_CODE)
    monkeypatch.setenv("OMNILAB_CONFIG", "omnilab.toml")
    trust(Path("omnilab.toml"))
    assert _taken() == "process"
    Path("omnilab.toml").write_text(ROOT_CODE + "# edited\n")
    assert "changed since it was trusted" in _error()


def test_an_absolute_explicit_config_stays_the_operators(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("omnilab.toml").write_text(ROOT_CODE)
    monkeypatch.setenv("OMNILAB_CONFIG", str(Path("omnilab.toml").absolute()))
    assert _taken() == "process"


def test_doctor_and_config_say_a_relative_explicit_config_is_untrusted(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from omnilab._config_files import describe_config
    from omnilab.cli._console import inert_console
    from omnilab.cli.doctor import print_config
    from omnilab.cli.main import app

    Path("omnilab.toml").write_text(ROOT_CODE)
    monkeypatch.setenv("OMNILAB_CONFIG", "omnilab.toml")
    (entry, _env) = describe_config()
    assert entry["role"] == "explicit" and entry["trust"] == "untrusted"
    assert entry["refused"] == ["sandbox.isolation", "sandbox.unsafe_process_as_root"]
    assert "OMNILAB_CONFIG is relative" in entry["note"]
    console = inert_console(highlight=False, record=True, width=300)
    print_config(console, describe_config())
    shown = console.export_text()
    assert "untrusted" in shown and "OMNILAB_CONFIG is relative" in shown
    Path("omnilab.toml").write_text("[media]\nmax_frames = 12\n")  # so `config` can run
    get_settings.cache_clear()
    result = CliRunner().invoke(app, ["config"])
    assert result.exit_code == 0, result.output
    assert (
        "(explicit, untrusted)" in result.output and "OMNILAB_CONFIG is relative" in result.output
    )

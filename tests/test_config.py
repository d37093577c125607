"""Settings precedence: defaults < omnilab.toml < OMNILAB_* env vars < explicit arguments."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from omnilab.config import ConfigError, Settings, get_settings
from omnilab.media import synth


def _write_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = tmp_path / "omnilab.toml"
    path.write_text(text)
    monkeypatch.setenv("OMNILAB_CONFIG", str(path))
    get_settings.cache_clear()
    return path


def test_defaults_without_file_or_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMNILAB_CACHE_DIR")
    s = Settings()
    assert s.media.max_frames == 512
    assert s.media.audio_sample_rate == 16_000
    assert s.cache_dir.name == "omnilab"


def test_toml_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMNILAB_CACHE_DIR")
    _write_config(tmp_path, monkeypatch, 'cache_dir = "/srv/cache"\n[media]\nmax_frames = 12\n')
    s = get_settings()
    assert s.cache_dir == Path("/srv/cache")
    assert s.media.max_frames == 12


def test_env_overrides_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_config(tmp_path, monkeypatch, "[media]\nmax_frames = 12\nmax_clip_seconds = 5\n")
    monkeypatch.setenv("OMNILAB_MEDIA__MAX_FRAMES", "40")
    s = get_settings()
    assert s.media.max_frames == 40  # env wins
    assert s.media.max_clip_seconds == 5  # untouched field still from the file


def test_explicit_arguments_override_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_CACHE_DIR", "/from/env")
    assert Settings(cache_dir=Path("/explicit")).cache_dir == Path("/explicit")


def test_get_settings_is_cached_until_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    first = get_settings()
    monkeypatch.setenv("OMNILAB_MEDIA__MAX_FRAMES", "7")
    assert get_settings() is first
    get_settings.cache_clear()
    assert get_settings().media.max_frames == 7


def test_invalid_value_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_MEDIA__MAX_FRAMES", "0")
    with pytest.raises(ValidationError):
        Settings()


def test_import_has_no_side_effects(tmp_path: Path) -> None:
    """Importing the package writes no files, configures no logging and opens no sockets."""
    code = (
        "import logging, socket\n"
        "socket.socket.connect = lambda *a, **k: (_ for _ in ()).throw(SystemExit('network'))\n"
        "import omnilab, omnilab.config, omnilab.media, omnilab.cli.main\n"
        "assert not logging.getLogger().handlers, logging.getLogger().handlers\n"
    )
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, env=env)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_invalid_setting_is_a_one_line_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNILAB_MEDIA__MAX_FRAMES", "zero")
    with pytest.raises(ConfigError) as info:
        get_settings()
    message = str(info.value)
    assert "\n" not in message
    assert "media.max_frames" in message and "OMNILAB_MEDIA__MAX_FRAMES" in message


def test_malformed_toml_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_config(tmp_path, monkeypatch, "[media\nmax_frames = 3\n")
    with pytest.raises(ConfigError, match="cannot read config file"):
        get_settings()


def test_cli_reports_bad_setting_in_one_line(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OMNILAB_MEDIA__MAX_FRAMES": "-3"}
    video = synth.make_video(tmp_path / "x.mp4", duration=1.0, audio=False)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "omnilab",
            "media",
            "sheet",
            str(video),
            "--out",
            str(tmp_path / "s.jpg"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "OMNILAB_MEDIA__MAX_FRAMES" in proc.stderr


def test_docs_reference_matches_the_settings() -> None:
    """docs/configuration.md embeds `omnilab config --reference`; regenerate it when this fails."""
    from omnilab.cli.config import reference_markdown

    doc = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    embedded = doc.split("<!-- settings-reference:start -->\n")[1].split(
        "\n<!-- settings-reference:end -->"
    )[0]
    assert embedded == reference_markdown()


def test_config_command_masks_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from omnilab.cli.main import app

    monkeypatch.setenv("OMNILAB_MODELS__API_KEYS", '{"openai": "sk-very-secret"}')
    get_settings.cache_clear()
    result = CliRunner().invoke(app, ["config", "--json"])
    assert result.exit_code == 0, result.output
    assert "sk-very-secret" not in result.output
    assert '"models.api_keys": {\n    "openai": "***"' in result.output
    assert '"media.max_frames": 512' in result.output

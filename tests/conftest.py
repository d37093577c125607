"""Shared fixtures: an isolated cache and config per test, and generated media files."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omnilab.config import get_settings
from omnilab.media import synth


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test gets its own cache dir and no user config file."""
    for key in list(os.environ):
        if key.startswith("OMNILAB_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("OMNILAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OMNILAB_CONFIG", str(tmp_path / "no-config.toml"))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests are offline: connecting anywhere but loopback fails loudly."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> object:
        host = address[0] if isinstance(address, tuple) else str(address)
        if isinstance(host, str) and not (
            host.startswith("127.") or host in ("localhost", "::1") or self.family == socket.AF_UNIX
        ):
            raise RuntimeError(f"tests must not use the network (tried {address!r})")
        return real_connect(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded)


CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    """``OMNILAB_CHROMIUM``, else /usr/bin/chromium, else a Chromium on the PATH."""
    named = os.environ.get("OMNILAB_CHROMIUM")
    if named:
        return named if Path(named).is_file() else None
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless system Chromium through Playwright, shared by the browser tests; skipped, saying
    why, when Playwright or a browser is missing."""
    playwright = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')"
    )
    executable = find_browser()
    if executable is None:
        pytest.skip(
            "no Chromium found (apt-get install chromium, or set OMNILAB_CHROMIUM): "
            "browser tests skipped"
        )
    with playwright.sync_playwright() as p:
        found = p.chromium.launch(
            executable_path=executable,
            headless=True,
            # Root in containers needs --no-sandbox; audio may play without a user gesture.
            args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"],
        )
        yield found
        found.close()


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="session")
def video(media_dir: Path) -> Path:
    """4 s, 320x240, 25 fps, 1 s GOP, H.264 + AAC mono 44.1 kHz tones."""
    return synth.make_video(media_dir / "video.mp4", duration=4.0)


@pytest.fixture(scope="session")
def silent_video(media_dir: Path) -> Path:
    """A video with no audio stream."""
    return synth.make_video(media_dir / "silent.mp4", duration=2.0, audio=False)


@pytest.fixture(scope="session")
def audio_file(media_dir: Path) -> Path:
    """3 s of tones, WAV, 44.1 kHz mono."""
    return synth.make_audio(media_dir / "tones.wav", duration=3.0)


@pytest.fixture(scope="session")
def image_file(media_dir: Path) -> Path:
    return synth.make_image(media_dir / "image.png", size=(320, 240), index=5)


@pytest.fixture()
def tmp_dir_guard() -> Iterator[Path]:
    """Fails the test if it leaves anything new in the system temp folder."""
    tmp = Path(tempfile.gettempdir())
    before = set(tmp.iterdir())
    yield tmp
    left = {p for p in set(tmp.iterdir()) - before if not p.name.startswith("pytest-")}
    assert not left, f"left behind in {tmp}: {sorted(map(str, left))}"

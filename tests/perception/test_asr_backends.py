"""The whisper and openai ASR backends: their clean errors, and their output mapping.

The mapping from faster-whisper's results for a user-chosen model is checked with a stand-in
model class (the embedded model is tested in test_asr_embedded.py); the openai backend talks to
a real HTTP server on loopback.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np
import pytest
from numpy.typing import NDArray

from omnilab.perception import BackendUnavailableError, PerceptionError, asr_backends, transcribe

# --- whisper ---------------------------------------------------------------------------------


def test_whisper_with_a_name_not_in_the_cache(
    speech_wav: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("OMNILAB_PERCEPTION__WHISPER_MODEL", "tiny.en")
    with pytest.raises(BackendUnavailableError, match="not in the local Hugging Face cache"):
        transcribe(speech_wav, backend="whisper")


def test_whisper_with_a_folder_that_is_not_a_model(
    speech_wav: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OMNILAB_PERCEPTION__WHISPER_MODEL", str(tmp_path))
    with pytest.raises(BackendUnavailableError, match=r"has no model\.bin"):
        transcribe(speech_wav, backend="whisper")


@dataclass
class _W:
    word: str
    start: float
    end: float
    probability: float


@dataclass
class _S:
    start: float
    end: float
    text: str
    avg_logprob: float
    words: list[_W] = field(default_factory=list)


class FakeWhisperModel:
    """Answers like faster-whisper: one segment per call, times relative to the piece."""

    calls: ClassVar[list[dict[str, Any]]] = []

    multilingual: ClassVar[bool] = True

    def __init__(self, name: str, **kwargs: Any) -> None:
        assert kwargs["local_files_only"] is True
        # As many threads as cores, never CTranslate2's own default of 4 (0).
        assert kwargs["cpu_threads"] == len(os.sched_getaffinity(0))
        self.name = name
        self.model = SimpleNamespace(is_multilingual=type(self).multilingual)

    def transcribe(self, audio: NDArray[np.float32], **kwargs: Any) -> tuple[Iterator[_S], None]:
        FakeWhisperModel.calls.append({"n": audio.size, **kwargs})
        words = [_W(" hello", 0.2, 0.6, 0.9), _W(" world", 0.7, 1.1, 0.8)]
        return iter([_S(0.2, 1.1, " hello world", float(np.log(0.5)), words)]), None


def test_whisper_results_get_absolute_times(
    speech_wav: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import faster_whisper

    (tmp_path / "model.bin").write_bytes(b"x")
    monkeypatch.setenv("OMNILAB_PERCEPTION__WHISPER_MODEL", str(tmp_path))
    monkeypatch.setattr(faster_whisper, "WhisperModel", FakeWhisperModel)
    FakeWhisperModel.calls = []
    tr = transcribe(speech_wav, backend="whisper", language="en")
    assert tr.backend == "whisper" and tr.language == "en"
    assert len(FakeWhisperModel.calls) == 1  # 20.8 s fits one 30 s piece
    call = FakeWhisperModel.calls[0]
    assert call["word_timestamps"] is True and call["vad_filter"] is False
    assert call["beam_size"] == 1  # greedy: perception.whisper_beam_size
    assert tr.model == str(tmp_path) and tr.notes == []
    assert call["language"] == "en"
    seg = tr.segments[0]
    # The piece starts where VAD found speech (about 1.1 s, minus padding).
    offset = seg.start - 0.2
    assert 0.8 < offset < 1.3
    assert [w.text for w in seg.words] == ["hello", "world"]
    assert seg.words[1].end == pytest.approx(offset + 1.1)
    assert seg.confidence == pytest.approx(0.5)
    asr_backends.clear()


class UnsureEnglishModel(FakeWhisperModel):
    """An English-only model that hears foreign speech: fluent words, each with low probability."""

    multilingual: ClassVar[bool] = False

    def transcribe(self, audio: NDArray[np.float32], **kwargs: Any) -> tuple[Iterator[_S], None]:
        FakeWhisperModel.calls.append({"n": audio.size, **kwargs})
        words = [_W(f" w{i}", i * 0.3, i * 0.3 + 0.2, 0.3) for i in range(8)]
        return iter([_S(0.0, 2.4, " ".join(w.word for w in words), -1.5, words)]), None


@pytest.mark.parametrize(
    ("model", "noted"), [(UnsureEnglishModel, True), (FakeWhisperModel, False)]
)
def test_english_only_model_unsure_of_what_it_heard_says_so(
    speech_wav: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    model: type[FakeWhisperModel],
    noted: bool,
) -> None:
    import faster_whisper

    (tmp_path / "model.bin").write_bytes(b"x")
    monkeypatch.setenv("OMNILAB_PERCEPTION__WHISPER_MODEL", str(tmp_path))
    monkeypatch.setattr(faster_whisper, "WhisperModel", model)
    FakeWhisperModel.calls = []
    tr = transcribe(speech_wav, backend="whisper")
    if noted:
        assert len(tr.notes) == 1
        assert "mean word probability 0.30" in tr.notes[0]
        assert "not English" in tr.notes[0] and "perception.whisper_model" in tr.notes[0]
        assert FakeWhisperModel.calls[0]["language"] == "en"
    else:  # a multilingual model detects the language itself: no hint is forced on it
        assert tr.notes == [] and FakeWhisperModel.calls[0]["language"] is None
    asr_backends.clear()


# --- openai ----------------------------------------------------------------------------------


@dataclass
class Server:
    url: str
    requests: list[dict[str, Any]]
    replies: list[tuple[int, dict[str, Any]]]


@pytest.fixture()
def server() -> Iterator[Server]:
    """A transcription endpoint on 127.0.0.1 that records requests and plays queued replies."""
    state = Server(url="", requests=[], replies=[])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.requests.append(
                {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
            )
            code, reply = state.replies.pop(0)
            data = json.dumps(reply).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield state
    httpd.shutdown()
    httpd.server_close()
    asr_backends.clear()


def test_openai_verbose_json(
    speech_wav: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_PERCEPTION__OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OMNILAB_PERCEPTION__OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-users-openai-key")  # not for this endpoint
    server.replies.append(
        (
            200,
            {
                "text": "it was the best of times",
                "segments": [{"start": 0.1, "end": 2.0, "text": " it was the best of times"}],
                "words": [
                    {"word": "it", "start": 0.1, "end": 0.3},
                    {"word": "times", "start": 1.5, "end": 2.0},
                ],
            },
        )
    )
    tr = transcribe(speech_wav, backend="openai")
    req = server.requests[0]
    assert req["path"] == "/v1/audio/transcriptions"
    assert req["auth"] == "Bearer sk-test"
    assert b'name="response_format"\r\n\r\nverbose_json' in req["body"]
    assert b"RIFF" in req["body"] and b'name="model"\r\n\r\nwhisper-1' in req["body"]
    seg = tr.segments[0]
    assert seg.text == "it was the best of times"
    assert 0.9 < seg.start < 1.4 and [w.text for w in seg.words] == ["it", "times"]
    assert seg.words[1].end == pytest.approx(seg.start - 0.1 + 2.0)


def test_openai_falls_back_to_plain_json(
    speech_wav: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_PERCEPTION__OPENAI_BASE_URL", server.url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.replies += [(400, {"error": "response_format unsupported"}), (200, {"text": "hello"})]
    tr = transcribe(speech_wav, backend="openai")
    assert len(server.requests) == 2 and server.requests[0]["auth"] is None
    assert b'name="response_format"\r\n\r\njson' in server.requests[1]["body"]
    assert tr.text == "hello"
    # Without times from the server the segment spans the whole piece sent.
    assert tr.segments[0].start < 1.3 and tr.segments[0].end > 20.0


def test_openai_rejected_key(
    speech_wav: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_PERCEPTION__OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OMNILAB_PERCEPTION__OPENAI_API_KEY", "sk-wrong")
    server.replies.append((401, {"error": "bad key"}))
    with pytest.raises(PerceptionError, match=r"rejected the API key \(HTTP 401\)"):
        transcribe(speech_wav, backend="openai")


def test_openai_key_of_the_environment_stays_with_openai(
    speech_wav: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNILAB_PERCEPTION__OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-users-openai-key")
    server.replies.append((401, {"error": "who are you"}))
    with pytest.raises(PerceptionError, match=r"needs an API key \(HTTP 401\); set perception"):
        transcribe(speech_wav, backend="openai")
    assert server.requests[0]["auth"] is None


def test_openai_needs_a_key_for_openai_itself(
    speech_wav: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(BackendUnavailableError, match="needs an API key: set OPENAI_API_KEY"):
        transcribe(speech_wav, backend="openai")


def test_openai_unreachable_endpoint(speech_wav: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OMNILAB_PERCEPTION__OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    with pytest.raises(PerceptionError, match="is unreachable"):
        transcribe(speech_wav, backend="openai")

"""The media digest: every part on a talk video, caching, switches and files lacking a part."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from omnilab.config import get_settings
from omnilab.media import MediaError, MediaErrorCode
from omnilab.perception import DigestOptions, EventLabel, Evidence, digest
from omnilab.perception.digest import keyframe_times
from omnilab.perception.metrics import word_error_rate
from omnilab.perception.screen_text import normalise
from omnilab.perception.types import Shot


@dataclass
class Runs:
    first: Evidence
    second: Evidence
    progress: dict[str, tuple[float, float]]


@pytest.fixture(scope="module")
def runs(talk, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:  # type: ignore[no-untyped-def]
    """The talk video digested twice into one private cache (a full digest takes seconds)."""
    progress: dict[str, tuple[float, float]] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OMNILAB_CACHE_DIR", str(tmp_path_factory.mktemp("digest-cache")))
        get_settings.cache_clear()
        first = digest([talk.path], on_progress=lambda k, d, t: progress.__setitem__(k, (d, t)))
        second = digest([talk.path])
        yield Runs(first=first, second=second, progress=progress)
    get_settings.cache_clear()


@pytest.fixture()
def evidence(runs: Runs) -> Evidence:
    return runs.first


def test_talk_video_digest(evidence: Evidence, talk, speech_text: str) -> None:  # type: ignore[no-untyped-def]
    (f,) = evidence.files
    assert f.info.has_video and f.info.has_audio and not f.cached and f.notes == []
    assert f.transcript is not None and f.transcript.backend == "whisper"
    said = " ".join(speech_text.split()[: len(f.transcript.text.split())])
    assert word_error_rate(said, f.transcript.text) <= 0.15
    assert f.transcript.segments[0].start >= talk.speech_at
    assert f.events is not None
    assert f.events[0].label is EventLabel.SILENCE and f.events[0].end <= talk.speech_at + 1.6
    assert any(e.label is EventLabel.SPEECH and e.start < 4.0 < e.end for e in f.events)
    assert f.shots is not None and [s.start for s in f.shots[1:]] == pytest.approx(
        talk.cuts, abs=0.05
    )
    assert f.screen_text is not None
    seen = {normalise(t.text): t.times for t in f.screen_text}
    # Each slide's text is read on the keyframe of its own shot, and only there.
    assert set(seen) == {"welcome to omnilab", "chapter two", "the spring of hope", "the end"}
    assert all(0.0 < t < 3.0 for t in seen["welcome to omnilab"])
    assert all(3.0 < t < 7.0 for t in seen["chapter two"])
    assert all(7.0 < t < 10.0 for t in seen["the end"])
    assert f.sheet is not None and f.sheet.is_file()
    with Image.open(f.sheet) as sheet:
        assert sheet.width > 320 and sheet.height > 100


def test_markdown_and_json(evidence: Evidence) -> None:
    md = evidence.to_markdown()
    assert md.startswith("## talk.mp4\ntalk.mp4: video (mp4), 640x360")
    for heading in (
        "### Transcript (whisper",
        "### Audio events",
        "### Shots (3)",
        "### On-screen text",
    ):
        assert heading in md
    first = evidence.files[0].transcript.segments[0]  # type: ignore[union-attr]
    assert f"] {first.text}\n" in md and "1. 00:00.0-00:03.0 (keyframe" in md
    assert '- "WELCOME TO OMNILAB" at 00:01' in md
    again = Evidence.model_validate_json(evidence.model_dump_json())
    assert again == evidence


def test_second_run_hits_the_cache(runs: Runs, talk) -> None:  # type: ignore[no-untyped-def]
    first, second = runs.first.files[0], runs.second.files[0]
    assert second.cached
    assert second.seconds < 0.05 * first.seconds
    assert second.model_dump(exclude={"seconds", "cached"}) == first.model_dump(
        exclude={"seconds", "cached"}
    )


def test_changing_one_option_recomputes_only_its_part(talk) -> None:  # type: ignore[no-untyped-def]
    opts = DigestOptions(transcript=False, ocr=False, sheet=False)
    assert not digest([talk.path], options=opts).files[0].cached
    assert digest([talk.path], options=opts).files[0].cached
    # Turning OCR on computes that part; the shots and events already cached are reused.
    again = digest([talk.path], options=opts.model_copy(update={"ocr": True})).files[0]
    assert not again.cached and again.screen_text is not None
    assert digest([talk.path], options=opts.model_copy(update={"ocr": True})).files[0].cached


def test_parts_can_be_switched_off(talk) -> None:  # type: ignore[no-untyped-def]
    opts = DigestOptions(transcript=False, events=False, ocr=False, sheet=False)
    f = digest([talk.path], options=opts).files[0]
    assert f.transcript is None and f.events is None and f.screen_text is None and f.sheet is None
    assert f.shots is not None and len(f.shots) == 3
    md = Evidence(files=[f]).to_markdown()
    assert "### Transcript" not in md and "### On-screen text" not in md


def test_video_without_audio_notes_it_and_goes_on(mute_talk_video: Path) -> None:
    f = digest([mute_talk_video]).files[0]
    assert f.transcript is None and f.events is None
    assert f.notes == ["no audio track: no transcript or audio events"]
    assert f.shots is not None and len(f.shots) == 3
    assert f.screen_text is not None and len(f.screen_text) == 4
    assert (
        "### Notes\n- no audio track: no transcript or audio events"
        in Evidence(files=[f]).to_markdown()
    )


def test_audio_and_image_files(speech_wav: Path, tone_wav: Path, tmp_path: Path) -> None:
    image = Image.new("RGB", (480, 160), "white")
    ImageDraw.Draw(image).text(
        (20, 50), "Invoice 4711", fill="black", font=ImageFont.load_default(size=36)
    )
    image.save(tmp_path / "scan.png")
    speech, tone, scan = digest([speech_wav, tone_wav, tmp_path / "scan.png"]).files
    assert speech.transcript is not None and "winter of despair" in speech.transcript.text
    assert speech.shots is None and speech.sheet is None and speech.screen_text is None
    assert tone.transcript is not None and tone.transcript.segments == []
    assert tone.events is not None and {e.label for e in tone.events} == {EventLabel.MUSIC}
    assert "(no speech)" in Evidence(files=[tone]).to_markdown()
    assert scan.transcript is None and scan.screen_text is not None
    assert [t.text for t in scan.screen_text] == ["Invoice 4711"] and scan.screen_text[
        0
    ].times == []


def test_unreadable_file_is_a_media_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"\x00\x01 not a video" * 100)
    with pytest.raises(MediaError) as err:
        digest([bad])
    assert err.value.code is MediaErrorCode.CORRUPT


@pytest.mark.parametrize("name", ["notes.txt", "README.md", "data.json", "notes"])
def test_text_files_are_digested_as_text(tmp_path: Path, name: str) -> None:
    # FFmpeg reads .txt as a "tty" video: a digest must give the text, not shots of ANSI art.
    path = tmp_path / name
    content = '{"answer": 42}\n' if name.endswith(".json") else "# Notes\nThe key is blue.\n"
    path.write_text(content, encoding="utf-8")
    (f,) = digest([path]).files
    assert f.info.kind.value == "text" and f.text == content
    assert f.transcript is None and f.shots is None and f.screen_text is None and f.notes == []
    md = digest([path]).to_markdown()
    assert md == f"## {name}\n{f.info.summary()}\n### Text\n{content}\n"


def test_long_text_files_are_cut_with_a_note(tmp_path: Path) -> None:
    from omnilab.perception.digest import TEXT_CHARS

    path = tmp_path / "book.txt"
    path.write_text("word " * TEXT_CHARS, encoding="utf-8")
    (f,) = digest([path]).files
    assert f.text is not None and len(f.text) == TEXT_CHARS
    assert f.notes == [f"text: cut after {TEXT_CHARS} of {5 * TEXT_CHARS} characters"]


def test_save_writes_markdown_json_and_sheets(evidence: Evidence, tmp_path: Path) -> None:
    saved = evidence.save(tmp_path / "out")
    sheet = tmp_path / "out" / "talk.mp4.sheet.png"
    assert sheet.is_file() and saved.files[0].sheet == sheet
    assert (tmp_path / "out" / "digest.md").read_text() == saved.to_markdown()
    data = json.loads((tmp_path / "out" / "digest.json").read_text())
    assert data["files"][0]["sheet"] == str(sheet)


def test_progress_is_reported_per_part(runs: Runs) -> None:
    seen = runs.progress
    assert set(seen) == {"talk.mp4: transcript", "talk.mp4: shots"}
    assert all(done == pytest.approx(total) for done, total in seen.values())


def test_keyframe_times_for_long_shots_and_limits() -> None:
    shots = [
        Shot(index=0, start=0, end=10, keyframe=5),
        Shot(index=1, start=10, end=100, keyframe=55),
    ]
    assert keyframe_times(shots, limit=10) == [5, 25.0, 55.0, 85.0]
    assert keyframe_times(shots, limit=2) == [5, 85.0]

"""probe: every field on generated files of each container, and every kind of bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from omnilab.media import MediaError, MediaErrorCode, MediaKind, probe, synth

# ext -> (container, video codec, audio codec, audio sample rate): what synth writes in each.
VIDEOS = {
    ".mp4": ("mp4", "h264", "aac", 44_100),
    ".mov": ("mov", "h264", "aac", 44_100),
    ".mkv": ("matroska", "h264", "aac", 44_100),
    ".webm": ("webm", "vp9", "opus", 48_000),
}
AUDIOS = {
    ".wav": ("wav", "pcm_s16le", 44_100),
    ".mp3": ("mp3", "mp3float", 44_100),
    ".flac": ("flac", "flac", 44_100),
    ".m4a": ("m4a", "aac", 44_100),
    ".ogg": ("ogg", "opus", 48_000),
}
IMAGES = {".jpg": "jpeg", ".png": "png", ".webp": "webp"}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("probe")


@pytest.mark.parametrize("ext", sorted(VIDEOS))
def test_video_fields(files: Path, ext: str) -> None:
    container, vcodec, acodec, rate = VIDEOS[ext]
    path = synth.make_video(files / f"v{ext}", duration=3.0, fps=25, size=(320, 240))
    info = probe(path)
    assert info.kind is MediaKind.VIDEO
    assert info.path == path.resolve()
    assert info.container == container
    assert info.size_bytes == path.stat().st_size
    assert info.has_video and info.has_audio
    assert (info.width, info.height, info.rotation) == (320, 240, 0)
    assert info.fps == 25.0
    assert info.video_codec == vcodec
    assert info.audio_codec == acodec
    assert (info.sample_rate, info.channels) == (rate, 1)
    assert info.start_time == 0.0
    # Matroska pads the end with the last audio packet, so allow a few tens of milliseconds.
    assert info.duration == pytest.approx(3.0, abs=0.05)
    # MP4/MOV store the frame count; Matroska does not, so it is estimated from the duration.
    assert info.frame_count is not None and abs(info.frame_count - 75) <= 1
    if ext in (".mp4", ".mov"):
        assert info.frame_count == 75
    assert info.keyframe_interval == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize(("gop", "expected"), [(0.4, 0.4), (2.0, 2.0)])
def test_keyframe_interval_follows_gop(files: Path, gop: float, expected: float) -> None:
    path = synth.make_video(files / f"gop{gop}.mp4", duration=4.0, gop_seconds=gop, audio=False)
    info = probe(path)
    assert info.keyframe_interval == pytest.approx(expected, abs=0.01)
    assert info.has_audio is False
    assert (info.audio_codec, info.sample_rate, info.channels) == (None, None, None)


def test_single_keyframe_has_no_interval(files: Path) -> None:
    path = synth.make_video(files / "onegop.mp4", duration=1.0, gop_seconds=5.0, audio=False)
    assert probe(path).keyframe_interval is None


def test_fps_size_and_channels_are_read_not_assumed(files: Path) -> None:
    path = synth.make_video(
        files / "odd.mp4", duration=2.0, fps=10, size=(176, 144), channels=2, sample_rate=22_050
    )
    info = probe(path)
    assert (info.fps, info.frame_count, info.width, info.height) == (10.0, 20, 176, 144)
    assert (info.sample_rate, info.channels) == (22_050, 2)
    assert info.duration == pytest.approx(2.0, abs=0.05)


@pytest.mark.parametrize("ext", sorted(AUDIOS))
def test_audio_fields(files: Path, ext: str) -> None:
    container, codec, rate = AUDIOS[ext]
    path = synth.make_audio(files / f"a{ext}", duration=2.0)
    info = probe(path)
    assert info.kind is MediaKind.AUDIO
    assert info.container == container
    assert info.audio_codec == codec
    assert (info.sample_rate, info.channels) == (rate, 1)
    assert info.has_audio and not info.has_video
    assert info.duration == pytest.approx(2.0, abs=0.05)
    assert info.size_bytes == path.stat().st_size
    assert (info.width, info.height, info.fps, info.frame_count) == (None, None, None, None)
    assert (info.video_codec, info.keyframe_interval) == (None, None)


def test_mp3_reports_encoder_delay_as_start_time(files: Path) -> None:
    # LAME puts ~1105 samples of priming before the first real sample.
    info = probe(synth.make_audio(files / "delay.mp3", duration=1.0))
    assert 0.0 < info.start_time < 0.1


@pytest.mark.parametrize("ext", sorted(IMAGES))
@pytest.mark.parametrize(
    ("orientation", "size"),
    [(None, (320, 240)), (1, (320, 240)), (6, (240, 320)), (8, (240, 320)), (3, (320, 240))],
)
def test_image_fields(
    files: Path, ext: str, orientation: int | None, size: tuple[int, int]
) -> None:
    path = synth.make_image(
        files / f"i{orientation}{ext}", size=(320, 240), exif_orientation=orientation
    )
    info = probe(path)
    assert info.kind is MediaKind.IMAGE
    assert info.container == IMAGES[ext]
    assert (info.width, info.height) == size
    assert info.size_bytes == path.stat().st_size
    assert info.duration is None and info.fps is None and info.frame_count is None
    assert not info.has_video and not info.has_audio


@pytest.mark.parametrize(
    ("rotation", "size"), [(90, (240, 320)), (180, (320, 240)), (270, (240, 320))]
)
def test_rotated_video_swaps_display_size(
    files: Path, rotation: int, size: tuple[int, int]
) -> None:
    path = synth.make_video(files / f"rot{rotation}.mp4", duration=1.0, rotation=rotation)
    info = probe(path)
    assert info.rotation == rotation
    assert (info.width, info.height) == size


def test_kind_comes_from_content_not_extension(files: Path, video: Path, image_file: Path) -> None:
    fake_jpg = shutil.copy(video, files / "really-a-video.jpg")
    info = probe(fake_jpg)
    assert info.kind is MediaKind.VIDEO
    assert info.container == "mov"  # the MP4 family's first name, since .jpg is not one of them
    assert (info.width, info.height, info.fps) == (320, 240, 25.0)

    fake_mp4 = shutil.copy(image_file, files / "really-an-image.mp4")
    info = probe(fake_mp4)
    assert info.kind is MediaKind.IMAGE
    assert (info.container, info.width, info.height) == ("png", 320, 240)


def test_rewritten_file_is_probed_again(tmp_path: Path) -> None:
    path = tmp_path / "same-name.mp4"
    synth.make_video(path, duration=1.0)
    assert probe(path).duration == pytest.approx(1.0, abs=0.05)
    synth.make_video(path, duration=2.0)
    assert probe(path).duration == pytest.approx(2.0, abs=0.05)


def _expect(path: Path, code: MediaErrorCode, name: str) -> MediaError:
    with pytest.raises(MediaError) as err:
        probe(path)
    assert err.value.code is code
    assert name in err.value.message
    assert "\n" not in err.value.message
    return err.value


def test_missing_file(tmp_path: Path, tmp_dir_guard: Path) -> None:
    _expect(tmp_path / "nope.mp4", MediaErrorCode.NOT_FOUND, "nope.mp4")


def test_directory(tmp_path: Path, tmp_dir_guard: Path) -> None:
    folder = tmp_path / "clips.mp4"
    folder.mkdir()
    err = _expect(folder, MediaErrorCode.UNSUPPORTED, "clips.mp4")
    assert "directory" in err.message


def test_empty_file(tmp_path: Path, tmp_dir_guard: Path) -> None:
    empty = tmp_path / "empty.mp4"
    empty.touch()
    err = _expect(empty, MediaErrorCode.CORRUPT, "empty.mp4")
    assert "empty" in err.message


@pytest.mark.parametrize("keep", [0.5, 0.02])
def test_truncated_mp4(video: Path, tmp_path: Path, tmp_dir_guard: Path, keep: float) -> None:
    data = video.read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: int(len(data) * keep)])
    _expect(cut, MediaErrorCode.CORRUPT, "cut.mp4")


def test_random_bytes_are_corrupt(tmp_path: Path, tmp_dir_guard: Path) -> None:
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(bytes(range(256)) * 16)
    _expect(junk, MediaErrorCode.CORRUPT, "junk.mp4")


TEXTS = {
    "notes.txt": "these are my notes, not a video\n" * 20,
    "README.md": "# Title\n\nSome *Markdown* text.\n",
    "data.json": '{"answer": 42, "items": [1, 2, 3]}\n',
    "subs.srt": "1\n00:00:01,000 --> 00:00:02,000\nHello\n",
}


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_text_files_are_text_not_tty_video(tmp_path: Path, tmp_dir_guard: Path, name: str) -> None:
    # FFmpeg opens .txt with its "tty" demuxer (ANSI art, 640x400 video) and .srt as subtitles.
    path = tmp_path / name
    path.write_text(TEXTS[name], encoding="utf-8")
    info = probe(path)
    assert info.kind is MediaKind.TEXT
    assert info.container == path.suffix.lstrip(".")
    assert not info.has_video and not info.has_audio
    assert info.width is None and info.duration is None and info.video_codec is None
    assert info.size_bytes == path.stat().st_size
    assert info.summary() == f"{name}: text ({info.container}), {info.size_bytes} bytes"


@pytest.mark.parametrize("name", ["notes.nfo", "notes"])
def test_text_under_other_names_is_text(tmp_path: Path, tmp_dir_guard: Path, name: str) -> None:
    # .nfo is one of the tty demuxer's own names; a name without a suffix (README) is text too.
    text = tmp_path / name
    text.write_text("these are my notes, not a video\n" * 20, encoding="utf-8")
    assert probe(text).kind is MediaKind.TEXT


def test_text_file_named_mp4(tmp_path: Path, tmp_dir_guard: Path) -> None:
    # The name promised a video: an error that says what the file really is.
    text = tmp_path / "notes.mp4"
    text.write_text("these are my notes, not a video\n" * 20, encoding="utf-8")
    err = _expect(text, MediaErrorCode.UNSUPPORTED, "notes.mp4")
    assert "text" in err.message


def test_a_stream_without_a_decoder_is_unsupported_not_a_crash(
    tmp_path: Path, tmp_dir_guard: Path
) -> None:
    # FFmpeg demuxes an SVG as a video stream it has no decoder for (no codec context): an
    # upload to omnilab serve or an `omnilab media probe` of one once ended in a traceback.
    svg = tmp_path / "drawing.svg"
    svg.write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/>'
        "</svg>\n",
        encoding="utf-8",
    )
    err = _expect(svg, MediaErrorCode.UNSUPPORTED, "drawing.svg")
    assert "can be decoded" in err.message


def test_binary_file_named_txt_is_not_text(tmp_path: Path, tmp_dir_guard: Path) -> None:
    junk = tmp_path / "junk.txt"
    junk.write_bytes(bytes(range(256)) * 16)
    _expect(junk, MediaErrorCode.CORRUPT, "junk.txt")


def test_media_operations_refuse_text_files(tmp_path: Path) -> None:
    from omnilab.media import audio_samples, frames_at

    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n" * 50, encoding="utf-8")
    for op in (lambda: frames_at(notes, [0.0]), lambda: audio_samples(notes)):
        with pytest.raises(MediaError) as err:
            op()
        assert err.value.code is MediaErrorCode.UNSUPPORTED
        assert "notes.txt is a text file" in err.value.message


def test_probe_of_good_files_leaves_no_temp_files(
    video: Path, audio_file: Path, image_file: Path, tmp_dir_guard: Path
) -> None:
    kinds = [probe(p).kind for p in (video, audio_file, image_file)]
    assert kinds == [MediaKind.VIDEO, MediaKind.AUDIO, MediaKind.IMAGE]


def test_probe_command_shows_a_text_file_as_text(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from omnilab.cli.main import app

    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\nThe key is blue.\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["media", "probe", str(notes)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "notes.md: text (md), 25 bytes"
    assert "tty" not in result.stdout and "ansi" not in result.stdout

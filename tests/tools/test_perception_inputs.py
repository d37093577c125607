"""InputSet: ids by content kind, resolution by id or file name only, refusals, the listing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from omnilab.bench.task import FileKind as BenchFileKind
from omnilab.bench.task import TaskFile
from omnilab.bench.task import guess_kind as bench_guess_kind
from omnilab.content import Audio, Document, Image, Video
from omnilab.inputs import (
    FileKind,
    InputFile,
    InputKindError,
    InputMissingError,
    InputNotFound,
    InputSet,
    guess_kind,
)
from omnilab.media import synth


@pytest.fixture()
def inputs(video: Path, audio_file: Path, image_file: Path, silent_video: Path) -> InputSet:
    return InputSet.from_paths([video, audio_file, image_file, silent_video])


def test_bench_reexports_the_moved_names() -> None:
    assert TaskFile is InputFile
    assert bench_guess_kind is guess_kind
    assert BenchFileKind == FileKind


def test_ids_are_numbered_per_kind_and_given_is_kept(
    inputs: InputSet, video: Path, silent_video: Path
) -> None:
    assert [(f.id, f.kind) for f in inputs] == [
        ("video_1", "video"),
        ("audio_1", "audio"),
        ("image_1", "image"),
        ("video_2", "video"),
    ]
    assert len(inputs) == 4
    first = inputs.resolve("video_1")
    assert first.given == str(video) and first.path == video.resolve()
    assert inputs.resolve("video_2").path.name == silent_video.name


def test_kind_comes_from_content_not_extension(tmp_path: Path, audio_file: Path) -> None:
    disguised = tmp_path / "really_audio.mp4"
    shutil.copy(audio_file, disguised)
    notes = tmp_path / "notes.txt"
    notes.write_text("hello", encoding="utf-8")
    got = InputSet.from_paths([disguised, notes])
    assert [(f.id, f.kind) for f in got] == [("audio_1", "audio"), ("text_1", "text")]


def test_missing_path_is_a_one_line_user_error(tmp_path: Path) -> None:
    with pytest.raises(InputMissingError, match=r"input file not found: .*nope\.mp4"):
        InputSet.from_paths([tmp_path / "nope.mp4"])


def test_resolve_by_id_by_file_name_and_bracketed_id(inputs: InputSet, image_file: Path) -> None:
    assert inputs.resolve("image_1").path.name == image_file.name
    assert inputs.resolve(image_file.name).id == "image_1"
    assert inputs.resolve(" <image_1> ").id == "image_1"
    assert inputs.resolve("tones.wav", kinds=("audio", "video")).id == "audio_1"


@pytest.mark.parametrize(
    "ref",
    [
        "../../etc/passwd",
        "/etc/passwd",
        "..",
        "sub/image.png",
        "..\\image.png",
        "",
    ],
)
def test_paths_and_traversal_are_refused_with_valid_ids(inputs: InputSet, ref: str) -> None:
    with pytest.raises(InputNotFound) as info:
        inputs.resolve(ref)
    assert info.value.code == "UNKNOWN_ID"
    message = str(info.value)
    assert "valid ids: video_1 (video.mp4), audio_1 (tones.wav), image_1 (image.png)" in message
    assert "\n" not in message


def test_a_full_path_to_an_input_is_still_refused(inputs: InputSet, video: Path) -> None:
    with pytest.raises(InputNotFound, match="paths are not accepted"):
        inputs.resolve(str(video))


def test_unknown_id_lists_the_valid_ids(inputs: InputSet) -> None:
    with pytest.raises(InputNotFound, match=r"unknown input 'video_9'; valid ids: video_1"):
        inputs.resolve("video_9")


def test_wrong_kind_is_refused_with_ids_of_the_right_kind(inputs: InputSet) -> None:
    with pytest.raises(InputKindError) as info:
        inputs.resolve("image_1", kinds=("video",))
    assert info.value.code == "WRONG_KIND"
    assert str(info.value) == (
        "image_1 (image.png) is an image, not a video; "
        "valid ids: video_1 (video.mp4), video_2 (silent.mp4)"
    )
    with pytest.raises(InputKindError, match="this task has no audio inputs"):
        InputSet.from_paths([inputs.resolve("image_1").path]).resolve("image_1", kinds=("audio",))


def test_a_file_name_shared_by_two_inputs_must_be_named_by_id(tmp_path: Path, video: Path) -> None:
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        shutil.copy(video, tmp_path / sub / "clip.mp4")
    both = InputSet.from_paths([tmp_path / "a" / "clip.mp4", tmp_path / "b" / "clip.mp4"])
    with pytest.raises(InputNotFound, match=r"several inputs \(video_1, video_2\): use the id"):
        both.resolve("clip.mp4")
    assert both.resolve("video_2").path.parent.name == "b"


def test_repeated_ids_get_a_suffix(video: Path) -> None:
    f = InputFile(id="x", kind="video", path=video, given=str(video))
    assert InputSet([f, f]).ids() == ["x", "x_1"]


def test_listing_has_id_kind_duration_size_and_audio(inputs: InputSet) -> None:
    lines = inputs.listing().splitlines()
    assert lines[0].startswith("Input files")
    assert lines[1:] == [
        "- video_1: video, file video.mp4, duration 4.0 s, size 320x240, with audio",
        "- audio_1: audio, file tones.wav, duration 3.0 s",
        "- image_1: image, file image.png, size 320x240",
        "- video_2: video, file silent.mp4, duration 2.0 s, size 320x240, no audio",
    ]


def test_listing_reports_unreadable_files_and_documents(tmp_path: Path) -> None:
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video at all" * 10)
    doc = tmp_path / "report.pdf"
    doc.write_bytes(b"%PDF-1.4" + b"x" * 2000)
    got = InputSet.from_paths([broken, doc])
    assert [f.kind for f in got] == ["video", "document"]
    lines = got.listing().splitlines()
    assert lines[1].startswith("- video_1: video, file broken.mp4, unreadable [")
    assert lines[2] == "- document_1: document, file report.pdf, 2.0 KB"
    assert InputSet([]).listing() == "Input files: none."


def test_content_parts_by_kind(tmp_path: Path, video: Path, audio_file: Path) -> None:
    image = synth.make_image(tmp_path / "p.png", size=(32, 16))
    doc = tmp_path / "d.md"
    doc.write_text("# hi", encoding="utf-8")
    got = [f.content() for f in InputSet.from_paths([video, audio_file, image, doc])]
    assert [type(c) for c in got] == [Video, Audio, Image, Document]


def test_a_missing_task_file_is_listed_without_its_path(tmp_path: Path) -> None:
    gone = tmp_path / "secret" / "dir" / "clip.mp4"
    got = InputSet([InputFile(id="video_x", kind="video", path=gone, given="clip.mp4")])
    line = got.listing().splitlines()[1]
    assert line == (
        "- video_x: video, file clip.mp4, unreadable [NOT_FOUND]: "
        "video_x (clip.mp4) is not available: its file is missing"
    )
    assert "secret" not in got.listing()

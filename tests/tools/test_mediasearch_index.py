"""Local image and video indexes: built from generated media and sidecars, searched offline,
with thumbnails and time ranges; the CLI with its progress bar."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from PIL import Image as PILImage
from typer.testing import CliRunner

from omnilab.cli.main import app
from omnilab.media.audio import audio_samples
from omnilab.media.synth import make_image, make_video
from omnilab.perception.samples import Slide, make_talk
from omnilab.tools.mediasearch import MediaSearch, build_media_index, open_media_index
from omnilab.tools.web import WebError, WebErrorCode
from omnilab.tools.web.index import build_index

runner = CliRunner()
SPEECH = Path(__file__).resolve().parents[1] / "data" / "speech" / "two_cities_part1.wav"


@pytest.fixture()
def images(tmp_path: Path) -> Path:
    folder = tmp_path / "images"
    (folder / "sub").mkdir(parents=True)
    make_image(folder / "red_lighthouse.png", index=1)
    (folder / "red_lighthouse.json").write_text(
        json.dumps({"title": "Cape Lumen light", "alt": "striped tower", "tags": ["coast"]}),
        encoding="utf-8",
    )
    make_image(folder / "sub" / "harbour.png", index=2)
    (folder / "sub" / "harbour.txt").write_text("a yellow crane unloading ships", "utf-8")
    exif = PILImage.Exif()
    exif[0x010E] = "Windmill near Zaandam"
    exif[0x013B] = "A. Painter"
    PILImage.new("RGB", (32, 32), "green").save(folder / "img_0001.jpg", exif=exif)
    (folder / ".hidden.png").write_bytes(b"x")
    (folder / "notes.md").write_text("not an image", "utf-8")
    return folder


def test_image_index_reads_sidecars_exif_and_file_names(images: Path, tmp_path: Path) -> None:
    out = build_media_index("image", images, tmp_path / "ix", ocr=False)
    index = open_media_index(out, "image")
    assert index.manifest.files == 3 and index.manifest.entries == 3
    (caption,) = index.search("striped tower coast", top_k=3)
    assert (caption.title, caption.url) == ("Cape Lumen light", "image://red_lighthouse.png")
    assert caption.thumbnail is not None and Path(caption.thumbnail).is_file()
    assert Path(caption.thumbnail).is_relative_to(out)  # thumbnails live in the index
    (txt,) = index.search("crane", top_k=3)
    assert txt.url == "image://sub/harbour.png" and "yellow crane" in txt.snippet
    (exif,) = index.search("Zaandam windmill", top_k=3)
    assert exif.url == "image://img_0001.jpg"
    assert index.search("harbour", top_k=3)[0].url == "image://sub/harbour.png"  # file name
    assert index.search("", top_k=3) == []


@pytest.mark.slow
def test_image_index_reads_text_in_the_image(tmp_path: Path) -> None:
    folder = tmp_path / "imgs"
    folder.mkdir()
    make_image(folder / "a.png", size=(640, 240), text="ZANZIBAR FERRY")
    make_image(folder / "b.png", size=(640, 240), index=3)
    index = open_media_index(build_media_index("image", folder, tmp_path / "ix"))
    (hit,) = index.search("zanzibar", top_k=2)
    assert hit.url == "image://a.png"


@pytest.mark.slow
def test_video_index_points_at_time_ranges(tmp_path: Path) -> None:
    folder = tmp_path / "videos"
    folder.mkdir()
    slides = [
        Slide("CAPE LUMEN", 3.0),
        Slide("QUIET SEA", 6.0, background=(60, 60, 60)),
        Slide("PORT ARDENT FERRY", 3.0, background=(120, 20, 20)),
    ]
    speech = audio_samples(SPEECH, 0.0, 8.5, sample_rate=16_000)  # "It was the best of times"
    make_talk(folder / "harbour_tour.mp4", slides, speech=speech, size=(640, 360), fps=5)
    (folder / "harbour_tour.json").write_text(json.dumps({"title": "Harbour tour"}), "utf-8")
    out = build_media_index("video", folder, tmp_path / "ix", passage_seconds=8.0)
    index = open_media_index(out, "video")
    (hit,) = index.search("ardent ferry", top_k=3)
    assert hit.title == "Harbour tour" and hit.start_s is not None and hit.start_s >= 8
    assert hit.url.startswith("video://harbour_tour.mp4#t=")
    assert hit.thumbnail is not None and Path(hit.thumbnail).is_file()
    (first,) = index.search("cape lumen", top_k=3)
    assert first.start_s is not None and first.start_s < 8
    (said,) = index.search("age of foolishness", top_k=3)  # found by its transcript
    assert said.start_s is not None and said.start_s < 8 and "foolishness" in said.snippet
    # "Search for videos and keyframes": 16 frames of the passage, laid out as one picture.
    from PIL import Image

    (keyed,) = index.search("ardent ferry", top_k=3, keyframes=16)
    assert keyed.thumbnail is not None and keyed.thumbnail != hit.thumbnail
    with Image.open(keyed.thumbnail) as sheet, Image.open(hit.thumbnail) as poster:
        assert sheet.width > poster.width  # a 4x4 grid of 256 px tiles, not one frame
        # The passage's slide (red "PORT ARDENT FERRY" from 9 s) fills the last tiles.
        red, green, _blue = sheet.convert("RGB").getpixel((sheet.width - 20, sheet.height - 40))
        assert red > 90 and green < 60
    assert index.search("ardent ferry", top_k=3, keyframes=16)[0].thumbnail == keyed.thumbnail
    (folder / "harbour_tour.mp4").unlink()  # a source that moved away: the poster frame stays
    (fallback,) = index.search("ardent ferry", top_k=3, keyframes=4)
    assert fallback.thumbnail == hit.thumbnail


def test_video_index_without_digest_uses_names_and_sidecars(tmp_path: Path) -> None:
    folder = tmp_path / "v"
    folder.mkdir()
    make_video(folder / "tram_ride.mp4", duration=1.0, audio=False)
    (folder / "tram_ride.txt").write_text("a tram crossing the old bridge", "utf-8")
    index = open_media_index(build_media_index("video", folder, tmp_path / "ix", digest=False))
    (hit,) = index.search("bridge tram", top_k=2)
    assert (hit.start_s, hit.end_s) == (0.0, 1.0) and hit.thumbnail is not None


def test_index_errors_are_clear(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(WebError) as caught:
        build_media_index("image", empty, tmp_path / "ix")
    assert caught.value.code is WebErrorCode.BAD_CORPUS and "no media files" in caught.value.message
    not_index = tmp_path / "taken"
    not_index.mkdir()
    (not_index / "precious.txt").write_text("keep me", "utf-8")
    make_image(empty / "a.png")  # "a" is a stop word: nothing to search by
    with pytest.raises(WebError, match="nothing to search by"):
        build_media_index("image", empty, tmp_path / "ix", ocr=False)
    make_image(empty / "lighthouse.png")
    with pytest.raises(WebError, match="not a media index"):
        build_media_index("image", empty, not_index)
    assert (not_index / "precious.txt").is_file()
    with pytest.raises(WebError) as missing:
        open_media_index(tmp_path / "nowhere")
    assert missing.value.code is WebErrorCode.NO_INDEX
    image_index = build_media_index("image", empty, tmp_path / "ix", ocr=False)
    with pytest.raises(WebError, match="is a image index, not a video index"):
        open_media_index(image_index, "video")


def test_local_provider_serves_all_three_kinds(images: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "light.md").write_text("# Lights\n\nCape Lumen light was built in 1881.\n", "utf-8")
    root = tmp_path / "index"
    build_index(docs, root / "text")
    build_media_index("image", images, root / "image", ocr=False)
    searcher = MediaSearch("local", index_dir=root)
    web, _ = asyncio.run(searcher.search("cape lumen built", "web"))
    assert web[0].kind == "web" and web[0].url == "corpus://light"
    pictures, _ = asyncio.run(searcher.search("cape lumen", "image"))
    assert pictures[0].kind == "image"
    with pytest.raises(WebError) as caught:
        asyncio.run(searcher.search("anything", "video"))
    assert caught.value.code is WebErrorCode.NO_INDEX and "--kind video" in caught.value.message


def test_cli_builds_with_progress_and_searches(images: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli-ix"
    built = runner.invoke(
        app, ["index", "build", "--kind", "image", str(images), "--out", str(out), "--no-ocr"]
    )
    assert built.exit_code == 0, built.output
    assert "indexed 3 image files (3 entries)" in built.output
    found = runner.invoke(app, ["index", "search", str(out), "yellow crane"])
    assert found.exit_code == 0 and "image://sub/harbour.png" in found.output
    bad = runner.invoke(app, ["index", "build", "--kind", "video", str(images), "--out", str(out)])
    # An OmnilabError: omnilab.cli.main prints it as one line (tests/test_cli_errors.py).
    assert isinstance(bad.exception, WebError) and "no media files" in str(bad.exception)


def test_cli_progress_callback_counts_files(images: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    build_media_index(
        "image", images, tmp_path / "ix", ocr=False, on_progress=lambda *a: seen.append(a)
    )
    assert [(d, t) for d, t, _ in seen] == [(1, 3), (2, 3), (3, 3)]

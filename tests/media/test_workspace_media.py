"""Media in a workspace sandboxed code can write is read by omnilab._wsread's rules.

Sandboxed code can plant a link to a file outside its workspace (another task's media, the
labels), a FIFO that blocks whoever opens it, or swap a checked name for a link before FFmpeg
opens it. Probing, frames, soundtracks, images and the cache's content identity must refuse the
first two and read the checked file itself in the third.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from omnilab import _wsread
from omnilab.media import MediaError, audio_segment, frames, load_image, probe
from omnilab.media.cache import file_identity
from omnilab.media.prepared import jpeg_frames


@pytest.fixture()
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(_wsread, "_untrusted", set())
    folder = tmp_path / "ws"
    folder.mkdir()
    _wsread.mark_untrusted(folder)
    return folder


READERS: dict[str, Callable[[Path], object]] = {
    "probe": probe,
    "frames": lambda p: frames(p, num=2),
    "jpeg_frames": lambda p: jpeg_frames(p, 0.0, None, 2),
    "audio_segment": lambda p: audio_segment(p, 0.0, 1.0),
    "file_identity": file_identity,
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_planted_link_to_outside_media_is_refused(ws: Path, video: Path, reader: str) -> None:
    (ws / "clip.mp4").symlink_to(video)
    with pytest.raises((MediaError, OSError), match="link"):
        READERS[reader](ws / "clip.mp4")


@pytest.mark.parametrize("reader", ["probe", "frames", "audio_segment"])
def test_a_linked_folder_on_the_way_is_refused(
    ws: Path, video: Path, tmp_path: Path, reader: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(video, outside / "v.mp4")
    (ws / "sub").symlink_to(outside)
    with pytest.raises(MediaError, match="link"):
        READERS[reader](ws / "sub" / "v.mp4")


def test_a_link_to_an_outside_image_is_refused(ws: Path, image_file: Path) -> None:
    (ws / "photo.png").symlink_to(image_file)
    with pytest.raises(MediaError, match="link"):
        load_image(ws / "photo.png")


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_fifo_does_not_block(ws: Path, reader: str) -> None:
    fifo = ws / "stuck.mp4"
    os.mkfifo(fifo)
    raised: list[BaseException] = []

    def run() -> None:
        try:
            READERS[reader](fifo)
        except BaseException as e:
            raised.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():
        # Unblock the reader (a writer end opened) so the test process can exit, then fail.
        with open(fifo, "wb"):  # noqa: PTH123
            pass
        pytest.fail(f"{reader} blocked on a FIFO in the workspace")
    assert raised and isinstance(raised[0], (MediaError, OSError))


def test_media_inside_the_workspace_reads_as_before(ws: Path, video: Path) -> None:
    inside = ws / "v.mp4"
    shutil.copy(video, inside)
    assert probe(inside).duration == probe(video).duration
    assert [f.image.tobytes() for f in frames(inside, num=3)] == [
        f.image.tobytes() for f in frames(video, num=3)
    ]
    assert (
        audio_segment(inside, 0.5, 2.0).read_bytes() == audio_segment(video, 0.5, 2.0).read_bytes()
    )


def test_ffmpeg_reads_the_checked_descriptor_not_the_name(
    ws: Path, video: Path, audio_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name swapped for a link between the check and FFmpeg's open changes nothing."""
    import importlib

    open_module = importlib.import_module("omnilab.media._open")
    inside = ws / "sound.wav"
    shutil.copy(audio_file, inside)
    real_open_file = _wsread.open_file

    def open_then_swap(path: Any, **kw: Any) -> tuple[int, os.stat_result]:
        opened = real_open_file(path, **kw)
        if Path(path) == inside and not inside.is_symlink():
            inside.unlink()
            inside.symlink_to(video)  # the attacker's move, after the check
        return opened

    monkeypatch.setattr(_wsread, "open_file", open_then_swap)
    sources: list[object] = []
    import av  # _open imports PyAV on first use (issue 46): the very module it opens with

    real_av_open = av.open

    def spy(source: object, *args: Any, **kw: Any) -> Any:
        sources.append(source)
        return real_av_open(source, *args, **kw)

    monkeypatch.setattr(av, "open", spy)
    with open_module.open_input(inside) as container:
        assert not container.streams.video  # the WAV that was checked, not the linked video
        assert container.streams.audio
    assert sources and str(sources[0]).startswith("/proc/self/fd/")

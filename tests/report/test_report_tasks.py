"""Task pages: each context as a conversation, frames as thumbnails that enlarge, audio and
video players over copies in the report, placeholders for purged media, notes, step scores,
judge verdicts, and per-call timings and tokens."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

from PIL import Image as PILImage

from omnilab.content import Image
from omnilab.report import build_report
from omnilab.report.media import THUMB_PX, MediaCopier
from omnilab.report.synthetic import write_synthetic_run


def page(report: Path, task: str) -> str:
    return (report / "tasks" / f"{task}.html").read_text(encoding="utf-8")


def test_a_task_page_shows_the_conversation(report_a: Path) -> None:
    html = page(report_a, "task-0004")  # 3 turns: a purge; an even task: no side call
    assert "What colour is the object in clip 4?" in html
    assert (
        html.count('class="msg assistant"') == 3
        and html.count('<div class="who">tool <span class="tool">') == 2
    )
    assert "I should watch second 0." in html  # reasoning
    assert '<span class="tool">read_video</span>' in html and "&quot;t_start&quot;: 1" in html
    assert re.search(r"role agent · 4\.40 s · 900 in / 60 out tokens", html)
    assert "turn 0: confidence 0.5" in html  # StepNote
    assert '<span class="score">reward: 1</span>' in html  # StepScore on the last call
    assert "[purged image: frame_0.jpg]" in html and "old frames purged" in html
    assert '<span class="state correct">correct</span>' in html and "scripted:judge" in html


def test_frames_are_thumbnails_that_open_a_larger_copy(report_a: Path) -> None:
    html = page(report_a, "task-0004")
    frames = re.findall(
        r'<a class="zoom" href="\.\./(media/[^"]+)"><img src="\.\./(media/[^"]+)"', html
    )
    assert len(frames) >= 5  # the question's image and 2 frames x 2 tool results
    assert "frame at 1.50 s" in html  # the timestamp captions its frame
    for large, thumb in frames:
        with PILImage.open(report_a / thumb) as t, PILImage.open(report_a / large) as big:
            assert max(t.size) <= THUMB_PX and big.size[0] >= t.size[0]


def test_audio_and_video_play_from_copies_with_their_range(report_a: Path) -> None:
    html = page(report_a, "task-0001")  # odd task: a perception side call on a clip
    audio = re.findall(
        r'<audio controls preload="metadata" src="\.\./(media/[^"#]+)(#t=[^"]*)?"', html
    )
    assert ("media/" in audio[0][0]) and any(frag == "#t=1,2" for _, frag in audio)
    assert all((report_a / src).is_file() for src, _ in audio)
    assert re.search(r'<video controls preload="metadata" src="\.\./media/[^"]+#t=0,1"', html)
    assert "Context 2" in html and "role perception" in html  # the side call's own context
    assert "Describe this clip." in html  # its input, shown with the call
    assert "Error [TS_OOB]" in html


def test_the_report_does_not_need_the_run_or_the_dataset(tmp_path: Path) -> None:
    run = write_synthetic_run(tmp_path / "run", tasks=3)
    out = tmp_path / "report"
    build_report([run], out)
    shutil.rmtree(run)  # the dataset's media lie inside it (_inputs), as do the frames
    html = page(out, "task-0002")
    for src in re.findall(r'src="\.\./([^"#]+)', html):
        assert (out / src).is_file(), src


def test_media_not_found_is_a_placeholder_and_saved_copies_are_found(tmp_path: Path) -> None:
    saved = tmp_path / "workspace" / "perception"
    saved.mkdir(parents=True)
    PILImage.new("RGB", (2000, 1000), "red").save(saved / "frame.png")
    copier = MediaCopier(tmp_path / "out", roots=(tmp_path,))
    # The cache file is gone; the run's workspace kept a copy under the same name.
    found = copier.ref(Image(path=tmp_path / "cache" / "frame.png"), search=(saved.parent,))
    assert found.src is not None and found.thumb is not None
    missing = copier.ref(Image(path=tmp_path / "nowhere.png"))
    (tmp_path / "bad.png").write_text("not a picture")
    bad = copier.ref(Image(path=tmp_path / "bad.png"))
    inline = copier.ref(Image(data=(saved / "frame.png").read_bytes(), mime_type="image/png"))
    copier.close()  # copies are written in threads
    with PILImage.open(tmp_path / "out" / found.src) as large:
        assert max(large.size) == 1280
    assert missing.src is None and missing.note == "not saved with the run"
    assert bad.src is None and bad.note == "unreadable image"
    assert inline.thumb is not None and (tmp_path / "out" / inline.thumb).is_file()


def test_a_truncated_image_gets_a_stand_in_instead_of_failing_the_report(tmp_path: Path) -> None:
    whole = io.BytesIO()
    PILImage.new("RGB", (640, 480), (10, 200, 30)).save(whole, format="PNG", compress_level=0)
    cut = tmp_path / "cut.png"
    cut.write_bytes(whole.getvalue()[: len(whole.getvalue()) // 2])  # header intact, pixels cut
    copier = MediaCopier(tmp_path / "out", roots=(tmp_path,))
    ref = copier.ref(Image(path=cut))
    copier.close()  # raised OSError ("image file is truncated") before
    assert ref.src is not None and ref.thumb is not None
    for name in (ref.src, ref.thumb):
        with PILImage.open(tmp_path / "out" / name) as shown:
            assert shown.getpixel((0, 0)) == (200, 200, 200)

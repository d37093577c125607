"""Skills: the SKILL.md format, selection and injection, and each starter skill run in the sandbox."""

from __future__ import annotations

import re
import shutil
import wave
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from agentkit import scripted
from coderkit import run_coder, sandbox_level  # noqa: F401 (sandbox_level: autouse)
from PIL import Image as PILImage

from omnilab.agents.coder.toolbox import install_toolbox
from omnilab.media import synth
from omnilab.models.providers import scripted as s
from omnilab.perception.samples import Slide, make_talk
from omnilab.sandbox import ShellSession
from omnilab.skills import (
    SkillError,
    load_skills,
    render_skills,
    select_skills,
    stage_skills,
    starter_skills,
)

SPEECH = Path(__file__).parents[1] / "data" / "speech" / "two_cities_part1.wav"
STARTER = {
    "answer-format",
    "counting",
    "frame-sampling",
    "media-inspection",
    "ocr",
    "temporal-localisation",
    "transcription",
}


def test_starter_skills_are_well_formed() -> None:
    skills = {s.name: s for s in starter_skills()}
    assert set(skills) == STARTER
    assert skills["frame-sampling"].files == ("contact_sheet.py", "sample_frames.sh")
    assert skills["frame-sampling"].modalities == ("video",)
    assert skills["answer-format"].modalities == ("any",)
    for skill in skills.values():
        assert skill.description and len(skill.body) > 100
        for name in skill.files:  # every script a skill ships is named in its body
            assert name in skill.body


def _write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(text)
    return folder


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no front matter", "must start with a '---' front matter"),
        ("---\nname: Bad Name\ndescription: d\n---\nbody", "name must be lower-case"),
        ("---\nname: ok\n---\nbody", "description is missing"),
        ("---\nname: ok\ndescription: d\nmodalities: [smell]\n---\nbody", "unknown modalities"),
        ("---\nname: ok\ndescription: d\n---\n", "has no body"),
    ],
)
def test_bad_skill_files_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    _write(tmp_path / "skills" / "one", text)
    with pytest.raises(SkillError, match=message):
        load_skills(tmp_path / "skills")


def test_folder_rules(tmp_path: Path) -> None:
    with pytest.raises(SkillError, match="does not exist"):
        load_skills(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SkillError, match="holds no skill"):
        load_skills(tmp_path / "empty")
    good = "---\nname: same\ndescription: d\n---\nbody"
    _write(tmp_path / "two" / "a", good)
    _write(tmp_path / "two" / "b", good)
    with pytest.raises(SkillError, match="used twice: same"):
        load_skills(tmp_path / "two")
    single = _write(tmp_path / "single", good)
    (single / "tool.py").write_text("print(1)")
    (skill,) = load_skills(single)  # a folder that is one skill
    assert skill.files == ("tool.py",) and skill.markdown().startswith("---\nname: same\n")


def test_selection_by_modality_and_keywords() -> None:
    skills = starter_skills()
    counting = select_skills(skills, "How many shots does the video have?", {"video"})
    assert counting[0].name == "counting"
    names = [s.name for s in select_skills(skills, "What is said?", {"audio"})]
    assert "frame-sampling" not in names and "ocr" not in names
    assert names[0] == "transcription" and {"answer-format", "media-inspection"} <= set(names)
    assert len(select_skills(skills, "q", {"video", "audio", "image"}, limit=3)) == 3
    assert render_skills([]) == ""


def test_skills_are_injected_and_staged(tmp_path: Path, video: Path) -> None:
    model, adapter = scripted([s.tool_call("task_complete", {}, text="<answer>x</answer>")])
    run = run_coder(
        tmp_path, model, [video], "What is said in the video?", skills="starter", max_skills=3
    )
    system = adapter.requests[0][0][0].text
    injected = re.findall(r"^## Skill: (\S+)$", system, re.MULTILINE)
    assert len(injected) == 3 and injected[0] == "transcription"
    assert "python3 .skills/transcription/transcribe.py" in system
    assert (run.workspace / ".skills" / "transcription" / "transcribe.py").is_file()
    start = run.saved.run_start
    assert start is not None and start.config["skills_injected"] == injected
    # A folder of one's own; without skills nothing is injected.
    own = _write(
        tmp_path / "mine" / "check-twice",
        "---\nname: check-twice\ndescription: Verify.\n---\nCheck twice.",
    )
    model, adapter = scripted([s.tool_call("task_complete", {}, text="<answer>x</answer>")])
    run_coder(tmp_path, model, [video], "q", skills=str(own.parent), name="own")
    assert "## Skill: check-twice\nVerify.\n\nCheck twice." in adapter.requests[0][0][0].text
    model, adapter = scripted([s.tool_call("task_complete", {}, text="<answer>x</answer>")])
    run_coder(tmp_path, model, [video], "q", name="none")
    assert "## Skill:" not in adapter.requests[0][0][0].text


# -- each starter skill, run in the sandbox -------------------------------------------------------


@pytest.fixture()
def shell(tmp_path: Path) -> Iterator[tuple[ShellSession, Path]]:
    ws = tmp_path / "ws"
    (ws / "inputs").mkdir(parents=True)
    stage_skills(starter_skills(), ws)
    with ShellSession(ws, env=install_toolbox(ws)) as session:
        yield session, ws


def ok(session: ShellSession, command: str) -> str:
    result = session.run(command, timeout=120)
    assert result.exit_code == 0, result.stdout + result.stderr
    return result.stdout


def test_media_inspection_probes_files(shell: tuple[ShellSession, Path], video: Path) -> None:
    session, ws = shell
    shutil.copy(video, ws / "inputs" / "v.mp4")
    out = ok(session, "mediaprobe inputs/v.mp4")
    assert '"duration": 4.0' in out and '"type": "audio"' in out and '"width": 320' in out


@pytest.mark.slow
def test_frame_sampling_names_frames_by_time(shell: tuple[ShellSession, Path], video: Path) -> None:
    session, ws = shell
    shutil.copy(video, ws / "inputs" / "v.mp4")
    out = ok(session, "bash .skills/frame-sampling/sample_frames.sh inputs/v.mp4 frames 1")
    assert out.startswith("4 frames in frames")
    names = sorted(p.name for p in (ws / "frames").iterdir())
    assert names == ["t0000.00.png", "t0001.00.png", "t0002.00.png", "t0003.00.png"]
    assert synth.read_index(PILImage.open(ws / "frames" / "t0002.00.png")) == 50
    ok(session, "bash .skills/frame-sampling/sample_frames.sh inputs/v.mp4 zoom 5 2 0.4")
    assert sorted(p.name for p in (ws / "zoom").iterdir()) == ["t0002.00.png", "t0002.20.png"]
    out = ok(
        session,
        "python3 .skills/frame-sampling/contact_sheet.py frames sheet.png --cols 2 --width 160",
    )
    assert "4 tiles, 2x2, 320x240" in out and PILImage.open(ws / "sheet.png").size == (320, 240)


@pytest.mark.slow
def test_transcription_extracts_and_transcribes(shell: tuple[ShellSession, Path]) -> None:
    session, ws = shell
    shutil.copy(SPEECH, ws / "inputs" / "speech.wav")
    out = ok(session, "bash .skills/transcription/extract_audio.sh inputs/speech.wav a.wav 0 4")
    assert "a.wav: 4.00 s, 16000 Hz, 1 channel(s)" in out
    result = session.run("python3 .skills/transcription/transcribe.py a.wav", timeout=120)
    if result.exit_code == 2 and "no local ASR here" in result.stderr:
        pytest.skip(result.stderr.strip())  # the sandbox lacks faster-whisper: said plainly
    assert result.exit_code == 0, result.stderr
    assert re.search(r"^\[\s*0\.\d\d-\s*\d+\.\d\d\] It was the best of times", result.stdout, re.M)


@pytest.mark.slow
def test_ocr_enhances_and_reads_slide_text(
    shell: tuple[ShellSession, Path], tmp_path: Path
) -> None:
    session, ws = shell
    make_talk(ws / "inputs" / "talk.mp4", [Slide("OMNILAB 42", 2.0)], size=(320, 180))
    ok(session, "ffmpeg -loglevel error -ss 1 -i inputs/talk.mp4 -frames:v 1 f.png")
    out = ok(session, "python3 .skills/ocr/enhance.py f.png crop.png --box 40 50 280 130 --scale 2")
    assert out.strip() == "crop.png: 480x160" and PILImage.open(ws / "crop.png").mode == "L"
    result = session.run("python3 .skills/ocr/ocr.py crop.png", timeout=120)
    if result.exit_code != 0 and "no local OCR here" in result.stderr:
        pytest.skip(result.stderr.strip())
    assert result.exit_code == 0, result.stderr
    assert "OMNILAB 42" in result.stdout.replace("  ", " ")


@pytest.mark.slow
def test_counting_finds_the_cuts(shell: tuple[ShellSession, Path]) -> None:
    session, ws = shell
    slides = [
        Slide("one", 1.0, background=(200, 30, 30)),
        Slide("two", 1.2, background=(30, 200, 30)),
        Slide("three", 0.8, background=(30, 30, 200)),
    ]
    make_talk(ws / "inputs" / "talk.mp4", slides, size=(320, 180))
    out = ok(session, "python3 .skills/counting/scene_changes.py inputs/talk.mp4 --fps 25")
    cuts = [float(t) for t in re.findall(r"cut at ([\d.]+) s", out)]
    assert "2 cuts, 3 shots" in out and cuts == pytest.approx([1.0, 2.2], abs=0.05)


def test_temporal_localisation_finds_the_tone(shell: tuple[ShellSession, Path]) -> None:
    session, ws = shell
    rate = 16000
    t = np.arange(int(1.0 * rate)) / rate
    tone = 0.5 * np.sin(2 * np.pi * 440 * t)
    samples = np.concatenate(
        [np.zeros(int(1.5 * rate)), tone, np.zeros(int(0.5 * rate)), tone[: rate // 2]]
    )
    with wave.open(str(ws / "inputs" / "tone.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((samples * 32767).astype("<i2").tobytes())
    out = ok(session, "python3 .skills/temporal-localisation/onset.py inputs/tone.wav")
    spans = [(float(a), float(b)) for a, b in re.findall(r"^([\d.]+)-([\d.]+) s", out, re.M)]
    assert spans == [pytest.approx((1.5, 2.5), abs=0.03), pytest.approx((3.0, 3.5), abs=0.03)]
    assert "2 stretches of sound in 3.50 s" in out

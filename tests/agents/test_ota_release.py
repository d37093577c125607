"""The ``ota`` agent under ``rules="release"`` and the ``omniagent-paper`` preset, with scripted
models: the texts, checks and codes of the authors' ``video_env.py`` (first message, notices,
[ERROR]/[SYSTEM] lines, EARLY_ANSWER, answer-form refusals, STEP_LIMIT_REACHED, strict reading),
checked against the released SFT row in ``tests/data/omniagent_release_sft_row.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_ota import answer, frames, run_ota, span, turn

from omnilab.agents import AgentTask, TaskInfo
from omnilab.agents.ota import OtaOptions, release
from omnilab.agents.ota.prompts import system_prompt
from omnilab.bench.protocols import get_protocol
from omnilab.content import Image, Text
from omnilab.media import synth
from omnilab.media.probe import probe

ROW = json.loads(
    (Path(__file__).parents[1] / "data" / "omniagent_release_sft_row.json").read_text("utf-8")
)["row"]
SYSTEM_RETRY = (
    "\n[SYSTEM] The previous action was invalid. Analyze the error diagnostic above, resolve the "
    "conflict, and issue a corrected command to avoid wasting steps."
)
RELEASE = {"rules": "release"}


@pytest.fixture(scope="session")
def clip20(media_dir: Path) -> Path:
    return synth.make_video(media_dir / "ota20.mp4", duration=20.0, fps=5, size=(160, 120))


def _row_task() -> AgentTask:
    info = ROW["extra_info"]
    options = dict(o.split(". ", 1) for o in info["options"])
    meta = TaskInfo(benchmark="omniagent", question_type=info["question_type"], options=options)
    return AgentTask(id="v", question=info["question"], inputs=[], metadata=meta)


def test_the_first_message_and_notice_are_the_released_rows() -> None:
    info = ROW["extra_info"]
    first, notice = ROW["raw_input"][1]["content"]
    text = release.first_message(
        _row_task(), duration=info["duration_seconds"], fps=info["fps"], has_audio=True
    )
    assert text == first["text"]  # duration 30.069833 -> "30.06": truncated, not rounded
    assert release.notice(1, info["max_steps"]) == notice["text"]


def test_the_system_prompt_is_the_released_text() -> None:
    options = OtaOptions(
        rules="release",
        max_frames_len=50,
        max_audio_len=210,
        max_clip_len=34,
        random_resources=True,  # the row's limits were drawn: floats, as the release prints them
    )
    ours = system_prompt(options)
    theirs = ROW["raw_input"][0]["content"][0]["text"]
    # The row was made by a slightly earlier video_prompt.py: four trailing spaces and a real
    # newline where the code now writes "\n" literally. Everything else is the same text.
    assert ours == theirs.replace(" \n", "\n").replace("(\n)", "(\\n)")
    default = system_prompt(OtaOptions(rules="release"))
    assert "(Max 60 frames)" in default and "(Max 300s)" in default and "(Max 60s)" in default


def test_notices_count_done_steps_and_only_the_latest_stays(tmp_path: Path, clip20: Path) -> None:
    ran = run_ota(
        tmp_path,
        [turn(frames(0, 4, 2)), turn(span("get_audio", 2, 7)), turn(answer("B"))],
        clip20,
        max_steps=3,
        dynamic_steps=False,
        **RELEASE,
    )
    assert ran.saved.status == "answered"
    assert ran.request(0)[1].content[-1] == Text(text="\n[NOTICE] Step 0/3. 3 steps remaining.")
    assert ran.request(1)[-1].content[-1] == Text(text="\n[NOTICE] Step 1/3. 2 steps remaining.")
    last = ran.request(2)
    assert last[-1].content[-1] == Text(
        text="\n[NOTICE] FINAL STEP! You MUST provide your answer now."
    )
    assert sum(m.text.count("[NOTICE]") for m in last[1:]) == 1
    # the release's labels and placeholder (frames at their exact times here)
    frames_msg = ran.request(1)[-1]
    assert frames_msg.content[0] == Text(text="Frames 0.00s-4.00s (num=2).")
    assert frames_msg.content[1] == Text(text="Frame 0.00s:")
    assert isinstance(frames_msg.content[2], Image)
    assert last[3].content == [
        Text(
            text="Frames 0.00s-4.00s (num=2). Timestamps: [0.00s, 4.00s] "
            "[MEDIA OMITTED - Refer to your Observation]"
        )
    ]


def test_c_to_a_tr_question_gets_the_release_error_and_a_retry(
    tmp_path: Path, clip20: Path
) -> None:
    info = TaskInfo(benchmark="omniagent", question_type="TR")
    replies = [turn(frames(0, 4, 2)), turn(answer("C")), turn(answer("[[1.0, 2.5]]"))]
    ran = run_ota(tmp_path, replies, clip20, metadata=info, **RELEASE)
    assert ran.codes() == [None, "ANSWER_JSON_PARSE", None]
    assert ran.saved.status == "answered" and ran.saved.answer == "[[1.0, 2.5]]"
    error, notice = ran.request(2)[-1].content
    assert error == Text(
        text="[ERROR] ANSWER_JSON_PARSE: Expecting value: line 1 column 1 (char 0)" + SYSTEM_RETRY
    )
    assert notice == Text(text="\n[NOTICE] Step 2/6. 4 steps remaining.")
    # the frames of turn 1 stay until newer media come (the release's _replace_old_media(1))
    assert any(isinstance(p, Image) for p in ran.request(2)[3].content)


@pytest.mark.parametrize(
    ("kind", "content", "code", "message"),
    [
        ("TR", "[1, 2, 3]", "SPAN_FORMAT", "Invalid span format: [1, 2, 3]"),
        ("TR", "[[1, 2, 3]]", "SPAN_FORMAT", "too many values to unpack (expected 2)"),
        ("NUM", "a few", "ANSWER_NOT_STRING", "Cannot parse number from answer."),
        ("SIZE", "big", "ANSWER_NOT_STRING", "Cannot parse number from answer."),
    ],
)
def test_answer_forms_the_release_refuses(
    tmp_path: Path, clip20: Path, kind: str, content: str, code: str, message: str
) -> None:
    info = TaskInfo(benchmark="omniagent", question_type=kind)
    good = "[[1, 2]]" if kind == "TR" else "2"
    replies = [turn(frames(0, 4, 2)), turn(answer(content)), turn(answer(good))]
    ran = run_ota(tmp_path, replies, clip20, metadata=info, **RELEASE)
    assert ran.codes() == [None, code, None]
    assert ran.request(2)[-1].content[0].text == f"[ERROR] {code}: {message}{SYSTEM_RETRY}"  # type: ignore[union-attr]


def test_an_answer_at_step_1_gets_early_answer_under_the_preset(
    tmp_path: Path, clip20: Path
) -> None:
    options: dict[str, Any] = dict(get_protocol("omniagent-paper").agent_options)
    ran = run_ota(tmp_path, [turn(answer("A"), 0.99), turn(answer("A"), 0.5)], clip20, **options)
    assert ran.codes() == ["EARLY_ANSWER", None] and ran.saved.answer == "A"
    error = ran.request(1)[-1].content[0]
    assert error == Text(
        text="[ERROR] EARLY_ANSWER: Must gather evidence before answering" + SYSTEM_RETRY
    )
    # omnilab's rules take a first-step answer unless asked not to
    ran = run_ota(tmp_path, [turn(answer("A"))], clip20)
    assert ran.saved.answer == "A"


def test_action_checks_use_the_release_codes_and_texts(tmp_path: Path, clip20: Path) -> None:
    duration = float(probe(clip20).duration or 0)
    cases = [
        (frames(0, 25, 2), "FRAME_TS_OOB", f"Range [0.0, 25.0] OOB for {duration}s"),
        (frames(4, 2, 2), "CLIP_NEG_LEN", "end 2.0 < start 4.0"),
        (frames(0, 4, 0), "INVALID_FRAME_NUM", "num must be >= 1"),
        (span("get_audio", 3, 3), "CLIP_NEG_LEN", None),
        (span("get_audio", 0, 25), "AUDIO_RANGE", f"end 25.000s > duration {duration:.3f}s"),
        (span("get_clip", 2, 2.5), "CLIP_TOO_SHORT", "0.500s < 0.800s (need ≥ 4 frames)"),
        (span("get_clip", -1, 2), "CLIP_RANGE", "start -1.000s < 0"),
    ]
    for action, code, message in cases:
        ran = run_ota(tmp_path, [turn(action), turn(answer("A"))], clip20, **RELEASE)
        assert ran.codes() == [code, None], action
        shown = f"{code}: {message}" if message else code
        assert ran.request(1)[-1].content[0] == Text(text=f"[ERROR] {shown}{SYSTEM_RETRY}")


def test_strict_reading_and_the_step_limit(tmp_path: Path, clip20: Path) -> None:
    fenced = "```json\n" + turn(frames(0, 4, 2)) + "\n```"
    garbage = turn(frames(0, 4, 2)) + " {}"
    extra = json.dumps(
        {"observation": "", "think": "", "confidence": 1, "action": frames(0, 4, 2), "x": 1}
    )
    ran = run_ota(
        tmp_path, [fenced, garbage, extra, turn(frames(0, 4, 2))], clip20, max_steps=4,
        dynamic_steps=False, **RELEASE,
    )  # fmt: skip
    assert ran.codes() == ["INVALID_JSON", "TRAILING_GARBAGE", "INVALID_JSON", "STEP_LIMIT_REACHED"]
    texts = [ran.request(i)[-1].content[0].text for i in (1, 2, 3)]  # type: ignore[union-attr]
    assert texts == [
        "[ERROR] INVALID_JSON: must be raw JSON without code fence or outer quotes." + SYSTEM_RETRY,
        "[ERROR] INVALID_JSON: extra characters after JSON." + SYSTEM_RETRY,
        "[ERROR] INVALID_JSON: unknown keys: ['x']." + SYSTEM_RETRY,
    ]
    assert ran.saved.status == "no_answer"  # a non-answer at the last step ends the run
    # confidence may be left out unless required (STRICT_CONFIDENCE_CHECK)
    bare = json.dumps({"observation": "", "think": "", "action": frames(0, 4, 2)})
    ran = run_ota(tmp_path, [bare, turn(answer("A"))], clip20, require_confidence=False, **RELEASE)
    assert ran.codes() == [None, None]


def test_random_resources_draw_the_release_grids() -> None:
    from omnilab.agents.ota.options import randomised

    drawn = [randomised(OtaOptions(random_resources=True, seed=1), f"t{i}") for i in range(40)]
    assert {o.max_steps for o in drawn} <= set(range(22, 33, 2))
    assert {o.max_frames_len for o in drawn} <= set(range(30, 61, 2))
    assert {o.max_clip_len for o in drawn} <= {float(x) for x in range(30, 61, 2)}
    assert {o.max_audio_len for o in drawn} <= {float(x) for x in range(150, 301, 10)}
    assert len({o.max_frames_len for o in drawn}) > 3  # drawn, not fixed
    same = randomised(OtaOptions(random_resources=True, seed=1), "t0")
    assert same == randomised(OtaOptions(random_resources=True, seed=1), "t0")
    assert randomised(OtaOptions(), "t0") == OtaOptions()


def test_a_clip_that_fails_to_encode_is_encoded_again_at_ultrafast(
    tmp_path: Path, clip20: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omnilab.media import clips
    from omnilab.media.errors import MediaError, MediaErrorCode

    real = clips.clip
    presets: list[str | None] = []

    def flaky(*args: Any, preset: str | None = None, **kwargs: Any) -> Path:
        presets.append(preset)
        if preset != "ultrafast":
            raise MediaError(MediaErrorCode.CORRUPT, "encoder failed")
        return real(*args, preset=preset, **kwargs)

    monkeypatch.setattr(clips, "clip", flaky)
    ran = run_ota(tmp_path, [turn(span("get_clip", 2, 6)), turn(answer("A"))], clip20)
    assert ran.codes() == [None, None] and presets == ["superfast", "ultrafast"]


def test_the_release_probes_extracted_media_and_a_bad_one_ends_the_run(
    tmp_path: Path, clip20: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    probe_module = importlib.import_module("omnilab.media.probe")
    real = probe_module.probe

    def short(path: Any, *args: Any, **kwargs: Any) -> Any:
        info = real(path, *args, **kwargs)
        if Path(path) == clip20:
            return info
        return info.model_copy(update={"duration": 0.05})  # an all but empty file

    monkeypatch.setattr(probe_module, "probe", short)
    ran = run_ota(
        tmp_path, [turn(frames(0, 4, 2)), turn(span("get_audio", 2, 6))], clip20, **RELEASE
    )
    assert ran.codes() == [None, "FFMPEG_AUDIO_FAIL"] and ran.saved.status == "no_answer"
    assert len(ran.adapter.requests) == 2  # the release ends the sample on a media failure

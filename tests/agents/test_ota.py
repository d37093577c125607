"""The ``ota`` agent (OmniAgent's Observation-Thought-Action loop) with scripted models: every
action, every error code, the step notices and final-step rule, the confidence gate, memory
consolidation (placeholders in later requests, rebuilt contexts) and the JSON grammar."""

from __future__ import annotations

import asyncio
import json
import wave
from pathlib import Path
from typing import Any

import pytest
from agentkit import ALL, scripted

from omnilab.agents import AgentContext, AgentTask, Budgets, TaskInfo, get_agent
from omnilab.agents.ota import ERROR_CODES, OtaOptions, turn_limit
from omnilab.agents.ota.prompts import system_prompt
from omnilab.content import Audio, Image, Text, Video
from omnilab.inputs import InputSet
from omnilab.media import synth
from omnilab.media.probe import probe
from omnilab.models.capabilities import Capabilities
from omnilab.models.model import Model
from omnilab.models.providers import scripted as s
from omnilab.models.providers.scripted import ScriptedAdapter
from omnilab.models.types import Message
from omnilab.trajectory import ContextEdit, StepNote, Trajectory, TrajectoryWriter, read_trajectory

OMITTED = "[MEDIA OMITTED - Refer to your Observation]"


@pytest.fixture(scope="session")
def clip20(media_dir: Path) -> Path:
    """20 s, 160x120 at 5 fps, with sound."""
    return synth.make_video(media_dir / "ota20.mp4", duration=20.0, fps=5, size=(160, 120))


def turn(action: dict[str, Any], confidence: float = 0.3, observation: str = "seen") -> str:
    """One reply as Figure 4 asks for it."""
    return json.dumps(
        {"observation": observation, "think": "t", "confidence": confidence, "action": action}
    )


def frames(start: float, end: float, num: int) -> dict[str, Any]:
    return {"type": "get_frames", "start": start, "end": end, "num": num}


def span(kind: str, start: float, end: float) -> dict[str, Any]:
    return {"type": kind, "start": start, "end": end}


def answer(content: str) -> dict[str, Any]:
    return {"type": "answer", "content": content}


class Ran:
    """A finished run: what was saved, the adapter's requests, the events seen live."""

    def __init__(self, saved: Trajectory, returned: Trajectory, adapter: ScriptedAdapter) -> None:
        self.saved = saved
        self.returned = returned
        self.adapter = adapter

    @property
    def notes(self) -> list[StepNote]:
        return [e for e in self.saved.events if isinstance(e, StepNote)]

    def request(self, i: int) -> list[Message]:
        """The messages of the ``i``-th agent call (0-based)."""
        return self.adapter.requests[i][0]

    def codes(self) -> list[str | None]:
        return [(n.data["error"] or {}).get("code") for n in self.notes]


def run_ota(
    tmp_path: Path,
    replies: list[str] | list[s.OutputStep],
    source: Path,
    *,
    caps: Capabilities = ALL,
    metadata: TaskInfo | None = None,
    roles: dict[str, Model] | None = None,
    budgets: Budgets | None = None,
    **options: Any,
) -> Ran:
    model, adapter = scripted([s.text(r) if isinstance(r, str) else r for r in replies], caps=caps)
    task = AgentTask(
        id="t",
        question="Which colour?",
        inputs=list(InputSet.from_paths([source])),
        metadata=metadata or TaskInfo(),
    )
    path = tmp_path / f"run{len(list(tmp_path.glob('run*.jsonl')))}.jsonl"
    with TrajectoryWriter(path) as writer:
        ctx = AgentContext(
            model=model,
            roles=roles or {},
            tools=None,
            budgets=budgets or Budgets(),
            workspace=tmp_path / "ws",
            trajectory=writer,
        )
        returned = asyncio.run(get_agent("ota", **options).run(task, ctx))
    return Ran(read_trajectory(path), returned, adapter)


def media(message: Message) -> list[str]:
    return [p.type for p in message.content if not isinstance(p, Text)]


def test_every_action_returns_its_media_and_the_answer_ends_the_run(
    tmp_path: Path, clip20: Path
) -> None:
    ran = run_ota(
        tmp_path,
        [
            turn(frames(0, 10, 3)),
            turn(span("get_audio", 2, 7)),
            turn(span("get_clip", 4, 8)),
            turn(answer("B"), confidence=0.95),
        ],
        clip20,
    )
    assert ran.saved.status == "answered" and ran.saved.answer == "B"
    got_frames = ran.request(1)[-1]
    texts = [p.text for p in got_frames.content if isinstance(p, Text)]
    assert texts[0] == "Frames 0.00s-10.00s (num=3). Timestamps: [0.00s, 5.00s, 10.00s]"
    assert texts[1:4] == ["(T: 0.00s)", "(T: 5.00s)", "(T: 10.00s)"]
    images = [p for p in got_frames.content if isinstance(p, Image)]
    assert len(images) == 3 and all(p.path is not None and p.path.suffix == ".jpg" for p in images)
    # each frame is the exact frame shown at its time: the synth draws its index
    from PIL import Image as PILImage

    with PILImage.open(images[1].path) as shown:  # type: ignore[arg-type]
        assert synth.read_index(shown.convert("RGB")) == 25
    got_audio = ran.request(2)[-1]
    assert got_audio.content[0] == Text(text="Audio 2.00s-7.00s")
    (wav,) = [p for p in got_audio.content if isinstance(p, Audio)]
    with wave.open(str(wav.path)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
        assert w.getnframes() == 5 * 16000
    got_clip = ran.request(3)[-1]
    assert got_clip.content[0] == Text(text="Clip 4.00s-8.00s")
    (video,) = [p for p in got_clip.content if isinstance(p, Video)]
    info = probe(video.path)  # type: ignore[arg-type]
    assert info.video_codec == "h264" and info.has_audio
    assert info.duration is not None and abs(info.duration - 4.0) < 0.25
    notes = ran.notes
    assert [n.data["action"]["type"] for n in notes] == [
        "get_frames",
        "get_audio",
        "get_clip",
        "answer",
    ]
    assert [n.data["confidence"] for n in notes] == [0.3, 0.3, 0.3, 0.95]
    assert notes[0].label == "turn 1" and "confidence 0.30" in notes[0].text


def test_older_media_become_placeholders_and_contexts_rebuild_them(
    tmp_path: Path, clip20: Path
) -> None:
    ran = run_ota(
        tmp_path,
        [
            turn(frames(0, 10, 3)),
            turn(span("get_audio", 2, 7)),
            turn(span("get_clip", 4, 8)),
            turn(answer("B"), confidence=0.95),
        ],
        clip20,
    )
    last = ran.request(3)
    # only the latest turn's media are in the request; earlier ones are placeholders
    assert all(not media(m) for m in last[:-1])
    placeholders = [m.content[0].text for m in last[:-1] if m.role == "user"]  # type: ignore[union-attr]
    assert placeholders[1:] == [
        f"Frames 0.00s-10.00s (num=3). Timestamps: [0.00s, 5.00s, 10.00s] {OMITTED}",
        f"Audio 2.00s-7.00s {OMITTED}",
    ]
    # only the latest notice stays (the release's _append_step_notice); placeholders carry none
    notices = [m.text.count("[NOTICE]") for m in last[1:]]
    assert notices[-1] == 1 and sum(notices) == 1
    assert last[-1].text.endswith("[NOTICE] Step 4/6. 2 steps remaining.")
    assert last[1].text.startswith("Video META") and "[NOTICE]" not in last[1].text
    edits = [e for e in ran.saved.events if isinstance(e, ContextEdit)]
    assert [("B.4" in e.reason, "notice" in e.reason) for e in edits] == [
        (False, True),
        (True, False),
        (True, False),
        (True, False),
    ]
    for traj in (ran.saved, ran.returned):
        contexts = traj.contexts()
        assert len(contexts) == 4
        for i, ctx in enumerate(contexts):
            assert ctx.exact and ctx.messages == ran.request(i)
        rebuilt = traj.conversation(contexts[-1].context_id)
        assert rebuilt[: len(last) - 1] == last[:-1]
        # the answer turn consolidates too (Algorithm 1 line 7 comes before the answer check)
        assert rebuilt[len(last) - 1].content[0] == Text(text=f"Clip 4.00s-8.00s {OMITTED}")


def test_request_log_of_a_recording_server_shows_placeholders(tmp_path: Path, clip20: Path) -> None:
    from omnilab.models.fake_server import FakeOpenAIServer, reply_text
    from omnilab.models.registry import get_model

    replies = [
        turn(frames(0, 10, 2)),
        turn(span("get_audio", 2, 7)),
        turn(span("get_clip", 4, 8)),
        turn(answer("B"), confidence=0.95),
    ]
    with FakeOpenAIServer() as server:
        server.push(*(reply_text(r) for r in replies))
        model = get_model(f"vllm:Qwen2.5-Omni-7B@{server.base_url}")
        task = AgentTask(id="t", question="Which?", inputs=list(InputSet.from_paths([clip20])))
        with TrajectoryWriter(tmp_path / "r.jsonl") as writer:
            ctx = AgentContext(
                model=model,
                roles={},
                tools=None,
                budgets=Budgets(),
                workspace=tmp_path / "ws",
                trajectory=writer,
            )
            traj = asyncio.run(get_agent("ota").run(task, ctx))
        bodies = [r.body for r in server.chat_requests]
    assert traj.status == "answered" and len(bodies) == 4
    wire_media = {"image_url", "input_audio", "video_url"}
    for i, body in enumerate(bodies):
        kinds = [
            [p["type"] for p in m["content"] if isinstance(m["content"], list)]
            for m in body["messages"]
        ]
        assert not any(wire_media & set(k) for k in kinds[:-1]), (i, kinds)
    last = bodies[-1]["messages"]
    assert last[-1]["content"][1]["type"] == "video_url"
    flat = json.dumps(last[:-1])
    assert f"Timestamps: [0.00s, 10.00s] {OMITTED}" in flat
    assert f"Audio 2.00s-7.00s {OMITTED}" in flat
    assert bodies[0]["response_format"]["type"] == "json_schema"  # vLLM decodes to the schema


@pytest.mark.parametrize(
    ("code", "reply", "options"),
    [
        ("INVALID_JSON", "I will look at the frames first.", {}),
        ("INVALID_JSON", '{"observation": "x", "action": {', {}),
        ("MULTIPLE_ACTIONS", turn(frames(0, 5, 2)) + "\n" + turn(frames(5, 9, 2)), {}),
        (
            "MISSING_FIELD",
            json.dumps({"observation": "x", "think": "y", "action": frames(0, 5, 2)}),
            {},
        ),
        ("MISSING_FIELD", turn({"type": "get_frames", "start": 0, "end": 5}), {}),
        ("INVALID_FIELD", turn(frames(0, 5, 0)), {}),
        ("INVALID_FIELD", turn(frames(0, 5, 2), confidence=1.5), {}),
        ("INVALID_FIELD", turn(answer("  "), confidence=0.95), {}),
        ("UNKNOWN_ACTION", turn({"type": "zoom", "start": 0, "end": 5}), {}),
        ("TS_OOB", turn(frames(0, 21, 2)), {}),
        ("TS_OOB", turn(span("get_audio", -1, 3)), {}),
        ("INVALID_RANGE", turn(span("get_clip", 6, 6)), {}),
        ("TOO_MANY_FRAMES", turn(frames(0, 10, 9)), {"max_frames_len": 8}),
        ("AUDIO_TOO_LONG", turn(span("get_audio", 0, 12)), {"max_audio_len": 10}),
        ("CLIP_TOO_LONG", turn(span("get_clip", 0, 12)), {"max_clip_len": 10}),
        ("LOW_CONFIDENCE", turn(answer("B"), confidence=0.5), {"confidence_threshold": 0.9}),
        ("EARLY_ANSWER", turn(answer("B")), {"refuse_early_answer": True}),
    ],
)
def test_each_error_is_fed_back_with_its_code(
    tmp_path: Path, clip20: Path, code: str, reply: str, options: dict[str, Any]
) -> None:
    ran = run_ota(tmp_path, [reply, turn(answer("B"), confidence=0.95)], clip20, **options)
    assert ran.saved.status == "answered"  # the model recovered
    assert ran.codes() == [code, None]
    feedback = ran.request(1)[-1]
    assert not media(feedback)
    assert feedback.text.startswith(f"[ERROR] Err.{code}: ")
    assert "[NOTICE] Step 2/6. 4 steps remaining." in feedback.text
    assert ran.notes[0].data["error"]["message"] in feedback.text


def test_no_audio_no_video_repeat_and_media_errors(
    tmp_path: Path,
    clip20: Path,
    silent_video: Path,
    audio_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran = run_ota(tmp_path, [turn(span("get_audio", 0, 1)), turn(answer("A"), 0.9)], silent_video)
    assert ran.codes() == ["NO_AUDIO", None]
    assert '"has_audio": false' in ran.request(0)[1].text
    ran = run_ota(tmp_path, [turn(frames(0, 1, 2)), turn(answer("A"), 0.9)], audio_file)
    assert ran.codes() == ["NO_VIDEO", None]
    ran = run_ota(
        tmp_path,
        [turn(frames(0, 4, 2)), turn(frames(0.001, 4, 2)), turn(answer("A"), 0.9)],
        clip20,
    )
    assert ran.codes() == [None, "REPEAT_ACTION", None]
    assert not media(ran.request(2)[-1])  # refused: nothing decoded, nothing sent

    from omnilab.media import video as video_module
    from omnilab.media.errors import MediaError, MediaErrorCode

    def broken(*args: object, **kwargs: object) -> object:
        raise MediaError(MediaErrorCode.CORRUPT, f"cannot decode {clip20}", path=clip20)

    monkeypatch.setattr(video_module, "frames", broken)
    ran = run_ota(tmp_path, [turn(frames(1, 3, 2)), turn(answer("A"), 0.9)], clip20)
    assert ran.codes() == ["MEDIA_ERROR", None]
    assert str(clip20) not in ran.request(1)[-1].text  # no host path reaches the model
    assert "CORRUPT: cannot decode video_1 (ota20.mp4)" in ran.request(1)[-1].text


def test_every_error_code_is_tested() -> None:
    tested = {
        "INVALID_JSON", "MULTIPLE_ACTIONS", "MISSING_FIELD", "INVALID_FIELD", "UNKNOWN_ACTION",
        "TS_OOB", "INVALID_RANGE", "TOO_MANY_FRAMES", "AUDIO_TOO_LONG", "CLIP_TOO_LONG",
        "LOW_CONFIDENCE", "NO_AUDIO", "NO_VIDEO", "REPEAT_ACTION", "MEDIA_ERROR", "FINAL_STEP",
        "EARLY_ANSWER", "ANSWER_FORMAT", "TOKEN_LIMIT",
    }  # fmt: skip
    assert tested == set(ERROR_CODES)


def test_fenced_json_runs_with_a_format_warning(tmp_path: Path, clip20: Path) -> None:
    fenced = "Here it is:\n```json\n" + turn(frames(0, 4, 2)) + "\n```"
    ran = run_ota(tmp_path, [fenced, turn(answer("A"), 0.95)], clip20)
    assert ran.codes() == [None, None]
    assert ran.notes[0].data["format_warnings"] == ["text outside the JSON object (24 characters)"]
    feedback = ran.request(1)[-1]
    assert len([p for p in feedback.content if isinstance(p, Image)]) == 2
    assert "[WARNING] Err.FORMAT: text outside the JSON object" in feedback.text


def test_notices_count_down_and_the_final_step_takes_any_answer(
    tmp_path: Path, clip20: Path
) -> None:
    ran = run_ota(
        tmp_path,
        [turn(frames(0, 4, 2)), turn(frames(4, 8, 2)), turn(answer("C"), confidence=0.2)],
        clip20,
        max_steps=3,
        dynamic_steps=False,
    )
    assert ran.saved.status == "answered" and ran.saved.answer == "C"  # gate bypassed
    assert ran.request(0)[1].text.endswith("[NOTICE] Step 1/3. 2 steps remaining.")
    assert ran.request(1)[-1].text.endswith("[NOTICE] Step 2/3. 1 step remaining.")
    assert "[NOTICE] Step 3/3. FINAL STEP" in ran.request(2)[-1].text


def test_no_answer_at_the_final_step_ends_the_run_unanswered(tmp_path: Path, clip20: Path) -> None:
    ran = run_ota(
        tmp_path,
        [turn(frames(0, 4, 2)), turn(frames(4, 8, 2))],
        clip20,
        max_steps=2,
        dynamic_steps=False,
    )
    assert ran.saved.status == "no_answer" and ran.saved.answer is None
    assert ran.codes() == [None, "FINAL_STEP"]
    assert len(ran.adapter.requests) == 2
    # the final step's get_frames never ran: no percept was added after it
    assert ran.saved.messages()[-1].role == "assistant"


def test_an_answer_below_0_9_finishes_unless_the_gate_is_opted_into(
    tmp_path: Path, clip20: Path
) -> None:
    # The release has no threshold: a "C" at confidence 0.85 ends the run (reward 1 there).
    ran = run_ota(tmp_path, [turn(frames(0, 4, 2)), turn(answer("C"), 0.85)], clip20)
    assert ran.saved.status == "answered" and ran.saved.answer == "C"
    assert ran.codes() == [None, None] and ran.notes[1].data["confidence"] == 0.85
    assert OtaOptions().confidence_threshold is None
    ran = run_ota(
        tmp_path,
        [turn(answer("D"), 0.7), turn(answer("D"), 0.8)],
        clip20,
        confidence_threshold=0.75,
    )
    assert ran.codes() == ["LOW_CONFIDENCE", None]


def test_a_reply_may_leave_confidence_out_when_not_required(tmp_path: Path, clip20: Path) -> None:
    bare = json.dumps({"observation": "o", "think": "t", "action": answer("A")})
    ran = run_ota(tmp_path, [bare, turn(answer("A"), 0.5)], clip20)
    assert ran.codes() == ["MISSING_FIELD", None]
    ran = run_ota(tmp_path, [bare], clip20, require_confidence=False)
    assert ran.saved.answer == "A" and ran.notes[0].data["confidence"] is None


@pytest.mark.parametrize(
    ("kind", "bad", "good"),
    [("TR", "C", "[[1.0, 2.5]]"), ("NUM", "several", "3"), ("SIZE", "big", "2.5 m")],
)
def test_an_answer_whose_form_cannot_be_scored_is_refused_and_retried(
    tmp_path: Path, clip20: Path, kind: str, bad: str, good: str
) -> None:
    info = TaskInfo(benchmark="omniagent", question_type=kind)
    replies = [turn(answer(bad), 0.95), turn(answer(good), 0.95)]
    ran = run_ota(tmp_path, replies, clip20, metadata=info)
    assert ran.codes() == ["ANSWER_FORMAT", None] and ran.saved.answer == good
    assert ran.request(1)[-1].text.startswith(f"[ERROR] Err.ANSWER_FORMAT: a {kind} answer must")
    ran = run_ota(tmp_path, replies[:1], clip20, metadata=info, check_answers=False)
    assert ran.saved.answer == bad
    # at the final step an answer is taken as it is
    ran = run_ota(tmp_path, replies[:1], clip20, metadata=info, max_steps=1, dynamic_steps=False)
    assert ran.saved.answer == bad


def test_the_token_limit_ends_the_run(tmp_path: Path, clip20: Path) -> None:
    from omnilab.models.types import Usage

    def step(prompt_tokens: int, start: float) -> s.OutputStep:
        return s.text(turn(frames(start, 4, 2)), usage=Usage(prompt_tokens=prompt_tokens))

    ran = run_ota(tmp_path, [step(40, 0), step(90, 1), step(95, 2)], clip20, max_prompt_tokens=100)
    # the second call's prompt and reply reach 100 - 32 tokens: no third call
    assert ran.saved.status == "budget" and ran.codes() == [None, None, "TOKEN_LIMIT"]
    assert len(ran.adapter.requests) == 2


def test_turn_limit_scales_with_duration() -> None:
    o = OtaOptions()
    assert [turn_limit(o, d, 50) for d in (20, 60, 600, 3600, 7200)] == [6, 6, 8, 20, 32]
    assert turn_limit(o, None, 50) == 32
    assert turn_limit(OtaOptions(dynamic_steps=False), 20, 50) == 32
    assert turn_limit(o, 3600, 7) == 7  # the run's max_turns caps it
    assert turn_limit(OtaOptions(max_steps=10, seconds_per_step=60), 3600, 50) == 10


def test_system_prompt_is_figure_4_with_the_runtime_parameters() -> None:
    text = system_prompt(OtaOptions())
    assert text.startswith("You are the Deep-Omni-Research Agent, a specialized multi-modal")
    assert "1. Visual Search (get_frames): (Max 60 frames)." in text
    assert "start=0, end=duration, num=60)" in text
    assert "4. Audio Analysis (get_audio): (Max 300s)." in text
    assert "5. Multi-Modal Action Analysis (get_clip): (Max 60s)." in text
    assert "{" + "max_" not in text
    assert text.rstrip().endswith(
        "- NO Markdown: Output raw text ONLY. DO NOT use code blocks or wrappers."
    )
    small = system_prompt(OtaOptions(max_frames_len=8, max_audio_len=30.5, max_clip_len=12))
    assert "(Max 8 frames)" in small and "(Max 30.5s)" in small and "(Max 12s)" in small


def test_first_message_has_the_meta_question_options_and_format(
    tmp_path: Path, clip20: Path
) -> None:
    info = TaskInfo(benchmark="omniagent", question_type="TR", options=None)
    ran = run_ota(tmp_path, [turn(answer("[[1, 2]]"), 0.95)], clip20, metadata=info)
    first = ran.request(0)[1].text
    assert first.startswith('Video META: {"duration": 20.0, "fps": 5.0, "has_audio": true}\n')
    assert "Which colour?" in first
    assert (
        'Answer format (TR): JSON array of one or more pairs, e.g., "[[10.5, 20.0], [35.0, 40.0]]".'
        in first
    )
    assert ran.request(0)[0].role == "system"
    start = ran.saved.run_start
    assert start is not None and start.config["turn_limit"] == 6
    assert start.config["mode"] == "native" and start.config["max_frames_len"] == 60


def test_a_json_schema_model_gets_the_turn_grammar(tmp_path: Path, clip20: Path) -> None:
    caps = Capabilities(image=True, audio=True, video=True, json_schema=True)
    ran = run_ota(tmp_path, [turn(frames(0, 4, 2)), turn(answer("A"), 0.95)], clip20, caps=caps)
    fmt = ran.adapter.requests[0][2].response_format
    assert fmt is not None and fmt.name == "ota_turn"
    assert fmt.json_schema["required"] == ["observation", "think", "confidence", "action"]
    plain = run_ota(tmp_path, [turn(answer("A"), 0.95)], clip20)
    assert plain.adapter.requests[0][2].response_format is None


def test_the_turn_schema_compiles_to_a_llama_grammar() -> None:
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    from omnilab.agents.ota.protocol import turn_schema
    from omnilab.models.providers.local import output_schema
    from omnilab.models.types import ResponseFormat

    schema = output_schema([], None, ResponseFormat(json_schema=turn_schema(60)))
    assert llama_grammar.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)


def test_bad_options_and_inputs_are_one_line_errors(tmp_path: Path) -> None:
    from omnilab.agents import AgentConfigError

    with pytest.raises(AgentConfigError, match="bad ota option max_frames_len"):
        get_agent("ota", max_frames_len=0)
    with pytest.raises(AgentConfigError, match="bad ota option clip_preset"):
        get_agent("ota", clip_preset="turbo")
    notes = tmp_path / "n.txt"
    notes.write_text("hi", encoding="utf-8")
    with pytest.raises(AgentConfigError, match="needs a video"):
        run_ota(tmp_path, [], notes)


def test_clips_are_encoded_with_the_papers_x264_settings(tmp_path: Path, clip20: Path) -> None:
    import re

    from omnilab.media.clips import clip

    ran = run_ota(tmp_path, [turn(span("get_clip", 0, 3)), turn(answer("A"), 0.95)], clip20)
    (video,) = [p for p in ran.request(1)[-1].content if isinstance(p, Video)]
    data = video.path.read_bytes()  # type: ignore[union-attr]
    # x264 writes its settings into the stream: B.2's CRF 20 and superfast (subme=1)
    assert re.search(rb"crf=20\.0", data) and re.search(rb"subme=1 ", data)
    default = clip(clip20, 0, 3)
    assert default != video.path and re.search(rb"crf=23\.0", default.read_bytes())
    ran = run_ota(
        tmp_path,
        [turn(span("get_clip", 0, 3)), turn(answer("A"), 0.95)],
        clip20,
        clip_preset="ultrafast",
        clip_crf=28,
    )
    (fast,) = [p for p in ran.request(1)[-1].content if isinstance(p, Video)]
    assert re.search(rb"crf=28\.0", fast.path.read_bytes())  # type: ignore[union-attr]

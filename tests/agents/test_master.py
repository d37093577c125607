"""The ``master`` agent (Agent-Omni §2) on scripted pools: the four stages, the loop's stop
rules, format errors, which inputs each modality agent sees, and the pool's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_master_kit import (
    ANSWERS,
    AUDIO,
    DECISION,
    IMAGE,
    REASONING,
    SUMMARY,
    TEXT,
    Audio,
    Image,
    StageModel,
    Video,
    decision,
    model,
    plan,
    run_master,
)

from omnilab.agents import AgentConfigError, TaskInfo
from omnilab.agents.templates import load_template
from omnilab.media.synth import make_audio, make_image, make_video
from omnilab.trajectory import render_text


def notes_file(tmp_path: Path, text: str = "The meeting is at noon.") -> Path:
    path = tmp_path / "notes.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_one_round_stops_when_the_decision_is_final(tmp_path: Path) -> None:
    master = StageModel(
        replies={
            REASONING: [plan("meeting time", text_agent=["When is the meeting?"])],
            DECISION: [decision("At noon.", True, "none needed")],
        }
    )
    text = StageModel(replies={ANSWERS: [{"answers": ["noon"]}]})
    run = run_master(
        tmp_path,
        model(master, "master"),
        [notes_file(tmp_path)],
        "When is the meeting?",
        roles={"text": model(text, "text")},
    )
    traj = run.trajectory
    assert traj.status == "answered" and traj.answer == "At noon."
    assert len(master.stage(REASONING)) == 1 and len(master.stage(DECISION)) == 1
    assert run.stats == {"rounds": 1.0, "stopped_early": 1.0}
    # The text agent summarised its input, then answered the sub-question seeing the notes.
    assert len(text.stage(SUMMARY)) == 1
    asked = text.stage(ANSWERS)[0]
    assert "1. When is the meeting?" in asked.text and "The meeting is at noon." in asked.text
    assert "When is the meeting?" not in text.stage(SUMMARY)[0].text
    # Each stage is its own context, named by role, stage and round, and left a note.
    contexts = {e.context_id for e in traj.model_calls}
    assert {c.rsplit("-", 1)[0] for c in contexts} == {
        "text-perception",
        "master-r1-reasoning",
        "text-r1",
        "master-r1-decision",
    }
    assert {e.role for e in traj.model_calls} == {"text", "master"}
    shown = render_text(traj, width=400)  # what `omnilab trace` prints: each call's role/context
    assert "[text text-r1-3]" in shown and "[master master-r1-decision-4]" in shown
    assert "reasoning: round 1: meeting time -> text_agent: When is the meeting?" in shown
    assert [n.label for n in run.notes] == ["perception", "reasoning", "answers", "decision"]
    answers = run.notes_of("answers")[0]
    assert answers.data["questions_and_answers"] == [
        {"question": "When is the meeting?", "answer": "noon"}
    ]
    assert "final" in run.notes_of("decision")[0].text


def test_three_rounds_at_most_and_each_round_sees_the_last(tmp_path: Path) -> None:
    master = StageModel(
        replies={
            REASONING: [plan(text_agent=["q1"]), plan(text_agent=["q2"]), plan(text_agent=["q3"])],
            DECISION: [
                decision("maybe A", False, "ask about the date"),
                decision("maybe B", False, "ask about the room"),
                decision("C", False, "still unsure"),
            ],
        }
    )
    run = run_master(tmp_path, model(master, "master"), [notes_file(tmp_path)])
    assert len(master.stage(REASONING)) == 3 and len(master.stage(DECISION)) == 3
    assert run.trajectory.answer == "C"  # the cap reached: the last decision's answer
    assert run.stats == {"rounds": 3.0, "stopped_early": 0.0}
    second = master.stage(REASONING)[1].messages[0].text
    assert "2nd round of reasoning" in second and "ask about the date" in second
    assert "ask about the room" not in second
    third_decision = master.stage(DECISION)[2].messages[0].text
    assert "maybe B" in third_decision and "q3" in third_decision


def test_max_rounds_is_configurable(tmp_path: Path) -> None:
    master = StageModel(replies={DECISION: [decision("x", False)]})
    run = run_master(tmp_path, model(master, "master"), max_rounds=1)
    assert len(master.stage(DECISION)) == 1
    assert run.stats == {"rounds": 1.0, "stopped_early": 0.0}
    with pytest.raises(AgentConfigError, match="max_rounds"):
        run_master(tmp_path, model(master, "master"), max_rounds=0)


def test_an_invalid_reply_is_retried_once_with_the_problem(tmp_path: Path) -> None:
    master = StageModel(replies={DECISION: ["The answer is B.", decision("B", True)]})
    run = run_master(tmp_path, model(master, "master"))
    retry = master.stage(DECISION)[1]
    assert retry.messages[-2].text == "The answer is B."  # its own bad reply, then the problem
    assert "the answer is not JSON" in retry.messages[-1].text
    assert run.trajectory.answer == "B" and not run.errors


def test_a_reply_invalid_twice_is_a_format_error_and_the_loop_goes_on(tmp_path: Path) -> None:
    master = StageModel(
        replies={
            DECISION: ['{"final_answer": "B"}', "still not it", decision("B", True)],
            REASONING: [plan(text_agent=["q"])],
        }
    )
    run = run_master(tmp_path, model(master, "master"))
    [error] = run.errors
    assert error.error_kind == "format" and "MasterDecisionStructure" in error.message
    assert "is_final" in master.stage(DECISION)[1].messages[-1].text  # the schema's complaint
    # Round 1 had no decision, so round 2 ran and its final decision answered.
    assert len(master.stage(REASONING)) == 2
    assert run.trajectory.answer == "B" and run.stats["rounds"] == 2
    assert "no decision" in run.notes_of("decision")[0].text


def test_an_unknown_agent_name_is_a_validation_error(tmp_path: Path) -> None:
    master = StageModel(replies={REASONING: [plan(sound_agent=["q"]), plan(text_agent=["q"])]})
    run_master(tmp_path, model(master, "master"))
    complaint = master.stage(REASONING)[1].messages[-1].text
    assert "'sound_agent' is not in the agent pool (text_agent)" in complaint


def test_a_plan_that_never_validates_asks_every_agent_the_query(tmp_path: Path) -> None:
    master = StageModel(replies={REASONING: ["no"]})
    image = StageModel(capabilities=IMAGE)
    photo = make_image(tmp_path / "photo.png")
    run = run_master(
        tmp_path,
        model(master, "master"),
        [photo],
        "What colour?",
        roles={"image": model(image, "image")},
    )
    assert [e.error_kind for e in run.errors] == ["format"]
    assert "What colour?" in image.stage(ANSWERS)[0].text
    assert run.trajectory.answer == "done"


def test_a_video_with_sound_reaches_the_video_and_the_audio_agent(tmp_path: Path) -> None:
    clip = make_video(tmp_path / "clip.mp4", duration=2.0, audio=True)
    master = StageModel(
        replies={REASONING: [plan(video_agent=["What moves?"], audio_agent=["What is heard?"])]}
    )
    video = StageModel(capabilities=IMAGE)  # no video input: timestamped frames
    audio = StageModel(capabilities=AUDIO)
    run = run_master(
        tmp_path,
        model(master, "master"),
        [clip],
        roles={"video": model(video, "video"), "audio": model(audio, "audio")},
    )
    seen = video.stage(ANSWERS)[0]
    assert len(seen.media(Image)) == 4 and not seen.media(Audio) and not seen.media(Video)
    assert "t=0.00 s" in seen.text and "What moves?" in seen.text
    heard = audio.stage(ANSWERS)[0]
    [track] = heard.media(Audio)
    assert track.path == clip and "[video_1:audio: the sound track of video video_1]" in heard.text
    assert not heard.media(Image) and "What is heard?" in heard.text
    summaries = {n.data["input"]: n.data["agent"] for n in run.notes_of("perception")}
    assert summaries == {"video_1": "video_agent", "video_1:audio": "audio_agent"}
    assert '"video_1:audio"' in master.stage(REASONING)[0].messages[0].text  # in the agent pool


def test_a_video_model_that_takes_video_gets_the_video(tmp_path: Path) -> None:
    clip = make_video(tmp_path / "clip.mp4", duration=1.0, audio=False)
    master = StageModel(replies={REASONING: [plan(video_agent=["What moves?"])]})
    video = StageModel()
    run = run_master(
        tmp_path, model(master, "master"), [clip], roles={"video": model(video, "video")}
    )
    [part] = video.stage(ANSWERS)[0].media(Video)
    assert part.path == clip
    assert [n.data["agent"] for n in run.notes_of("perception")] == ["video_agent"]  # no track


def test_every_image_is_summarised_and_shown(tmp_path: Path) -> None:
    photos = [make_image(tmp_path / f"p{i}.png") for i in range(3)]
    master = StageModel(replies={REASONING: [plan(image_agent=["Which differ?"])]})
    image = StageModel(capabilities=IMAGE)
    run = run_master(
        tmp_path, model(master, "master"), photos, roles={"image": model(image, "image")}
    )
    summarised = sorted(len(r.media(Image)) for r in image.stage(SUMMARY))
    assert summarised == [1, 1, 1]
    assert {n.data["input"] for n in run.notes_of("perception")} == {
        "image_1",
        "image_2",
        "image_3",
    }
    shown = image.stage(ANSWERS)[0].media(Image)
    assert sorted(p.path.name for p in shown) == ["p0.png", "p1.png", "p2.png"]
    assert "summary of image_3" in master.stage(REASONING)[0].messages[0].text


def test_the_agents_of_a_round_run_concurrently(tmp_path: Path) -> None:
    master = StageModel(
        replies={REASONING: [plan(image_agent=["a"], audio_agent=["b"], text_agent=["c"])]}
    )
    image, audio = StageModel(capabilities=IMAGE, latency_s=0.3), StageModel(AUDIO, latency_s=0.3)
    text = StageModel(capabilities=TEXT, latency_s=0.3)
    files = [make_image(tmp_path / "p.png"), make_audio(tmp_path / "s.wav", duration=1.0)]
    run_master(
        tmp_path,
        model(master, "master"),
        files,
        roles={"image": model(image, "i"), "audio": model(audio, "a"), "text": model(text, "t")},
        perception=False,
    )
    calls = [m.stage(ANSWERS)[0] for m in (image, audio, text)]
    assert max(c.start for c in calls) < min(c.end for c in calls)  # all three overlapped
    assert not image.stage(SUMMARY)  # perception off


def test_options_reach_the_master_in_reasoning_and_decision(tmp_path: Path) -> None:
    master = StageModel()
    info = TaskInfo(benchmark="mcq", options={"A": "red", "B": "blue"})
    run_master(tmp_path, model(master, "master"), question="Which colour?", options=info)
    for stage in (REASONING, DECISION):
        user = master.stage(stage)[0].messages[1].text
        assert "Question: Which colour?" in user and "A. red\nB. blue" in user


def test_a_role_whose_model_cannot_take_its_modality_is_refused(tmp_path: Path) -> None:
    sound = make_audio(tmp_path / "s.wav", duration=1.0)
    text_only = model(StageModel(capabilities=TEXT), "plain")
    with pytest.raises(AgentConfigError) as given:
        run_master(tmp_path, model(StageModel(), "m"), [sound], roles={"audio": text_only})
    message = str(given.value)
    assert "\n" not in message and "role audio needs a model that takes audio" in message
    assert "but stage:plain does not" in message and "leave the role out" in message
    # An explicit role is refused even when the task has no input of its kind, before anything
    # is written.
    with pytest.raises(AgentConfigError, match="role video needs"):
        run_master(tmp_path, model(StageModel(), "m"), roles={"video": text_only})
    assert not (tmp_path / "ws").exists() or not any((tmp_path / "ws").iterdir())


def test_a_text_model_left_as_a_media_role_gets_evidence_digests(tmp_path: Path) -> None:
    """Evidence mode: one text-only model (the embedded default) runs the whole pool; each
    modality agent reads its inputs' digest, as tir's evidence mode does."""
    sound = make_audio(tmp_path / "s.wav", duration=1.0)
    picture = make_image(tmp_path / "p.png")
    only = StageModel(capabilities=TEXT)
    run = run_master(tmp_path, model(only, "text"), [sound, picture])
    assert run.trajectory.status == "answered"
    assert run.trajectory.events[0].config["evidence"] == ["image", "audio"]
    for request in only.stage(SUMMARY):
        assert not request.media(Image) and not request.media(Audio)  # text only reached it
    seen = "\n".join(r.text for r in only.stage(SUMMARY))
    assert "image_1: image p.png as text evidence" in seen
    assert "audio_1: audio s.wav as text evidence" in seen
    assert "analysed for you offline" in seen  # the evidence template's words


def test_unset_roles_fall_back_to_the_agent_model(tmp_path: Path) -> None:
    only = StageModel()
    run = run_master(tmp_path, model(only, "one"), [make_image(tmp_path / "p.png")])
    start = run.trajectory.events[0]
    assert start.models == {
        r: "stage:one" for r in ("agent", "text", "image", "video", "audio", "master")
    }
    assert run.trajectory.answer == "done"


def test_the_prompts_are_the_papers(tmp_path: Path) -> None:
    reasoning = load_template("master_reasoning").template
    assert reasoning.startswith(
        'You are the Reasoning Module in an "Understanding Anything" system.'
    )
    assert "You must not generate a final answer to the user's question." in reasoning
    decision_prompt = load_template("master_decision").template
    assert "Task 3. Determine and recommend next steps:" in decision_prompt
    master = StageModel()
    run_master(tmp_path, model(master, "master"))
    sent = master.stage(REASONING)[0]
    assert sent.messages[0].text.startswith("You are the Reasoning Module")
    assert "This is the 1st round of reasoning." in sent.messages[0].text
    schema = sent.config.response_format.json_schema  # type: ignore[union-attr]
    assert schema["required"] == ["user_intent", "agent_instructions"]
    assert (
        '"agent_name": "text_agent"'
        in schema["$defs"]["AgentInstruction"]["properties"]["agent_name"]["description"]
    )
    decided = master.stage(DECISION)[0].config.response_format.json_schema  # type: ignore[union-attr]
    assert decided["properties"]["suggestions_for_next_round"]["minItems"] == 1


def test_the_time_budget_ends_the_run_keeping_the_last_answer(tmp_path: Path) -> None:
    from omnilab.agents import Budgets

    master = StageModel(replies={DECISION: [decision("early guess", False)]})
    text = StageModel(delays=[0.0, 30.0])  # round 2's answer never comes in time
    run = run_master(
        tmp_path,
        model(master, "master"),
        roles={"text": model(text, "text")},
        budgets=Budgets(max_seconds=1.5),
    )
    traj = run.trajectory
    assert traj.status == "budget"
    assert [e.error_kind for e in run.errors] == ["budget"]
    assert traj.answer == "early guess"  # round 1's decision, kept when round 2 ran out

"""Task metadata reaches the model: options and answer formats worded as each benchmark's own
prompt does, and input ids unique within a task (repeats get a suffix the listing explains)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agentkit import VISION, scripted

from omnilab.agents import AgentContext, AgentTask, Budgets, TaskInfo, get_agent
from omnilab.agents.question import omniagent_answer_format, question_text
from omnilab.content import Text
from omnilab.inputs import InputFile, InputSet, unique_ids
from omnilab.models.model import Model
from omnilab.models.providers import scripted as s
from omnilab.trajectory import Trajectory, TrajectoryWriter

# Agent-Omni, Figure 3, as the paper prints it (papers/004_48a5991d58f5c43d.txt).
AGENT_OMNI = (
    "You will be given some support materials (text, image, etc.) and a multiple-choice "
    "question with options (A, B, C, etc). Choose only one best answer. First, provide a brief "
    'explanation of your reasoning. Then, on a new line, output "The answer is <answer>", '
    "where the <answer> is only the single letter of the correct option (A, B, C, etc).\n\n"
    "Question: {question}\nChoices: {choices}"
)
# OmniAgent, Figure 4, the answer formats (papers/002_d7a7143baf6b484d.txt).
FORMATS = {
    "MCQ": 'Letter only (e.g., "A").',
    "TR": 'JSON array of one or more pairs, e.g., "[[10.5, 20.0], [35.0, 40.0]]".',
    "NUM": 'A single number string, e.g., "10.3".',
    "SIZE": 'A single number string, e.g., "10.3".',
    "FF": "Detailed descriptive text.",
}


def task(question: str = "Which animal?", **info: object) -> AgentTask:
    return AgentTask(id="t", question=question, metadata=TaskInfo.model_validate(info))


def test_multiple_choice_is_worded_as_agent_omni_figure_3() -> None:
    text = question_text(task(benchmark="mcq", options={"A": "cat", "B": "dog"}))
    assert text == AGENT_OMNI.format(question="Which animal?", choices="A. cat\nB. dog")
    # Options from a benchmark without wording of its own get the same multiple-choice prompt.
    assert question_text(task(benchmark="jsonl", options={"A": "x"})).startswith(AGENT_OMNI[:40])


@pytest.mark.parametrize(
    ("qtype", "expected"),
    [*FORMATS.items(), ("MCQ_LongVR-Short", FORMATS["MCQ"]), ("tr_multihop", FORMATS["TR"])],
)
def test_omniagent_types_get_figure_4_answer_formats(qtype: str, expected: str) -> None:
    assert omniagent_answer_format(qtype) == expected
    options = {"A": "red", "B": "green"} if qtype.upper().startswith("MCQ") else None
    text = question_text(task("When?", benchmark="omniagent", question_type=qtype, options=options))
    assert text.startswith("When?\n")
    assert text.endswith(f"Answer format ({qtype}): {expected}")
    assert ("Options:\nA. red\nB. green\n" in text) == (options is not None)


def test_questions_without_metadata_go_unchanged() -> None:
    assert question_text(task("Plain?")) == "Plain?"
    assert question_text(task("Plain?", benchmark="omnigaia", duration=12.5)) == "Plain?"
    assert question_text("Bare?") == "Bare?"
    assert omniagent_answer_format("RANKING") is None


def test_a_format_the_dataset_gives_wins() -> None:
    text = question_text(task("How far?", answer_format="kilometres, one decimal"))
    assert text == "How far?\nAnswer format: kilometres, one decimal"
    # Options of an unknown question type are still shown, with a request for the letter.
    text = question_text(task("Pick", question_type="choice", options={"A": "x", "B": "y"}))
    assert "Options:\nA. x\nB. y\n" in text and text.endswith(FORMATS["MCQ"])


def _file(file_id: str, name: str, kind: str = "video") -> InputFile:
    return InputFile.model_validate(
        {"id": file_id, "kind": kind, "path": f"/data/{name}", "given": f"videos/{name}"}
    )


def test_repeated_ids_get_a_deterministic_suffix() -> None:
    files = [
        _file("video_X", "X.mp4"),
        _file("video_X", "X_1.mp4"),
        _file("video_X_1", "other.mp4"),  # the natural suffix is taken: the next one is used
        _file("video_X", "X_2.mp4"),
    ]
    unique = unique_ids(files)
    assert [f.id for f in unique] == ["video_X", "video_X_2", "video_X_1", "video_X_3"]
    assert [f.renamed_from for f in unique] == [None, "video_X", None, "video_X"]
    assert unique_ids(files) == unique and unique_ids(unique) == unique  # stable, idempotent
    # Everything that takes inputs gets unique ids: the task, and a set built from raw files.
    agent_task = AgentTask(id="304", question="q", inputs=files)
    assert [f.id for f in agent_task.inputs] == [f.id for f in unique]
    inputs = InputSet(files)
    assert inputs.resolve("video_X_2").path.name == "X_1.mp4"
    assert inputs.resolve("video_X").path.name == "X.mp4"


def test_the_listing_says_which_file_each_id_is(video: Path, tmp_path: Path) -> None:
    second = tmp_path / "X_1.mp4"
    second.write_bytes(video.read_bytes())
    listing = InputSet(
        [
            InputFile(id="video_X", kind="video", path=video, given="videos/X.mp4"),
            InputFile(id="video_X", kind="video", path=second, given="videos/X_1.mp4"),
        ]
    ).listing()
    lines = listing.splitlines()
    assert lines[1].startswith(f"- video_X: video, file {video.name}, duration")
    assert lines[2].startswith(
        "- video_X_1: video, file X_1.mp4 (the task gave it the id video_X, which an earlier "
        "input has), duration"
    )


def run_tir(model: Model, agent_task: AgentTask, tmp_path: Path, **options: object) -> Trajectory:
    with TrajectoryWriter(tmp_path / "run.jsonl") as writer:
        ctx = AgentContext(
            model=model,
            roles={},
            tools=None,
            budgets=Budgets(max_turns=3),
            workspace=tmp_path / "ws",
            trajectory=writer,
        )
        return asyncio.run(get_agent("tir", **options).run(agent_task, ctx))


def test_tir_states_options_and_format_and_reads_a_renamed_input(
    video: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "clip_1.mp4"
    copy.write_bytes(video.read_bytes())
    files = [
        InputFile(id="video_clip", kind="video", path=video, given="videos/clip.mp4"),
        InputFile(id="video_clip", kind="video", path=copy, given="videos/clip_1.mp4"),
    ]
    info = TaskInfo(benchmark="omniagent", question_type="MCQ", options={"A": "red", "B": "blue"})
    agent_task = AgentTask(id="t", question="What colour?", inputs=files, metadata=info)
    model, adapter = scripted(
        [
            s.tool_call("read_video", {"video_id": "video_clip_1", "t_start": 0, "t_end": 1}),
            s.text("<answer>B</answer>"),
        ],
        caps=VISION,
    )
    trajectory = run_tir(model, agent_task, tmp_path, mode="active")
    assert trajectory.status == "answered" and trajectory.answer == "B"
    first = adapter.requests[0][0][1]
    question = first.content[-1]
    assert isinstance(question, Text)
    assert question.text == (
        "What colour?\nOptions:\nA. red\nB. blue\nAnswer format (MCQ): " + FORMATS["MCQ"]
    )
    assert "video_clip_1: video, file clip_1.mp4" in first.text
    (result,) = trajectory.tool_results
    assert result.result.error is None
    start = trajectory.run_start
    assert start is not None and [f.id for f in start.inputs] == ["video_clip", "video_clip_1"]

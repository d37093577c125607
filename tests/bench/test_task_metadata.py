"""Task metadata from dataset to model: ``omnilab eval omniagent`` and ``eval mcq`` send each
question's options and answer format (read from a local OpenAI-compatible server's request
log); ground truth never goes; every OmniGAIA item of the sample, and a variant whose inputs
repeat an id (real item 304), runs through the agent without a crash."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from omnilab.agents import TaskInfo, get_agent
from omnilab.agents.question import question_text
from omnilab.bench import Task, load_dataset
from omnilab.bench.agent_task import agent_task
from omnilab.bench.executor import TaskExecutor, TaskJob
from omnilab.bench.scoring.rules import AnswerSetMatch
from omnilab.cli.main import app
from omnilab.media import synth
from omnilab.models.capabilities import Capabilities
from omnilab.models.fake_server import FakeOpenAIServer
from omnilab.models.model import Model
from omnilab.models.providers import scripted as s
from omnilab.models.providers.scripted import ScriptedAdapter
from omnilab.trajectory import read_trajectory

runner = CliRunner()
VISION = Capabilities(image=True)  # active mode: the read_* tools over every kind of input
MCQ_FORMAT = 'Answer format (MCQ): Letter only (e.g., "A").'


def place(root: Path, given: str, source: Path) -> None:
    """Put ``source`` where a dataset expects ``given`` (relative to ``root``)."""
    dest = root / given
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)


def first_user_texts(body: dict[str, Any]) -> str:
    """The texts of the first user message of a request."""
    content = next(m for m in body["messages"] if m["role"] == "user")["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p["type"] == "text")


def test_agent_tasks_carry_options_type_and_duration_but_no_answers(bench_data: Path) -> None:
    tasks = {t.id: t for t in load_dataset("omniagent", bench_data / "omniagent.jsonl").tasks}
    mcq = agent_task(tasks["oa1"]).metadata
    assert mcq == TaskInfo(
        benchmark="omniagent",
        question_type="MCQ",
        options={"A": "red", "B": "green", "C": "blue", "D": "black"},
    )
    assert agent_task(tasks["oa4"]).metadata.duration == 1616.1
    grounding = agent_task(tasks["oa3"])
    assert grounding.metadata.question_type == "TR" and tasks["oa3"].metadata.spans
    # The labelled spans are the answer: nothing of them reaches the agent.
    assert "10.5" not in grounding.model_dump_json()
    choice = {t.id: t for t in load_dataset("mcq", bench_data / "mcq.json").tasks}["m2"]
    info = agent_task(choice).metadata
    assert info.benchmark == "mcq" and info.options == {"A": "Paris", "B": "Rome"}
    assert info.question_type is None  # "category" is a grouping label, not a question type


def test_a_generic_dataset_states_its_own_answer_format(tmp_path: Path) -> None:
    data = tmp_path / "generic.jsonl"
    records = [
        {"id": "g1", "question": "How far?", "answer": "3.2", "metadata": {"answer_format": "km"}},
        {"id": "g2", "question": "Which?", "answer": "A", "options": ["A. x", "B. y"]},
        {"id": "g3", "question": "When?", "answer": "[[1, 2]]", "spans": [[1, 2]]},
    ]
    data.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    tasks = {t.id: agent_task(t) for t in load_dataset("jsonl", data).tasks}
    assert question_text(tasks["g1"]) == "How far?\nAnswer format: km"
    assert question_text(tasks["g2"]).endswith("Question: Which?\nChoices: A. x\nB. y")
    assert question_text(tasks["g3"]) == "When?"  # its spans are the answer: never stated


def run_eval(*args: str | Path) -> None:
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, (result.output, result.exception)


def test_eval_omniagent_sends_options_and_answer_formats(
    tmp_path: Path, bench_data: Path, video: Path
) -> None:
    data = tmp_path / "omniagent.jsonl"
    shutil.copyfile(bench_data / "omniagent.jsonl", data)
    records = [json.loads(line) for line in data.read_text().splitlines()]
    for record in records:
        place(tmp_path, record["video"], video)
    with FakeOpenAIServer() as server:
        run_eval(
            "eval", "omniagent", "--data", data, "--out", tmp_path / "run", "--no-progress",
            "--model", f"vllm:Qwen2.5-Omni-7B@{server.base_url}",
            "--judge", f"vllm:judge@{server.base_url}",
        )  # fmt: skip
        firsts = {}
        agent_requests = [r for r in server.chat_requests if r.body["model"] != "judge"]
        for request in agent_requests:
            text = first_user_texts(request.body)
            for record in records:
                if record["question"] in text:
                    firsts.setdefault(record["id"], text)
    assert set(firsts) == {r["id"] for r in records} - {"oa7"}  # oa7's answer is no span
    assert firsts["oa1"].endswith(
        "What colour is the host's dress?\nOptions:\nA. red\nB. green\nC. blue\nD. black\n"
        + MCQ_FORMAT
    )
    assert "Options:\nA. cat\nB. dog\nC. bird\n" + MCQ_FORMAT in firsts["oa2"]
    assert firsts["oa3"].endswith(
        'Answer format (TR): JSON array of one or more pairs, e.g., "[[10.5, 20.0], [35.0, 40.0]]".'
    )
    assert firsts["oa4"].endswith('Answer format (NUM): A single number string, e.g., "10.3".')
    assert firsts["oa5"].endswith('Answer format (SIZE): A single number string, e.g., "10.3".')
    assert firsts["oa6"].endswith("Answer format (FF): Detailed descriptive text.")
    assert firsts["oa8"].endswith("Answer format (FF): Detailed descriptive text.")  # the default


def test_eval_mcq_sends_the_choices(
    tmp_path: Path, bench_data: Path, video: Path, image_file: Path, audio_file: Path
) -> None:
    data = tmp_path / "mcq.json"
    shutil.copyfile(bench_data / "mcq.json", data)
    for given, source in (
        ("img/cat.png", image_file),
        ("aud/meow.wav", audio_file),
        ("vid/rome.mp4", video),
    ):
        place(tmp_path, given, source)
    with FakeOpenAIServer() as server:
        run_eval(
            "eval", "mcq", "--data", data, "--out", tmp_path / "run", "--no-progress",
            "--model", f"vllm:Qwen2.5-Omni-7B@{server.base_url}",
        )  # fmt: skip
        texts = [first_user_texts(r.body) for r in server.chat_requests]
    choices = {
        "Which animal is shown and heard?": "A. cat\nB. dog",
        "Which city is shown?": "A. Paris\nB. Rome",
        "How many people speak?": "A. one\nB. two\nC. three",
    }
    for question, listed in choices.items():
        block = f"Question: {question}\nChoices: {listed}"
        assert any(t.endswith(block) for t in texts), (question, texts)
    assert all("The answer is <answer>" in t for t in texts)


def omnigaia_media(root: Path, items: list[dict[str, Any]], media_dir: Path) -> None:
    """Small generated media at every path the items name (copies of one file per kind)."""
    media_dir.mkdir()
    made = {
        "video": synth.make_video(media_dir / "v.mp4", duration=2.0, size=(160, 120)),
        "audio": synth.make_audio(media_dir / "a.wav", duration=2.0),
        "image": synth.make_image(media_dir / "i.png", size=(160, 120)),
    }
    for item in items:
        for entry in item["omni_modal_input"]:
            place(root, entry["path"], made[entry["type"]])


def with_duplicate_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items plus one shaped like real item 304: two videos sharing one id."""
    base = next(i for i in items if len(i["omni_modal_input"]) == 1)
    entry = base["omni_modal_input"][0]
    stem = entry["path"].removesuffix(".mp4")
    twin = {"type": "video", "id": entry["id"], "path": f"{stem}_1.mp4"}
    return [*items, dict(base, id=304, omni_modal_input=[entry, twin])]


def test_every_omnigaia_item_and_repeated_ids_run_without_a_crash(
    tmp_path: Path, sample_items: list[dict[str, Any]]
) -> None:
    items = with_duplicate_ids(sample_items)
    data = tmp_path / "omnigaia.json"
    data.write_text(json.dumps(items), encoding="utf-8")
    omnigaia_media(tmp_path, items, tmp_path / "made")
    tasks = load_dataset("omnigaia", data).tasks
    assert len(tasks) == len(items) == 25

    async def run_all() -> list[tuple[Task, Any, list[str]]]:
        out = []
        for n, task in enumerate(tasks):
            last = agent_task(task).inputs[-1]  # a read of the last input: the renamed one in 304
            call = {
                "video": ("read_video", {"video_id": last.id, "t_start": 0, "t_end": 1}),
                "audio": ("read_audio", {"audio_id": last.id, "t_start": 0, "t_end": 1}),
                "image": ("read_image", {"image_ids": [last.id]}),
            }[last.kind]
            steps = [s.tool_call(*call), s.text("<answer>x</answer>")]
            adapter = ScriptedAdapter(steps, name="scripted:agent", capabilities=VISION)
            model = Model(adapter, name="scripted:agent")
            executor = TaskExecutor(
                agent=get_agent("tir", mode="active"), model=model, scorer=AnswerSetMatch()
            )
            job = TaskJob(
                task=task, seed=0, trajectory=tmp_path / f"t{n}.jsonl", workspace=tmp_path / f"w{n}"
            )
            result = await executor.run(job)
            out.append((task, result, [last.id]))
        return out

    for task, result, (read_id,) in asyncio.run(run_all()):
        assert result.error is None, (task.id, result.error)
        assert result.extracted == "x"
        trajectory = read_trajectory(tmp_path / f"t{tasks.index(task)}.jsonl")
        (tool,) = trajectory.tool_results
        assert tool.result.error is None, (task.id, tool.result.text)
        if task.id == "304":
            start = trajectory.run_start
            assert start is not None
            ids = [f.id for f in start.inputs]
            assert ids[1] == read_id == ids[0] + "_1"
            listing = trajectory.messages()[1].text
            assert f"{read_id}: video, file {Path(start.inputs[1].given).name}" in listing
            assert f"(the task gave it the id {ids[0]}" in listing

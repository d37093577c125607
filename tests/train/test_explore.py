"""Hindsight-guided tree exploration with a scripted agent model and a scripted verifier: branch
count, pruning, parent pointers, the successful path as the task's trajectory, backtracking,
giving up, and a resume after an interruption that makes no model call twice."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from explore_kit import answer, call, dataset, register, scripted, verdicts

from omnilab.bench.errors import BenchError
from omnilab.bench.executor import RunSetupError
from omnilab.bench.run_dir import RunDir
from omnilab.bench.runner import Components, evaluate, new_config
from omnilab.models.model import Model
from omnilab.models.providers.scripted import ScriptedAdapter, error
from omnilab.models.retry import RetryPolicy
from omnilab.tools.base import Tool
from omnilab.train.explore import ExploreOptions, read_journal
from omnilab.train.explore_replay import agent_calls
from omnilab.train.explore_run import explore, explore_config
from omnilab.train.explore_verify import verify
from omnilab.trajectory import StepScore, Trajectory, read_trajectory


@pytest.fixture()
def test_tool() -> Iterator[Tool]:
    yield from register()


def _config(data: Path, branches: int = 2, max_expansions: int = 10):  # type: ignore[no-untyped-def]
    return explore_config(
        "jsonl",
        data,
        agent="tir",
        model="scripted:agent",
        verifier="scripted:verifier",
        options=ExploreOptions(branches=branches, max_expansions=max_expansions, parallel=False),
        tools=["explore_lookup"],
        concurrency=1,
    )


def _branches(run: Path) -> dict[str, Trajectory]:
    folder = run / "branches" / "t1"
    return {p.stem: read_trajectory(p) for p in sorted(folder.glob("*.jsonl")) if p.stem != "tree"}


def test_expands_k_branches_prunes_and_keeps_the_successful_path(
    tmp_path: Path, test_tool: Tool
) -> None:
    # Root: branch 0 looks up a, branch 1 looks up b; the verifier keeps only branch 0.
    # Then from r.0: branch 0 answers 41 (pruned), branch 1 answers 42 (kept: success).
    agent, agent_adapter = scripted([call("a"), call("b"), answer("41"), answer("42")], "a")
    verifier, verifier_adapter = scripted(
        [verdicts((True, 0.9), (False, 0.1)), verdicts((False, 0.0), (True, 1.0))], "v"
    )
    run = tmp_path / "run"
    outcome = asyncio.run(
        explore(
            _config(dataset(tmp_path)),
            run,
            components=Components(model=agent, roles={"verifier": verifier}),
        )
    )
    assert agent_adapter.remaining == 0 and verifier_adapter.remaining == 0
    assert outcome.ran == 1
    # Two expansions of two branches each; the pruned r.1 was never expanded.
    branches = _branches(run)
    assert sorted(branches) == ["r.0", "r.0.0", "r.0.1", "r.1"]
    # Root branches have no parent; the children of r.0 point at r.0 and its new step.
    root = branches["r.0"]
    assert root.run_start is not None and root.run_start.parent_run_id is None
    step_of_root = agent_calls(root)[0]
    for child in ("r.0.0", "r.0.1"):
        start = branches[child].run_start
        assert start is not None
        assert start.parent_run_id == root.run_start.run_id
        assert start.parent_event_id == step_of_root.id
        # The prefix was replayed (not billed), the new step made live.
        replayed, new = agent_calls(branches[child])[:2]
        assert replayed.cached and replayed.output and step_of_root.output
        assert replayed.output.message == step_of_root.output.message
        assert not new.cached
    # A branch stops after its new step and that step's tool observation.
    assert branches["r.1"].tool_results[0].result.text == "b is 7"
    # The verifier saw the correct answer and the candidates with their observations.
    first_prompt = verifier_adapter.requests[0][0][0].text
    assert "Correct answer: 42" in first_prompt and "a is 40" in first_prompt
    # The journal records every verdict and the verifier's replies.
    journal = read_journal(run / "branches" / "t1" / "tree.jsonl")
    assert [c.keep for c in journal["r"].candidates] == [True, False]
    assert [c.keep for c in journal["r.0"].candidates] == [False, True]
    assert journal["r.0"].verifier_reply is not None and "verdicts" in journal["r.0"].verifier_reply
    # The task's trajectory is the successful path, pointing at its leaf, scored correct.
    main = read_trajectory(RunDir(run).trajectory_file("t1", 0))
    assert main.run_start is not None
    assert main.run_start.parent_run_id == branches["r.0.1"].run_start.run_id  # type: ignore[union-attr]
    assert main.answer == "42" and main.status == "answered"
    assert [c.output.text for c in agent_calls(main) if c.output] == [
        step_of_root.output.text if step_of_root.output else "",
        "So it is <answer>42</answer>",
    ]
    scores = [e for e in main.events if isinstance(e, StepScore)]
    assert [(s.name, s.value) for s in scores] == [("verifier", 0.9), ("verifier", 1.0)]
    result = RunDir(run).results()[0]
    assert result.judged is True and result.error is None
    # What the search cost is in the result's stats (omnilab metrics averages them).
    assert result.stats["explore_expansions"] == 2
    assert result.stats["explore_branch_runs"] == 4
    assert result.stats["explore_verifier_calls"] == 2


def test_backtracks_to_a_kept_sibling_when_every_child_is_pruned(
    tmp_path: Path, test_tool: Tool
) -> None:
    # Both root steps kept (r.1 scored higher, so explored first); all of r.1's children are
    # pruned, so the search goes back to r.0, whose first child answers correctly.
    agent, _ = scripted(
        [call("a"), call("b"), answer("7"), answer("8"), answer("42"), answer("1")], "a"
    )
    verifier, _ = scripted(
        [
            verdicts((True, 0.4), (True, 0.8)),
            verdicts((False, 0.0), (False, 0.0)),
            verdicts((True, 1.0), (False, 0.0)),
        ],
        "v",
    )
    run = tmp_path / "run"
    asyncio.run(
        explore(
            _config(dataset(tmp_path)),
            run,
            components=Components(model=agent, roles={"verifier": verifier}),
        )
    )
    assert sorted(_branches(run)) == ["r.0", "r.0.0", "r.0.1", "r.1", "r.1.0", "r.1.1"]
    main = read_trajectory(RunDir(run).trajectory_file("t1", 0))
    assert main.answer == "42"
    assert main.run_start is not None
    assert main.run_start.parent_run_id == _branches(run)["r.0.0"].run_start.run_id  # type: ignore[union-attr]


def test_gives_up_after_max_expansions_with_a_clear_error(tmp_path: Path, test_tool: Tool) -> None:
    agent, _ = scripted([call("a"), call("a")], "a")
    verifier, verifier_adapter = scripted([verdicts((False, 0.0))], "v")
    run = tmp_path / "run"
    asyncio.run(
        explore(
            _config(dataset(tmp_path), max_expansions=1),
            run,
            components=Components(model=agent, roles={"verifier": verifier}),
        )
    )
    # The second candidate repeats the first: pruned without asking the verifier about it.
    assert "Candidate 2" not in verifier_adapter.requests[0][0][0].text
    journal = read_journal(run / "branches" / "t1" / "tree.jsonl")
    assert journal["r"].candidates[1].reason == "the same step as candidate 1"
    result = RunDir(run).results()[0]
    assert result.error is not None and "no successful path in 1 expansion" in result.error


def test_resume_after_an_interruption_makes_no_call_twice(tmp_path: Path, test_tool: Tool) -> None:
    data = dataset(tmp_path)
    run = tmp_path / "run"
    agent, agent_adapter = scripted([call("a"), call("b"), answer("41"), answer("42")], "a")
    # The verifier's second call fails as a setup error: the run stops, the task unfinished.
    verifier, _ = scripted([verdicts((True, 0.9), (False, 0.1)), error(401)], "v")
    with pytest.raises(RunSetupError):
        asyncio.run(
            explore(
                _config(data), run, components=Components(model=agent, roles={"verifier": verifier})
            )
        )
    assert agent_adapter.remaining == 0
    assert RunDir(run).results() == []
    # Resume: models that fail on any call but the one verdict still missing.
    agent, agent_adapter = scripted([], "a")
    verifier, verifier_adapter = scripted([verdicts((False, 0.0), (True, 1.0))], "v")
    asyncio.run(
        explore(
            _config(data),
            run,
            resume=True,
            components=Components(model=agent, roles={"verifier": verifier}),
        )
    )
    assert agent_adapter.requests == []
    assert len(verifier_adapter.requests) == 1
    stats = RunDir(run).results()[0].stats
    assert stats["explore_branch_runs"] == 0 and stats["explore_verifier_calls"] == 1
    assert RunDir(run).results()[0].judged is True
    assert read_trajectory(RunDir(run).trajectory_file("t1", 0)).answer == "42"


def test_resume_must_keep_the_search_settings(tmp_path: Path, test_tool: Tool) -> None:
    data = dataset(tmp_path)
    agent, _ = scripted([answer("42"), answer("42")], "a")
    verifier, _ = scripted([verdicts((True, 1.0), (True, 1.0))], "v")
    run = tmp_path / "run"
    parts = Components(model=agent, roles={"verifier": verifier})
    asyncio.run(explore(_config(data), run, components=parts))
    with pytest.raises(BenchError, match="config differs"):
        asyncio.run(explore(_config(data, branches=3), run, resume=True, components=parts))


def test_parallel_branches_each_get_their_own_seed_and_file(
    tmp_path: Path, test_tool: Tool
) -> None:
    adapter = ScriptedAdapter([answer("42")], name="a", repeat=True)
    agent = Model(adapter, name="a", retry=RetryPolicy(max_attempts=1))
    verifier, verifier_adapter = scripted([verdicts((True, 1.0))], "v")
    config = explore_config(
        "jsonl",
        dataset(tmp_path),
        agent="tir",
        model="scripted:agent",
        verifier="scripted:verifier",
        options=ExploreOptions(branches=3),
        tools=["explore_lookup"],
    )
    run = tmp_path / "run"
    parts = Components(model=agent, roles={"verifier": verifier})
    asyncio.run(explore(config, run, components=parts))
    assert sorted(_branches(run)) == ["r.0", "r.1", "r.2"]
    seeds = {request[2].seed for request in adapter.requests}
    assert len(adapter.requests) == 3 and len(seeds) == 3
    # Three equal answers: the verifier is asked about the first only.
    assert "Candidate 2" not in verifier_adapter.requests[0][0][0].text
    assert RunDir(run).results()[0].judged is True


def test_a_candidate_the_verifier_leaves_out_is_pruned() -> None:
    verifier, adapter = scripted([verdicts((True, 0.7))], "v")
    found, reply, problem, _ = asyncio.run(
        verify(verifier, question="Q?", answers=["42", "forty-two"], path="", candidates=["x", "y"])
    )
    assert [(v.keep, v.score) for v in found] == [(True, 0.7), (False, 0.0)]
    assert found[1].reason == "not judged by the verifier" and problem is None
    assert "verdicts" in reply
    prompt = adapter.requests[0][0][0].text
    assert "Correct answer: 42 / forty-two" in prompt and "no steps yet" in prompt
    assert adapter.requests[0][2].response_format is not None


def test_a_wrong_answer_the_verifier_keeps_is_caught_by_the_scorer(
    tmp_path: Path, test_tool: Tool
) -> None:
    # The verifier prefers the wrong 41; the run's scorer (answer set) refuses it, so 42 wins.
    agent, _ = scripted([answer("41"), answer("42")], "a")
    verifier, _ = scripted([verdicts((True, 0.9), (True, 0.5))], "v")
    run = tmp_path / "run"
    parts = Components(model=agent, roles={"verifier": verifier})
    asyncio.run(explore(_config(dataset(tmp_path)), run, components=parts))
    journal = read_journal(run / "branches" / "t1" / "tree.jsonl")
    first = journal["r"].candidates[0]
    assert not first.keep and first.reason.startswith("the run's scorer found the answer wrong")
    assert read_trajectory(RunDir(run).trajectory_file("t1", 0)).answer == "42"


def test_resuming_a_plain_evaluation_run_is_refused(tmp_path: Path, test_tool: Tool) -> None:
    data = dataset(tmp_path)
    agent, _ = scripted([answer("42")], "a")
    plain = new_config("jsonl", data, agent="tir", model="scripted:agent")
    run = tmp_path / "run"
    asyncio.run(evaluate(plain, run, components=Components(model=agent)))
    with pytest.raises(BenchError, match="holds no tree exploration"):
        asyncio.run(explore(RunDir(run).read_config(), run, resume=True))

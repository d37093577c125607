"""Learning skills from runs (Code-X §2.3): log-driven distillation and calibration-set
self-iteration.

Both ask a model to update an agent guide with the paper's prompt (H.2, Figures 12-13:
``agents/prompts/coder_skills_self_iteration.txt``), given the previous guide and a sanitized
summary of runs (:mod:`.skills_summary`); the reply goes through the prohibition filter
(:mod:`omnilab.skills.guard`) and becomes the ``agent-guide`` skill of a new skills folder (the
other skills of the base folder are copied along). Nothing is overwritten: the output folder
must not exist yet.

- :func:`distill`: from finished runs' raw traces (log-driven self-distillation: each run's
  commands, outputs cut head and tail and outcome, task-specific strings redacted);
- :func:`refine`: run the ``coder`` agent on a calibration set with the current skills, tell the
  model only which tasks were right (binary feedback), update the guide; repeat for ``rounds``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnilab.agents.templates import render
from omnilab.bench.run_dir import RunDir
from omnilab.errors import OmnilabError
from omnilab.models import Message, Model
from omnilab.skills._skill import Skill, load_skills
from omnilab.skills.guard import Forbidden, GuardReport, filter_guide
from omnilab.train.skills_summary import run_summary

__all__ = ["GUIDE_SKILL", "LearnOutcome", "distill", "forbidden_for_runs", "refine", "update_guide"]

GUIDE_SKILL = "agent-guide"
_PREVIOUS = "AGENTS.md"
_SUMMARY = "summary.json"
_EMPTY_GUIDE = "# Agent Guide\n\n(no guide yet)\n"


@dataclass
class LearnOutcome:
    """Where the new skills folder is, what the filter dropped, and the rounds' runs."""

    folder: Path
    dropped: list[tuple[str, str]] = field(default_factory=list)
    runs: list[Path] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    """Pass@1 of each refinement round's calibration run."""


def _previous_guide(skills: Sequence[Skill]) -> str:
    for skill in skills:
        if skill.name == GUIDE_SKILL:
            return skill.body + "\n"
    return _EMPTY_GUIDE


def forbidden_for_runs(runs: Sequence[Path]) -> Forbidden:
    """The task-specific strings of the runs' tasks: question phrases, entities and dates,
    answers (labels, aliases, predictions) and input file names."""
    from omnilab.bench.datasets import load_dataset

    forbidden = Forbidden()
    for folder in runs:
        run = RunDir(folder)
        config = run.read_config()
        loaded = load_dataset(
            config.dataset,
            config.data,
            media_root=config.media_root,
            allow_outside_media_root=config.allow_outside_media_root,
        )
        for task in loaded.tasks:
            forbidden.add_question(task.question)
            forbidden.add_strings(task.answers.all)
            forbidden.add_strings(f.path.name for f in task.files)
            forbidden.add_strings(f.path.stem for f in task.files)
        forbidden.add_strings(r.extracted or "" for r in run.results())
    return forbidden


async def update_guide(
    model: Model, previous: str, summary: dict[str, Any], forbidden: Forbidden
) -> GuardReport:
    """One update of the guide: the paper's prompt with both files, then the filter."""
    prompt = render("coder_skills_self_iteration", previous=_PREVIOUS, summary=_SUMMARY)
    # The paper's guide writer is an agent that reads the two files from its workspace; here
    # their contents follow the prompt in the same message.
    attached = (
        f"{prompt}\n\n--- {_PREVIOUS} ---\n{previous.strip()}\n\n--- {_SUMMARY} ---\n"
        f"{json.dumps(summary, indent=1)}\n"
    )
    reply = (await model.generate([Message.user(attached)])).text.strip()
    reply = reply.removeprefix("```markdown").removeprefix("```md").removeprefix("```")
    reply = reply.removesuffix("```").strip()
    start = reply.find("# Agent Guide")
    if start < 0:
        raise OmnilabError("the model's reply is not a guide (it must start with '# Agent Guide')")
    return filter_guide(reply[start:], forbidden)


def _write_folder(
    out: Path, base: Sequence[Skill], guide: str, description: str, provenance: dict[str, Any]
) -> None:
    out.mkdir(parents=True)
    for skill in base:
        if skill.name != GUIDE_SKILL:
            shutil.copytree(skill.folder, out / skill.name, symlinks=True)
    body = guide.split("\n", 1)[1].strip() if guide.startswith("# Agent Guide") else guide
    guide_skill = Skill(
        name=GUIDE_SKILL,
        description=description,
        body=f"# Agent Guide\n\n{body}",
        folder=out / GUIDE_SKILL,
    )
    (out / GUIDE_SKILL).mkdir()
    (out / GUIDE_SKILL / "SKILL.md").write_text(guide_skill.markdown(), encoding="utf-8")
    (out / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n", encoding="utf-8")


def _fresh(out: Path) -> None:
    if out.exists():
        raise OmnilabError(
            f"{out} exists; choose a new --out (skills folders are never overwritten)"
        )


def _base(skills: Path | None) -> list[Skill]:
    return load_skills(skills) if skills is not None else []


async def distill(
    runs: Sequence[Path], model: Model, out: Path, *, base: Path | None = None
) -> LearnOutcome:
    """Log-driven self-distillation: a guide learned from the traces of ``runs``."""
    _fresh(out)
    skills = _base(base)
    forbidden = forbidden_for_runs(runs)
    summary = run_summary(runs, "traces", redact=forbidden.redact)
    report = await update_guide(model, _previous_guide(skills), summary, forbidden)
    provenance = {
        "method": "log-driven distillation",
        "runs": [str(r) for r in runs],
        "model": model.name,
        "base": str(base) if base else None,
        "tasks": summary["tasks"],
        "dropped_lines": len(report.dropped),
    }
    description = f"Agent guide distilled from the traces of {summary['tasks']} tasks."
    _write_folder(out, skills, report.guide, description, provenance)
    return LearnOutcome(out, report.dropped, list(runs))


async def refine(
    data: Path,
    *,
    dataset: str,
    agent_model: str,
    writer: Model,
    out: Path,
    rounds: int = 1,
    base: Path | None = None,
    scorer: str | None = None,
    judges: Sequence[str] = (),
    agent_options: dict[str, Any] | None = None,
) -> LearnOutcome:
    """Calibration-set self-iteration: ``rounds`` times, run the coder agent on ``data`` with
    the current skills, then update the guide from binary feedback. Each round's run and skills
    stay under ``out/round-N/``; ``out/skills`` is the last round's."""
    from omnilab.bench.rescore import default_scorer
    from omnilab.bench.run_dir import RunConfig
    from omnilab.bench.runner import evaluate

    if rounds < 1:
        raise OmnilabError("rounds must be at least 1")
    _fresh(out)
    current = base
    outcome = LearnOutcome(out / "skills")
    for n in range(1, rounds + 1):
        folder = out / f"round-{n}"
        options = dict(agent_options or {})
        if current is not None:
            options["skills"] = str(current)
        config = RunConfig(
            dataset=dataset,
            data=data,
            agent="coder",
            agent_options=options,
            model=agent_model,
            scorer=scorer or default_scorer(dataset),
            judges=list(judges),
        )
        result = await evaluate(config, folder / "run")
        outcome.runs.append(folder / "run")
        outcome.scores.append(result.summary.pass_at_1.value or 0.0)
        skills = _base(current)
        summary = run_summary([folder / "run"], "binary")
        forbidden = forbidden_for_runs([folder / "run"])
        report = await update_guide(writer, _previous_guide(skills), summary, forbidden)
        outcome.dropped.extend(report.dropped)
        provenance = {
            "method": "calibration-set self-iteration",
            "round": n,
            "data": str(data),
            "agent_model": agent_model,
            "writer": writer.name,
            "pass_at_1": outcome.scores[-1],
            "dropped_lines": len(report.dropped),
        }
        description = f"Agent guide refined on a calibration set (round {n}, binary feedback)."
        _write_folder(folder / "skills", skills, report.guide, description, provenance)
        current = folder / "skills"
    assert current is not None
    shutil.copytree(current, out / "skills", symlinks=True)
    return outcome

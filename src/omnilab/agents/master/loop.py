"""The four stages of Agent-Omni's master agent (§2.2) on one :class:`AgentRun`.

1. perception: each modality agent turns each of its inputs into a JSON summary (all inputs
   at once, concurrently);
2. reasoning: the master states ``user_intent`` and sub-questions per agent (Figure 4 prompt,
   Figure 6 schema);
3. execution: each agent named answers its sub-questions seeing only its own inputs (all of
   them); the agents of a round run concurrently;
4. decision: the master writes ``final_answer``, ``is_final`` and ``suggestions_for_next_round``
   (Figure 5 prompt, Figure 7 schema); a final decision ends the loop, else the next round's
   reasoning sees every earlier round, up to ``max_rounds``.

Each stage call is its own context, named by role, stage and round (``master-r2-decision-7``,
``image-r2-8``), and each stage leaves a ``StepNote`` (``omnilab ask`` shows them live).

The reasoning and decision system prompts end with the output parser's format instructions (the
schema with its field descriptions), as the release sends them. Under ``rules="release"`` the
stages run as huawei-lin/Agent-Omni's code does (:mod:`.release`): its prompt texts and variable
rendering, a free-text summary per modality ("Summarize the provided video."), one free-text call
per sub-question, no ``response_format``, the fixing prompt then a fresh call for a reply that
does not parse. ``all_rounds`` runs every round whatever ``is_final`` says (the release's graph).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnilab.agents.master import release
from omnilab.agents.master.free_text import FreeTextAgents, run_all
from omnilab.agents.master.lenient import langchain_parse
from omnilab.agents.master.options import MasterOptions
from omnilab.agents.master.pool import ModalityAgent
from omnilab.agents.master.schemas import (
    InputSummary,
    MasterDecisionStructure,
    answers_schema,
    reasoning_structure,
)
from omnilab.agents.master.structured import Reply, ask_json
from omnilab.agents.master.views import agent_parts
from omnilab.agents.question import question_text
from omnilab.agents.session import AgentRun, Context
from omnilab.agents.templates import render
from omnilab.content import Text
from omnilab.models.types import Message
from omnilab.trajectory import RunStatus

__all__ = ["MasterLoop", "Round"]

_NOTE_CHARS = 300


@dataclass
class Round:
    """What one round produced (the history later stages read)."""

    number: int
    user_intent: str = ""
    instructions: dict[str, list[str]] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)
    decision: dict[str, Any] | None = None

    def record(self) -> dict[str, Any]:
        """The round as the prompts' ``historical_message`` lists it."""
        out: dict[str, Any] = {
            "round": self.number,
            "user_intent": self.user_intent,
            "agent_results": self.results,
        }
        if self.decision is not None:
            out["decision"] = self.decision
        return out


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _short(text: str, limit: int = _NOTE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class MasterLoop:
    """The master loop over one run (see the module docstring)."""

    def __init__(self, run: AgentRun, options: MasterOptions, agents: list[ModalityAgent]) -> None:
        self.run_ = run
        self.options = options
        self.agents = {a.name: a for a in agents}
        self.views: Path = run.ctx.workspace / "views"
        self.summaries: dict[str, dict[str, str]] = {}
        self.rounds: list[Round] = []
        self.release = options.rules == "release"
        self.modality_summaries: dict[str, str] = {}
        """Under the release's rules: one free-text summary per modality."""
        self.free = FreeTextAgents(run, options, self.views)
        self.query = question_text(run.task)
        self.agent_info = json.dumps(
            [
                {
                    "agent_name": a.name,
                    "modality": a.modality,
                    "inputs": [i.id for i in a.inputs],
                }
                for a in agents
            ]
        )

    # -- the loop -----------------------------------------------------------------------------

    async def run(self) -> RunStatus:
        run = self.run_
        if self.options.perception and not await self.perceive():
            return "budget"
        last: dict[str, Any] | None = None
        last_text = ""
        for number in range(1, self.options.max_rounds + 1):
            if run.out_of_budget():
                return self._finish(last, last_text, "budget")
            current = Round(number)
            self.rounds.append(current)
            run.stats["rounds"] = number
            if not await self.reason(current):
                return self._finish(last, last_text, "budget")
            if not await self.execute(current):
                return self._finish(last, last_text, "budget")
            decision = await self.decide(current)
            if decision is None:
                return self._finish(last, last_text, "budget")
            if decision.value is None:
                last_text = decision.text
                continue
            last = decision.value
            if decision.value["is_final"] and not self.options.all_rounds:
                run.stats["stopped_early"] = float(number < self.options.max_rounds)
                return self._finish(last, last_text, None)
        return self._finish(last, last_text, None)

    def _finish(
        self, decision: dict[str, Any] | None, text: str, status: RunStatus | None
    ) -> RunStatus:
        run = self.run_
        run.stats.setdefault("stopped_early", 0.0)
        if decision is not None:
            answered = run.answer(str(decision["final_answer"]))
            return status or answered
        if status is not None:
            return status
        # No decision validated in any round: the last reply's text is all there is.
        return run.answer(text) if text.strip() else "no_answer"

    # -- 1. perception ------------------------------------------------------------------------

    async def perceive(self) -> bool:
        """Summarise every input of every agent, concurrently; ``False`` when time ran out."""
        if self.release:
            found = await self.free.summaries([a for a in self.agents.values() if a.inputs])
            if found is None:
                return False
            self.modality_summaries = found
            return True
        jobs = [(a, item.id) for a in self.agents.values() for item in a.inputs]
        done = await run_all([self._summary(a, i) for a, i in jobs])
        for (agent, item), reply in zip(jobs, done, strict=True):
            if reply is None:
                return False
            text = (
                str(reply.value["description"])
                if reply.value is not None
                else f"(no summary: the reply did not match its format: {reply.problem})"
            )
            self.summaries.setdefault(agent.modality, {})[item] = text
            self.run_.note(
                "perception",
                f"{item} ({agent.name}): {_short(text)}",
                agent=agent.name,
                input=item,
                summary=text,
                ok=reply.value is not None,
            )
        return True

    async def _summary(self, agent: ModalityAgent, item: str) -> Reply | None:
        run = self.run_
        caps = run.models[agent.modality].capabilities
        parts = await agent_parts(agent, caps, self.views, only=item)
        kind = next(i for i in agent.inputs if i.id == item).file.kind
        prompt = render("master_perception", kind=kind, input_id=item)
        chat = run.context(agent.modality, name=f"{agent.modality}-perception")
        run.add(chat, Message(role="user", content=[*parts, Text(text=prompt)]))
        schema = InputSummary.model_json_schema()
        return await ask_json(
            run,
            chat,
            schema,
            name="InputSummary",
            generate=self.options.generate_for(agent.modality),
            retries=self.options.format_retries,
        )

    def _input_summaries(self) -> str:
        if self.release:
            return release.summary_lines(self.modality_summaries)
        return json.dumps(self.summaries, ensure_ascii=False) if self.summaries else "(none)"

    def _history(self, rounds: list[Round]) -> str:
        if self.release:
            return self._release_history(rounds)
        if not rounds:
            return "(none: this is the first round)"
        return json.dumps([r.record() for r in rounds], ensure_ascii=False)

    def _release_history(self, rounds: list[Round]) -> str:
        results: dict[str, list[list[dict[str, str]]]] = {}
        for r in rounds:
            for agent in self.agents.values():
                if not agent.inputs:
                    continue  # the release's agents without input return None, not a list
                pairs: list[dict[str, str]] = next(
                    (
                        x.get("questions_and_answers", [])
                        for x in r.results
                        if x["agent_name"] == agent.name
                    ),
                    [],
                )
                results.setdefault(agent.modality, []).append(pairs)
        decisions = [r.decision for r in rounds if r.decision is not None]
        return release.history_lines(results, decisions)

    def _pool(self) -> str:
        if self.release:
            return release.pool_lines(self.modality_summaries)
        return self.agent_info

    def _round_value(self, number: int) -> int | str:
        # The release prints the integer ("This is the 2 round"); Figures 4-5 read "2nd".
        return number if self.release else _ordinal(number)

    def _system(self, template: str, schema: dict[str, Any], **values: object) -> str:
        name = f"master_release_{template}" if self.release else f"master_{template}"
        text = render(name, **values)
        if self.release or self.options.format_instructions:
            text += "\n\n" + release.format_instructions(schema)
        return text

    async def _ask_master(
        self, current: Round, stage: str, system: str, schema: dict[str, Any], **kw: Any
    ) -> Reply | None:
        """A structured call of the master: omnilab's (``response_format`` and a retry with the
        problem stated) or the release's (no ``response_format``, the fixing prompt, then the
        same call again from scratch)."""
        run = self.run_

        def fresh() -> Context:
            chat = run.context("master", name=f"master-r{current.number}-{stage}")
            run.add(chat, Message.system(system))
            run.add(chat, Message.user(self.query))
            return chat

        return await ask_json(
            run,
            fresh(),
            schema,
            generate=self.options.generate_for("master"),
            retries=self.options.format_retries,
            turn=True,
            constrain=not self.release,
            fix_with=release.format_instructions(schema) if self.release else None,
            fresh=fresh if self.release else None,
            **kw,
        )

    # -- 2. reasoning -------------------------------------------------------------------------

    def _check_agents(self, value: dict[str, Any]) -> str | None:
        unknown = [
            str(i.get("agent_name"))
            for i in value.get("agent_instructions", [])
            if i.get("agent_name") not in self.agents
        ]
        if unknown:
            return (
                f"agent_name {', '.join(map(repr, unknown))} is not in the agent pool "
                f"({', '.join(self.agents)})"
            )
        return None

    async def reason(self, current: Round) -> bool:
        """The master's sub-questions for this round; ``False`` when time ran out."""
        run = self.run_
        pool = self._pool()
        structure = reasoning_structure(pool, release=self.release)
        schema = structure.model_json_schema()
        system = self._system(
            "reasoning",
            schema,
            cur_round_num=self._round_value(current.number),
            historical_message=self._history(self.rounds[:-1]),
            input_summaries=self._input_summaries(),
            available_agent_info=pool,
        )
        reply = await self._ask_master(
            current,
            "reasoning",
            system,
            schema,
            name="MasterReasoningStructure",
            check=None if self.release else self._check_agents,  # the release checks no name
            parse=langchain_parse(structure) if self.release else None,
        )
        if reply is None:
            return False
        if reply.value is not None and self.release:
            current.user_intent = str(reply.value["user_intent"])
            ready = [n for n, a in self.agents.items() if a.inputs]
            current.instructions, skipped = release.plan(reply.value["agent_instructions"], ready)
            run.stats["skipped_agents"] = run.stats.get("skipped_agents", 0.0) + len(skipped)
        elif reply.value is not None:
            current.user_intent = str(reply.value["user_intent"])
            for item in reply.value["agent_instructions"]:
                questions = current.instructions.setdefault(item["agent_name"], [])
                questions += [str(q) for q in item["questions"]]
        else:
            # The paper's loop has no plan to run: ask each agent with inputs the user's query
            # itself, as Figure 4 (item 9) suggests for a first round.
            with_inputs = [n for n, a in self.agents.items() if a.inputs] or list(self.agents)
            current.instructions = {n: [self.query] for n in with_inputs}
        shown = "; ".join(f"{name}: " + " | ".join(qs) for name, qs in current.instructions.items())
        run.note(
            "reasoning",
            f"round {current.number}: {_short(current.user_intent, 120)} -> {_short(shown)}",
            round=current.number,
            user_intent=current.user_intent,
            instructions=current.instructions,
            ok=reply.value is not None,
        )
        return True

    # -- 3. execution -------------------------------------------------------------------------

    async def execute(self, current: Round) -> bool:
        """Every agent named answers its questions, concurrently; ``False`` when time ran out."""
        named = list(current.instructions.items())
        replies = await run_all(
            [self._answer(self.agents[n], qs, current.number) for n, qs in named]
        )
        for (name, questions), reply in zip(named, replies, strict=True):
            if reply is None:
                return False
            result: dict[str, Any] = {"agent_name": name}
            if reply.value is not None:
                answers = [str(a) for a in reply.value["answers"]]
                result["questions_and_answers"] = [
                    {"question": q, "answer": a} for q, a in zip(questions, answers, strict=True)
                ]
                shown = " | ".join(f"{q} -> {a}" for q, a in zip(questions, answers, strict=True))
            else:
                result["questions"] = questions
                result["unformatted_reply"] = reply.text
                shown = f"(reply did not match its format) {reply.text}"
            current.results.append(result)
            self.run_.note(
                "answers",
                f"round {current.number} {name}: {_short(shown)}",
                round=current.number,
                **result,
            )
        return True

    async def _answer(
        self, agent: ModalityAgent, questions: list[str], number: int
    ) -> Reply | None:
        if self.release:
            return await self.free.answers(agent, questions, number)
        run = self.run_
        caps = run.models[agent.modality].capabilities
        parts = await agent_parts(agent, caps, self.views)
        listed = "\n".join(f"{i}. {q}" for i, q in enumerate(questions, 1))
        chat = run.context(agent.modality, name=f"{agent.modality}-r{number}")
        prompt = render("master_execution", questions=listed)
        run.add(chat, Message(role="user", content=[*parts, Text(text=prompt)]))
        return await ask_json(
            run,
            chat,
            answers_schema(len(questions)),
            name="AgentAnswers",
            generate=self.options.generate_for(agent.modality),
            retries=self.options.format_retries,
        )

    # -- 4. decision --------------------------------------------------------------------------

    async def decide(self, current: Round) -> Reply | None:
        """The master's decision for this round; ``None`` when time ran out."""
        run = self.run_
        schema = MasterDecisionStructure.model_json_schema()
        system = self._system(
            "decision",
            schema,
            cur_round_num=self._round_value(current.number),
            input_summaries=self._input_summaries(),
            historical_message=self._history(self.rounds),
            available_agent_info=self._pool(),
        )
        parse = langchain_parse(MasterDecisionStructure) if self.release else None
        reply = await self._ask_master(
            current, "decision", system, schema, name="MasterDecisionStructure", parse=parse
        )
        if reply is None:
            return None
        current.decision = reply.value
        if reply.value is not None:
            value = reply.value
            text = (
                f"round {current.number}: {'final' if value['is_final'] else 'not final'}: "
                f"{_short(str(value['final_answer']), 200)} | next: "
                f"{_short('; '.join(map(str, value['suggestions_for_next_round'])), 150)}"
            )
        else:
            text = f"round {current.number}: no decision (the reply did not match its format)"
        run.note("decision", text, round=current.number, decision=reply.value)
        return reply

"""``deepsearch``: the Omni-DeepSearch inference baseline (§4.1, Appendix D).

The model hears the audio clip(s) (natively when it takes audio, else as a transcript with
audio events from :mod:`omnilab.perception`), reads the question, then searches text, images
and videos, one tool call per turn with one query each, under Table 3's search budget: (10, 3)
by default, "the maximum retries for text/image-text search tasks and video search tasks",
i.e. one budget shared by every search tool, 10 searches for a text or image-text task and 3
for a video task (the task's category ``video/...``). ``budget_scope="tool"`` gives each tool
its own budget instead (text and image: the first number, video: the second).

A call past the budget is refused with ``TOOL_BUDGET``; the search that spends it says so.
What happens then is ``on_exhausted``: ``final_answer`` (the default) asks the model once more
for its final answer with tools disabled when every budget is spent or the turns run out;
``end`` (the paper's runs, Appendix A.1 and A.3, and the ``omni-deepsearch-paper`` preset)
asks nothing more: the model's reply after its last search is its last turn, a search it
tries when no search is left ends the run without an answer, and so does the turn limit.
``last_search`` (the ``omni-deepsearch-paper`` preset) reads the case studies of Appendix A
more strictly: "By Turn 10, the agent ... exhausts its budget and terminates by outputting a
JSON tool-call"; "After 10 turns ... the agent reached its maximum step limit", so the run ends
as soon as the last search of the budget has run, with no further model call and no answer.
The answer is the last ``<answer>...</answer>``.

Every step is in the trajectory: each search with its results, a ``StepNote`` with the
searches left per tool after each one, and a closing ``search budget`` note (used, limits,
exhausted tools) that :mod:`omnilab.bench.search_stats` reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnilab.agents.answer import final_answer, looks_like_tool_call
from omnilab.agents.base import AgentConfigError, AgentContext, AgentTask
from omnilab.agents.deepsearch.tools import KIND_OF, SEARCH_TOOLS, query_rule, search_tools
from omnilab.agents.session import AgentRun, Context
from omnilab.agents.templates import render
from omnilab.agents.views import Mode, check_mode, first_message_parts
from omnilab.inputs import InputSet
from omnilab.models.types import GenerateConfig, Message, ToolCall
from omnilab.tools.base import Tool, ToolResult
from omnilab.tools.mediasearch import MediaSearch
from omnilab.tools.web.errors import WebError
from omnilab.trajectory import RunStatus, Trajectory

__all__ = ["DeepSearchAgent", "DeepSearchOptions"]

AudioMode = Literal["auto", "native", "transcript"]
BudgetScope = Literal["tool", "task"]
OnExhausted = Literal["final_answer", "end", "last_search"]
_SHARED = "search tools"
"""How the task-scoped budget is named in notices and in the closing budget note."""


class DeepSearchOptions(BaseModel):
    """Options of the ``deepsearch`` agent (``get_agent("deepsearch", **options)``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    budget: tuple[int, int] = (10, 3)
    """Search budget (text and image searches each, video searches), Table 3: (5,1), (10,3),
    (15,5)."""
    budget_scope: BudgetScope = "task"
    """task (Table 3): one budget shared by all search tools, the first number for text and
    image-text tasks, the second for video tasks (the task's category ``video/...``); tool:
    each search tool has its own budget (text and image: the first number, video: the
    second)."""
    on_exhausted: OnExhausted = "final_answer"
    """When the search budget or the turns run out: ``final_answer`` asks the model once more
    for its answer with tools disabled (omnilab's default); ``end`` ends the run there, as the
    paper's runs do (a search past the budget ends it without an answer); ``last_search``
    ends it as soon as the last search of the budget has run, with no further model call
    (Appendix A's case studies: the run "terminates" at turn 10 with a tool call)."""
    search: str = "local"
    """Search provider: local, serper, brave, searxng, tavily (text and image only)."""
    index_dir: Path | None = None
    """Local indexes (a folder with text/, image/, video/); local provider only."""
    top_k: int = Field(default=5, ge=1, le=20)
    """Results per search."""
    max_queries: int = Field(default=1, ge=1)
    """Queries allowed in one query_list; the Appendix D prompt says exactly one."""
    audio: AudioMode = "auto"
    """native: clips as audio parts; transcript: transcript and audio events; auto: native when
    the model takes audio."""
    images: bool | None = None
    """Send result thumbnails as images; default: when the model takes images."""
    keyframes: int = Field(default=16, ge=1, le=64)
    """Frames of each local video result, sent as one sheet (§3.2: "a small number of
    keyframes (e.g., 16 frames) for rapid verification"); 1 sends the poster frame. Remote
    providers give their own thumbnail only."""
    generate: GenerateConfig = Field(default_factory=GenerateConfig)
    """Sampling settings of every call."""
    max_observation_chars: int | None = Field(default=None, ge=200)
    """Cut each tool result's text to this many characters (small context windows)."""
    repeat_notice: bool = True
    """Append a notice to the third (and later) identical search's result. omnilab's
    addition: the paper's pipeline has none (the ``omni-deepsearch-paper`` preset turns it
    off)."""


def _options(options: dict[str, object]) -> DeepSearchOptions:
    try:
        parsed = DeepSearchOptions.model_validate(options)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "options"
        raise AgentConfigError(f"bad deepsearch option {where}: {first['msg']}") from None
    if min(parsed.budget) < 0:
        raise AgentConfigError(f"bad deepsearch option budget: {parsed.budget} has a negative")
    return parsed


class DeepSearchAgent:
    """Omni-DeepSearch: hear the audio, then search text, images and videos under a budget."""

    name = "deepsearch"
    options_model = DeepSearchOptions

    def __init__(self, **options: object) -> None:
        self.options = _options(dict(options))

    def limits(self) -> dict[str, int]:
        """The per-tool search budget."""
        text, video = self.options.budget
        return {"text_search": text, "image_search_by_text_query": text, "video_search": video}

    def task_budget(self, task: AgentTask) -> int | None:
        """The search budget shared by every tool (``budget_scope="task"``), else ``None``."""
        if self.options.budget_scope != "task":
            return None
        text, video = self.options.budget
        category = (task.metadata.category or "").strip().lower()
        return video if category.split("/", 1)[0] == "video" else text

    def _searcher(self) -> MediaSearch:
        opts = self.options
        extra: dict[str, Any] = {}
        if opts.index_dir is not None:
            if opts.search != "local":
                raise AgentConfigError("index_dir applies to the local search provider only")
            extra["index_dir"] = opts.index_dir
        if opts.search == "local":
            extra["keyframes"] = opts.keyframes
        try:
            return MediaSearch(opts.search, top_k=opts.top_k, **extra)
        except WebError as e:
            raise AgentConfigError(f"deepsearch search provider: {e}") from None

    async def run(self, task: AgentTask, ctx: AgentContext) -> Trajectory:
        """Solve ``task``; every step goes to ``ctx.trajectory`` as it happens."""
        opts = self.options
        inputs = InputSet(task.inputs)
        caps = ctx.model.capabilities
        hears = opts.audio == "native" or (opts.audio == "auto" and caps.audio)
        mode: Mode = "native" if hears else "evidence"
        check_mode(mode, inputs, caps, ctx.model.name)
        searcher = self._searcher()
        shared = self.task_budget(task)
        limits = self.limits() if shared is None else dict.fromkeys(self.limits(), shared)
        queries = query_rule(opts.max_queries)

        def check(call: ToolCall) -> ToolResult | None:
            refused = queries(call)
            spent = shared is not None and call.name in limits and _used(run, limits) >= shared
            if refused is None and spent:
                return ToolResult.fail(
                    "TOOL_BUDGET",
                    f"this task allows {shared} searches over all search tools and they are "
                    "spent; give your final answer",
                )
            return refused

        run = AgentRun(
            task,
            ctx,
            agent=self.name,
            tool_budgets=limits,
            calls_per_turn=1,
            check_call=check,
            max_observation_chars=opts.max_observation_chars,
            repeat_notice_at=3 if opts.repeat_notice else None,
        )

        def notice(tool: str) -> str | None:
            # The gate counted this call before it ran: at the limit, this was the last one.
            if shared is not None:
                if _used(run, limits) >= shared:
                    return render("deepsearch_budget_notice", tool=_SHARED, limit=shared)
                return None
            if run.gate.uses.get(tool, 0) >= limits[tool]:
                return render("deepsearch_budget_notice", tool=tool, limit=limits[tool])
            return None

        images = caps.image if opts.images is None else opts.images
        tools = search_tools(searcher, images=images, notice=notice)
        if ctx.tools is not None:
            wanted = {t if isinstance(t, str) else t.name for t in ctx.tools}
            unknown = wanted - set(SEARCH_TOOLS)
            if unknown:
                raise AgentConfigError(
                    f"deepsearch offers {', '.join(SEARCH_TOOLS)}; unknown: {', '.join(sorted(unknown))}"
                )
            tools = [t for t in tools if t.name in wanted]
        config = {
            "budget": list(opts.budget),
            "budget_scope": opts.budget_scope,
            "on_exhausted": opts.on_exhausted,
            "task_budget": shared,
            "tool_budgets": limits,
            "search": searcher.name,
            "top_k": opts.top_k,
            "max_queries": opts.max_queries,
            "audio": "native" if hears else "transcript",
            "images": images,
            "tools": [t.name for t in tools],
            "system_prompt": "deepsearch_inference",
            "generate": opts.generate.model_dump(exclude_defaults=True),
        }
        loop = _Loop(run, opts, inputs, mode, tools, limits, shared)
        return await run.execute(loop.run, config=config)


def _used(run: AgentRun, limits: dict[str, int]) -> int:
    """Searches run so far over every search tool."""
    return sum(run.gate.uses.get(name, 0) for name in limits)


class _Loop:
    def __init__(
        self,
        run: AgentRun,
        options: DeepSearchOptions,
        inputs: InputSet,
        mode: Mode,
        tools: list[Tool],
        limits: dict[str, int],
        shared: int | None = None,
    ) -> None:
        self.run_ = run
        self.options = options
        self.inputs = inputs
        self.mode: Mode = mode
        self.tools = tools
        self.by_name = {t.name: t for t in tools}
        self.limits = limits
        self.shared = shared
        """The budget shared by every search tool (``budget_scope="task"``), else ``None``."""
        self.refused = 0
        """Calls refused because their tool's budget was spent."""

    def left(self) -> dict[str, int]:
        uses = self.run_.gate.uses
        left = {n: max(0, self.limits[n] - uses.get(n, 0)) for n in self.by_name}
        if self.shared is not None:
            pool = max(0, self.shared - _used(self.run_, self.limits))
            left = {n: min(v, pool) for n, v in left.items()}
        return left

    def _record_budget(self) -> None:
        left = self.left()
        used = {n: self.run_.gate.uses.get(n, 0) for n in self.by_name}
        spent = sorted(n for n, v in left.items() if v == 0 and self.limits[n] > 0)
        # Also a per-run figure: in the results and their summary, and the sign that this run
        # has notes worth reading back (omnilab eval reads them only then).
        self.run_.stats["searches"] = float(sum(used.values()))
        self.run_.note(
            "search budget",
            ", ".join(f"{n} {used[n]}/{self.limits[n]}" for n in self.by_name),
            used=used,
            limits={n: self.limits[n] for n in self.by_name},
            exhausted=spent,
            refused=self.refused,
            shared=self.shared,
        )

    async def run(self) -> RunStatus:
        run, task = self.run_, self.run_.task
        chat = run.context("agent")
        run.add(chat, Message.system(render("deepsearch_inference")))
        model = run.models["agent"]
        parts = await first_message_parts(
            task, self.inputs, self.mode, model.capabilities, run.ctx.workspace
        )
        run.add(chat, Message(role="user", content=parts))
        try:
            return await self._turns(chat)
        finally:
            self._record_budget()

    async def _turns(self, chat: Context) -> RunStatus:
        run = self.run_
        reason = "The maximum number of turns is reached."
        ends = self.options.on_exhausted in ("end", "last_search")
        at_last = self.options.on_exhausted == "last_search"
        while run.turns < run.budgets.max_turns:
            if run.out_of_budget():
                return "budget"
            if not ends and self.tools and not any(self.left().values()):
                reason = "Every search budget is spent."
                break
            output = await run.call("agent", chat, tools=self.tools, config=self.options.generate)
            if output is None:
                return "budget"
            if output.tool_calls:
                done = await run.run_tools(output.tool_calls, chat, self.by_name)
                spent = False
                for outcome in done.outcomes:
                    code = outcome.result.error.code if outcome.result.error else None
                    if code == "TOOL_BUDGET":
                        self.refused += 1
                        spent = True
                    if outcome.call.name in KIND_OF and code is None:
                        hits = len(outcome.result.metadata.get("hits", []))
                        queries = outcome.call.arguments.get("query_list")
                        left = self.left()
                        run.note(
                            "search",
                            f"{outcome.call.name} {queries!r}: {hits} results; left: "
                            + ", ".join(f"{n} {v}/{self.limits[n]}" for n, v in left.items()),
                            left=left,
                        )
                if ends and spent and not any(self.left().values()):
                    run.note("exit", "a search past the budget ends the run without an answer")
                    return "budget"
                if at_last and self.tools and not any(self.left().values()):
                    run.note("exit", "the last search of the budget ends the run without an answer")
                    return "budget"
                continue
            _answer, source = final_answer(output.text)
            if source in ("tag", "unclosed_tag") or (
                source == "whole_text" and not looks_like_tool_call(output.text)
            ):
                return run.answer(output)
            notice = (
                render("notice_empty")
                if source is None
                else render("notice_bad_call", tools=", ".join(self.by_name) or "(none)")
            )
            run.add(chat, Message.user(notice))
        if ends:
            run.note("exit", "the turn limit ends the run without an answer")
            return "budget"
        return await self._final(chat, reason)

    async def _final(self, chat: Context, reason: str) -> RunStatus:
        run = self.run_
        if run.out_of_budget():
            return "budget"
        run.add(chat, Message.user(render("deepsearch_final", reason=reason)))
        config = self.options.generate.model_copy(update={"tool_choice": "none"})
        output = await run.call("agent", chat, tools=self.tools, config=config, turn=False)
        if output is None:
            return "budget"
        status = run.answer(output, forced=True, tool_names=self.by_name)
        if status == "no_answer" and not output.text.strip() and not output.tool_calls:
            return "budget"
        return status

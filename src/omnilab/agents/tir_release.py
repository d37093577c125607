"""The ``tir`` loop as OmniGAIA's released code runs it (``tir -O rules=release``).

``QwenBaseAgent`` of the authors' ``src/run_base_agent.py`` differs from omnilab's own loop in
ways that change answers (issue 43): it sends no ``tools`` field but a Hermes tool block inside
its one system message; the first user message holds the media then the question, nothing else
(each video's soundtrack after all media); a reply's ``<tool_call>`` blocks are its calls, and
anything else (fenced JSON included) is the final answer; an unknown tool or a missing argument
answers an error and the loop goes on; the server's ``reasoning_content`` is put before the
reply as ``<think>...</think>``, kept in later turns and scored; an empty reply ends the run
with the answer ``Error: Empty response from model.``; all results of one reply go back in one
tool message; there is no repeat notice and no seed. The strings are verbatim in
``omnigaia_release.json``, which names its source. A ``<think>`` block the server leaves in
the content stays there as sent (``GenerateConfig.keep_think``).

omnilab's own loop stays the default: native tool calls where the server has them, labelled
media a model can refer to, and notices instead of ending on a slip (docs/evaluation.md).
"""

from __future__ import annotations

import asyncio
import json
import re
import string
from functools import cache
from importlib import resources

from omnilab.agents.delivery import Delivery
from omnilab.agents.session import AgentRun, Context
from omnilab.agents.view_files import frame_parts
from omnilab.agents.views import accepts, text_part
from omnilab.agents.workers import run_tool_calls
from omnilab.content import Audio, Content, Text
from omnilab.inputs import InputFile, InputSet
from omnilab.models.capabilities import Capabilities
from omnilab.models.types import GenerateConfig, Message, ModelOutput, ToolCall
from omnilab.tools.base import Tool, ToolResult
from omnilab.trajectory import RunStatus, ToolResultEvent

__all__ = ["ReleaseLoop", "release_text", "release_tools_prompt"]

_MEDIA = ("video", "audio", "image")


@cache
def _data() -> dict[str, str]:
    path = resources.files("omnilab.agents").joinpath("omnigaia_release.json")
    loaded: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def release_text(key: str, **values: object) -> str:
    """The release's string ``key`` of ``omnigaia_release.json``, its ``${...}`` filled."""
    return string.Template(_data()[key]).substitute(values)


def release_tools_prompt(tools: list[Tool]) -> str:
    """The release's Hermes block for ``tools``: one JSON line per function."""
    lines = [
        json.dumps(
            {
                "name": t.spec.name,
                "description": t.spec.description,
                "parameters": t.spec.parameters,
            },
            ensure_ascii=False,
        )
        for t in tools
    ]
    return release_text("tools_prompt", tools="\n".join(lines))


def parse_release_calls(text: str) -> list[ToolCall]:
    """The ``<tool_call>`` blocks of ``text`` the release reads (a block that is not JSON is
    skipped; fenced JSON without the tags is no call)."""
    calls: list[ToolCall] = []
    for match in re.findall(_data()["tool_call_pattern"], text, re.DOTALL):
        try:
            data = json.loads(match)
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            continue
        name = data.get("name")
        args = data.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = {}
        calls.append(
            ToolCall(
                name=name if isinstance(name, str) else "",
                arguments=args if isinstance(args, dict) else {},
                recovered=True,
            )
        )
    return calls


def _refusal(call: ToolCall, by_name: dict[str, Tool]) -> ToolResult | None:
    """The release's error for a call it cannot run (its message is what the model reads),
    else ``None``."""
    if not call.name:
        return ToolResult.fail("UNKNOWN_TOOL", release_text("missing_tool_name"))
    tool = by_name.get(call.name)
    if tool is None:
        return ToolResult.fail("UNKNOWN_TOOL", release_text("tool_not_found", name=call.name))
    # Python reports an unexpected keyword argument before a missing one.
    accepted = tool.spec.parameters.get("properties") or {}
    unexpected = [a for a in call.arguments if a not in accepted]
    if unexpected:
        text = release_text("unexpected_argument", name=call.name, argument=unexpected[0])
        return ToolResult.fail("INVALID_ARGS", text)
    required = tool.spec.parameters.get("required") or []
    missing = [a for a in required if a not in call.arguments]
    if missing:
        text = release_text("missing_argument", name=call.name, argument=missing[0])
        return ToolResult.fail("INVALID_ARGS", text)
    return None


def _result_text(name: str, result: ToolResult) -> str:
    """What the release sends back for one result: the tool's JSON (``web_search``: its list
    of ``{id, title, url, snippet, date}``), an error as ``{"error": ...}``; other tools'
    text as omnilab's tools write it (a divergence the preset names)."""
    if result.error is not None:
        return json.dumps({"error": result.error.message}, ensure_ascii=False)
    hits = result.metadata.get("hits")
    if name == "web_search" and isinstance(hits, list):
        listed = [
            {
                "id": i,
                "title": h.get("title", ""),
                "url": h.get("url_or_id", ""),
                "snippet": h.get("snippet", ""),
                "date": h.get("date") or "",
            }
            for i, h in enumerate(hits, start=1)
            if isinstance(h, dict)
        ]
        return json.dumps(listed, ensure_ascii=False)
    return result.text


class ReleaseLoop:
    """The release's loop on one :class:`AgentRun` (see the module docstring)."""

    def __init__(
        self,
        run: AgentRun,
        *,
        system: str,
        forced_prompt: str,
        inputs: InputSet,
        tools: list[Tool],
        generate: GenerateConfig,
        forced_generate: GenerateConfig,
        delivery: Delivery,
    ) -> None:
        self.run_ = run
        self.system = system
        self.forced_prompt = forced_prompt
        self.inputs = inputs
        self.tools = tools
        self.by_name = {t.name: t for t in tools}
        # The release reads a reply's content verbatim: a <think> block the server left in it
        # stays there, as sent (only reasoning_content is put before it).
        self.generate = generate.model_copy(update={"keep_think": True})
        self.forced_generate = forced_generate.model_copy(update={"keep_think": True})
        self.delivery = delivery

    def first_parts(self) -> list[Content]:
        """The media in task order, each video's soundtrack after all of them, the question."""
        caps = self.run_.models["agent"].capabilities
        parts: list[Content] = []
        tracks: list[Content] = []
        for f in self.inputs:
            if f.kind not in _MEDIA:
                # The release's data has none (its file_input paths go after the question):
                # inlined as omnilab's own loop does, a divergence the preset names.
                parts.append(text_part(f))
                continue
            parts += self._media(f, caps)
            if f.kind == "video" and caps.audio and self.delivery.soundtrack:
                info = f.probe()
                if info.has_audio:
                    cap = self.delivery.soundtrack_max_s
                    tracks.append(Audio(path=f.path, start=0.0, end=min(info.duration or cap, cap)))
        return [*parts, *tracks, Text(text=self.run_.task.question)]

    def _media(self, f: InputFile, caps: Capabilities) -> list[Content]:
        """Input ``f`` as the release sends it: its part, or the preset's frames for a model
        that takes images but no video, or a note when the model takes neither (named gaps)."""
        part = f.content()
        if f.kind == "video" and not caps.video and caps.image and self.delivery.frames_fps:
            return self._frames(f)
        if not accepts(caps, part):
            # The release would send it and the server refuse the request.
            return [Text(text=f"[{f.id}: {f.kind} not shown: this model does not take it]")]
        return [part]

    def _frames(self, f: InputFile) -> list[Content]:
        """Video ``f`` as JPEG frames at the delivery's rate, each after its time."""
        # Here, not at the top: the media package loads PyAV (as in omnilab.agents.delivery).
        from omnilab.media.prepared import jpeg_frames

        d = self.delivery
        fps = d.frames_fps or 1.0
        duration = f.probe().duration or 0.0
        n = max(1, min(d.frames_max, int(duration * fps)))  # the release's count, int()
        edge = d.frames_max_edge or self.run_.models["agent"].capabilities.max_image_edge
        shots = jpeg_frames(f.path, 0.0, None, num=n, max_edge=edge)
        views = self.run_.ctx.workspace / "views"
        return frame_parts(f.id, shots, views, f"[{f.id}: {len(shots)} frames ({fps:g} fps)]")

    async def run(self) -> RunStatus:
        run = self.run_
        # The release sends no seed: this run's own view of the model drops it.
        run.models["agent"].seed = None
        chat = run.context("agent")
        system = f"{self.system}\n\n{release_tools_prompt(self.tools)}"
        run.add(chat, Message.system(system))
        # Frames and soundtracks are decoded here: keep the event loop free.
        parts = await asyncio.to_thread(self.first_parts)
        run.add(chat, Message(role="user", content=parts))
        while run.turns < run.budgets.max_turns:
            if run.out_of_budget():
                return "budget"
            output = await run.call("agent", chat, config=self.generate)
            if output is None:
                return "budget"
            content = self._keep_thinking(chat, output)
            calls = parse_release_calls(content)
            if calls:
                await self._run_calls(chat, calls)
                continue
            if content:
                return run.answer(content, verbatim=True)
            return run.answer(release_text("empty_reply"), verbatim=True)
        return await self._forced_final(chat)

    def _keep_thinking(self, chat: Context, output: ModelOutput) -> str:
        """The reply as the release keeps it: ``<think>reasoning</think>`` then the content."""
        content = output.text
        if output.reasoning:
            content = release_text("think", reasoning=output.reasoning) + content
            self.run_.edit(
                chat,
                len(chat.messages) - 1,
                len(chat.messages),
                [Message.assistant(content)],
                reason="release rules: the reasoning stays in the context as <think>...</think>",
            )
        return content

    async def _run_calls(self, chat: Context, calls: list[ToolCall]) -> None:
        """Run one reply's calls and send every result back in one tool message."""
        run = self.run_
        refusals = [_refusal(c, self.by_name) for c in calls]
        runnable = [c for c, r in zip(calls, refusals, strict=True) if r is None]
        ran = iter(
            await run_tool_calls(
                runnable,
                self.by_name,
                clock=run.clock,
                capabilities=run.models["agent"].capabilities,
                max_chars=run.max_observation_chars,
            )
        )
        texts: list[str] = []
        for call, refusal in zip(calls, refusals, strict=True):
            if refusal is not None:
                result, seconds = refusal, 0.0
            else:
                result, seconds = next(ran)
            # No assistant message holds this call: the flag lets the run's counts see it.
            result = result.model_copy(
                update={"metadata": {**result.metadata, "read_from_text": True}}
            )
            texts.append(_result_text(call.name, result))
            run.emit(
                ToolResultEvent(
                    call_id=call.id,
                    name=call.name or "unknown",
                    arguments=call.arguments,
                    result=result,
                    duration_s=seconds,
                    context_id=chat.id,
                    parent_id=chat.last_call_id,
                )
            )
        run.add(chat, Message(role="tool", content=[Text(text=t) for t in texts or ["{}"]]))

    async def _forced_final(self, chat: Context) -> RunStatus:
        run = self.run_
        if run.out_of_budget():
            return "budget"
        run.add(chat, Message.user(self.forced_prompt))
        output = await run.call("agent", chat, config=self.forced_generate)
        if output is None:
            return "budget"
        # The release keeps only the content here (no reasoning), and answers a fixed line
        # when there is none.
        text = output.text or release_text("max_turns_no_answer")
        return run.answer(text, forced=True, verbatim=True)

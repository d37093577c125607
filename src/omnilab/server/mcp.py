"""omnilab's tools as a Model Context Protocol server, scoped to one folder.

Agents outside Python (Claude Code, Codex, IDE agents) take tools over MCP. The server offers the
tools of the registry (``read_video``, ``read_audio``, ``read_image``, ``web_search``,
``page_browser``, ``code_executor``) with their exact schemas, plus ``list_files``. Files are named
by their path relative to the folder the user serves: those are the tools' input ids, so nothing
outside the folder can be named at all (an unknown id is an error result listing what exists).
Media results become MCP image and audio content, encoded by the same code that sends media to
OpenAI-compatible servers. The tools read private copies of the files they are asked for, each
opened beneath the folder without following links (:mod:`omnilab.server.mcp_files`), so a folder
another user can write cannot swap a file for a link or a FIFO under them; ``code_executor`` runs in omnilab's sandbox, in a workspace under the
system's temporary folder that is removed when the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server

from omnilab import __version__, _wswalk
from omnilab.content import Text
from omnilab.errors import OmnilabError
from omnilab.inputs import InputFile, InputSet, guess_kind
from omnilab.models import Message, Model
from omnilab.models.capabilities import Capabilities
from omnilab.models.providers.openai_wire import wire_messages
from omnilab.sandbox import remove_tree
from omnilab.server.mcp_files import PrivateCopies
from omnilab.tools.base import Tool, ToolResult, tool
from omnilab.tools.registry import ToolEnv, build_tools

__all__ = ["DEFAULT_TOOLS", "McpTools", "build_server", "contained", "folder_inputs"]

DEFAULT_TOOLS = (
    "read_video",
    "read_audio",
    "read_image",
    "web_search",
    "page_browser",
    "code_executor",
)
"""What ``omnilab mcp`` offers unless told otherwise (audio_qa and vision_qa need a model)."""

# What an MCP client receives: images and audio natively, video as timestamped frames.
_CLIENT = Capabilities(image=True, audio=True, video=False, video_frames=8)
_MEDIA_KINDS = frozenset({"video", "audio", "image", "text", "document"})


class _ClientView:
    """Stands for the MCP client where tools ask what the model takes; it is never called."""

    name = "mcp-client"
    endpoint = "mcp-client"
    secrets: tuple[str, ...] = ()
    capabilities = _CLIENT

    async def generate(self, *args: object, **kwargs: object) -> Any:
        raise RuntimeError("the MCP client's view has no model behind it")


def folder_inputs(root: Path) -> InputSet:
    """Every file under ``root`` (hidden ones left out), its id the path relative to ``root``.

    The folder is walked by descriptor (:func:`omnilab._wswalk.walk`); a link is listed only
    when what it leads to, all links followed, is a regular file inside ``root`` (the file's
    own path is then used), so no link leads a tool out of the folder.
    """
    root = root.resolve()
    files: list[InputFile] = []
    for folder in _wswalk.walk(root):
        folder.descend[:] = [d for d in folder.descend if not d.startswith(".")]
        for name, st in folder.entries:
            if name.startswith(".") or stat.S_ISDIR(st.st_mode):
                continue
            rel = PurePosixPath(*folder.parts, name)
            path = contained(root, root / rel)
            kind = guess_kind(name)
            if path is not None and kind in _MEDIA_KINDS:
                files.append(InputFile(id=rel.as_posix(), kind=kind, path=path, given=str(rel)))
    files.sort(key=lambda f: f.id)
    return InputSet(files)


def contained(root: Path, path: Path) -> Path | None:
    """``path`` with every link followed, if that is a regular file inside ``root`` (itself
    resolved), else None. Only for listing: the tools read private copies
    (:mod:`omnilab.server.mcp_files`), never the folder's files by name."""
    try:
        real = Path(os.path.realpath(path))
        # stat, not open: a FIFO or device in the folder is left out without being opened.
        regular = real.is_relative_to(root) and stat.S_ISREG(real.stat().st_mode)
    except (OSError, ValueError):
        return None
    return real if regular else None


def _content(result: ToolResult) -> list[types.ContentBlock]:
    if result.error is not None:
        return [types.TextContent(type="text", text=result.text)]
    parts = list(result.content) or [Text(text="(no output)")]
    (wire,) = wire_messages([Message(role="user", content=parts)], _CLIENT, "mcp-client")
    blocks = wire["content"]
    if isinstance(blocks, str):
        return [types.TextContent(type="text", text=blocks)]
    out: list[types.ContentBlock] = []
    for block in blocks:
        if block["type"] == "text":
            out.append(types.TextContent(type="text", text=block["text"]))
        elif block["type"] == "image_url":
            head, data = block["image_url"]["url"].split(",", 1)
            mime = head.removeprefix("data:").removesuffix(";base64")
            out.append(types.ImageContent(type="image", data=data, mime_type=mime))
        elif block["type"] == "input_audio":
            audio = block["input_audio"]
            mime = "audio/wav" if audio["format"] == "wav" else "audio/mpeg"
            out.append(types.AudioContent(type="audio", data=audio["data"], mime_type=mime))
        else:  # a part MCP has no type for: say what it was
            out.append(types.TextContent(type="text", text=f"[{block['type']} part omitted]"))
    return out


class McpTools:
    """The tools one server offers, built over one folder (close it to stop sandboxes)."""

    def __init__(self, root: Path, names: Sequence[str] = DEFAULT_TOOLS) -> None:
        self.root = root.resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(f"{root} is not a folder")
        self._stack = contextlib.ExitStack()
        workspace = Path(tempfile.mkdtemp(prefix="omnilab-mcp-"))
        # Removed at any depth when the server stops (TemporaryDirectory recurses).
        self._stack.callback(remove_tree, workspace)
        self.inputs = folder_inputs(self.root)
        self.copies = PrivateCopies(self.root, self.inputs)
        self._stack.callback(self.copies.close)
        env = ToolEnv(
            inputs=self.copies.inputs,
            model=Model(_ClientView(), name="mcp-client"),
            workspace=workspace,
            stack=self._stack,
        )
        self.tools = [self._list_files(), *build_tools(list(names), env)]
        self.by_name = {t.name: t for t in self.tools}

    def _list_files(self) -> Tool:
        inputs = self.inputs

        @tool
        def list_files() -> str:
            """List the files the other tools can read: their ids (paths in the served folder) and kinds."""
            rows = [{"id": f.id, "kind": f.kind} for f in inputs]
            return json.dumps(rows, ensure_ascii=False)

        return list_files

    async def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Run tool ``name``; an unknown tool or a failure is an error result, never a crash."""
        found = self.by_name.get(name)
        if found is None:
            return _error(f"unknown tool {name!r}; tools: {', '.join(self.by_name)}")
        try:
            moved = await asyncio.to_thread(self.copies.refresh, _strings(arguments or {}))
            if moved is not None:
                return _error(f"Error [NOT_FOUND]: {moved}")
            result = await found(arguments or {})
        except (OSError, ValueError, OmnilabError) as e:  # whatever the client's names cause
            return _error(f"Error [UNREADABLE]: {_first_line(e)}")
        return types.CallToolResult(content=_content(result), is_error=result.error is not None)

    def close(self) -> None:
        """Stop the sandboxed interpreter and remove the workspace."""
        self._stack.close()

    def __enter__(self) -> McpTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _strings(arguments: dict[str, Any]) -> list[str]:
    """The strings among the arguments (input ids), in lists too."""
    names = [v for v in arguments.values() if isinstance(v, str)]
    return names + [
        x for v in arguments.values() if isinstance(v, list) for x in v if isinstance(x, str)
    ]


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def build_server(tools: McpTools) -> Server[Any]:
    """The MCP server of ``tools`` (run it over stdio or streamable HTTP)."""

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.parameters)
                for t in tools.tools
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await tools.call(params.name, params.arguments)

    return Server(
        "omnilab",
        version=__version__,
        instructions=(
            f"Media and search tools over the folder {tools.root.name!r}. Name files by the ids "
            "list_files gives (paths inside the folder); read_video/read_audio take seconds."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


@contextlib.contextmanager
def serving(root: Path, names: Sequence[str] = DEFAULT_TOOLS) -> Iterator[Server[Any]]:
    """A server over ``root`` whose tools are closed when the block ends."""
    with McpTools(root, names) as tools:
        yield build_server(tools)

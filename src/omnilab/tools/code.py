"""``code_executor(code)``: model-written Python run in the task's persistent sandboxed interpreter.

The model sees the exact OmniGAIA definition (below): the paper names the tool without printing
its schema, so name, description and parameters come from the authors' released
``src/tools/code_executor.py`` (RUC-NLPIR/OmniGAIA, commit 2356e095,
``get_openai_function_code_executor(create_files=False)``), verbatim. The description lists the
modules of the authors' environment; here the interpreter has whatever is installed beside
omnilab, and the network is off unless the settings allow it.

The code runs in a :class:`~omnilab.sandbox.PythonSession` (a child process with CPU, memory,
file-size, process and wall-clock limits, totals per sandbox where cgroups work, confined to the
workspace; the harness counts each call's CPU over the whole process tree): variables survive between
calls, files stay in the task workspace, stdout and stderr come back head-and-tail truncated. The
observation is a JSON object like the authors' (``stdout``, ``result``, ``created_files``,
``error``, plus ``stderr``); a run stopped by a limit also carries an error code (``TIMEOUT`` or
``CODE_LIMIT``). Nothing the code does raises into the agent loop.
"""

from __future__ import annotations

import json
import stat
import threading
from pathlib import Path
from typing import Any

from omnilab import _wswalk
from omnilab.content import Text
from omnilab.sandbox import PythonResult, PythonSession
from omnilab.tools.base import Tool, ToolError, ToolResult, tool

__all__ = ["CODE_EXECUTOR_SCHEMA", "code_executor_tool"]

CODE_EXECUTOR_SCHEMA: dict[str, Any] = {
    "name": "code_executor",
    "description": (
        "Execute Python code in a secure sandbox environment. Use this tool for:\n"
        "1. Complex mathematical computations (algebra, calculus, statistics, etc.)\n"
        "2. Data processing and analysis\n"
        "Available modules: numpy, pandas, sympy, math, json, csv, datetime, random, "
        "collections, itertools, requests\n"
        "Use print() to output results."
    ),
    "parameters": {
        "type": "object",
        "properties": {"code": {"type": "string", "description": "Python code to execute."}},
        "required": ["code"],
    },
}
"""The authors' OpenAI function definition of ``code_executor`` (see the module docstring)."""

# Enough for the model to see what it made; a loop writing thousands of files is summarised.
_MAX_LISTED_FILES = 50
# A model that walks into a huge tree (a dataset unpacked in the workspace) must not stall a call.
_MAX_SCANNED_FILES = 20_000

_Snapshot = dict[str, tuple[int, int]]


def _snapshot(root: Path) -> _Snapshot:
    """``relative path -> (size, mtime_ns)`` of the files under ``root`` (bounded).

    Walked by descriptor (:func:`omnilab._wswalk.walk`): the code may swap a folder for a link
    to a root-only one while the harness (root) looks, and must not learn that folder's names.
    """
    found: _Snapshot = {}
    for folder in _wswalk.walk(root):
        for name, st in folder.entries:
            if not stat.S_ISDIR(st.st_mode):
                found["/".join((*folder.parts, name))] = (st.st_size, st.st_mtime_ns)
                if len(found) >= _MAX_SCANNED_FILES:
                    return found
    return found


def _changed(before: _Snapshot, after: _Snapshot) -> list[dict[str, Any]]:
    changed = [
        {"path": rel, "size": size}
        for rel, (size, mtime) in sorted(after.items())
        if before.get(rel) != (size, mtime)
    ]
    if len(changed) > _MAX_LISTED_FILES:
        more = len(changed) - _MAX_LISTED_FILES
        changed = [*changed[:_MAX_LISTED_FILES], {"path": f"... and {more} more", "size": 0}]
    return changed


def _limit_error(result: PythonResult) -> ToolError | None:
    if result.timed_out:
        return ToolError(code="TIMEOUT", message=result.error or "the code took too long")
    if result.killed:
        message = f"the code was stopped by the sandbox ({result.killed})"
        if result.state_lost:
            message += "; the interpreter restarts on the next call, so variables are gone"
        return ToolError(code="CODE_LIMIT", message=message)
    return None


def _observation(result: PythonResult, created: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "stdout": result.stdout.strip(),
        "result": result.value,
        "created_files": created,
        "error": result.error,
    }
    if result.stderr.strip():
        out["stderr"] = result.stderr.strip()
    if result.warnings:
        out["warnings"] = result.warnings
    return out


def code_executor_tool(session: PythonSession) -> Tool:
    """The ``code_executor`` tool over ``session`` (one per task; the caller closes it).

    Calls are serialised: a session runs one block at a time, and parallel tool calls in one
    turn must not interleave inside the interpreter.
    """
    lock = threading.Lock()
    schema = CODE_EXECUTOR_SCHEMA

    @tool(name=schema["name"], description=schema["description"], parameters=schema["parameters"])
    def code_executor(code: str) -> ToolResult:
        """Run Python in the task's sandboxed interpreter.

        Args:
            code: Python code to execute.
        """
        with lock:
            session.workspace.mkdir(parents=True, exist_ok=True)
            before = _snapshot(session.workspace)
            result = session.run(code)
            created = _changed(before, _snapshot(session.workspace))
        body = json.dumps(_observation(result, created), ensure_ascii=False, indent=1)
        return ToolResult(
            content=[Text(text=body)],
            error=_limit_error(result),
            metadata={
                "ok": result.ok,
                "killed": result.killed,
                "timed_out": result.timed_out,
                "state_lost": result.state_lost,
                "duration_s": result.duration_s,
                "isolation": result.isolation.value,
                "network": result.network,
                # For people and logs, not the model: totals this machine could not enforce.
                "missing_totals": result.missing_totals,
                "workspace": str(session.workspace),
            },
        )

    return code_executor

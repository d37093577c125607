"""Tools: the ``@tool`` decorator, results and errors, and the built-in tools."""

from __future__ import annotations

from omnilab.tools.base import Tool, ToolError, ToolResult, tool

__all__ = ["Tool", "ToolError", "ToolResult", "tool"]

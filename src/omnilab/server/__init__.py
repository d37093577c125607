"""Entry points that serve omnilab to other programs: the MCP server (``omnilab mcp``)."""

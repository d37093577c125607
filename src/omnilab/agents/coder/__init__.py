"""``coder``: the Code-X sandboxed terminal agent for media tasks (see ``docs/agents-coder.md``).

The model works through a persistent bash in the sandbox (``execute_commands``), looks at
images of the workspace (``image_read``) and ends with ``task_complete``; the task's files are
staged into the workspace and never packed into the model's context.
"""

from omnilab.agents.coder.agent import CoderAgent, CoderOptions, ExitReason

__all__ = ["CoderAgent", "CoderOptions", "ExitReason"]

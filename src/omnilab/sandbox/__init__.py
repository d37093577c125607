"""Isolated execution of model-written code and shell commands.

The only place in omnilab where such code runs, and always in a child process: never ``exec`` in
the harness. Levels (strongest first, see :class:`IsolationLevel` and ``docs/sandbox.md``):
``bwrap`` (bubblewrap), ``namespaces`` (``unshare`` + our launcher), ``process`` (limits only).

- :func:`run` runs one command;
- :class:`PythonSession` is a persistent interpreter (variables survive between calls);
- :class:`ShellSession` is a persistent bash (cwd and variables survive between commands);
- :func:`place_file`, :func:`place_bytes` and :func:`open_folder` let the harness write into a
  workspace without following links that sandboxed code planted there (reads go through
  :mod:`omnilab._wsread`); :func:`remove_tree` removes a workspace at any depth;
- :func:`add_private_paths` names a run's own folders (dataset, media root, run folder), which
  every later sandbox masks wherever they lie.
"""

from omnilab.config import SandboxLimits
from omnilab.sandbox._isolation import IsolationReport, isolation_level, isolation_report
from omnilab.sandbox._private import add_private_paths, private_paths
from omnilab.sandbox._python import PythonSession
from omnilab.sandbox._run import run
from omnilab.sandbox._safefs import open_folder, place_bytes, place_file, remove_tree
from omnilab.sandbox._shell import ShellSession
from omnilab.sandbox._types import ExecResult, IsolationLevel, PythonResult, SandboxError

__all__ = [
    "ExecResult",
    "IsolationLevel",
    "IsolationReport",
    "PythonResult",
    "PythonSession",
    "SandboxError",
    "SandboxLimits",
    "ShellSession",
    "add_private_paths",
    "isolation_level",
    "isolation_report",
    "open_folder",
    "place_bytes",
    "place_file",
    "private_paths",
    "remove_tree",
    "run",
]

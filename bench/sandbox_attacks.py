"""Attacks on the sandbox, made from inside as model-written code would make them, at every
isolation level this machine offers; prints attack x level -> contained / escaped.

Usage::

    python bench/sandbox_attacks.py [--levels namespaces,process] [--markdown]
    python bench/sandbox_attacks.py --overhead 40     # start-up and per-call times

Each attack returns whether the sandbox contained it and what happened. ``PROMISED`` says at
which levels containment is promised (``process+uid``: the ``process`` level with a root
harness, which drops to a uid of its own); ``tests/sandbox/test_escapes.py`` runs every attack
and fails on an escape where one is promised, and on a "contained" where the level documents a
gap. Everything is small-scale (a 256 MiB memory total, a 64 MiB workspace) so a shared machine
survives it. Run as root for the full picture (own uids, cgroups, the workspace tmpfs).

The attacks live in the ``bench/attacks/`` package (a registry, a runner, one module per family:
see ``bench/attacks/README.md``); this file is the entry point and keeps the names the tests use.
"""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # the attacks package sits beside this
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from attacks import ALL, ATTACKS, LIMITS, OWN_UID, PROMISED, STRONG, Ctx, Verdict, attack
from attacks.runner import available_levels, interpreter_for, main, overhead, run_attack, scratch
from attacks.visibility import _plant, host_folder

__all__ = [
    "ALL",
    "ATTACKS",
    "LIMITS",
    "OWN_UID",
    "PROMISED",
    "STRONG",
    "Ctx",
    "Verdict",
    "_plant",
    "attack",
    "available_levels",
    "host_folder",
    "interpreter_for",
    "overhead",
    "run_attack",
    "scratch",
]

if __name__ == "__main__":
    main(__doc__.split("\n\n")[0])

"""The sandbox attack table, one module per family (``README.md`` here says how to add one).

Importing the package registers every attack in ``ATTACKS``, family by family in the order of
``FAMILIES``: that is the order of the table's rows, and the order
``tests/sandbox/test_escapes.py`` relies on (every attack after the ``basics`` family runs at the
default level in every test run).
"""

import importlib

from attacks.registry import ALL, ATTACKS, LIMITS, OWN_UID, PROMISED, STRONG, Ctx, Verdict, attack

FAMILIES = (
    "basics",
    "workspaces",
    "limits",
    "kernel",
    "processes",
    "harness_reads",
    "visibility",
    "trust",
    "servers",
    "run_folders",
    "totals_and_users",
    "data_paths",
)
"""The family modules, in the table's order (a new family is added here)."""

for _family in FAMILIES:
    importlib.import_module(f"attacks.{_family}")

__all__ = [
    "ALL",
    "ATTACKS",
    "FAMILIES",
    "LIMITS",
    "OWN_UID",
    "PROMISED",
    "STRONG",
    "Ctx",
    "Verdict",
    "attack",
]

"""The exit status of every ``omnilab`` command: one table, one enum.

``ask``, ``chat``, ``eval`` and ``demo`` exit 0 only when the run answered, so a script can tell
a failed run from a good one. The table (:func:`table`) is the one in ``docs/agents.md`` (Exit
status) and in the epilog of those commands' ``--help``; ``tests/test_exit_codes.py`` checks
that they agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum

__all__ = ["EPILOG", "ExitCode", "for_run", "table"]


class ExitCode(IntEnum):
    """How a command ended; what each means is in :func:`table`."""

    ANSWERED = 0
    BAD_INPUT = 1
    USAGE = 2
    NO_ANSWER = 3
    MODEL_FAILURE = 4
    INTERRUPTED = 130


_MEANING = {
    ExitCode.ANSWERED: "the run answered (eval: it finished and at least one task answered)",
    ExitCode.BAD_INPUT: "refused before running: a file it cannot read, media the model does not "
    "take, an unknown model, agent, "
    "option or setting (one line on stderr)",
    ExitCode.USAGE: "the command line does not parse (an unknown option, a missing argument)",
    ExitCode.NO_ANSWER: "it ran but gave no answer (out of turns, tokens or time, or no final "
    "answer; eval: no task answered)",
    ExitCode.MODEL_FAILURE: "the model or its endpoint failed (cannot connect, a refused key, a "
    "prompt too long for its context, a timeout)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C, or SIGTERM for eval); what finished is saved",
}


def table() -> list[tuple[int, str, str]]:
    """``(code, name, meaning)`` for each exit status, in order."""
    return [(int(code), code.name.lower().replace("_", " "), _MEANING[code]) for code in ExitCode]


EPILOG = "Exit status: " + "; ".join(f"{code} {meaning}" for code, _, meaning in table()) + "."
"""The table as one paragraph, for the ``--help`` of ``ask``, ``chat``, ``eval`` and ``demo``."""


def for_run(status: str, error_kinds: Iterable[str] = ()) -> ExitCode:
    """The exit status of a finished run of ``status`` whose error events had ``error_kinds``."""
    if status == "answered":
        return ExitCode.ANSWERED
    if status == "error" and "model" in error_kinds:
        return ExitCode.MODEL_FAILURE
    return ExitCode.NO_ANSWER

"""The base of every error a user (or a model) can cause; the CLI prints these as one line."""

from __future__ import annotations

__all__ = ["OmnilabError"]


class OmnilabError(Exception):
    """An error with a one-line, actionable message; never a programming error."""

    model_failure: bool = False
    """Whether the model or its endpoint failed (cannot connect, a refused key), rather than
    what the user gave; the CLI exits with a status of its own then (``omnilab.cli.exit_codes``)."""

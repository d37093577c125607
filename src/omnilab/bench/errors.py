"""Errors a user can cause in the evaluation harness: bad dataset files, unknown names."""

from __future__ import annotations

from omnilab.errors import OmnilabError

__all__ = ["BenchError", "DatasetError", "UnknownDatasetError"]


class BenchError(OmnilabError):
    """Base of the harness's user errors; the message is one actionable line."""


class DatasetError(BenchError):
    """A dataset file is missing, unreadable or not in the format its adapter reads."""


class UnknownDatasetError(BenchError):
    """No dataset adapter is registered under the given name."""

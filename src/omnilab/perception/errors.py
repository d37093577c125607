"""Errors of the perception layer: each is one line that says what to install or set."""

from __future__ import annotations

from omnilab.errors import OmnilabError

__all__ = ["EXTRA", "BackendUnavailableError", "PerceptionError", "missing_package"]

EXTRA = "perception"
"""The optional-dependency group that installs every embedded perception backend."""


class PerceptionError(OmnilabError):
    """A perception request that cannot be served (bad option, failing remote endpoint)."""


class BackendUnavailableError(PerceptionError):
    """A backend that is not installed, has no model, or is missing a setting."""


def missing_package(what: str, module: str, *, extra: str = EXTRA) -> BackendUnavailableError:
    """The error for a backend whose Python package is not importable."""
    return BackendUnavailableError(
        f"{what} needs the Python package '{module}', which is not installed: "
        f"pip install 'omnilab[{extra}]'"
    )

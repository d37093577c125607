"""How many model calls a run keeps in flight per endpoint, and why.

Every :class:`~omnilab.models.Model` waits on a per-endpoint limit (``models.concurrency``,
default 16). A run that asks for more tasks at once than that would be capped silently, so
unless the user set ``models.concurrency`` explicitly (config file or environment) the runner
lifts the limit of the models it builds to at least the task concurrency. When a lower limit
stays in force, or several roles share one endpoint (their calls count against one limit), the
run header says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from omnilab.config import get_settings
from omnilab.models import Model

__all__ = ["EndpointLimit", "endpoint_limit", "shared_endpoints"]


@dataclass(frozen=True)
class EndpointLimit:
    """The per-endpoint limit of a run: its size, whether the runner lifted it, and notes."""

    limit: int
    """Model calls in flight at once per endpoint."""
    lifted_to: int | None
    """The limit the runner gives the models it builds (``None``: the settings' own)."""
    tasks: int
    """Tasks at once."""
    reason: str
    warnings: list[str] = field(default_factory=list)

    @property
    def effective(self) -> int:
        """Tasks that can wait on the model at once: the smaller of the two limits."""
        return min(self.limit, self.tasks)

    def describe(self) -> str:
        """``up to 64 model calls per endpoint (lifted to --concurrency)``."""
        return f"up to {self.limit} model calls per endpoint ({self.reason})"


def endpoint_limit(tasks: int) -> EndpointLimit:
    """The per-endpoint limit of a run with ``tasks`` at once (see the module docstring)."""
    models = get_settings().models
    warnings: list[str] = []
    if "concurrency" in models.model_fields_set:
        limit, lifted, reason = models.concurrency, None, "models.concurrency, set explicitly"
        if limit < tasks:
            warnings.append(
                f"effective concurrency {limit}, not {tasks}: models.concurrency = {limit} caps "
                "the model calls in flight per endpoint; unset it (or raise it) to run "
                f"{tasks} at once"
            )
    elif tasks > models.concurrency:
        limit, lifted, reason = tasks, tasks, "lifted to the task concurrency"
    else:
        limit, lifted, reason = models.concurrency, None, "models.concurrency default"
    return EndpointLimit(
        limit=limit, lifted_to=lifted, tasks=tasks, reason=reason, warnings=warnings
    )


def shared_endpoints(models: Mapping[str, Model], limit: int) -> list[str]:
    """A note for each endpoint that several roles call (their calls share one limit)."""
    by_endpoint: dict[str, list[str]] = {}
    for role, model in models.items():
        by_endpoint.setdefault(model.adapter.endpoint, []).append(role)
    return [
        f"{', '.join(roles)} share the endpoint {endpoint}: their calls count against one "
        f"limit of {limit}"
        for endpoint, roles in by_endpoint.items()
        if len(roles) > 1
    ]

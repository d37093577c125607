"""Models bound by role: the ``judge`` that decides answer equivalence and the ``analyst`` that
labels failures. Each role has its own response cache, so re-scoring a run asks nothing twice
and clearing the agent's cache never loses verdicts.
"""

from __future__ import annotations

from typing import Literal

from omnilab.bench.errors import BenchError
from omnilab.config import get_settings
from omnilab.models import Model, ResponseCache, get_model

__all__ = ["Role", "judge_models", "role_model"]

Role = Literal["judge", "analyst"]

_SETTING = {"judge": "judge_model", "analyst": "analyst_model"}


def _cached(model: Model, role: Role, *, cache: bool) -> Model:
    if cache:
        model.cache = ResponseCache(get_settings().cache_dir / "roles" / f"{role}.sqlite3")
    return model


def role_model(role: Role, name: str | None = None, *, cache: bool = True) -> Model:
    """The model for ``role``: ``name``, else the ``bench.<role>_model`` setting.

    Retries and timeouts come from the ``models`` settings; ``cache`` keeps replies in the role's
    own SQLite file under ``cache_dir/roles``. Raises :class:`BenchError` if no model is named.
    """
    setting = _SETTING[role]
    chosen = name or getattr(get_settings().bench, setting)
    if not chosen:
        env = f"OMNILAB_BENCH__{setting.upper()}"
        raise BenchError(
            f"no {role} model: pass one as provider:model, or set bench.{setting} ({env})"
        )
    return _cached(get_model(chosen, cache=False), role, cache=cache)


def judge_models(names: list[str] | None = None, *, cache: bool = True) -> list[Model]:
    """The judges of a majority vote: ``names``, else ``bench.judge_models``, else the one judge."""
    chosen = names or get_settings().bench.judge_models
    if not chosen:
        return [role_model("judge", cache=cache)]
    return [_cached(get_model(n, cache=False), "judge", cache=cache) for n in chosen]

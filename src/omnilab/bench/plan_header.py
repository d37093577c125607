"""The header of an evaluation run: the live executor's models and limits, the preset the run
follows (and what differs from it), and warnings about what makes scores incomparable."""

from __future__ import annotations

from omnilab.bench.executor import TaskExecutor
from omnilab.bench.header import RunHeader, describe_limits, run_header
from omnilab.bench.plan import RunPlan
from omnilab.bench.protocols import differences, get_protocol
from omnilab.bench.run_dir import RunConfig
from omnilab.config import get_settings
from omnilab.models import concurrency_plan
from omnilab.tools.search_choice import search_origin

__all__ = ["plan_header"]


def plan_header(plan: RunPlan, executor: TaskExecutor, tasks_at_once: int) -> RunHeader:
    """The header of ``plan`` run by ``executor`` (see :mod:`omnilab.bench.header`)."""
    config = plan.config
    roles = {name: m.name for name, m in executor.roles.items()}
    judges = {
        f"judge{i + 1}" if len(config.judges) > 1 else "judge": j
        for i, j in enumerate(config.judges)
    }
    limits = concurrency_plan({"agent": executor.model, **executor.roles}, tasks_at_once)
    limit_line, limit_warnings = describe_limits(limits)
    header = run_header(
        agent=config.agent,
        model=executor.model,
        agent_options=config.agent_options,
        roles=roles | judges,
        tools=config.tools,
        budgets=config.budgets,
        task_files=[t.files for t in plan.tasks],
        dataset=str(config.data.name),
        adapter=config.dataset,
        tasks=len(plan.tasks),
        samples=config.samples,
        concurrency=tasks_at_once,
        endpoint_limit=limit_line,
        cache=config.cache,
        warnings=[*limit_warnings, *_search_warning(config)],
    ).model_copy(update={"search": _search_line(config)})
    if config.protocol is None:
        return header
    preset = get_protocol(config.protocol)
    return header.model_copy(
        update={
            "protocol": f"{preset.name}: {preset.title} (from {preset.source})",
            "protocol_differs": differences(
                preset,
                dataset=config.dataset,
                agent=config.agent,
                agent_options=config.agent_options,
                budgets=config.budgets,
                scorer=config.scorer,
                scoring_rules=config.scoring_rules,
                search=config.search,
                missing_media=config.missing_media,
                judges=config.judges,
            ),
            "protocol_gaps": [g.line for g in preset.open_gaps],
            "protocol_divergences": [g.line for g in preset.named_gaps],
        }
    )


_WEB_BENCHMARKS = frozenset({"omnigaia", "omni-deepsearch"})


def _searches(config: RunConfig) -> bool:
    return config.tools is None or "web_search" in config.tools


def _search_line(config: RunConfig) -> str | None:
    """The provider web_search uses in this run and who chose it (runs that search only)."""
    if not _searches(config) and config.search is None:
        return None
    return search_origin(config.search)


def _search_warning(config: RunConfig) -> list[str]:
    """A warning when a web benchmark's searches go to the bundled sample corpus."""
    web = get_settings().web
    if config.dataset not in _WEB_BENCHMARKS or not _searches(config):
        return []
    if (config.search or web.search_provider) != "local" or web.index_dir is not None:
        return []
    return [
        f"web_search runs on the small bundled offline corpus, not the web: {config.dataset} "
        "scores are not comparable with published ones; pick a provider with --search (serper, "
        "brave, tavily, searxng) or web.search_provider, or set web.index_dir"
    ]

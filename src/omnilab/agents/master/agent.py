"""``master``: Agent-Omni's master agent over a pool of per-modality models (§2)."""

from __future__ import annotations

import dataclasses

from pydantic import ValidationError

from omnilab.agents.base import AgentConfigError, AgentContext, AgentTask
from omnilab.agents.master import lenient
from omnilab.agents.master.loop import MasterLoop
from omnilab.agents.master.options import MasterOptions
from omnilab.agents.master.pool import ROLES, check_pool, modality_agents, pool_models
from omnilab.agents.session import AgentRun
from omnilab.inputs import InputSet
from omnilab.trajectory import Trajectory

__all__ = ["MasterAgent"]


class MasterAgent:
    """Agent-Omni: a master model plans, per-modality models answer, the master decides.

    Roles ``text``, ``image``, ``video``, ``audio`` and ``master`` pick the pool's models (unset:
    the agent's model). Each round the master writes sub-questions per modality agent, the agents
    answer them concurrently from their own inputs only, and the master decides whether its
    answer is final; at most ``max_rounds`` rounds (docs/agents-master.md).
    """

    name = "master"
    options_model = MasterOptions

    def __init__(self, **options: object) -> None:
        try:
            self.options = MasterOptions.model_validate(options)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "options"
            raise AgentConfigError(f"bad master option {where}: {first['msg']}") from None
        if self.options.rules == "release":
            lenient.require()  # the release's parser, langchain-core's own
        unknown = sorted(set(self.options.role_generate) - set(ROLES))
        if unknown:
            raise AgentConfigError(
                f"bad master option role_generate: no role {', '.join(unknown)} "
                f"(roles: {', '.join(ROLES)})"
            )

    async def run(self, task: AgentTask, ctx: AgentContext) -> Trajectory:
        """Answer ``task``; every stage is written to ``ctx.trajectory`` as it happens.

        Raises :class:`AgentConfigError` before anything is written when a role given
        explicitly has a model that cannot take its modality (a role left to the agent's model
        gets text evidence instead); model failures end the run with status ``error``.
        """
        agents = modality_agents(InputSet(task.inputs))
        models = pool_models(ctx.model, ctx.roles)
        evidence = check_pool(models, {r for r in ctx.roles if r in ROLES}, agents)
        run = AgentRun(task, dataclasses.replace(ctx, roles=models), agent=self.name)
        config = {
            "max_rounds": self.options.max_rounds,
            "perception": self.options.perception,
            "format_retries": self.options.format_retries,
            "generate": self.options.generate.model_dump(exclude_defaults=True),
            "role_generate": {
                role: config.model_dump(exclude_unset=True)
                for role, config in self.options.role_generate.items()
            },
            "agents": {a.name: [i.id for i in a.inputs] for a in agents},
            "evidence": evidence,
            "budgets": ctx.budgets.model_dump(),
        }
        loop = MasterLoop(run, self.options, agents)
        return await run.execute(loop.run, config=config)

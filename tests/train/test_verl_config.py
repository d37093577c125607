"""``examples/verl/omnilab_ota_grpo.yaml`` composes with Hydra on verl's own ``ppo_trainer``
config, sets only keys verl's config has, and names the registered agent loop and the registered
TAURA estimator with OmniAgent's hyperparameters. Marked ``train``; skipped without verl."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.train]

pytest.importorskip("verl.trainer.ppo.core_algos")
hydra = pytest.importorskip("hydra")
omegaconf = pytest.importorskip("omegaconf")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "verl"


def compose(name: str) -> Any:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(EXAMPLES), version_base=None):
        return hydra_compose(config_name=name)


def leaves(node: Any, prefix: str = "") -> list[str]:
    if not isinstance(node, dict):
        return [prefix]
    return [key for k, v in node.items() for key in leaves(v, f"{prefix}.{k}" if prefix else k)]


def test_config_names_the_registered_loop_and_estimator() -> None:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    from omnilab.rl.verl_taura import compute_taura_advantage

    cfg = compose("omnilab_ota_grpo")
    assert get_adv_estimator_fn(cfg.algorithm.adv_estimator) is compute_taura_advantage
    agent = cfg.actor_rollout_ref.rollout.agent
    assert agent.default_agent_loop == "omnilab_ota"
    root = Path(__file__).resolve().parents[2]
    loops = {e.name: e for e in omegaconf.OmegaConf.load(root / agent.agent_loop_config_path)}
    target = hydra.utils.get_class(loops["omnilab_ota"]["_target_"])
    assert issubclass(target, AgentLoopBase) and target.agent == "ota"
    assert set(loops) == {"omnilab_tir", "omnilab_ota", "omnilab_coder", "omnilab_deepsearch"}
    # OmniAgent's published setting: group 8, 150 steps, lr 1e-6, clip 0.2 / 0.3.
    assert cfg.actor_rollout_ref.rollout.n == 8
    assert cfg.trainer.total_training_steps == 150
    assert cfg.actor_rollout_ref.actor.optim.lr == pytest.approx(1e-6)
    assert cfg.actor_rollout_ref.actor.clip_ratio_low == pytest.approx(0.2)
    assert cfg.actor_rollout_ref.actor.clip_ratio_high == pytest.approx(0.3)


def test_config_sets_only_keys_verl_has() -> None:
    ours = omegaconf.OmegaConf.to_container(
        omegaconf.OmegaConf.load(EXAMPLES / "omnilab_ota_grpo.yaml")
    )
    assert isinstance(ours, dict)
    base = compose("omnilab_ota_grpo")
    verl = omegaconf.OmegaConf.load(
        Path(__import__("verl").__file__).parent / "trainer/config/_generated_ppo_trainer.yaml"
    )
    for key in leaves({k: v for k, v in ours.items() if k not in ("hydra", "defaults")}):
        parent, _, leaf = key.rpartition(".")
        # a typo fails here (``in`` on a DictConfig skips keys whose value is missing, "???")
        assert leaf in list(omegaconf.OmegaConf.select(verl, parent)), key
        assert omegaconf.OmegaConf.select(base, key) == omegaconf.OmegaConf.select(
            omegaconf.OmegaConf.create(ours), key
        ), key

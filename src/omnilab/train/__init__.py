"""Training data from runs: SFT, DPO and RL exports, tree exploration, rewards and advantages.

Everything here reads run folders (``results.jsonl``, ``run.json`` and the trajectories) through
:mod:`omnilab.train.runs` and writes files a trainer reads; nothing here calls a model except
tree exploration and the DPO step judge, which run agents through the bench runner.
"""

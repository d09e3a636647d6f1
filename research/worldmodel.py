"""World model: is the reward fine-tune's gain from the reward, or from training on the model's own rollouts?

All arms start from the shipped supervised weights (``flowwarp_supervised.pt``):

- ``supervised``: no fine-tune.
- ``reward-ft``: :func:`~rollgym.envs.worldmodel.train.finetune_with_reward`: autoregressive rollouts,
  ascend the env's reward.
- ``l1-ft``: :func:`~rollgym.envs.worldmodel.train.finetune_l1_on_rollouts`, the control: the same
  rollouts, steps, batch and optimiser, with the supervised stage's motion-weighted L1 loss.

Seed ``s`` fixes the fine-tuning clips (the same in both fine-tunes) and the held-out scenes the arms are
scored on (test scenes ``s * n .. s * n + n - 1``, autoregressive mode), so the comparisons are paired on
both. The metric is ``WorldModel-v0``'s own episode reward.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np

from research.runner import ArmResult, Experiment

ARMS = ("supervised", "reward-ft", "l1-ft")


def prepare(config: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Simulate the training scenes and load the supervised weights."""
    import torch

    from rollgym.envs.worldmodel.dataset import simulate_dataset
    from rollgym.envs.worldmodel.train import HERE, load_net

    torch.set_num_threads(1)
    data = simulate_dataset(config["train_episodes"], config["frames"], split="train", size=config["size"])
    return {"data": data, "net": load_net(HERE / "flowwarp_supervised.pt"), "workdir": workdir}


def evaluate(net: Any, config: dict[str, Any], seed: int, workdir: Path, arm: str) -> dict[str, float]:
    """Mean episode reward and masked skills of ``net`` on this seed's held-out scenes."""
    from rollgym.agents.worldmodels import FlowWarpWorldModel
    from rollgym.envs.worldmodel.env import WorldModelEnv
    from rollgym.envs.worldmodel.report import run_episode
    from rollgym.envs.worldmodel.train import save_model

    path = save_model(net, workdir / f"{arm}-{seed}.pt")
    model = FlowWarpWorldModel(path)
    env = WorldModelEnv(size=config["size"], min_chunks=config["chunks"], max_chunks=config["chunks"],
                        mode="autoregressive")
    n = config["eval_scenes"]
    episodes = [run_episode(model, env, i)[0] for i in range(seed * n, seed * n + n)]
    env.close()
    return {"reward": float(np.mean([e["reward"] for e in episodes])),
            "ssim_skill_masked": float(np.mean([e["reward_components"]["ssim_skill_masked"] for e in episodes])),
            "psnr_skill_masked_db": float(np.mean([e["reward_components"]["psnr_skill_masked_db"] for e in episodes]))}


def run(ctx: dict[str, Any], arm: str, seed: int, config: dict[str, Any]) -> ArmResult:
    from rollgym.envs.worldmodel.train import finetune_l1_on_rollouts, finetune_with_reward

    net = copy.deepcopy(ctx["net"])
    kwargs = {"batch": config["batch"], "unroll": config["unroll"], "seed": 1 + seed, "log_every": 0}
    curve: list[float] = []
    if arm == "reward-ft":
        net, curve = finetune_with_reward(net, ctx["data"], config["steps"], **kwargs)
    elif arm == "l1-ft":
        net, curve = finetune_l1_on_rollouts(net, ctx["data"], config["steps"], **kwargs)
    net.eval()
    scores = evaluate(net, config, seed, ctx["workdir"], arm)
    steps = config["steps"] if arm != "supervised" else 0
    cost = {"finetune_steps": steps, "rollout_frames": steps * config["batch"] * config["unroll"]}
    every = max(1, len(curve) // 10)
    points = [(float(i), float(np.mean(curve[max(0, i - every):i + 1]))) for i in range(0, len(curve), every)]
    return ArmResult(scores["reward"], cost, points, scores)


EXPERIMENT = Experiment(
    name="worldmodel",
    title="World model: reward fine-tune against the L1-on-own-rollouts control",
    question="How much of the reward fine-tune's gain over the supervised model comes from the reward itself, "
             "rather than from training on the model's own autoregressive rollouts?",
    metric="held-out env reward",
    arms=ARMS,
    baseline="supervised",
    comparisons=(("reward-ft", "supervised"), ("l1-ft", "supervised"), ("reward-ft", "l1-ft")),
    secondary=("ssim_skill_masked", "psnr_skill_masked_db"),
    prepare=prepare,
    run=run,
    configs={
        "full": {"train_episodes": 60, "frames": 24, "size": 64, "steps": 60, "batch": 4, "unroll": 8,
                 "eval_scenes": 12, "chunks": 3},
        "quick": {"train_episodes": 4, "frames": 12, "size": 32, "steps": 2, "batch": 2, "unroll": 3,
                  "eval_scenes": 1, "chunks": 1},
    },
    seeds=5,
    x_label="fine-tune step",
    digits=4,
    plot_curves=False,  # the runs' curves are each fine-tune's own objective, not the held-out reward
    notes="Compute: both fine-tunes make the same number of steps on the same clips with the same rollout "
          "length; only the loss differs. The figure's left panel joins each seed's "
          "scores across the arms.",
)

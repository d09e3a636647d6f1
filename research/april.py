"""APRIL (partial rollouts) against synchronous collection: held-out accuracy against wall time, training included.

Both arms train the same tiny Countdown model with the same GRPO steps on the same
task order (seed ``s`` is the run seed of :class:`~rollgym.rollout.partial.PartialRollouts`),
with the real transformers backend:

- ``synchronous``: ``over_provision=1.0`` and no chunking: every step waits for all of its groups.
- ``april``: ``over_provision=1.5`` and ``chunk_tokens``: a step returns as soon as its groups are done;
  unfinished rollouts park and continue under the next weights.

Wall time counts collection and the training step (not the held-out evaluation). Continuing a
chunked generation re-sends its prompt and the tokens sampled so far; the transformers backend keeps
no KV cache between calls, so it really recomputes them, and ``resent_prefix_tokens`` says how many.
"""

from __future__ import annotations

import time
from typing import Any

from research import countdown
from research.runner import ArmResult, Experiment

ARMS = ("synchronous", "april")


def run(ctx: countdown.TinyCountdown, arm: str, seed: int, config: dict[str, Any]) -> ArmResult:
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent
    from rollgym.rollout.episode import EpisodeLimits
    from rollgym.rollout.partial import PartialRollouts
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer

    backend = countdown.fresh(ctx)
    trainer = GRPOTrainer(ctx.model, ctx.tokenizer, GRPOConfig(learning_rate=config["learning_rate"],
                                                               micro_batch_size=64, seed=seed))
    agent = ChatAgent(backend, SamplingParams(max_tokens=config["max_tokens"], temperature=config["temperature"]),
                      system_prompt="")
    april = arm == "april"
    wall = 0.0
    curve = [(0.0, ctx.accuracy_warm)]
    tokens = stale = 0
    with PartialRollouts(agent, config["env_id"], group_size=config["group_size"],
                         groups_per_step=config["tasks_per_step"], over_provision=1.5 if april else 1.0,
                         chunk_tokens=config["chunk_tokens"] if april else None, split="train", seed=seed,
                         env_kwargs=config["env_kwargs"], limits=EpisodeLimits(max_steps=1)) as rollouts:
        for step in range(config["grpo_steps"]):
            started = time.perf_counter()
            groups = rollouts.step()
            stats = trainer.step(groups)
            backend.policy_version = trainer.policy_version
            wall += time.perf_counter() - started
            tokens += sum(sum(t.loss_mask) for g in groups for t in g.trajectories)
            stale += round(stats["stale_token_fraction"] * stats["tokens"])
            if (step + 1) % config["eval_every"] == 0 or step + 1 == config["grpo_steps"]:
                curve.append((wall, countdown.accuracy(backend, config)))
        cost = rollouts.cost()
    result_cost = {"grpo_steps": float(config["grpo_steps"]), "wall_s": wall, "trained_tokens": float(tokens),
                   "stale_tokens": float(stale), "resent_prefix_tokens": float(cost["resent_prefix_tokens"]),
                   "engine_calls": float(cost["chunk_calls"])}
    return ArmResult(curve[-1][1], result_cost, curve, {"wall_s": wall,
                                                         "resent_prefix_tokens": float(cost["resent_prefix_tokens"])})


EXPERIMENT = Experiment(
    name="april",
    title="APRIL: partial rollouts against synchronous collection, accuracy against wall time",
    question="With the prefix re-sends of chunked generation charged and training time included, do partial "
             "rollouts reach the same accuracy sooner on a CPU-sized workload?",
    metric="held-out greedy accuracy",
    arms=ARMS,
    baseline="synchronous",
    comparisons=(("april", "synchronous"),),
    secondary=("wall_s",),
    prepare=countdown.prepare,
    run=run,
    configs={
        "full": {**countdown.BASE, "max_tokens": 32, "sft_steps": 150, "grpo_steps": 16, "tasks_per_step": 8,
                 "group_size": 8, "eval_tasks": 300, "eval_every": 4, "chunk_tokens": 8},
        "quick": {**countdown.QUICK_GRPO, "grpo_steps": 2, "chunk_tokens": 4},
    },
    seeds=5,
    x_label="wall seconds (collection + training)",
    notes="Wall time is measured on a shared 2-core machine, so it carries load noise; the pairing by seed "
          "removes task and sampling differences, not machine load.",
)

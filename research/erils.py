"""ERILS on Countdown: on-policy GRPO against external rollouts with joint, per-source and length-controlled processing.

The setting follows the paper's premise: successful on-policy rollouts are scarce
(the tiny model's warm-up is short), and a stronger external policy solves every
task but writes longer answers than the on-policy budget: it shows its work,
``<think>9 + 8 = 17. 17 - 4 = 13.</think>`` before the oracle's ``<answer>``, repeated
0 to 2 times per task (drawn from the task), so some of its rollouts fit the
on-policy token budget and some do not.

Arms (same tasks, same on-policy rollouts sampled, same number of GRPO steps):

- ``on-policy``: plain GRPO.
- ``external-joint``: the external rollout of each task joins its group when it beats
  the group's best (``only_if_better``), whole, with joint reward processing.
- ``external-per-source``: the same, with source-specific processing (external
  rollouts baselined on the on-policy group; ``GRPOConfig(by_source=True)``).
- ``external-length``: per-source, with length control: the external rollout is cut
  to the on-policy budget and re-scored by the env (:class:`EnvRescorer`), so a cut
  that loses the answer earns 0 and is not added.
- ``external-joint-length``: the missing cell of the 2x2 (processing x length control): joint processing,
  with the length control of ``external-length``. With it, the source effect is read at equal length
  control (``external-length`` against ``external-joint-length``), not only without it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from research import countdown
from research.runner import ArmResult, Experiment

ARMS = ("on-policy", "external-joint", "external-per-source", "external-length", "external-joint-length")
#: The arms whose external rollouts share the on-policy group's baseline (joint reward processing).
JOINT = ("external-joint", "external-joint-length")


def worked_answer(answer: str, task_id: str) -> str:
    """The external policy's text: the oracle answer after 0-2 rounds of shown work (drawn from the task id)."""
    import re
    import zlib

    expr = re.sub(r"</?answer>", "", answer).strip()
    tokens = expr.split()
    steps, value = [], int(tokens[0])
    for op, number in zip(tokens[1::2], tokens[2::2]):
        new = value + int(number) if op == "+" else value - int(number)
        steps.append(f"{value} {op} {number} = {new}.")
        value = new
    rounds = int(np.random.default_rng(zlib.crc32(task_id.encode())).integers(0, 3))
    work = " ".join(" ".join(steps) for _ in range(rounds))
    return f"<think>{work}</think>{answer}" if rounds else answer


def external_rollouts(ctx: countdown.TinyCountdown, backend: Any, groups: list[Any]) -> dict[str, list[Any]]:
    """One external rollout per group's task: the worked answer in tokens, scored by the env."""
    from rollgym.train.sft import Demonstration, answer_ids_of, demonstration_for, external_trajectory

    config = ctx.config
    out: dict[str, list[Any]] = {}
    for group in groups:
        demo = demonstration_for(config["env_id"], group.task, ctx.tokenizer, env_kwargs=config["env_kwargs"],
                                 system_prompt="")
        text = worked_answer(demo.text, group.task.id)
        worked = Demonstration(demo.task, demo.prompt_ids, answer_ids_of(ctx.tokenizer, text), text,
                               _score(config, group.task, text))
        out[group.task.id] = [external_trajectory(worked, backend, group_id=group.group_id, name="stronger")]
    return out


def _score(config: dict[str, Any], task: Any, text: str) -> float:
    from rollgym.core.registration import make

    env = make(config["env_id"], **config["env_kwargs"])
    try:
        env.reset(options={"task": task})
        return float(env.step(text)[1])
    finally:
        env.close()


def run(ctx: countdown.TinyCountdown, arm: str, seed: int, config: dict[str, Any]) -> ArmResult:
    from rollgym.rollout.external import EnvRescorer, mix_external

    rescore = EnvRescorer(config["env_id"], ctx.tokenizer, env_kwargs=config["env_kwargs"])
    lengths: list[int] = []

    def batch(backend: Any, step: int) -> tuple[list[Any], dict[str, float]]:
        tasks = countdown.train_tasks(config, step, seed)
        groups = countdown.sample_groups(backend, config, tasks, seed, f"s{step}")
        rollouts, tokens = countdown.policy_cost(groups)
        cost = {"policy_rollouts": rollouts, "policy_tokens": tokens, "external_added": 0.0}
        if arm == "on-policy":
            return groups, cost
        external = external_rollouts(ctx, backend, groups)
        lengths.extend(len(t.completion_ids) for ts in external.values() for t in ts)
        length = "truncate" if arm in ("external-length", "external-joint-length") else "none"
        mixed = mix_external(groups, external, length=length, rescore=rescore)  # type: ignore[arg-type]
        cost["external_added"] = float(sum(len(m.trajectories) - len(g.trajectories) for m, g in zip(mixed, groups)))
        return mixed, cost

    curve, cost = countdown.grpo_run(ctx, seed, config, batch, by_source=arm not in JOINT)
    extras = {"external_mean_tokens": float(np.mean(lengths)) if lengths else 0.0}
    return ArmResult(curve[-1][1], cost, curve, extras)


EXPERIMENT = Experiment(
    name="erils",
    title="ERILS: external rollouts with joint, per-source and length-controlled processing",
    question="Do a stronger policy's longer rollouts help GRPO when on-policy successes are scarce, and does it "
             "matter how their rewards are processed and their length controlled?",
    metric="held-out greedy accuracy",
    arms=ARMS,
    baseline="on-policy",
    comparisons=(("external-joint", "on-policy"), ("external-per-source", "on-policy"),
                 ("external-length", "on-policy"), ("external-per-source", "external-joint"),
                 ("external-length", "external-per-source"), ("external-joint-length", "external-joint"),
                 ("external-length", "external-joint-length")),
    prepare=countdown.prepare,
    run=run,
    configs={
        "full": {**countdown.BASE, "sft_steps": 120, "grpo_steps": 30, "tasks_per_step": 8, "group_size": 8,
                 "eval_tasks": 300, "eval_every": 10},
        "quick": {**countdown.QUICK_GRPO, "grpo_steps": 2},
    },
    seeds=8,
    notes="Compute: every arm samples the same on-policy rollouts per step and makes the same number of GRPO "
          "steps; external rollouts are the stronger policy's text (scored by the env, behaviour logprobs from "
          "a forward pass of the current policy) and add training rows, not policy samples.",
)


"""ECHO's rollout controls (adaptive width, confidence pruning) against entropy trees and independent samples.

The setting of :mod:`~research.branching` (the warmed-up tiny Countdown model, the same tasks
per seed, the same budget of policy-sampled tokens per task, rollouts counted in the order they were made
while they fit the budget), with three arms:

- ``independent``: whole rollouts, ``roots`` at a time.
- ``tree-entropy``: entropy-forked trees, one child per fork point (:func:`rollgym.rollout.branching.agrow_tree`).
- ``tree-width``: adaptive width alone (no pruning), to tell the two controls apart.
- ``tree-echo``: the same trees with both of ECHO's controls (:class:`rollgym.rollout.echo.EchoOptions`): a fork point
  gets :func:`~rollgym.rollout.echo.branch_width` children (more where the entropy is high and the group
  unsure) and a branch whose tail confidence stays under ``prune_below`` for ``patience`` checks along its
  tree path is not forked again.

The metric is pass@budget (the share of tasks where some counted rollout is correct); secondary: rollouts
per task, the share of groups with both a correct and an incorrect rollout, and the pruned trajectories per
task. Sampling only, no training step.
"""

from __future__ import annotations

from typing import Any

from research import countdown
from research.budget import budget_experiment, budget_result, for_each_task, setting, task_rollouts
from research.runner import ArmResult

ARMS = ("independent", "tree-entropy", "tree-width", "tree-echo")


def run(ctx: countdown.TinyCountdown, arm: str, seed: int, config: dict[str, Any]) -> ArmResult:
    from rollgym.agents.chat import ChatAgent
    from rollgym.rollout.echo import EchoOptions

    backend, sampling, tasks = setting(ctx, config, seed)
    agent = ChatAgent(backend, sampling, system_prompt="")
    echo = EchoOptions(adaptive_width=True, max_width=config["max_width"],
                       prune_below=config["prune_below"] if arm == "tree-echo" else None,
                       tail_window=config["tail_window"], patience=config["patience"])

    async def one(index: int, task: Any) -> list[Any]:
        return await task_rollouts(arm, agent.spawn(), config, seed, index, task,
                                   echo=None if arm == "tree-entropy" else echo)

    return budget_result(for_each_task(tasks, one),
                         pruned_per_task=lambda group: sum(bool(t.metrics.get("pruned")) for t in group))


EXPERIMENT = budget_experiment(
    name="echo",
    title="ECHO's adaptive branch width and confidence pruning against entropy trees and independent samples",
    question="At the same budget of policy-sampled tokens per task, do ECHO's rollout controls (branch width from "
             "entropy and group confidence, pruning of persistently unsure branches) solve more tasks than plain "
             "entropy-forked trees and than independent rollouts?",
    arms=ARMS,
    comparisons=(("tree-echo", "independent"), ("tree-echo", "tree-entropy"), ("tree-width", "tree-entropy"),
                 ("tree-echo", "tree-width")),
    secondary=("rollouts_per_task", "informative_groups", "pruned_per_task"),
    run=run,
    full={"tasks": 40, "token_budget": 64, "roots": 2, "forks": 2, "min_gap": 2, "max_width": 3, "prune_below": 0.8,
          "tail_window": 8, "patience": 2},
    quick={"tasks": 3, "token_budget": 40, "roots": 2, "forks": 2, "min_gap": 2, "max_width": 3, "prune_below": 0.8,
           "tail_window": 8, "patience": 2},
    notes="The setting of the branching experiment (its warm-up recipe, temperature 0.7, max 16 tokens a reply, "
          "budget 64 policy-sampled tokens per task, rollouts counted while they fit) on 40 tasks per seed. "
          "tree-width and tree-echo: max width 3; tree-echo prunes below a tail confidence of 0.8 (the mean "
          "probability of the last 8 sampled tokens), patience 2 along the tree path. The threshold was set "
          "before this run from a pilot on other tasks (training-task seed 99, 240 root rollouts): there the "
          "tail confidence's quartiles were 0.78, 0.82 and 0.86, and 3% of the rollouts under 0.8 were "
          "correct against 25% above. Token confidence is the sampled token's probability (ECHO's top-k "
          "mass is not reported by the backends). Sampling only, no training step. The four arms share one "
          "warm-up; its hash differs from the one branching.json records (another machine, issue 45), so the "
          "two experiments' figures are not paired with each other.",
)

"""What the token-budget experiments share (:mod:`~research.branching`, :mod:`~research.echo`,
:mod:`~research.resum`): the warmed-up tiny Countdown model, the same tasks per seed, and a budget of
policy-sampled tokens per task, counted over the rollouts in the order they were made.

Each experiment differs only in how an arm spends the budget on one task; this module holds the rest: the
independent-rollouts baseline arm, the budget cut, the per-task fan-out, the group measures and the declaration
(metric ``pass@budget``, baseline ``independent``, 8 seeds, the common warm-up settings).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from research import countdown
from research.runner import ArmResult, Experiment

T = TypeVar("T")


def within_budget(trajectories: list[Any], budget: int) -> list[Any]:
    """The trajectories, in the order they were made, while the tokens they sampled fit ``budget``."""
    kept, spent = [], 0
    for traj in trajectories:
        cost = int(sum(traj.loss_mask))
        if spent + cost > budget:
            break
        kept.append(traj)
        spent += cost
    return kept


async def independent_rollouts(env: Any, agent: Any, *, seed: int, options: dict[str, Any], budget: int, roots: int,
                               agent_seed: int, group_id: str) -> list[Any]:
    """Whole rollouts, ``roots`` at a time, until they have sampled ``budget`` tokens (64 at the most)."""
    from rollgym.rollout.branching import agrow_tree

    out: list[Any] = []
    spent, round_ = 0, 0
    while spent < budget and len(out) < 64:
        batch = await agrow_tree(env, agent, seed=seed, options=options, roots=roots, token_budget=0,
                                 agent_seed=(agent_seed * 7919 + round_) % 2**62, group_id=f"{group_id}-{round_}")
        out += batch
        spent += sum(int(sum(t.loss_mask)) for t in batch)
        round_ += 1
    return out


async def task_rollouts(arm: str, agent: Any, config: dict[str, Any], seed: int, index: int, task: Any,
                        **tree: Any) -> list[Any]:
    """Task ``index``'s counted rollouts: independent ones for the ``independent`` arm, else a tree
    (:func:`rollgym.rollout.branching.agrow_tree`, ``forks`` and ``min_gap`` from ``config``, the rest from
    ``tree``), kept while they fit ``config["token_budget"]``; a fresh env of the task, closed after."""
    from rollgym.core.registration import make
    from rollgym.rollout.branching import agrow_tree

    env = make(config["env_id"], split="train", **config["env_kwargs"])
    seed_of_task, options, budget = task_seed(seed, index), {"task": task}, config["token_budget"]
    try:
        if arm == "independent":
            trajs = await independent_rollouts(env, agent, seed=seed_of_task, options=options, budget=budget,
                                               roots=config["roots"], agent_seed=seed_of_task, group_id=f"t{index}")
        else:
            trajs = await agrow_tree(env, agent, seed=seed_of_task, options=options, roots=config["roots"],
                                     token_budget=budget, forks_per_round=config["forks"], min_gap=config["min_gap"],
                                     agent_seed=seed_of_task, group_id=f"t{index}", **tree)
        return within_budget(trajs, budget)
    finally:
        env.close()


def setting(ctx: countdown.TinyCountdown, config: dict[str, Any], seed: int) -> tuple[Any, Any, list[Any]]:
    """One run's ``(backend, sampling, tasks)``: the model reset to the warm weights, the sampling settings
    (``max_tokens``, ``temperature``) and the seed's ``config["tasks"]`` training tasks."""
    from rollgym.agents.backends.base import SamplingParams

    backend = countdown.fresh(ctx)
    tasks = countdown.train_tasks(config, 0, seed, n=config["tasks"])
    return backend, SamplingParams(max_tokens=config["max_tokens"], temperature=config["temperature"]), tasks


def task_seed(seed: int, index: int) -> int:
    """The env and sampling seed of task ``index`` of a run (the same in every arm)."""
    return seed * 1_000_003 + index


def for_each_task(tasks: Sequence[Any], one: Callable[[int, Any], Awaitable[T]]) -> list[T]:
    """``one(index, task)`` for every task, concurrently (the backend batches their requests), in task order."""

    async def everything() -> list[T]:
        return list(await asyncio.gather(*(one(i, t) for i, t in enumerate(tasks))))

    return asyncio.run(everything())


def budget_result(groups: Sequence[Sequence[Any]], **per_task: Callable[[Sequence[Any]], float]) -> ArmResult:
    """One run's result from its groups (one group of counted rollouts per task).

    The metric is pass@budget, the share of tasks where some rollout is correct; the extras are the rollouts per
    task the budget bought, the share of groups with both a correct and an incorrect rollout (a GRPO signal),
    and the mean over tasks of each ``per_task`` measure of a group; the cost is the policy tokens and rollouts.
    """
    n = len(groups)
    solved = [any(t.correct for t in g) for g in groups]
    mixed = [any(t.correct for t in g) and not all(t.correct for t in g) for g in groups]
    sizes = [len(g) for g in groups]
    tokens = [sum(int(sum(t.loss_mask)) for t in g) for g in groups]
    extras = {"rollouts_per_task": sum(sizes) / n, "informative_groups": sum(mixed) / n,
              **{name: sum(measure(g) for g in groups) / n for name, measure in per_task.items()}}
    cost = {"policy_tokens": float(sum(tokens)), "rollouts": float(sum(sizes))}
    return ArmResult(sum(solved) / n, cost, [], extras)


def budget_experiment(*, name: str, title: str, question: str, arms: tuple[str, ...],
                      comparisons: tuple[tuple[str, str], ...], secondary: tuple[str, ...],
                      run: Callable[[Any, str, int, dict[str, Any]], ArmResult], full: dict[str, Any],
                      quick: dict[str, Any], notes: str) -> Experiment:
    """A token-budget experiment: pass@budget against ``independent``, 8 seeds, no curves; ``full`` and ``quick``
    add the experiment's own settings to the common ones (150 warm-up steps and 300 held-out tasks when full)."""
    return Experiment(
        name=name, title=title, question=question, metric="pass@budget", arms=arms, baseline="independent",
        comparisons=comparisons, secondary=secondary, prepare=countdown.prepare, run=run,
        configs={"full": {**countdown.BASE, "sft_steps": 150, "eval_tasks": 300, **full},
                 "quick": {**countdown.QUICK, **quick}},
        seeds=8, plot_curves=False, notes=notes)

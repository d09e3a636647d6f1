"""Reliability of an agent on the tool worlds (ToolWorld, ToolGen): play through the episode engine, then score.

The episodes are a :class:`~rollgym.rollout.spec.RunSpec` run by
:func:`~rollgym.rollout.drivers.run_spec` (the threaded driver unless told
otherwise): task ``i`` of the split is one group (``reset(options={"task_index": i})``)
and its ``runs`` rollouts are the group's samples. The metrics
(:mod:`rollgym.envs.tools.metrics`: TGC, SGC, pass^k, per template) read one
:class:`~rollgym.envs.tools.metrics.EpisodeResult` row per trajectory, built by
:func:`outcomes` from the trajectory and its group's task.

This module sits in ``benchmarks`` because it is an evaluation over the engine: ``rollgym.envs`` may
not import ``rollgym.rollout``, so the playing that used to live in ``envs/tools/metrics.py`` moved here.

Example:
    >>> from rollgym.agents import OracleAgent
    >>> summarize(play_episodes("ToolWorld-v1", OracleAgent(), tasks=2, runs=2), ks=(1, 2))["tgc"]
    1.0
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rollgym.core.agent import Agent
from rollgym.core.errors import ConfigError
from rollgym.envs.tools.metrics import EpisodeResult
from rollgym.envs.tools.metrics import summarize as summarize_results
from rollgym.rollout.types import RolloutGroup


def play_episodes(env_id: str, agent: Agent, tasks: int, runs: int = 1, split: str = "test",
                  max_steps: int = 60, *, seed: int = 0, driver: str = "threads", parallel: int | None = None,
                  **env_kwargs: Any) -> list[RolloutGroup]:
    """Play ``agent`` ``runs`` times on each of the first ``tasks`` tasks of a split, through the engine.

    Args:
        env_id: A tool-world id (``ToolWorld-v1``, ``ToolGen-v0``, ...).
        agent: Any :class:`~rollgym.core.agent.Agent` (for ``driver="ray"`` a callable that builds one).
        tasks: Tasks ``0 .. tasks-1`` of the split, one group each.
        runs: Rollouts of each task (the group size; pass^k needs ``runs >= k``).
        split: The split.
        max_steps: Cap on agent actions per episode.
        seed: The run seed (agent seeds derive from it).
        driver, parallel: As for :func:`~rollgym.rollout.drivers.run_spec`.
        env_kwargs: Extra ``rollgym.make`` arguments (``max_turns=10``, ...).

    Returns:
        One :class:`~rollgym.rollout.types.RolloutGroup` per task, in task order; score them with :func:`summarize`.
    """
    from rollgym.rollout.drivers import run_spec
    from rollgym.rollout.spec import RunSpec

    if not isinstance(tasks, int) or isinstance(tasks, bool) or tasks < 1:
        raise ConfigError(f"tasks must be an integer >= 1, got {tasks!r}.")
    spec = RunSpec.of(env_id, tasks, runs, split=split, seed=seed, max_steps=max_steps, env_kwargs=env_kwargs,
                      task_indices=tuple(range(tasks)))
    return run_spec(spec, agent, driver=driver, parallel=parallel)


def outcomes(groups: Iterable[RolloutGroup]) -> list[EpisodeResult]:
    """One metrics row per trajectory: its task id, the task's template and scenario, success and run.

    Success is the env's verdict (``info["correct"] is True`` on the last step; a failed or truncated
    rollout without it counts as a failure). The run is the trajectory's place in its group. The
    scenario is the task's ``meta["scenario"]`` (ToolWorld: one template in one base world), else
    ``"<template>@<world>"`` (ToolGen, whose tasks name their world).
    """
    rows = []
    for group in groups:
        for traj in group.trajectories:
            meta = dict(group.task.meta) if group.task is not None else dict(traj.info.get("task_meta") or {})
            template = str(meta.get("template", ""))
            scenario = str(meta.get("scenario") or f"{template}@{meta.get('world', '')}")
            task_id = traj.task_id if traj.task_id is not None else group.group_id
            rows.append(EpisodeResult(task_id, template, scenario, traj.info.get("correct") is True, traj.sample_idx))
    return rows


def summarize(groups: Sequence[RolloutGroup], ks: Iterable[int] = (1, 2, 4)) -> dict[str, Any]:
    """TGC, SGC, pass^k for each ``k`` and the per-template table of played groups, JSON-ready
    (:func:`rollgym.envs.tools.metrics.summarize` over :func:`outcomes`)."""
    return summarize_results(outcomes(groups), ks)

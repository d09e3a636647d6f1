"""Play many episodes of fixed tasks at once with a :class:`ChatAgent`, so that generation batches.

The TRL and verl adapters and the CPU demonstration share this runner. Each
episode runs the collector's own episode loop (so failures, statuses and token
fields are exactly the collector's) on an env reset to a given
:class:`~rollgym.core.task.Task`. Agents with ``aact`` (LLM agents) play every
episode on one event loop, so their model calls arrive together and the
transformers backend merges them into one batch per turn; other agents play in
threads. All episodes share one :class:`SamplingParams`. Envs come from a pool
that a caller may keep across calls (a trainer calls once per step), so they are
built once, not once per episode.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym

from rollgym.core.agent import Agent, capabilities
from rollgym.core.registration import make
from rollgym.core.task import Task
from rollgym.rollout.engine import EpisodeJob, EpisodePlayer, agent_name, spawn_agent
from rollgym.rollout.episode import EpisodeLimits
from rollgym.rollout.types import RolloutGroup, Trajectory


class FixedTask(gym.Wrapper[Any, Any, Any, Any]):
    """Every ``reset`` plays ``task`` (the seed still seeds the env's own randomness, e.g. a game bot)."""

    def __init__(self, env: gym.Env[Any, Any], task: Task) -> None:
        super().__init__(env)
        self.task = task

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        return self.env.reset(seed=seed, options={**(options or {}), "task": self.task})


def _agent_seed(seed: int, index: int) -> int:
    import numpy as np

    return int(np.random.SeedSequence(entropy=int(seed), spawn_key=(7, int(index))).generate_state(1)[0])


def play_tasks(
    agent: Agent,
    env_id: str,
    tasks: Sequence[Task],
    *,
    env_kwargs: dict[str, Any] | None = None,
    max_turns: int = 10,
    seed: int = 0,
    group_ids: Sequence[str] | None = None,
    sample_idx: Sequence[int] | None = None,
    envs: list[Any] | None = None,
    make_env: Callable[[], Any] | None = None,
) -> list[Trajectory]:
    """Play one episode per entry of ``tasks`` concurrently and return the trajectories in order.

    Args:
        agent: A :class:`~rollgym.agents.chat.ChatAgent` (each episode gets ``agent.spawn()``) or any
            agent with ``spawn()``; agents without it are deep-copied.
        env_id: The registered env id.
        tasks: The task of each episode; repeat a task for a GRPO group.
        env_kwargs: Extra ``make`` arguments (difficulty options, ``max_turns`` of a tool env, ...).
        max_turns: Most agent actions per episode (the collector's ``max_steps``).
        seed: Seeds each env's reset (episode ``i`` gets ``seed + i``; only env-side randomness such as a
            game bot depends on it, the task itself is fixed).
        group_ids, sample_idx: Recorded on each trajectory (default: the task id and the position).
        envs: A pool of ``env_id`` envs (made with ``env_kwargs``) to play on and leave open, grown as
            needed; pass the same list on every call to build envs once. Without it, envs are made
            for this call and closed after it.
        make_env: Builds each new env instead of ``make(env_id, **env_kwargs)`` (an env with a
            shared resource, e.g. one sandbox for every episode); ``env_id`` is still recorded.

    Episode ``i``'s agent is reset with a seed derived from ``(seed, i)``, so the episodes of a
    group sample differently but reproducibly; the transformers backend still batches them,
    since each row carries its own seed.
    """
    kwargs = dict(env_kwargs or {})
    caps = capabilities(agent)  # read once, here where the agent is accepted
    n = len(tasks)
    pool: list[Any] = envs if envs is not None else []
    limits = EpisodeLimits(max_steps=max_turns)

    def job(i: int, player: Any) -> EpisodeJob:
        group_id = group_ids[i] if group_ids else tasks[i].id
        return EpisodeJob(task_index=i, sample_idx=sample_idx[i] if sample_idx else i, seed=seed + i,
                          agent_seed=_agent_seed(seed, i), traj_id=f"{group_id}-{i}", group_id=group_id,
                          env_id=env_id, source="policy" if agent_name(player) == "llm" else f"external:{player.name}")

    def new_env() -> Any:
        return make_env() if make_env is not None else make(env_id, **kwargs)

    def player(i: int) -> EpisodePlayer:
        """The engine's player on a pooled env reset to task ``i`` (a crashed env is replaced by a fresh one)."""
        env = pool.pop() if pool else new_env()
        return EpisodePlayer(FixedTask(env, tasks[i]), spawn_agent(agent, caps),
                             lambda: FixedTask(new_env(), tasks[i]), limits)

    def one(i: int) -> Trajectory:
        p = player(i)
        record = p.play(job(i, p.agent))
        pool.append(p.env.env)
        return record.trajectory

    async def one_async(i: int) -> Trajectory:
        p = player(i)
        record = await p.aplay(job(i, p.agent))
        pool.append(p.env.env)
        return record.trajectory

    async def all_async() -> list[Trajectory]:
        return list(await asyncio.gather(*(one_async(i) for i in range(n))))

    if n == 0:
        return []
    try:
        if caps.asynchronous:
            try:
                asyncio.get_running_loop()
            except RuntimeError:  # no loop in this thread: the usual case (a trainer's rollout hook)
                return asyncio.run(all_async())
            with ThreadPoolExecutor(max_workers=1) as runner:  # called from inside a loop (a notebook)
                return runner.submit(asyncio.run, all_async()).result()
        with ThreadPoolExecutor(max_workers=min(n, 64), thread_name_prefix="rollgym-episodes") as threads:
            return list(threads.map(one, range(n)))
    finally:
        if envs is None:
            for env in pool:
                env.close()


def play_groups(
    agent: Agent,
    env_id: str,
    tasks: Sequence[Task],
    group_size: int,
    *,
    env_kwargs: dict[str, Any] | None = None,
    max_turns: int = 10,
    seed: int = 0,
    prefix: str = "g",
    make_env: Callable[[], Any] | None = None,
) -> list[RolloutGroup]:
    """``group_size`` concurrent rollouts of each task, as :class:`RolloutGroup`\\ s (ids ``f"{prefix}{k}"``)."""
    flat = [t for t in tasks for _ in range(group_size)]
    gids = [f"{prefix}{k}" for k in range(len(tasks)) for _ in range(group_size)]
    idx = [j for _ in tasks for j in range(group_size)]
    trajs = play_tasks(agent, env_id, flat, env_kwargs=env_kwargs, max_turns=max_turns, seed=seed,
                       group_ids=gids, sample_idx=idx, make_env=make_env)
    groups = []
    for k, task in enumerate(tasks):
        members = [dataclasses.replace(t, traj_id=f"{prefix}{k}-{t.sample_idx}")
                   for t in trajs[k * group_size : (k + 1) * group_size]]
        groups.append(RolloutGroup(f"{prefix}{k}", task, group_size, members))
    return groups

"""Play many episodes of fixed tasks at once with a :class:`ChatAgent`, so that generation batches.

The TRL and verl adapters and the CPU demonstration share this runner. It is one run of the
episode engine (:func:`rollgym.rollout.drivers.run_spec`): a :class:`~rollgym.rollout.spec.RunSpec`
whose ``tasks`` are the given :class:`~rollgym.core.task.Task` objects (each episode resets its env
with ``options={"task": task}``) and whose layout (:class:`~rollgym.rollout.layout.TaskListLayout`)
keeps this runner's seeds and ids, so failures, statuses and token fields are exactly the
collector's. Agents with ``aact`` (LLM agents) play every episode on one event loop (the asyncio
driver, every episode in flight), so their model calls arrive together and the transformers
backend merges them into one batch per turn; other agents play in threads (the threads driver).
All episodes share one :class:`SamplingParams`. Envs come from a pool that a caller may keep
across calls (a trainer calls once per step), so they are built once, not once per episode.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym

from rollgym.core.agent import Agent, capabilities
from rollgym.core.errors import ConfigError
from rollgym.core.registration import make
from rollgym.core.task import Task
from rollgym.rollout.drivers import run_spec
from rollgym.rollout.engine import agent_name
from rollgym.rollout.episode import EpisodeLimits
from rollgym.rollout.layout import TaskListLayout
from rollgym.rollout.pool import EnvPool
from rollgym.rollout.spec import RunSpec
from rollgym.rollout.types import RolloutGroup, Trajectory

#: Most threads a synchronous agent's episodes play in at once.
MAX_THREADS = 64


class FixedTask(gym.Wrapper[Any, Any, Any, Any]):
    """Every ``reset`` plays ``task`` (the seed still seeds the env's own randomness, e.g. a game bot)."""

    def __init__(self, env: gym.Env[Any, Any], task: Task) -> None:
        super().__init__(env)
        self.task = task

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        return self.env.reset(seed=seed, options={**(options or {}), "task": self.task})


class EnvListPool(EnvPool):
    """An :class:`EnvPool` over a caller's list of envs of one kind: taken from and given back to the list,
    which stays open after the run (``play_tasks(envs=...)``)."""

    def __init__(self, envs: list[Any]) -> None:
        super().__init__()
        self.envs = envs

    def has(self, key: str) -> bool:
        return bool(self.envs)

    def take(self, key: str, make: Callable[[], Any]) -> Any:
        with self._lock:
            if self.envs:
                return self.envs.pop()
        return make()

    def give(self, key: str, env: Any) -> None:
        with self._lock:
            self.envs.append(env)

    def close(self) -> None:
        """Leave the caller's envs open (they belong to the caller)."""

    def __len__(self) -> int:
        return len(self.envs)


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
    since each row carries its own seed (:class:`~rollgym.rollout.layout.TaskListLayout`).
    """
    n = len(tasks)
    if n == 0:
        return []
    for label, given in (("group_ids", group_ids), ("sample_idx", sample_idx)):
        if given and len(given) != n:
            raise ConfigError(f"{label} has {len(given)} entries for {n} tasks; pass one per task.")
    caps = capabilities(agent)  # read once, here where the agent is accepted
    kwargs = dict(env_kwargs or {})
    # a make() argument here, the spec's own field there (absent: the env's own default split)
    split_kwargs = {"split": kwargs.pop("split")} if "split" in kwargs else {}
    name = agent_name(agent)
    layout = TaskListLayout.of(list(group_ids) if group_ids else [task.id for task in tasks], sample_idx,
                               "policy" if name == "llm" else f"external:{name}")
    spec = RunSpec(env_id, n_tasks=n, group_size=1, seed=seed, tasks=tuple(tasks), env_kwargs=kwargs,
                   limits=EpisodeLimits(max_steps=max_turns), layout=layout,
                   **split_kwargs)

    def build(env_id: str, *, split: str | None = None, **options: Any) -> Any:
        """The run's envs: ``make_env()``, else ``make(env_id, **env_kwargs)`` (the split only when the caller
        gave one in ``env_kwargs``, else the env's own default)."""
        if make_env is not None:
            return make_env()
        return make(env_id, **options, **split_kwargs)

    options: dict[str, Any] = {"make_env": build, "env_pool": EnvListPool(envs) if envs is not None else None}
    if caps.asynchronous:
        def run() -> list[RolloutGroup]:
            return run_spec(spec, agent, driver="async", parallel=n, **options)

        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop in this thread: the usual case (a trainer's rollout hook)
            groups = run()
        else:
            with ThreadPoolExecutor(max_workers=1) as runner:  # called from inside a loop (a notebook)
                groups = runner.submit(run).result()
    else:
        groups = run_spec(spec, agent, driver="threads", parallel=min(n, MAX_THREADS), keep_agent=False, **options)
    return [group.trajectories[0] for group in groups]


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

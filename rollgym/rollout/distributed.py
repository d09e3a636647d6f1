"""Collection on a Ray cluster: env-worker actors that each run many episodes at once.

:func:`collect_ray` has the same arguments and results as
:func:`~rollgym.rollout.collect` and uses the same results file, so a run can
move between a laptop and a cluster. Each :class:`EnvWorker` actor keeps a pool
of envs and plays up to ``episodes_per_worker`` episodes concurrently on its
own event loop; LLM agents inside it talk to inference servers over HTTP (an
``OpenAIBackend`` pointed at vLLM or ``rollgym serve-model``), so generation is
batched by the servers, not the workers. Episodes travel in chunks (half a worker's
share each, two chunks per worker in flight), so Ray's cost per remote call, about a
millisecond, is paid per chunk rather than per episode; envs and agents are reused
across the episodes of a worker.

The driver writes every finished episode to the results file as soon as it
arrives. When a worker dies, the episodes it was playing are given to a
replacement worker; finished episodes are never lost, and the results are the
same as an uninterrupted run (episodes are pure functions of their seeds).

Agents are built inside the workers by ``agent_factory``, a picklable callable
(an agent class such as ``OracleAgent``, or a ``functools.partial``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from rollgym.core.agent import Agent
from rollgym.core.errors import ConfigError, MissingDependencyError
from rollgym.rollout.collector import RunPlan, _validate
from rollgym.rollout.episode import DEFAULT_MAX_STEPS, EpisodeLimits, arun_episode
from rollgym.rollout.store import assemble_groups
from rollgym.rollout.types import RolloutGroup

ProgressCallback = Callable[[int, int], None]


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError("Distributed collection needs Ray: pip install 'rollgym[ray]'.") from exc
    return ray


class EnvWorker:
    """A Ray actor body: a pool of envs and of agents (built by ``agent_factory``), playing episodes on request."""

    def __init__(self, env_id: str, split: str, env_kwargs: dict[str, Any], agent_factory: Callable[[], Agent],
                 limits: EpisodeLimits) -> None:
        import rollgym

        self.make = lambda: rollgym.make(env_id, split=split, **env_kwargs)
        self.agent_factory = agent_factory
        self.limits = limits
        self.envs: list[Any] = []
        self.agents: list[Any] = []

    async def play(self, task_index: int, args: dict[str, Any]) -> bytes:
        """Play one episode and return its results-file line."""
        from rollgym.rollout.store import EpisodeRecord

        env = self.envs.pop() if self.envs else self.make()
        agent = self.agents.pop() if self.agents else self.agent_factory()
        try:
            trajectory, task = await arun_episode(env, agent, limits=self.limits, **args)
            if trajectory.status == "failed" and trajectory.info.get("failure", {}).get("stage") in {"reset", "step"}:
                env.close()  # a crashed env may be in any state: start a fresh one
                env = self.make()
        finally:
            self.envs.append(env)
            self.agents.append(agent)
        return EpisodeRecord(task_index, task, trajectory).to_line()

    async def play_many(self, jobs: list[tuple[int, dict[str, Any]]]) -> list[bytes]:
        """Play a chunk of episodes at once; return their results-file lines in order."""
        return list(await asyncio.gather(*(self.play(i, args) for i, args in jobs)))

    def pid(self) -> int:
        """The worker's process id (tests kill it)."""
        import os

        return os.getpid()


def collect_ray(
    agent_factory: Callable[[], Agent],
    env_id: str,
    n_tasks: int,
    group_size: int,
    split: str = "test",
    seed: int = 0,
    out: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    *,
    num_workers: int = 2,
    episodes_per_worker: int = 8,
    limits: EpisodeLimits | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    progress: ProgressCallback | None = None,
    on_result: Callable[[int, list[Any]], None] | None = None,
    max_worker_restarts: int = 8,
) -> list[RolloutGroup]:
    """Play ``n_tasks`` × ``group_size`` episodes on Ray workers; see the module docstring.

    Uses the running Ray instance, or starts a local one. ``on_result(done, workers)``
    is called after every finished episode with the live worker handles (tests use it
    to kill a worker mid-run).

    Example:
        >>> from rollgym.agents import OracleAgent
        >>> groups = collect_ray(OracleAgent, "Countdown-v0", n_tasks=4, group_size=2)  # doctest: +SKIP
    """
    ray = _import_ray()
    limits = limits or EpisodeLimits(max_steps=max_steps)
    _validate(n_tasks, group_size, seed, limits.max_steps)
    if num_workers < 1 or episodes_per_worker < 1:
        raise ConfigError("num_workers and episodes_per_worker must be at least 1.")
    if not callable(agent_factory):
        raise ConfigError("agent_factory must be a picklable callable that returns an agent, e.g. OracleAgent.")
    probe = agent_factory()
    plan = RunPlan.prepare(probe, env_id, n_tasks, group_size, split, seed, out, env_kwargs, limits.max_steps)
    plan.env.close()
    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    actor_class = ray.remote(max_concurrency=2, num_cpus=0)(EnvWorker)

    def new_worker() -> Any:
        return actor_class.remote(plan.info.id, split, plan.env_kwargs, agent_factory, limits)

    workers = [new_worker() for _ in range(num_workers)]
    jobs = plan.jobs()
    total = n_tasks * group_size
    done = total - len(jobs)
    if progress is not None:
        progress(done, total)
    queue = list(jobs)
    chunk = max(1, -(-episodes_per_worker // 2))  # two chunks per worker keep it busy while one drains
    in_flight: dict[Any, tuple[list[tuple[int, int]], int, Any]] = {}
    load = [0] * num_workers
    restarts = 0

    def submit(batch: list[tuple[int, int]], slot: int) -> None:
        calls = []
        for i, j in batch:
            args = plan.job_args(i, j)
            args.pop("max_steps")
            calls.append((i, args))
        in_flight[workers[slot].play_many.remote(calls)] = (batch, slot, workers[slot])
        load[slot] += 1

    try:
        while queue or in_flight:
            while queue and len(in_flight) < 2 * num_workers:
                slot = load.index(min(load))
                batch, queue = queue[:chunk], queue[chunk:]
                submit(batch, slot)
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            ref = ready[0]
            batch, slot, actor = in_flight.pop(ref)
            load[slot] -= 1
            try:
                lines = ray.get(ref)
            except ray.exceptions.RayActorError:
                # the worker died: replace it (once) and give its episodes to the workers left
                if workers[slot] is actor:
                    restarts += 1
                    if restarts > max_worker_restarts:
                        raise
                    workers[slot] = new_worker()
                queue = batch + queue
                continue
            for (i, _), line in zip(batch, lines):
                plan.record_line(i, line)
                done += 1
                if progress is not None:
                    progress(done, total)
                if on_result is not None:
                    on_result(done, workers)
    finally:
        for worker in workers:
            ray.kill(worker)
        if plan.writer is not None:
            plan.writer.close()
    return assemble_groups(list(plan.records.values()), group_size, n_tasks)

"""Collector v2: many episodes in flight on one event loop, handed out group by group.

:func:`stream` keeps up to ``concurrency`` episodes running at once, each with
its own env instance and its own agent (``agent.spawn()``, else a copy). LLM
agents (``aact``) are awaited, so their model calls arrive together and the
backend batches them; synchronous agents and envs run inline, or in worker
threads when a step timeout needs enforcing. A group is yielded as soon as its
G rollouts are done, in completion order.

Failures are honest: a rollout that raised, timed out or was refused as stale
has status ``failed`` or ``aborted`` with the reason in ``info`` and is retried
up to ``retries`` times with the same seeds; it is never silently scored 0.

Staleness: pass ``policy_version`` (a callable returning the trainer's current
weights version) and ``max_staleness``; a rollout whose oldest token came from a
version more than ``max_staleness`` behind is refused (status ``aborted``,
``info["aborted"]``) and retried. Every rollout records the versions that
produced it in ``metrics["policy_versions"]``.

:func:`collect_async` is the synchronous entry point: it runs the stream to the
end and returns the groups in task order, like :func:`collect`.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

from rollgym.core.agent import Agent
from rollgym.core.errors import ConfigError
from rollgym.rollout.collector import RunPlan, _validate
from rollgym.rollout.episode import DEFAULT_MAX_STEPS, EpisodeLimits, arun_episode
from rollgym.rollout.store import EpisodeRecord, assemble_groups
from rollgym.rollout.types import RolloutGroup, Trajectory

ProgressCallback = Callable[[int, int], None]


def _spawn(agent: Agent) -> Agent:
    spawn = getattr(agent, "spawn", None)
    return spawn() if callable(spawn) else copy.deepcopy(agent)


def _stale(traj: Trajectory, current: int, max_staleness: int) -> str | None:
    versions = traj.metrics.get("policy_versions") or []
    if versions and current - min(versions) > max_staleness:
        return f"stale: produced by policy version {min(versions)}, current {current}, max staleness {max_staleness}"
    return None


async def stream(
    agent: Agent,
    env_id: str,
    n_tasks: int,
    group_size: int,
    *,
    split: str = "test",
    seed: int = 0,
    concurrency: int = 32,
    limits: EpisodeLimits | None = None,
    env_kwargs: dict[str, Any] | None = None,
    out: str | None = None,
    retries: int = 0,
    policy_version: Callable[[], int] | None = None,
    max_staleness: int | None = None,
    progress: ProgressCallback | None = None,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> AsyncIterator[RolloutGroup]:
    """Yield one :class:`RolloutGroup` per task as soon as its G rollouts finish.

    Args:
        agent: An agent (``act`` or ``aact``); each in-flight episode gets its own copy.
        env_id, n_tasks, group_size, split, seed, env_kwargs, out: as for :func:`collect`
            (``out`` resumes: finished episodes are not played again, and groups already
            complete in the file are yielded first).
        concurrency: Most episodes in flight at once.
        limits: Step, token and time caps per episode (:class:`EpisodeLimits`).
        retries: How many times a failed, timed-out or stale rollout is played again.
        policy_version, max_staleness: Refuse rollouts from weights too far behind.
        progress: Called as ``progress(done, total)`` in episodes.
        on_episode: Called with every finished :class:`Trajectory` (first those found in ``out``).
    """
    limits = limits or EpisodeLimits()
    _validate(n_tasks, group_size, seed, limits.max_steps)
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency must be an integer >= 1, got {concurrency!r}.")
    if retries < 0:
        raise ConfigError(f"retries must be >= 0, got {retries!r}.")
    if (max_staleness is None) != (policy_version is None):
        raise ConfigError("Pass both policy_version and max_staleness, or neither.")
    plan = RunPlan.prepare(agent, env_id, n_tasks, group_size, split, seed, out, env_kwargs, limits.max_steps)
    jobs = plan.jobs()
    total = n_tasks * group_size
    done = total - len(jobs)
    if on_episode is not None:
        for resumed in plan.records.values():
            on_episode(resumed.trajectory)
    if progress is not None:
        progress(done, total)
    remaining = {i: sum(1 for (ti, _) in jobs if ti == i) for i in range(n_tasks)}
    envs: asyncio.Queue[Any] = asyncio.Queue()
    envs.put_nowait(plan.env)
    created = 1
    agents: asyncio.Queue[Agent] = asyncio.Queue()
    agents.put_nowait(_spawn(agent))
    agents_made = 1
    semaphore = asyncio.Semaphore(concurrency)

    async def take(queue: asyncio.Queue[Any], make: Callable[[], Any], made: int) -> tuple[Any, int]:
        if queue.empty() and made < concurrency:
            return make(), made + 1
        return await queue.get(), made

    async def play(i: int, j: int) -> tuple[int, EpisodeRecord]:
        nonlocal created, agents_made
        async with semaphore:
            env, created = await take(envs, plan.new_env, created)
            player, agents_made = await take(agents, lambda: _spawn(agent), agents_made)
            args = plan.job_args(i, j)
            args.pop("max_steps")
            attempts = 0
            try:
                while True:
                    attempts += 1
                    traj, task = await arun_episode(env, player, limits=limits, **args)
                    reason = None
                    if policy_version is not None and max_staleness is not None:
                        reason = _stale(traj, policy_version(), max_staleness)
                    if reason is not None:
                        traj.status, traj.reward = "aborted", None
                        traj.info = {**traj.info, "aborted": reason}
                    stage = traj.info.get("failure", {}).get("stage")
                    if traj.status == "failed" and stage in {"reset", "step", "episode"}:
                        env.close()  # a crashed or timed-out env may be in any state: start a fresh one
                        env = plan.new_env()
                    if traj.usable or attempts > retries:
                        if attempts > 1:
                            traj.metrics["attempts"] = attempts
                        return i, EpisodeRecord(i, task, traj)
            finally:
                envs.put_nowait(env)
                agents.put_nowait(player)

    complete_before = [i for i in range(n_tasks) if remaining[i] == 0]
    pending = {asyncio.ensure_future(play(i, j)) for i, j in jobs}
    try:
        for i in complete_before:
            yield _group(plan, i)
        while pending:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for fut in finished:
                i, record = fut.result()
                plan.record(i, record)
                done += 1
                if on_episode is not None:
                    on_episode(record.trajectory)
                if progress is not None:
                    progress(done, total)
                remaining[i] -= 1
                if remaining[i] == 0:
                    yield _group(plan, i)
    finally:
        for fut in pending:
            fut.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        while not envs.empty():
            envs.get_nowait().close()
        if plan.writer is not None:
            plan.writer.close()


def _group(plan: RunPlan, i: int) -> RolloutGroup:
    episodes = [r for (ti, _), r in plan.records.items() if ti == i]
    return assemble_groups(episodes, plan.group_size)[0]


def collect_async(
    agent: Agent,
    env_id: str,
    n_tasks: int,
    group_size: int,
    split: str = "test",
    seed: int = 0,
    *,
    concurrency: int = 32,
    limits: EpisodeLimits | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    **kwargs: Any,
) -> list[RolloutGroup]:
    """Run :func:`stream` to the end; return the groups in task order.

    Example:
        >>> from rollgym.agents import OracleAgent
        >>> groups = collect_async(OracleAgent(), "Countdown-v0", n_tasks=2, group_size=2)
        >>> [t.reward for t in groups[0].trajectories]
        [1.0, 1.0]
    """
    limits = limits or EpisodeLimits(max_steps=max_steps)

    async def run() -> list[RolloutGroup]:
        return [g async for g in stream(agent, env_id, n_tasks, group_size, split=split, seed=seed,
                                        concurrency=concurrency, limits=limits, **kwargs)]

    groups = asyncio.run(run())
    return sorted(groups, key=lambda g: g.group_id)

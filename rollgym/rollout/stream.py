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
import math
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from rollgym.core.agent import Agent
from rollgym.core.errors import ConfigError
from rollgym.rollout.collector import make_env
from rollgym.rollout.engine import Engine, EpisodePlayer, stale_reason
from rollgym.rollout.episode import DEFAULT_MAX_STEPS, EpisodeLimits
from rollgym.rollout.pool import EnvPool
from rollgym.rollout.spec import RunSpec
from rollgym.rollout.store import EpisodeRecord
from rollgym.rollout.types import RolloutGroup, Trajectory

if TYPE_CHECKING:
    from rollgym.rollout.curriculum import TaskChooser

ProgressCallback = Callable[[int, int], None]

#: A synchronous agent's episodes run inline; between them the stream yields to the event loop at
#: least this often (each yield is a loop iteration: yielding after every short episode costs a
#: fifth of a Countdown episode).
YIELD_EVERY_S = 0.002


async def stream(agent: Agent, env_id: str, n_tasks: int, group_size: int, *, split: str = "test", seed: int = 0,
                 concurrency: int = 32, limits: EpisodeLimits | None = None, env_kwargs: dict[str, Any] | None = None,
                 out: str | None = None, retries: int = 0, policy_version: Callable[[], int] | None = None,
                 max_staleness: int | None = None, progress: ProgressCallback | None = None,
                 env_pool: EnvPool | None = None, task_chooser: TaskChooser | None = None,
                 on_episode: Callable[[Trajectory], None] | None = None,
                 prefix_cache: bool | None = None) -> AsyncIterator[RolloutGroup]:
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
        env_pool: Take envs from this :class:`~rollgym.rollout.pool.EnvPool` and give them back
            at the end (for loops that collect every step).
        task_chooser: Chooses each group's reset options before any episode runs (a
            :class:`~rollgym.rollout.curriculum.Curriculum` picks its difficulty level); it sees
            each group as it is yielded, and the stream's end closes its step. Not with ``out``.
        on_episode: Called with every finished :class:`Trajectory` (first those found in ``out``).
        prefix_cache: Switch the agent's backend's prefix cache on or off, as for :func:`collect`.
    """
    spec = RunSpec.of(env_id, n_tasks, group_size, split=split, seed=seed, out=out, env_kwargs=env_kwargs,
                      limits=limits)
    async for group in drive_stream(spec, agent, concurrency=concurrency, retries=retries,
                                    policy_version=policy_version, max_staleness=max_staleness, progress=progress,
                                    env_pool=env_pool, task_chooser=task_chooser, on_episode=on_episode,
                                    prefix_cache=prefix_cache):
        yield group


async def drive_stream(spec: RunSpec, agent: Agent, *, concurrency: int = 32, retries: int = 0,
                       policy_version: Callable[[], int] | None = None, max_staleness: int | None = None,
                       positions: list[int] | None = None, straggler_fraction: float = 1.0,
                       **engine_options: Any) -> AsyncIterator[RolloutGroup]:
    """The asyncio driver: :func:`stream` of a :class:`~rollgym.rollout.spec.RunSpec`.

    ``positions``, when given, receives the task index of each group as it is yielded (a layout's
    group ids need not sort in task order). ``straggler_fraction`` below 1 cuts the stragglers: once
    that share of the run's episodes has finished, the episodes still running are cancelled and those
    not started are dropped, each recorded with status ``"aborted"`` and ``info["aborted"] ==
    "straggler"`` (never a score of 0), as WebGym does to keep a batch from waiting on its slowest
    member. ``engine_options`` go to :class:`~rollgym.rollout.engine.Engine` (``progress``,
    ``on_episode``, ``env_pool``, ``task_chooser``, ``prefix_cache``, ``make_env``).
    """
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency must be an integer >= 1, got {concurrency!r}.")
    if (not isinstance(straggler_fraction, (int, float)) or isinstance(straggler_fraction, bool)
            or not 0.0 < straggler_fraction <= 1.0):
        raise ConfigError(f"straggler_fraction must be in (0, 1], got {straggler_fraction!r}.")
    if retries < 0:
        raise ConfigError(f"retries must be >= 0, got {retries!r}.")
    if (max_staleness is None) != (policy_version is None):
        raise ConfigError("Pass both policy_version and max_staleness, or neither.")
    limits = spec.limits
    engine = Engine(spec, agent, keep_agent=False, **{"make_env": make_env, **engine_options})
    task_chooser = engine.plan.chooser
    plan = engine.plan
    engine.start()
    jobs = engine.jobs
    # Jobs start in task order and at most `concurrency` run at once, so groups finish roughly in order
    # and a yielded group's records are dropped: memory stays flat however many tasks a run has.
    remaining = engine.remaining()
    players: list[EpisodePlayer] = []
    finished: asyncio.Queue[EpisodeRecord | BaseException] = asyncio.Queue()

    async def play(i: int, j: int) -> EpisodeRecord:
        player = players.pop() if players else engine.player()
        job = engine.job(i, j)
        attempts = 0
        try:
            while True:
                attempts += 1
                if inline:  # no timeouts, no awaitable agent or env: the synchronous driver, without coroutines
                    record = player.play(job)
                else:
                    record = await player.aplay(job)
                traj = record.trajectory
                reason = None
                if policy_version is not None and max_staleness is not None:
                    reason = stale_reason(traj, policy_version(), max_staleness)
                if reason is not None:
                    traj.status, traj.reward = "aborted", None
                    traj.info = {**traj.info, "aborted": reason}
                if traj.usable or attempts > retries:
                    if attempts > 1:
                        traj.metrics["attempts"] = attempts
                    return record
        finally:
            players.append(player)

    def report(future: asyncio.Future[EpisodeRecord]) -> None:
        if not future.cancelled():
            exc = future.exception()
            finished.put_nowait(exc if exc is not None else future.result())

    queued = iter(jobs)
    running: set[asyncio.Future[EpisodeRecord]] = set()
    started: dict[asyncio.Future[EpisodeRecord], tuple[int, int]] = {}
    needed = math.ceil(straggler_fraction * spec.total) if straggler_fraction < 1.0 else None

    async def cut_stragglers() -> None:
        """Stop every episode still running or queued; each becomes an aborted record in the queue."""
        nonlocal queued, needed
        needed = None
        cancelled = [future for future in list(started) if future.cancel()]
        for future in cancelled:
            finished.put_nowait(engine.abort(*started[future], "straggler"))
        for i, j in queued:
            finished.put_nowait(engine.abort(i, j, "straggler"))
        queued = iter(())
        await asyncio.gather(*cancelled, return_exceptions=True)  # their players are back before the run ends
    # A synchronous agent on an in-process env, without timeouts, never yields to the loop: its episodes
    # would run one after another inside their tasks anyway, so they run here directly, without a task
    # each. A remote env (rollgym.remote: areset/astep) awaits the network, so its episodes overlap.
    remote = getattr(plan.env, "unwrapped", plan.env)
    inline = (not engine.caps.asynchronous and limits.step_timeout_s is None
              and limits.episode_timeout_s is None and not callable(getattr(remote, "astep", None)))

    def launch() -> None:
        while not inline and len(running) < concurrency:
            job = next(queued, None)
            if job is None:
                return
            future = asyncio.ensure_future(play(*job))
            running.add(future)
            started[future] = job
            future.add_done_callback(running.discard)
            future.add_done_callback(lambda done: started.pop(done, None))
            future.add_done_callback(report)

    next_yield = 0.0
    try:
        for i in range(spec.n_tasks):
            if remaining[i] == 0:
                if positions is not None:
                    positions.append(i)
                yield engine.take_group(i)
        launch()
        while True:
            if not finished.empty():  # finished episodes, and the aborted records of a straggler cut
                result = finished.get_nowait()
                if isinstance(result, BaseException):
                    raise result
                record = result
            elif inline:
                job = next(queued, None)
                if job is None:
                    break
                record = await play(*job)
                if time.perf_counter() >= next_yield:  # let the loop's other tasks run, at least every 2 ms
                    await asyncio.sleep(0)
                    next_yield = time.perf_counter() + YIELD_EVERY_S
            else:
                if not running:
                    break
                result = await finished.get()
                if isinstance(result, BaseException):
                    raise result
                record = result
            i = record.task_index
            engine.finish(record)
            remaining[i] -= 1
            if needed is not None and engine.done >= needed:
                await cut_stragglers()
            launch()
            if remaining[i] == 0:
                group = engine.take_group(i)
                if task_chooser is not None:
                    task_chooser.observe(group)
                if positions is not None:
                    positions.append(i)
                yield group
        if task_chooser is not None:
            task_chooser.end_step()
    finally:
        leftover = list(running)
        for future in leftover:
            future.cancel()
        if leftover:
            await asyncio.gather(*leftover, return_exceptions=True)
        engine.close([player.env for player in players])


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
    known = {"out", "env_kwargs", "retries", "policy_version", "max_staleness", "progress", "env_pool",
             "task_chooser", "on_episode", "prefix_cache"}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise TypeError(f"collect_async() got an unexpected keyword argument {unknown[0]!r}")
    fields = {k: kwargs.pop(k) for k in ("out", "env_kwargs") if k in kwargs}
    spec = RunSpec.of(env_id, n_tasks, group_size, split=split, seed=seed, limits=limits, max_steps=max_steps,
                      **fields)
    return drive_async(spec, agent, concurrency=concurrency, **kwargs)


def drive_async(spec: RunSpec, agent: Agent, *, concurrency: int = 32, **options: Any) -> list[RolloutGroup]:
    """The asyncio driver to the end: :func:`drive_stream` run on a new event loop; the groups in task order."""

    positions: list[int] = []

    async def run() -> list[RolloutGroup]:
        return [g async for g in drive_stream(spec, agent, concurrency=concurrency, positions=positions, **options)]

    groups = asyncio.run(run())
    return [group for _, group in sorted(zip(positions, groups), key=lambda pair: pair[0])]

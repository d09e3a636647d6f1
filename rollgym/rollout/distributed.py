"""Collection on a Ray cluster: env-worker actors, placed by what the env needs, each playing batches of episodes.

:func:`collect_ray` has the same arguments and results as
:func:`~rollgym.rollout.collect` and uses the same results file, so a run can
move between a laptop and a cluster. It runs on the Ray instance already
initialised in the process, else on the cluster at ``address`` (a GCS address
such as ``"10.0.0.1:6379"``, ``"auto"``, or a ``ray://`` client address), else
on a local Ray instance it starts.

Placement: a family declares what one of its workers needs
(:func:`~rollgym.rollout.placement.env_needs`: a browser, a sandbox, a Stockfish,
CPUs); workers are spread over the alive nodes that offer it, pinned to their node,
no more on a node than its resources hold. Every trajectory records the node and
the worker that played it in ``metrics["node"]`` (the Ray node id),
``metrics["node_ip"]`` and ``metrics["worker"]`` (the Ray actor id).

Cost: each :class:`EnvWorker` actor keeps its envs and agents across episodes and
plays a *batch* of episodes per remote call, with up to ``episodes_per_worker``
of them in flight at once for agents that await a model (``aact``). Batches are
large while much work is left (the queue shared out over twice the workers) and
shrink towards the end, so Ray's cost per call (about a millisecond) is paid a few
times per worker rather than once per episode, and no worker is left with a long
tail. LLM agents inside workers talk to inference servers over HTTP (an
``OpenAIBackend`` pointed at vLLM or ``rollgym serve-model``), so generation is
batched by the servers, not by the workers.

Faults: the driver writes every finished episode to the results file as soon as
its batch arrives. When a worker or its whole node dies (gracefully or not), the
batch it was playing goes back to the front of the queue and a replacement worker
starts on a node that is still alive; episodes are pure functions of their seeds,
so the replayed episodes, and the run's results, are those of a run without the
fault. A node that joins mid-run and offers what the env needs gets its share of
workers (``num_workers`` over the nodes there were at the start) and work.

Agents are built inside the workers by ``agent_factory``, a picklable callable
(an agent class such as ``OracleAgent``, or a ``functools.partial``).
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import AsyncIterator, Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from rollgym.core.agent import Agent, capabilities
from rollgym.core.closing import Closeable
from rollgym.core.errors import ConfigError, RollgymError
from rollgym.core.optional import import_optional
from rollgym.rollout.collector import make_env
from rollgym.rollout.engine import Engine, EpisodeJob, EpisodePlayer
from rollgym.rollout.episode import DEFAULT_MAX_STEPS, EpisodeLimits
from rollgym.rollout.placement import Needs, env_needs
from rollgym.rollout.spec import RunSpec
from rollgym.rollout.types import RolloutGroup

ProgressCallback = Callable[[int, int], None]

#: The most episodes one remote call carries (a lost worker replays at most this many).
MAX_BATCH = 256
#: How often (seconds) the driver looks for nodes that joined the cluster.
NODE_POLL_S = 1.0


class ClusterError(RollgymError, RuntimeError):
    """The cluster cannot run the env's workers: no alive node offers what they need."""


def _import_ray() -> Any:
    return import_optional("ray", "Distributed collection", "Ray", "ray")


class EnvWorker:
    """A Ray actor body: a pool of envs and of agents (built by ``agent_factory``), playing batches on request."""

    def __init__(self, env_id: str, split: str, env_kwargs: dict[str, Any], agent_factory: Callable[[], Agent],
                 limits: EpisodeLimits, concurrency: int = 8) -> None:
        import ray

        import rollgym

        self.make = lambda: rollgym.make(env_id, split=split, **env_kwargs)
        self.agent_factory = agent_factory
        self.limits = limits
        self.concurrency = concurrency
        self.players: list[EpisodePlayer] = []
        self.asynchronous: bool | None = None
        context = ray.get_runtime_context()
        self.place = {"node": context.get_node_id(), "node_ip": ray.util.get_node_ip_address(),
                      "worker": context.get_actor_id()}
        self.slots: asyncio.Semaphore | None = None

    def _player(self) -> EpisodePlayer:
        if self.players:
            return self.players.pop()
        agent = self.agent_factory()
        if self.asynchronous is None:
            self.asynchronous = capabilities(agent).asynchronous
        return EpisodePlayer(self.make(), agent, self.make, self.limits)

    async def play(self, job: EpisodeJob) -> bytes:
        """Play one episode and return its results-file line."""
        player = self._player()
        try:
            record = await player.aplay(job)
        finally:
            self.players.append(player)
        record.trajectory.metrics.update(self.place)
        return record.to_line()

    async def play_many(self, jobs: list[EpisodeJob]) -> list[bytes]:
        """Play a batch of episodes; return their results-file lines in order.

        Agents that await a model play up to ``concurrency`` episodes at once (across
        the worker's calls); others play one after another, which costs less.
        """
        if not self.players:
            self.players.append(self._player())
        if not self.asynchronous:
            return [await self.play(job) for job in jobs]
        if self.slots is None:
            self.slots = asyncio.Semaphore(self.concurrency)
        slots = self.slots

        async def one(job: EpisodeJob) -> bytes:
            async with slots:
                return await self.play(job)

        return list(await asyncio.gather(*(one(job) for job in jobs)))

    def where(self) -> dict[str, Any]:
        """The worker's node id, node IP, actor id and process id (tests kill it)."""
        import os

        return {**self.place, "pid": os.getpid()}

    def pid(self) -> int:
        """The worker's process id (tests kill it)."""
        import os

        return os.getpid()


@dataclass
class _Worker:
    handle: Any
    node: str
    in_flight: int = 0


@dataclass
class _Fleet:
    """The run's workers and the nodes they sit on; grows onto joining nodes, replaces the lost."""

    ray: Any
    actor: Any
    needs: Needs
    args: tuple[Any, ...]
    per_node: int
    workers: list[_Worker] = field(default_factory=list)
    known: set[str] = field(default_factory=set)
    suspect: set[str] = field(default_factory=set)
    polled: float = 0.0

    def nodes(self) -> dict[str, int]:
        """Alive nodes that hold at least one worker: node id -> how many."""
        out = {}
        for node in self.ray.nodes():
            capacity = self.needs.capacity(node.get("Resources", {}))
            if node.get("Alive") and capacity > 0:
                out[node["NodeID"]] = capacity
        return out

    def start(self, count: int, nodes: dict[str, int]) -> int:
        """Start up to ``count`` workers spread over ``nodes``, emptiest first; returns how many started."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        started = 0
        for _ in range(count):
            held = {node: sum(w.node == node for w in self.workers) for node in nodes}
            free = [node for node in nodes if held[node] < nodes[node]]
            # a node that just lost a worker may be dying (its death is seen seconds later): others first
            free = [node for node in free if node not in self.suspect] or free
            if not free:
                break
            node = min(free, key=lambda n: (held[n], n))
            strategy = NodeAffinitySchedulingStrategy(node, soft=False)
            self.workers.append(_Worker(self.actor.options(scheduling_strategy=strategy).remote(*self.args), node))
            started += 1
        return started

    def replace(self, lost: _Worker) -> None:
        """Drop a lost worker and start another on a node still alive."""
        self.ray.kill(lost.handle, no_restart=True)
        self.workers.remove(lost)
        self.suspect.add(lost.node)
        nodes = self.nodes()
        if self.start(1, nodes) == 0 and not self.workers:
            raise ClusterError(f"No alive node offers what a worker needs ({self.needs.describe()}): "
                               "every worker was lost.")

    def grow(self) -> None:
        """Give each node that joined since the last look its share of workers (at most every NODE_POLL_S)."""
        now = time.monotonic()
        if now - self.polled < NODE_POLL_S:
            return
        self.polled = now
        nodes = self.nodes()
        joined = [node for node in nodes if node not in self.known]
        self.known |= set(nodes)
        for node in joined:
            self.start(self.per_node, {node: nodes[node]})


def _connect(ray: Any, address: str | None) -> None:
    if ray.is_initialized():
        return
    if address is None:
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    else:
        ray.init(address=address, log_to_driver=False, configure_logging=False)


def collect_ray(agent_factory: Callable[[], Agent], env_id: str, n_tasks: int, group_size: int, split: str = "test",
                seed: int = 0, out: str | None = None, env_kwargs: dict[str, Any] | None = None, *,
                address: str | None = None, needs: Needs | None = None, num_workers: int = 2,
                episodes_per_worker: int = 8, limits: EpisodeLimits | None = None, max_steps: int = DEFAULT_MAX_STEPS,
                progress: ProgressCallback | None = None, on_result: Callable[[int, list[Any]], None] | None = None,
                max_worker_restarts: int | None = None) -> list[RolloutGroup]:
    """Play ``n_tasks`` × ``group_size`` episodes on Ray workers; see the module docstring.

    Args:
        address: The cluster to join when Ray is not initialised in this process yet
            (``ray.init(address=...)``); ``None`` starts a local Ray instance.
        needs: What each worker needs from its node; default
            :func:`~rollgym.rollout.placement.env_needs` of the env.
        num_workers: Workers at the start, spread over the nodes that offer ``needs``
            (fewer when those nodes hold fewer).
        episodes_per_worker: Episodes a worker plays at once, for agents that await a model.
        on_result: ``on_result(done, workers)`` after every finished episode, with the live
            worker handles (tests use it to kill a worker or a node mid-run).
        max_worker_restarts: Lost workers replaced before the run gives up; default
            ``max(8, 2 * num_workers)``.

    Raises:
        ClusterError: when no alive node offers what a worker needs.

    Example:
        >>> from rollgym.agents import OracleAgent
        >>> groups = collect_ray(OracleAgent, "Countdown-v0", n_tasks=4, group_size=2)  # doctest: +SKIP
        >>> groups[0].trajectories[0].metrics["node"]  # doctest: +SKIP
        '5f0c...'
    """
    spec = RunSpec.of(env_id, n_tasks, group_size, split=split, seed=seed, out=out, env_kwargs=env_kwargs,
                      limits=limits, max_steps=max_steps)
    return drive_ray(spec, agent_factory, address=address, needs=needs, num_workers=num_workers,
                     episodes_per_worker=episodes_per_worker, progress=progress, on_result=on_result,
                     max_worker_restarts=max_worker_restarts)


def drive_ray(spec: RunSpec, agent_factory: Callable[[], Agent], *, address: str | None = None,
              needs: Needs | None = None, num_workers: int = 2, episodes_per_worker: int = 8,
              progress: ProgressCallback | None = None, on_result: Callable[[int, list[Any]], None] | None = None,
              max_worker_restarts: int | None = None, kept: RayWorkers | None = None) -> list[RolloutGroup]:
    """The Ray driver: play ``spec`` on env-worker actors; :func:`collect_ray`'s result."""
    run = _RayRun(spec, agent_factory, address=address, needs=needs, num_workers=num_workers,
                  episodes_per_worker=episodes_per_worker, progress=progress, on_result=on_result,
                  max_worker_restarts=max_worker_restarts, kept=kept)
    for _ in run.episodes():
        pass
    run.engine.plan.close_writer()
    return run.engine.groups()


async def stream_ray(agent_factory: Callable[[], Agent], env_id: str, n_tasks: int, group_size: int,
                     split: str = "test", seed: int = 0, out: str | None = None,
                     env_kwargs: dict[str, Any] | None = None, **options: Any) -> AsyncIterator[RolloutGroup]:
    """:func:`~rollgym.rollout.stream` on Ray: yield each task's group as soon as its G episodes finish.

    Takes :func:`collect_ray`'s arguments (``address``, ``needs``, ``num_workers``,
    ``episodes_per_worker``, ``limits``, ``max_steps``, ``progress``, ``max_worker_restarts``):
    placement, faults and the results file behave the same, and groups already complete in
    ``out`` are yielded first. The driver's loop runs in a thread, so the event loop stays free
    for the caller (a trainer that updates while the next groups are played).

    Example:
        >>> from rollgym.agents import OracleAgent
        >>> async def rewards():  # doctest: +SKIP
        ...     return [g.rewards async for g in stream_ray(OracleAgent, "Countdown-v0", 4, 2, address="auto")]
    """
    async for _, group in _stream_ray(agent_factory, env_id, n_tasks, group_size, split, seed, out, env_kwargs,
                                      **options):
        yield group


async def collect_ray_async(agent_factory: Callable[[], Agent], env_id: str, n_tasks: int, group_size: int,
                            split: str = "test", seed: int = 0, out: str | None = None,
                            env_kwargs: dict[str, Any] | None = None, **options: Any) -> list[RolloutGroup]:
    """:func:`stream_ray` to the end, awaited: ``collect_async`` on Ray; the groups in task order."""
    groups = dict([item async for item in _stream_ray(agent_factory, env_id, n_tasks, group_size, split, seed, out,
                                                      env_kwargs, **options)])
    return [groups[i] for i in sorted(groups)]


async def _stream_ray(agent_factory: Callable[[], Agent], env_id: str, n_tasks: int, group_size: int, split: str,
                      seed: int, out: str | None, env_kwargs: dict[str, Any] | None, *, address: str | None = None,
                      needs: Needs | None = None, num_workers: int = 2, episodes_per_worker: int = 8,
                      limits: EpisodeLimits | None = None, max_steps: int = DEFAULT_MAX_STEPS,
                      progress: ProgressCallback | None = None, max_worker_restarts: int | None = None,
                      kept: RayWorkers | None = None) -> AsyncIterator[tuple[int, RolloutGroup]]:
    spec = RunSpec.of(env_id, n_tasks, group_size, split=split, seed=seed, out=out, env_kwargs=env_kwargs,
                      limits=limits, max_steps=max_steps)
    run = _RayRun(spec, agent_factory, address=address, needs=needs, num_workers=num_workers,
                  episodes_per_worker=episodes_per_worker, progress=progress, on_result=None,
                  max_worker_restarts=max_worker_restarts, kept=kept)
    engine = run.engine
    remaining = engine.remaining()
    for i in range(n_tasks):
        if remaining[i] == 0:
            yield i, engine.take_group(i)
    episodes = run.episodes()

    def advance() -> int | None:
        return next(episodes, None)

    try:
        while True:
            index = await asyncio.to_thread(advance)
            if index is None:
                break
            remaining[index] -= 1
            if remaining[index] == 0:
                yield index, engine.take_group(index)
    finally:
        await asyncio.to_thread(episodes.close)  # stops the workers and closes the results file
        engine.plan.close_writer()


class RayWorkers(Closeable):
    """Env-worker actors kept from one run to the next: a trainer's rollout step on Ray.

    :func:`collect_ray` starts its workers for each call and stops them at its end; on a small
    machine starting them costs about a second a call (a process each, importing rollgym), which
    a trainer that collects every step would pay every step. ``RayWorkers`` starts them at its
    first run and keeps them, with their envs and agents, until :meth:`close`: every
    :meth:`collect` or :meth:`stream` after the first plays on workers that are already warm.
    Placement, faults (a lost worker is replaced, its batch replayed with the same seeds) and
    results files behave as in :func:`collect_ray`; a worker lost between runs is replaced when
    the next run finds it gone.

    The settings that make a worker (env, split, env arguments, agent factory, limits) are fixed
    at construction; each run chooses its tasks (``n_tasks``, ``group_size``, ``seed``, ``out``).

    Example:
        >>> from rollgym.agents import OracleAgent
        >>> with RayWorkers(OracleAgent, "Countdown-v0", num_workers=2) as workers:  # doctest: +SKIP
        ...     for step in range(3):
        ...         groups = workers.collect(n_tasks=8, group_size=4, seed=step)
    """

    def __init__(self, agent_factory: Callable[[], Agent], env_id: str, *, split: str = "test",
                 env_kwargs: dict[str, Any] | None = None, address: str | None = None, needs: Needs | None = None,
                 num_workers: int = 2, episodes_per_worker: int = 8, limits: EpisodeLimits | None = None,
                 max_steps: int = DEFAULT_MAX_STEPS, max_worker_restarts: int | None = None) -> None:
        if num_workers < 1 or episodes_per_worker < 1:
            raise ConfigError("num_workers and episodes_per_worker must be at least 1.")
        self.agent_factory, self.env_id, self.split, self.env_kwargs = agent_factory, env_id, split, env_kwargs
        self.options: dict[str, Any] = {
            "address": address, "needs": needs, "num_workers": num_workers, "episodes_per_worker": episodes_per_worker,
            "limits": limits or EpisodeLimits(max_steps=max_steps), "max_worker_restarts": max_worker_restarts,
        }
        self.fleet: _Fleet | None = None
        self.closed = False

    @property
    def handles(self) -> list[Any]:
        """The live workers' actor handles (empty before the first run and after :meth:`close`)."""
        return [] if self.fleet is None else [w.handle for w in self.fleet.workers]

    def _check_open(self) -> None:
        if self.closed:
            raise ConfigError("These Ray workers are closed; make a new RayWorkers to collect again.")

    def collect(self, n_tasks: int, group_size: int, seed: int = 0, out: str | None = None, *,
                progress: ProgressCallback | None = None,
                on_result: Callable[[int, list[Any]], None] | None = None) -> list[RolloutGroup]:
        """Play ``n_tasks`` × ``group_size`` episodes on the kept workers: :func:`collect_ray`'s result."""
        self._check_open()
        options = {k: v for k, v in self.options.items() if k != "limits"}
        spec = RunSpec.of(self.env_id, n_tasks, group_size, split=self.split, seed=seed, out=out,
                          env_kwargs=self.env_kwargs, limits=self.options["limits"])
        return drive_ray(spec, self.agent_factory, progress=progress, on_result=on_result, kept=self, **options)

    async def stream(self, n_tasks: int, group_size: int, seed: int = 0, out: str | None = None, *,
                     progress: ProgressCallback | None = None) -> AsyncIterator[RolloutGroup]:
        """:func:`stream_ray` on the kept workers: each task's group as soon as its episodes finish."""
        self._check_open()
        options = {k: v for k, v in self.options.items() if k != "limits"}
        async for _, group in _stream_ray(self.agent_factory, self.env_id, n_tasks, group_size, self.split, seed, out,
                                          self.env_kwargs, limits=self.options["limits"], progress=progress,
                                          kept=self, **options):
            yield group

    def close(self) -> None:
        """Stop the workers; further runs raise. Safe to call twice."""
        if self.fleet is not None:
            for worker in self.fleet.workers:
                self.fleet.ray.kill(worker.handle, no_restart=True)
            self.fleet = None
        self.closed = True


class _RayRun:
    """One run on Ray: the plan, and :meth:`episodes`, the driver's loop, which yields each finished task index."""

    def __init__(self, spec: RunSpec, agent_factory: Callable[[], Agent], *, address: str | None,
                 needs: Needs | None, num_workers: int, episodes_per_worker: int,
                 progress: ProgressCallback | None, on_result: Callable[[int, list[Any]], None] | None,
                 max_worker_restarts: int | None, kept: RayWorkers | None = None) -> None:
        self.ray = _import_ray()
        self.kept = kept
        if num_workers < 1 or episodes_per_worker < 1:
            raise ConfigError("num_workers and episodes_per_worker must be at least 1.")
        if not callable(agent_factory):
            raise ConfigError("agent_factory must be a picklable callable that returns an agent, e.g. OracleAgent.")
        # the engine checks the env and the agent here; the workers build their own envs and agents
        self.engine = engine = Engine(spec, agent_factory(), progress=progress, make_env=make_env)
        engine.discard_env()
        self.plan = plan = engine.plan
        self.needs = needs or env_needs(plan.info.id, plan.env_kwargs)
        self.restarts_left = max(8, 2 * num_workers) if max_worker_restarts is None else max_worker_restarts
        self.jobs = engine.jobs
        self.address, self.num_workers, self.on_result = address, num_workers, on_result
        self.worker_args = (plan.info.id, spec.split, plan.env_kwargs, agent_factory, spec.limits,
                            episodes_per_worker)
        engine.start()

    def episodes(self) -> Generator[int, None, None]:
        """Play every job; yield the task index of each episode once it is recorded (and written)."""
        ray, plan = self.ray, self.plan
        if not self.jobs:
            return
        _connect(ray, self.address)
        lost_errors = (ray.exceptions.RayActorError, ray.exceptions.ActorUnschedulableError,
                       ray.exceptions.NodeDiedError, ray.exceptions.WorkerCrashedError,
                       ray.exceptions.ObjectLostError)
        fleet = self.kept.fleet if self.kept is not None else None
        if fleet is None or not fleet.workers:
            fleet = self._start_fleet()
            if self.kept is not None:
                self.kept.fleet = fleet
        queue = list(self.jobs)
        in_flight: dict[Any, tuple[list[tuple[int, int]], _Worker]] = {}

        def submit(batch: list[tuple[int, int]], worker: _Worker) -> None:
            calls = [self.engine.job(i, j) for i, j in batch]
            in_flight[worker.handle.play_many.remote(calls)] = (batch, worker)
            worker.in_flight += 1

        try:
            while queue or in_flight:
                fleet.grow()
                for worker in sorted(fleet.workers, key=lambda w: w.in_flight):
                    if not queue:
                        break
                    if worker.in_flight < 2:  # two batches per worker: it plays one while the driver reads the other
                        size = min(MAX_BATCH, max(1, math.ceil(len(queue) / (2 * len(fleet.workers)))))
                        batch, queue = queue[:size], queue[size:]
                        submit(batch, worker)
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=max(NODE_POLL_S, 0.1))
                if not ready:
                    continue
                ref = ready[0]
                batch, worker = in_flight.pop(ref)
                worker.in_flight -= 1
                try:
                    lines = ray.get(ref)
                except lost_errors:
                    # the worker or its node died: its batch goes back to the queue, played again with the same seeds
                    queue = batch + queue
                    if worker in fleet.workers:
                        self.restarts_left -= 1
                        if self.restarts_left < 0:
                            raise
                        fleet.replace(worker)
                    continue
                for (i, _), line in zip(batch, lines):
                    self.engine.finish_line(i, line)
                    if self.on_result is not None:
                        self.on_result(self.engine.done, [w.handle for w in fleet.workers])
                    yield i
        finally:
            if self.kept is None:
                for worker in fleet.workers:
                    ray.kill(worker.handle, no_restart=True)
            else:  # kept for the next run; a batch abandoned here (a stream closed early) just finishes unread
                for worker in fleet.workers:
                    worker.in_flight = 0
            plan.close_writer()

    def _start_fleet(self) -> _Fleet:
        """Start ``num_workers`` workers spread over the alive nodes that offer what they need."""
        ray, plan, needs = self.ray, self.plan, self.needs
        actor = ray.remote(max_concurrency=2, **needs.ray_options())(EnvWorker)
        fleet = _Fleet(ray, actor, needs, self.worker_args, per_node=1)
        nodes = fleet.nodes()
        if not nodes:
            plan.close_writer()
            offer = (f"--resources='{json.dumps(dict.fromkeys(needs.resources, 4))}'" if needs.resources
                     else "--num-cpus=4")
            raise ClusterError(f"No alive node of the Ray cluster offers what a {plan.info.id} worker needs "
                               f"({needs.describe()}); start one with `ray start --address=<head> {offer}`.")
        fleet.known = set(nodes)
        fleet.per_node = max(1, math.ceil(self.num_workers / len(nodes)))
        fleet.start(self.num_workers, nodes)
        return fleet


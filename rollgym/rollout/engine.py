"""The episode engine: everything a collection run does per episode, in one place, for every driver.

A run is a :class:`~rollgym.rollout.spec.RunSpec`. :class:`Engine` opens it
(resolves the env, checks the agent, reads the results file back), hands out
its jobs, and records each finished episode (results file, ``on_episode``,
``progress``); :class:`EpisodePlayer` plays one job on one env with one agent.
The drivers only decide *where* and *when* episodes run:

* threads: :func:`~rollgym.rollout.collector.collect` (one thread, or ``workers`` threads);
* asyncio: :func:`~rollgym.rollout.stream.stream` / :func:`~rollgym.rollout.stream.collect_async`;
* Ray: :func:`~rollgym.rollout.distributed.collect_ray` and its stream.

:func:`rollgym.rollout.drivers.run_spec` picks a driver by name. A new collection mode is a new driver over
:class:`Engine` and :class:`EpisodePlayer`; seeds, preflight, agent copies and the
results file stay here.

Seeds and ids: the spec's :class:`~rollgym.rollout.layout.EpisodeLayout` gives them. By default
(:class:`~rollgym.rollout.layout.GroupLayout`) task ``i`` of a run gets the env seed
``SeedSequence(run seed, spawn_key=(0, i))`` and rollout ``j`` of it the agent seed
``SeedSequence(run seed, spawn_key=(1, i, j))``, never ``seed + i``, so streams of different tasks
and runs never overlap. Other layouts are how the trainers' fixed task lists
(:class:`~rollgym.rollout.layout.TaskListLayout`) and seated self-play
(:class:`~rollgym.rollout.layout.SeatLayout`) keep their own seeds on this engine.
"""

from __future__ import annotations

import copy
import importlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rollgym.core.agent import Agent, BackedAgent, Capabilities, EnvCheckingAgent, SpawningAgent, capabilities, conforms
from rollgym.core.errors import ConfigError, RollgymError
from rollgym.core.registration import EnvInfo, env_info, make
from rollgym.core.task import Task
from rollgym.rollout.episode import EpisodeLimits, arun_episode, run_episode
from rollgym.rollout.layout import EpisodeLayout, GroupLayout
from rollgym.rollout.layout import agent_seed as agent_seed  # re-exported: the engine's public seed rule
from rollgym.rollout.layout import episode_seed as episode_seed
from rollgym.rollout.pool import EnvPool
from rollgym.rollout.spec import RunSpec
from rollgym.rollout.store import EpisodeRecord, ResultsWriter, assemble_groups, loads_line, task_dict
from rollgym.rollout.types import RolloutGroup, Trajectory, to_jsonable

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from rollgym.rollout.curriculum import TaskChooser

ProgressCallback = Callable[[int, int], None]

#: Failure stages after which an env may be in any state: the player replaces it with a fresh one.
RESTART_STAGES = frozenset({"reset", "step", "episode"})


def resolve_env(env_id: str) -> EnvInfo:
    """The :class:`EnvInfo` of ``env_id``; a ``"module:Env-v0"`` id imports ``module`` first, as Gymnasium does.

    Raises:
        UnknownEnvError: when the id is not registered (with the closest ids).
        ConfigError: when the module before the colon cannot be imported.
    """
    if "://" in env_id:  # an env served by `rollgym serve-env`: rollgym.remote registers a proxy id for it
        return importlib.import_module("rollgym.remote").resolve_url(env_id)  # type: ignore[no-any-return]
    if ":" in env_id:
        module = env_id.split(":", 1)[0]
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"Cannot import module {module!r} named in env id {env_id!r} ({exc}).") from exc
    return env_info(env_id)


def agent_name(agent: Agent) -> str:
    """The name an agent reports (``agent.name``), else its class name."""
    try:
        name = agent.name
    except AttributeError:
        name = None
    return str(name or type(agent).__name__)


def run_id(header: Mapping[str, Any]) -> str:
    """A short id of a run's identity, the prefix of its group ids."""
    from rollgym.core.seeding import content_digest

    parts = [f"{name}={to_jsonable(header.get(name))!r}" for name in sorted(header)]
    return content_digest(*parts, length=8)


def use_prefix_cache(agent: Agent, on: bool | None) -> None:
    """Switch the prefix cache of ``agent``'s backend on or off (``None``: leave it as it is).

    The transformers backend keeps and reuses prompts' KV caches
    (:mod:`rollgym.agents.backends.prefix_cache`); the setting stays on the backend after the run.

    Raises:
        ConfigError: when ``on`` is true and the agent has no backend with a prefix cache.
    """
    if on is None:
        return
    if not isinstance(on, bool):
        raise ConfigError(f"prefix_cache must be True, False or None, got {on!r}.")
    backend = agent.backend if conforms(agent, BackedAgent) else None
    if backend is None or not hasattr(type(backend), "prefix_cache"):
        if not on:
            return
        name = getattr(backend, "name", None) or type(backend if backend is not None else agent).__name__
        raise ConfigError(f"prefix_cache=True needs an agent on the transformers backend; {name} has no prefix "
                          "cache (a vLLM engine or server caches prefixes itself: --enable-prefix-caching).")
    backend.prefix_cache = on


def spawn_agent(agent: Agent, caps: Capabilities | None = None) -> Agent:
    """Another agent like ``agent`` for an episode beside its own: ``agent.spawn()``, else a deep copy."""
    spawns = (caps or capabilities(agent)).spawns
    return agent.spawn() if spawns and conforms(agent, SpawningAgent) else copy.deepcopy(agent)


def stale_reason(traj: Trajectory, current: int, max_staleness: int) -> str | None:
    """Why ``traj`` is too old to train on (its oldest token's policy version is more than
    ``max_staleness`` behind ``current``), or ``None`` when it is fresh enough."""
    versions = traj.metrics.get("policy_versions") or []
    if versions and current - min(versions) > max_staleness:
        return f"stale: produced by policy version {min(versions)}, current {current}, max staleness {max_staleness}"
    return None


def preflight(env: Any, seed: int | None) -> None:
    """Reset once so that a configuration mistake the env only sees at reset (an unknown split,
    missing data) is one clear error before any work, not a run of failed rollouts."""
    try:
        env.reset(seed=seed)
    except RollgymError:
        env.close()
        raise
    except Exception:  # a genuine env bug: the rollouts record it as failures
        pass


@dataclass(frozen=True)
class EpisodeJob:
    """One episode of a run: its task index, its seeds and ids, its reset options (picklable, for Ray)."""

    task_index: int
    sample_idx: int
    seed: int | None
    agent_seed: int | None
    traj_id: str
    group_id: str
    env_id: str
    options: dict[str, Any] | None = None
    source: str = "policy"

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`~rollgym.rollout.episode.run_episode` for this job."""
        return {"options": self.options, "seed": self.seed, "agent_seed": self.agent_seed, "traj_id": self.traj_id,
                "group_id": self.group_id, "sample_idx": self.sample_idx, "env_id": self.env_id,
                "source": self.source}


@dataclass(eq=False)
class EpisodePlayer:
    """One env and one agent that play a run's episodes one at a time (synchronously or awaited).

    A failure that may leave the env in any state (stages in :data:`RESTART_STAGES`) replaces the
    env with ``new_env()`` before the next episode. ``step_timings`` records each episode's reset and
    step latencies (:attr:`RunSpec.step_timings <rollgym.rollout.spec.RunSpec>`).
    """

    env: Any
    agent: Agent
    new_env: Callable[[], Any]
    limits: EpisodeLimits
    step_timings: bool = False

    def play(self, job: EpisodeJob) -> EpisodeRecord:
        """Play ``job`` in this thread (:func:`~rollgym.rollout.episode.run_episode`)."""
        trajectory, task = run_episode(self.env, self.agent, limits=self.limits, step_timings=self.step_timings,
                                       **job.kwargs())
        self.settle(trajectory)
        return EpisodeRecord(job.task_index, task, trajectory)

    async def aplay(self, job: EpisodeJob, *,
                    pause: Callable[[], Awaitable[None]] | None = None) -> EpisodeRecord:
        """Play ``job`` on the running loop (:func:`~rollgym.rollout.episode.arun_episode`), with its timeouts."""
        trajectory, task = await arun_episode(self.env, self.agent, limits=self.limits, pause=pause,
                                              step_timings=self.step_timings, **job.kwargs())
        self.settle(trajectory)
        return EpisodeRecord(job.task_index, task, trajectory)

    def settle(self, trajectory: Trajectory) -> None:
        """After an episode: a crashed or timed-out env may be in any state, so start a fresh one."""
        if trajectory.status == "failed" and trajectory.info.get("failure", {}).get("stage") in RESTART_STAGES:
            self.env.close()
            self.env = self.new_env()


@dataclass
class RunPlan:
    """Everything a run needs before its first episode: the env, the results file, the jobs left.

    Built by :meth:`open`, which raises every configuration error (unknown env id,
    bad arguments, a results file from another run) before any episode runs.
    """

    info: EnvInfo
    env: Any
    split: str
    seed: int
    n_tasks: int
    group_size: int
    max_steps: int
    env_kwargs: dict[str, Any]
    prefix: str
    writer: ResultsWriter | None
    records: dict[tuple[int, int], EpisodeRecord]
    env_pool: EnvPool | None = None
    _last_seed: tuple[int, int | None] = (-1, 0)
    _tasks: dict[str, tuple[Task, Task]] = field(default_factory=dict)
    chooser: TaskChooser | None = None
    options: dict[int, dict[str, Any] | None] = field(default_factory=dict)
    spec: RunSpec | None = None
    make_env: Callable[..., Any] = make

    @classmethod
    def open(cls, spec: RunSpec, agent: Agent, *, env_pool: EnvPool | None = None,
             task_chooser: TaskChooser | None = None, make_env: Callable[..., Any] = make,
             preflight_reset: bool = True) -> RunPlan:
        """Resolve the env, check the agent, open (and resume) the results file.

        ``make_env`` builds the run's envs (``rollgym.make``; the drivers pass
        :func:`rollgym.rollout.collector.make_env`, the one place envs are built). ``preflight_reset=False``
        skips the checking reset (:func:`preflight`), for envs whose reset is costly (a browser context):
        a mistake the env only sees at reset then fails the rollouts, with the reason in their ``info``.
        """
        info = resolve_env(spec.env_id)
        kwargs = dict(spec.env_kwargs)
        split, seed = spec.split, spec.seed
        fixed_options = getattr(task_chooser, "fixed_options", None)
        if task_chooser is not None and spec.out is not None and not isinstance(fixed_options, dict):
            raise ConfigError("A task_chooser's choices depend on the run so far, so its run cannot resume from a "
                              "results file; pass out=None (a Curriculum logs its own schedule).")
        if task_chooser is not None and spec.reset_options is not None:
            raise ConfigError("Pass reset_options or a task_chooser, not both: both choose the reset options.")
        if isinstance(agent, EnvCheckingAgent):
            agent.check_env(info.id)
        key = EnvPool.key(info.id, split, kwargs)
        if env_pool is not None and env_pool.has(key):  # checked by the run that built it
            env = env_pool.take(key, lambda: make_env(info.id, split=split, **kwargs))
        else:
            env = make_env(info.id, split=split, **kwargs)
            if preflight_reset:
                preflight(env, spec.layout.env_seed(seed, 0))

        from rollgym import __version__

        header: dict[str, Any] = {
            "env_id": info.id,
            "spec_hash": info.content_hash,
            "split": split,
            "seed": seed,
            "group_size": spec.group_size,
            "agent": agent_name(agent),
            "env_kwargs": to_jsonable(kwargs),
            "max_steps": spec.max_steps,
        }
        if isinstance(fixed_options, dict):  # e.g. one difficulty level for every group (FixedLevel)
            header["reset_options"] = to_jsonable(fixed_options)
        elif spec.reset_options is not None:
            header["reset_options"] = to_jsonable(spec.reset_options)
        if spec.task_indices is not None:
            header["task_indices"] = list(spec.task_indices)
        if spec.tasks is not None:
            header["tasks"] = [task.id for task in spec.tasks]
        layout = spec.layout.describe()
        if layout is not None:  # the default layout adds nothing, so default runs keep their run ids
            header["layout"] = layout
        prefix = f"{run_id(header)}-{info.id}"
        header["rollgym_version"] = __version__
        writer: ResultsWriter | None = None
        records: dict[tuple[int, int], EpisodeRecord] = {}
        try:
            if spec.out is not None:
                writer, existing = ResultsWriter.open(spec.out, header)
                if existing and not spec.resume:
                    writer.close()
                    raise ConfigError(f"{spec.out} already holds {len(existing)} episodes of this run; pass "
                                      "resume=True to continue it, or choose another output file.")
                # failures marked retry_on_resume (a lost env server) are played again
                records = {(r.task_index, r.trajectory.sample_idx): r for r in existing
                           if not r.trajectory.info.get("failure", {}).get("retry_on_resume")}
        except BaseException:
            env.close()
            raise
        return cls(info, env, split, seed, spec.n_tasks, spec.group_size, spec.max_steps, kwargs, prefix, writer,
                   records, env_pool=env_pool, chooser=task_chooser, spec=spec, make_env=make_env)

    @classmethod
    def prepare(cls, agent: Agent, env_id: str, n_tasks: int, group_size: int, split: str, seed: int,
                out: str | None, env_kwargs: dict[str, Any] | None, max_steps: int,
                env_pool: EnvPool | None = None, task_chooser: TaskChooser | None = None,
                make_env: Callable[..., Any] = make) -> RunPlan:
        """:meth:`open` from separate arguments (kept for callers of the earlier form)."""
        spec = RunSpec.of(env_id, n_tasks, group_size, split=split, seed=seed, out=out, env_kwargs=env_kwargs,
                          max_steps=max_steps)
        return cls.open(spec, agent, env_pool=env_pool, task_chooser=task_chooser, make_env=make_env)

    def _make(self) -> Any:
        # The run's first env went through Gymnasium's passive checker and a preflight reset; the
        # others are the same class built from the same arguments, so they skip the checker.
        return self.make_env(self.info.id, split=self.split, **{"disable_env_checker": True, **self.env_kwargs})

    def new_env(self) -> Any:
        """Another instance of the run's env (an idle one from the env pool, when the run has one)."""
        if self.env_pool is None:
            return self._make()
        return self.env_pool.take(EnvPool.key(self.info.id, self.split, self.env_kwargs), self._make)

    def release(self, env: Any) -> None:
        """An env the run is done with: back to the env pool, else closed."""
        if self.env_pool is None:
            env.close()
        else:
            self.env_pool.give(EnvPool.key(self.info.id, self.split, self.env_kwargs), env)

    @property
    def layout(self) -> EpisodeLayout:
        """How the run's episodes are seeded and named (the spec's layout)."""
        return self.spec.layout if self.spec is not None else GroupLayout()

    def jobs(self) -> list[tuple[int, int]]:
        """``(task_index, sample)`` of every episode not yet in the results file."""
        index = self.layout.sample_idx
        return [(i, j) for i in range(self.n_tasks) for j in range(self.group_size)
                if (i, index(i, j)) not in self.records]

    def job(self, i: int, j: int) -> EpisodeJob:
        """Episode ``j`` of task ``i``: its seeds and ids (from the layout) and its reset options."""
        layout = self.layout
        names = layout.names(self.prefix, i, j)
        if self._last_seed[0] != i:  # a group's episodes share the env seed; jobs come group by group
            self._last_seed = (i, layout.env_seed(self.seed, i))
        return EpisodeJob(task_index=i, sample_idx=names.sample_idx, seed=self._last_seed[1],
                          agent_seed=layout.agent_seed(self.seed, i, j), traj_id=names.traj_id,
                          group_id=names.group_id, env_id=self.info.id, options=self.group_options(i),
                          source=names.source)

    def job_args(self, i: int, j: int) -> dict[str, Any]:
        """The seeds and ids of episode ``j`` of task ``i``, as ``run_episode`` keyword arguments plus ``max_steps``."""
        return {**self.job(i, j).kwargs(), "max_steps": self.max_steps}

    def group_options(self, i: int) -> dict[str, Any] | None:
        """The reset options of group ``i``: the task chooser's (asked once per group), else the spec's
        ``reset_options``, with the spec's task index (or given task) when it names them; ``None`` when there are
        none."""
        if i not in self.options:
            options: dict[str, Any] | None = None
            if self.chooser is not None:
                options = self.chooser.reset_options(self.env, self.info.id, i)
            elif self.spec is not None and self.spec.reset_options is not None:
                options = dict(self.spec.reset_options)
            if self.spec is not None and self.spec.task_indices is not None:
                options = {**(options or {}), "task_index": self.spec.task_indices[i]}
            if self.spec is not None and self.spec.tasks is not None:
                options = {**(options or {}), "task": self.spec.tasks[i]}
            if options is None and self.chooser is None:
                return None  # nothing to remember for a plain run (partial rollouts draw 2**31 indices)
            self.options[i] = options
        return self.options[i]

    def choose_all(self) -> None:
        """Ask the task chooser for every group's options now, before any episode (no thread asks it later)."""
        if self.chooser is None:
            return
        try:
            for i in range(self.n_tasks):
                self.group_options(i)
        except BaseException:
            self.env.close()
            if self.writer is not None:
                self.writer.close()
            raise

    def end_step(self, groups: list[RolloutGroup]) -> None:
        """Show the task chooser the finished groups and close its step."""
        if self.chooser is not None:
            for group in groups:
                self.chooser.observe(group)
            self.chooser.end_step()

    def record(self, i: int, record: EpisodeRecord) -> None:
        """Append a finished episode to the results file and keep it."""
        if self.writer is not None:
            self.writer.append(record)
        self.keep(i, record)

    def record_line(self, i: int, line: bytes) -> EpisodeRecord:
        """Append a finished episode that arrives as a results-file line (from a remote worker), keep it, return it."""
        record = EpisodeRecord.from_json(loads_line(line))
        if self.writer is not None:
            self.writer.append_line(line)
        self.keep(i, record)
        return record

    def keep(self, i: int, record: EpisodeRecord) -> None:
        """Keep a finished episode, as a resumed run would read it back from the results file.

        An episode's trajectory holds only JSON values already (``run_episode`` builds it so,
        and a test checks it), so only the env's task needs normalising (tuples to lists, numpy
        values to Python numbers) for fresh and resumed results to compare equal.
        """
        if record.task is not None:
            record.task = self._normal_task(record.task)
        self.records[(i, record.trajectory.sample_idx)] = record

    def take_group(self, i: int) -> RolloutGroup:
        """Group ``i`` from the records, which it leaves (a streamed run keeps no finished group)."""
        keys = [(i, self.layout.sample_idx(i, j)) for j in range(self.group_size)]
        episodes = [self.records.pop(key) for key in keys if key in self.records]
        return assemble_groups(episodes, self.group_size)[0]

    def groups(self) -> list[RolloutGroup]:
        """Every group of the run, in task order, from the records."""
        return assemble_groups(list(self.records.values()), self.group_size, self.n_tasks)

    def close_writer(self) -> None:
        """Close the results file (safe to call twice)."""
        if self.writer is not None:
            self.writer.close()

    def _normal_task(self, task: Task) -> Task:
        """``task`` through JSON; the G episodes of a group share one result (each resets to an equal task)."""
        cached = self._tasks.get(task.id)
        if cached is not None:
            try:
                if cached[0] == task:
                    return cached[1]
            except Exception:  # values without a plain truth value (numpy arrays): normalise afresh
                pass
        normal = Task.from_dict(task_dict(task))
        if len(self._tasks) >= 1024:
            self._tasks.clear()
        self._tasks[task.id] = (task, normal)
        return normal


class Engine:
    """One run of a :class:`RunSpec`: its plan, its jobs, and the bookkeeping of every finished episode.

    A driver asks :meth:`player` for env-and-agent pairs, plays :meth:`job`\\ s on them
    (:meth:`EpisodePlayer.play` or :meth:`EpisodePlayer.aplay`), hands each finished episode to
    :meth:`finish` and closes the engine at the end. Everything else (seeds, reset options, the
    agent check and the env preflight, agent copies, the results file and its resume, progress and
    ``on_episode``) happens here, the same for every driver.

    Example:
        >>> from rollgym.agents import OracleAgent
        >>> engine = Engine(RunSpec("Countdown-v0", n_tasks=1, group_size=2), OracleAgent())
        >>> player = engine.player()
        >>> for i, j in engine.jobs:
        ...     engine.finish(player.play(engine.job(i, j)))
        >>> engine.close([player.env])
        >>> [t.reward for t in engine.groups()[0].trajectories]
        [1.0, 1.0]
    """

    def __init__(self, spec: RunSpec, agent: Agent, *, env_pool: EnvPool | None = None,
                 task_chooser: TaskChooser | None = None, progress: ProgressCallback | None = None,
                 on_episode: Callable[[Trajectory], None] | None = None, prefix_cache: bool | None = None,
                 keep_agent: bool = True, make_env: Callable[..., Any] = make, preflight_reset: bool = True) -> None:
        if not isinstance(spec, RunSpec):
            raise ConfigError(f"spec must be a RunSpec, got {type(spec).__name__}.")
        self.spec = spec
        self.agent = agent
        self.caps = capabilities(agent)
        self.progress = progress
        self.on_episode = on_episode
        use_prefix_cache(agent, prefix_cache)
        self.plan = RunPlan.open(spec, agent, env_pool=env_pool, task_chooser=task_chooser, make_env=make_env,
                                 preflight_reset=preflight_reset)
        self.plan.choose_all()
        self.jobs = self.plan.jobs()
        self.total = spec.total
        self.done = self.total - len(self.jobs)
        self._first: tuple[Any, Agent | None] | None = (self.plan.env, agent if keep_agent else None)

    def discard_env(self) -> None:
        """Close the run's checked env now: the episodes play elsewhere (Ray workers build their own envs)."""
        if self._first is not None:
            self._first[0].close()
            self._first = None

    def start(self) -> None:
        """Report the episodes found in the results file (``on_episode`` for each, then ``progress``)."""
        if self.on_episode is not None:
            for resumed in self.plan.records.values():
                self.on_episode(resumed.trajectory)
        if self.progress is not None:
            self.progress(self.done, self.total)

    def remaining(self) -> Counter[int]:
        """Episodes left to play, per task index."""
        return Counter(i for i, _ in self.jobs)

    def job(self, i: int, j: int) -> EpisodeJob:
        """Episode ``j`` of task ``i`` (:meth:`RunPlan.job`)."""
        return self.plan.job(i, j)

    def spawn(self) -> Agent:
        """An agent for another episode beside the others (:func:`spawn_agent`)."""
        return spawn_agent(self.agent, self.caps)

    def player(self) -> EpisodePlayer:
        """An env and an agent to play jobs on: the first gets the run's checked env (and, unless built with
        ``keep_agent=False``, the agent itself); later ones a new env and a spawned agent."""
        if self._first is not None:
            env, agent = self._first
            self._first = None
            return EpisodePlayer(env, agent if agent is not None else self.spawn(), self.plan.new_env,
                                 self.spec.limits, step_timings=self.spec.step_timings)
        return EpisodePlayer(self.plan.new_env(), self.spawn(), self.plan.new_env, self.spec.limits,
                             step_timings=self.spec.step_timings)

    def abort(self, i: int, j: int, reason: str) -> EpisodeRecord:
        """Episode ``j`` of task ``i`` stopped unplayed or unfinished (status ``"aborted"``, ``info["aborted"]``
        says why; e.g. cut as a straggler): a record to :meth:`finish`, never a score of 0."""
        job = self.job(i, j)
        given = self.spec.tasks[i] if self.spec.tasks is not None else None
        trajectory = Trajectory(traj_id=job.traj_id, group_id=job.group_id, sample_idx=j, env_id=job.env_id,
                                task_id=given.id if given is not None else None, seed=job.seed, source=job.source,
                                reward=None, status="aborted", info={"aborted": reason})
        return EpisodeRecord(i, given, trajectory)

    def finish(self, record: EpisodeRecord) -> None:
        """Record a finished episode (results file, records), then report it (``on_episode``, ``progress``)."""
        self.plan.record(record.task_index, record)
        self._report(record)

    def finish_line(self, task_index: int, line: bytes) -> None:
        """:meth:`finish` for an episode that arrives as a results-file line (from a Ray worker)."""
        self._report(self.plan.record_line(task_index, line))

    def _report(self, record: EpisodeRecord) -> None:
        self.done += 1
        if self.on_episode is not None:
            self.on_episode(record.trajectory)
        if self.progress is not None:
            self.progress(self.done, self.total)

    def groups(self) -> list[RolloutGroup]:
        """Every group, in task order (failed rollouts stay in their group)."""
        return self.plan.groups()

    def take_group(self, i: int) -> RolloutGroup:
        """Group ``i``, dropped from the engine's records (:meth:`RunPlan.take_group`)."""
        return self.plan.take_group(i)

    def close(self, envs: Sequence[Any] = ()) -> None:
        """Give back ``envs`` and the first env if no player took it (pool, else closed); close the results."""
        if self._first is not None:
            self.plan.release(self._first[0])
            self._first = None
        for env in envs:
            self.plan.release(env)
        self.plan.close_writer()


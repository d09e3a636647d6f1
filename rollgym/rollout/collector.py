"""The rollout collector, v1: runs an agent on an env for groups of episodes.

:func:`collect` plays ``n_tasks`` tasks, each ``group_size`` times with the same
env seed, and returns one :class:`~rollgym.rollout.types.RolloutGroup` per task.
An episode is a loop of ``agent.act`` and ``env.step`` until the env terminates
or truncates (or ``max_steps`` actions), so single-turn and multi-turn envs run
the same way. Episodes run one after another, or in ``workers`` threads, each with
its own env and agent copy.

Seeds: task ``i`` of a run gets the env seed ``SeedSequence(run seed, spawn_key=(0, i))``
and rollout ``j`` of it the agent seed ``SeedSequence(run seed, spawn_key=(1, i, j))``,
never ``seed + i``, so streams of different tasks and runs never overlap.

Token-producing agents (:class:`~rollgym.agents.chat.ChatAgent`) expose
``token_record()``, called once when the episode ends; its ``prompt_ids``,
``completion_ids``, ``loss_mask``, ``logprobs`` and ``turns`` become the
trajectory's token fields, exactly as the agent sampled them (never decoded and
re-tokenized). Agents with ``record_reward(r)`` get each step's reward. Text-only
agents leave the token fields empty and get one token-less :class:`Turn` per action.
"""

from __future__ import annotations

import copy
import importlib
import queue
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rollgym.core.agent import Agent
from rollgym.core.errors import ConfigError, RollgymError
from rollgym.core.registration import EnvInfo, env_info, make
from rollgym.core.task import Task
from rollgym.rollout.episode import DEFAULT_MAX_STEPS, EpisodeLimits, run_episode
from rollgym.rollout.pool import EnvPool
from rollgym.rollout.store import EpisodeRecord, ResultsWriter, assemble_groups, loads_line, task_dict
from rollgym.rollout.types import RolloutGroup, Trajectory, to_jsonable

if TYPE_CHECKING:
    from rollgym.rollout.curriculum import TaskChooser

ProgressCallback = Callable[[int, int], None]


def episode_seed(run_seed: int, task_index: int) -> int:
    """The ``env.reset`` seed of task ``task_index`` in a run seeded ``run_seed``.

    Example:
        >>> episode_seed(0, 0) != episode_seed(0, 1) != episode_seed(1, 0)
        True
    """
    sequence = np.random.SeedSequence(entropy=int(run_seed), spawn_key=(0, int(task_index)))
    return int(sequence.generate_state(1, dtype=np.uint32)[0])


def agent_seed(run_seed: int, task_index: int, sample_idx: int) -> int:
    """The ``agent.reset`` seed of rollout ``sample_idx`` of task ``task_index``."""
    sequence = np.random.SeedSequence(entropy=int(run_seed), spawn_key=(1, int(task_index), int(sample_idx)))
    return int(sequence.generate_state(1, dtype=np.uint32)[0])


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
    return str(getattr(agent, "name", None) or type(agent).__name__)


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
    backend = getattr(agent, "backend", None)
    if backend is None or not hasattr(type(backend), "prefix_cache"):
        if not on:
            return
        name = getattr(backend, "name", None) or type(backend if backend is not None else agent).__name__
        raise ConfigError(f"prefix_cache=True needs an agent on the transformers backend; {name} has no prefix "
                          "cache (a vLLM engine or server caches prefixes itself: --enable-prefix-caching).")
    backend.prefix_cache = on


def _validate(n_tasks: int, group_size: int, seed: int, max_steps: int) -> None:
    for name, value, low in (("n_tasks", n_tasks, 1), ("group_size", group_size, 1), ("max_steps", max_steps, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ConfigError(f"{name} must be an integer >= {low}, got {value!r}.")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}.")


def collect(
    agent: Agent,
    env_id: str,
    n_tasks: int,
    group_size: int,
    split: str = "test",
    seed: int = 0,
    out: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    progress: ProgressCallback | None = None,
    workers: int = 1,
    env_pool: EnvPool | None = None,
    task_chooser: TaskChooser | None = None,
    on_episode: Callable[[Trajectory], None] | None = None,
    prefix_cache: bool | None = None,
) -> list[RolloutGroup]:
    """Play ``n_tasks`` tasks ``group_size`` times each and return one group per task.

    Args:
        agent: Anything with ``name``, ``reset(seed)`` and ``act(observation, info) -> str``.
        env_id: A registered id, or ``"module:Env-v0"`` to import ``module`` first.
        n_tasks: Number of tasks (groups).
        group_size: Rollouts per task (G); all reset the env with the same seed.
        split: The env split to draw tasks from (passed to ``make`` as ``split=``).
        seed: The run seed; task ``i``'s env seed is derived from ``(seed, i)``.
        out: A JSONL results file (a ``str`` or path). Episodes are appended as they
            finish; if the file exists, finished episodes are skipped (resume). It
            must have been written with the same arguments, except ``n_tasks`` and ``workers``.
        env_kwargs: Extra arguments for ``rollgym.make``.
        max_steps: Cap on agent actions per episode; reaching it truncates the episode.
        progress: Called as ``progress(done, total)`` with episode counts, also for
            episodes found in ``out``.
        workers: Episodes played at once, each worker thread with its own env and its own
            agent (``agent.spawn()`` when the agent has it, else a deep copy). Worth it when
            the agent waits on I/O (an HTTP model server). Results do not depend on it.
        env_pool: Take envs from this :class:`~rollgym.rollout.pool.EnvPool` and give them back
            at the end, instead of building and closing them (for loops that collect every step).
        task_chooser: Chooses each group's reset options (a
            :class:`~rollgym.rollout.curriculum.Curriculum` picks its difficulty level), sees the
            finished groups, and closes its step when the call ends. Not with ``out``: its choices
            depend on the run so far, so a results file could not be resumed; the exception is a
            chooser with fixed options (:class:`~rollgym.rollout.curriculum.FixedLevel`), which
            the file's header records.
        on_episode: Called with every finished :class:`Trajectory` (first those found in
            ``out``), e.g. for a running accuracy.
        prefix_cache: ``True`` switches on the agent's backend's prefix cache (the transformers
            backend reuses a group's prompt and each episode's conversation so far; same tokens as
            without it), ``False`` off; ``None`` leaves the backend as it is. See :func:`use_prefix_cache`.

    Returns:
        Groups in task order, each with its trajectories in ``sample_idx`` order.
        Failed rollouts stay in their group with status ``"failed"``.

    Raises:
        UnknownEnvError: for an unknown env id; ConfigError: for bad arguments or an
        ``out`` file from a different run. Both are raised before any episode runs.

    Example:
        >>> from rollgym.agents import OracleAgent
        >>> groups = collect(OracleAgent(), "Countdown-v0", n_tasks=2, group_size=4)  # doctest: +SKIP
        >>> [t.reward for t in groups[0].trajectories]  # doctest: +SKIP
        [1.0, 1.0, 1.0, 1.0]
    """
    _validate(n_tasks, group_size, seed, max_steps)
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ConfigError(f"workers must be an integer >= 1, got {workers!r}.")
    use_prefix_cache(agent, prefix_cache)
    plan = RunPlan.prepare(agent, env_id, n_tasks, group_size, split, seed, out, env_kwargs, max_steps,
                           env_pool=env_pool, task_chooser=task_chooser)
    plan.choose_all()
    env, writer, records = plan.env, plan.writer, plan.records
    jobs = plan.jobs()
    total = n_tasks * group_size
    done = total - len(jobs)
    if on_episode is not None:
        for resumed in records.values():
            on_episode(resumed.trajectory)
    if progress is not None:
        progress(done, total)
    new_env, job_args = plan.new_env, plan.job_args

    limits = EpisodeLimits(max_steps=max_steps)
    pool = [_Worker(env, agent, new_env, limits)]
    try:
        if workers > 1 and len(jobs) > 1:
            pool += [_Worker(new_env(), _agent_copy(agent), new_env, limits)
                     for _ in range(min(workers, len(jobs)) - 1)]
        for i, record in _play(jobs, pool, job_args):
            plan.record(i, record)
            done += 1
            if on_episode is not None:
                on_episode(record.trajectory)
            if progress is not None:
                progress(done, total)
    finally:
        for worker in pool:
            plan.release(worker.env)
        if writer is not None:
            writer.close()
    groups = assemble_groups(list(records.values()), group_size, n_tasks)
    plan.end_step(groups)
    return groups


@dataclass
class RunPlan:
    """Everything a run needs before its first episode: the env, the results file, the jobs left.

    Built by :meth:`prepare`, which raises every configuration error (unknown env id,
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
    _last_seed: tuple[int, int] = (-1, 0)
    _tasks: dict[str, tuple[Task, Task]] = field(default_factory=dict)
    chooser: TaskChooser | None = None
    options: dict[int, dict[str, Any] | None] = field(default_factory=dict)

    @classmethod
    def prepare(cls, agent: Agent, env_id: str, n_tasks: int, group_size: int, split: str, seed: int,
                out: str | None, env_kwargs: dict[str, Any] | None, max_steps: int,
                env_pool: EnvPool | None = None, task_chooser: TaskChooser | None = None) -> RunPlan:
        """Resolve the env, check the agent, open (and resume) the results file."""
        info = resolve_env(env_id)
        kwargs = dict(env_kwargs or {})
        if "split" in kwargs:
            raise ConfigError("Pass the split as collect(split=...), not inside env_kwargs.")
        fixed_options = getattr(task_chooser, "fixed_options", None)
        if task_chooser is not None and out is not None and not isinstance(fixed_options, dict):
            raise ConfigError("A task_chooser's choices depend on the run so far, so its run cannot resume from a "
                              "results file; pass out=None (a Curriculum logs its own schedule).")
        check = getattr(agent, "check_env", None)
        if callable(check):
            check(info.id)
        key = EnvPool.key(info.id, split, kwargs)
        if env_pool is not None and env_pool.has(key):  # checked by the run that built it
            env = env_pool.take(key, lambda: make(info.id, split=split, **kwargs))
        else:
            env = make(info.id, split=split, **kwargs)
            _preflight(env, episode_seed(seed, 0))

        from rollgym import __version__

        header: dict[str, Any] = {
            "env_id": info.id,
            "spec_hash": info.content_hash,
            "split": split,
            "seed": seed,
            "group_size": group_size,
            "agent": agent_name(agent),
            "env_kwargs": to_jsonable(kwargs),
            "max_steps": max_steps,
        }
        if isinstance(fixed_options, dict):  # e.g. one difficulty level for every group (FixedLevel)
            header["reset_options"] = to_jsonable(fixed_options)
        prefix = f"{run_id(header)}-{info.id}"
        header["rollgym_version"] = __version__
        writer: ResultsWriter | None = None
        records: dict[tuple[int, int], EpisodeRecord] = {}
        try:
            if out is not None:
                writer, existing = ResultsWriter.open(out, header)
                # failures marked retry_on_resume (a lost env server) are played again
                records = {(r.task_index, r.trajectory.sample_idx): r for r in existing
                           if not r.trajectory.info.get("failure", {}).get("retry_on_resume")}
        except BaseException:
            env.close()
            raise
        return cls(info, env, split, seed, n_tasks, group_size, max_steps, kwargs, prefix, writer, records,
                   env_pool=env_pool, chooser=task_chooser)

    def _make(self) -> Any:
        # The run's first env went through Gymnasium's passive checker and a preflight reset; the
        # others are the same class built from the same arguments, so they skip the checker.
        return make(self.info.id, split=self.split, **{"disable_env_checker": True, **self.env_kwargs})

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

    def jobs(self) -> list[tuple[int, int]]:
        """``(task_index, sample_idx)`` of every episode not yet in the results file."""
        return [(i, j) for i in range(self.n_tasks) for j in range(self.group_size) if (i, j) not in self.records]

    def job_args(self, i: int, j: int) -> dict[str, Any]:
        """The seeds and ids of episode ``j`` of task ``i``."""
        group_id = f"{self.prefix}-{i:05d}"
        if self._last_seed[0] != i:  # a group's episodes share the env seed; jobs come group by group
            self._last_seed = (i, episode_seed(self.seed, i))
        return {
            "options": self.group_options(i),
            "seed": self._last_seed[1],
            "agent_seed": agent_seed(self.seed, i, j),
            "traj_id": f"{group_id}-{j}",
            "group_id": group_id,
            "sample_idx": j,
            "env_id": self.info.id,
            "max_steps": self.max_steps,
        }

    def group_options(self, i: int) -> dict[str, Any] | None:
        """The reset options of group ``i``: the task chooser's, asked once per group; ``None`` without one."""
        if self.chooser is None:
            return None
        if i not in self.options:
            self.options[i] = self.chooser.reset_options(self.env, self.info.id, i)
        return self.options[i]

    def choose_all(self) -> None:
        """Ask the task chooser for every group's options now, before any episode (no thread asks it later)."""
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

    def record_line(self, i: int, line: bytes) -> None:
        """Append a finished episode that arrives as a results-file line (from a remote worker) and keep it."""
        record = EpisodeRecord.from_json(loads_line(line))
        if self.writer is not None:
            self.writer.append_line(line)
        self.keep(i, record)

    def keep(self, i: int, record: EpisodeRecord) -> None:
        """Keep a finished episode, as a resumed run would read it back from the results file.

        An episode's trajectory holds only JSON values already (``run_episode`` builds it so,
        and a test checks it), so only the env's task needs normalising (tuples to lists, numpy
        values to Python numbers) for fresh and resumed results to compare equal.
        """
        if record.task is not None:
            record.task = self._normal_task(record.task)
        self.records[(i, record.trajectory.sample_idx)] = record

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


class _Worker:
    """One env and one agent that play episodes one at a time."""

    def __init__(self, env: Any, agent: Agent, new_env: Callable[[], Any], limits: EpisodeLimits) -> None:
        self.env = env
        self.agent = agent
        self.new_env = new_env
        self.limits = limits

    def play(self, task_index: int, args: dict[str, Any]) -> tuple[int, EpisodeRecord]:
        args.pop("max_steps")
        trajectory, task = run_episode(self.env, self.agent, limits=self.limits, **args)
        if trajectory.status == "failed" and trajectory.info.get("failure", {}).get("stage") in {"reset", "step"}:
            self.env.close()  # a crashed env may be in any state; start a fresh one
            self.env = self.new_env()
        return task_index, EpisodeRecord(task_index, task, trajectory)


def _agent_copy(agent: Agent) -> Agent:
    spawn = getattr(agent, "spawn", None)
    return spawn() if callable(spawn) else copy.deepcopy(agent)


def _play(
    jobs: list[tuple[int, int]], pool: list[_Worker], job_args: Callable[[int, int], dict[str, Any]]
) -> Iterator[tuple[int, EpisodeRecord]]:
    """Yield finished episodes: in job order with one worker, as they finish with several."""
    if len(pool) == 1:
        for i, j in jobs:
            yield pool[0].play(i, job_args(i, j))
        return
    free: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
    for worker in pool:
        free.put(worker)

    def run(i: int, j: int) -> tuple[int, EpisodeRecord]:
        worker = free.get()
        try:
            return worker.play(i, job_args(i, j))
        finally:
            free.put(worker)

    executor = ThreadPoolExecutor(max_workers=len(pool), thread_name_prefix="rollgym-collect")
    try:
        futures = [executor.submit(run, i, j) for i, j in jobs]
        for future in as_completed(futures):
            yield future.result()
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def _preflight(env: Any, seed: int) -> None:
    """Reset once so that a configuration mistake the env only sees at reset (an unknown split,
    missing data) is one clear error before any work, not a run of failed rollouts."""
    try:
        env.reset(seed=seed)
    except RollgymError:
        env.close()
        raise
    except Exception:  # a genuine env bug: the rollouts record it as failures
        pass


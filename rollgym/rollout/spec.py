"""What a collection run plays: :class:`RunSpec`, checked in one place.

A run is ``n_tasks`` tasks of one env, each played ``group_size`` times with the
same env seed. Every collector (:func:`~rollgym.rollout.collect`,
:func:`~rollgym.rollout.collect_async`, :func:`~rollgym.rollout.distributed.collect_ray`,
``rollgym eval``, ``rollgym bench run``) builds a ``RunSpec`` from its arguments and
hands it to the engine (:mod:`rollgym.rollout.engine`), so a bad value is the same
one-sentence :class:`~rollgym.core.errors.ConfigError` whichever way the run is driven.

Example:
    >>> spec = RunSpec("Countdown-v0", n_tasks=2, group_size=4, seed=1)
    >>> spec.max_steps, spec.jobs()[:3]
    (100, [(0, 0), (0, 1), (0, 2)])
    >>> RunSpec("Countdown-v0", n_tasks=0, group_size=4)
    Traceback (most recent call last):
    ...
    rollgym.core.errors.ConfigError: n_tasks must be at least 1, got 0.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rollgym.core.config import check_bool, check_int
from rollgym.core.errors import ConfigError
from rollgym.core.task import Task
from rollgym.rollout.episode import DEFAULT_MAX_STEPS, EpisodeLimits
from rollgym.rollout.layout import EpisodeLayout, GroupLayout


@dataclass(frozen=True)
class RunSpec:
    """One collection run: which tasks, how many samples of each, the env's options, the limits, the output.

    Attributes:
        env_id: A registered id, ``"module:Env-v0"`` (imports ``module`` first) or a served env's URL.
        n_tasks: Tasks (groups) to play.
        group_size: Rollouts per task (G); all reset the env with the same seed.
        split: The split tasks are drawn from (``make(env_id, split=...)``).
        seed: The run seed: task ``i``'s env seed and every agent seed derive from it
            (by the ``layout``; by default :func:`~rollgym.rollout.layout.episode_seed` and
            :func:`~rollgym.rollout.layout.agent_seed`).
        task_indices: Play these task indices of the split (``reset(options={"task_index": k})``), one
            group each, instead of tasks drawn by the env seed; ``n_tasks`` must equal their number.
        tasks: Play these given tasks (``reset(options={"task": t})``), one group each, instead of tasks
            drawn by the env seed; ``n_tasks`` must equal their number; not with ``task_indices``
            (web runs: tasks of a :class:`~rollgym.envs.web.tasks.WebTaskSource`).
        env_kwargs: Extra arguments for ``rollgym.make`` (never ``split``).
        reset_options: Options passed to every ``env.reset`` (e.g. ``{"difficulty": 2}``).
        limits: Step, token and time caps of each episode (:class:`~rollgym.rollout.episode.EpisodeLimits`).
        out: A JSONL results file; episodes are appended as they finish.
        step_timings: Record each episode's reset and step latencies in its ``metrics`` (``reset_ms``, and
            ``step_ms``: one entry per ``env.step``, in milliseconds); off by default (results files stay small).
        resume: With ``out`` already holding episodes of this run: skip them (``True``), or refuse to
            touch the file (``False``).
        layout: How episodes are seeded and named (:class:`~rollgym.rollout.layout.EpisodeLayout`); the
            default, :class:`~rollgym.rollout.layout.GroupLayout`, derives every seed from ``seed``.
    """

    env_id: str
    n_tasks: int
    group_size: int
    split: str = "test"
    seed: int = 0
    task_indices: tuple[int, ...] | None = None
    tasks: tuple[Task, ...] | None = None
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    reset_options: Mapping[str, Any] | None = None
    limits: EpisodeLimits = field(default_factory=EpisodeLimits)
    out: str | os.PathLike[str] | None = None
    resume: bool = True
    layout: EpisodeLayout = field(default_factory=GroupLayout)
    step_timings: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ConfigError(f"env_id must be a non-empty string such as 'Countdown-v0', got {self.env_id!r}.")
        check_int("n_tasks", self.n_tasks, 1)
        check_int("group_size", self.group_size, 1)
        check_int("seed", self.seed, 0)
        if not isinstance(self.split, str) or not self.split:
            raise ConfigError(f"split must be a non-empty string such as 'test', got {self.split!r}.")
        if not isinstance(self.limits, EpisodeLimits):
            raise ConfigError(f"limits must be an EpisodeLimits, got {type(self.limits).__name__}.")
        if not isinstance(self.env_kwargs, Mapping):
            raise ConfigError(f"env_kwargs must be a dict of make() arguments, got {type(self.env_kwargs).__name__}.")
        if "split" in self.env_kwargs:
            raise ConfigError("Pass the split as collect(split=...), not inside env_kwargs.")
        object.__setattr__(self, "env_kwargs", dict(self.env_kwargs))
        if self.reset_options is not None:
            if not isinstance(self.reset_options, Mapping):
                raise ConfigError(f"reset_options must be a dict or None, got {type(self.reset_options).__name__}.")
            object.__setattr__(self, "reset_options", dict(self.reset_options))
        if self.task_indices is not None:
            if isinstance(self.task_indices, (str, bytes)) or not hasattr(self.task_indices, "__iter__"):
                raise ConfigError(f"task_indices must be a list of task indices, got {self.task_indices!r}.")
            indices = tuple(self.task_indices)
            for index in indices:
                check_int("each task index", index, 0)
            if len(indices) != self.n_tasks:
                raise ConfigError(f"task_indices names {len(indices)} tasks but n_tasks is {self.n_tasks}; "
                                  "pass as many indices as tasks.")
            object.__setattr__(self, "task_indices", indices)
        if self.tasks is not None:
            if self.task_indices is not None:
                raise ConfigError("Pass task_indices or tasks, not both: both choose the tasks.")
            if isinstance(self.tasks, (str, bytes, Mapping)) or not hasattr(self.tasks, "__iter__"):
                raise ConfigError(f"tasks must be a list of Task objects, got {type(self.tasks).__name__}.")
            tasks = tuple(self.tasks)
            for task in tasks:
                if not isinstance(task, Task):
                    raise ConfigError(f"tasks must hold Task objects, got a {type(task).__name__}.")
            if len(tasks) != self.n_tasks:
                raise ConfigError(f"tasks holds {len(tasks)} tasks but n_tasks is {self.n_tasks}; "
                                  "pass as many tasks as n_tasks.")
            object.__setattr__(self, "tasks", tasks)
        if not isinstance(self.layout, EpisodeLayout):
            raise ConfigError(f"layout must be an EpisodeLayout (such as GroupLayout()), got "
                              f"{type(self.layout).__name__}.")
        if self.out is not None and not isinstance(self.out, (str, os.PathLike)):
            raise ConfigError(f"out must be a file path or None, got {type(self.out).__name__}.")
        check_bool("resume", self.resume)
        check_bool("step_timings", self.step_timings)

    @property
    def max_steps(self) -> int:
        """Cap on agent actions per episode (``limits.max_steps``)."""
        return self.limits.max_steps

    @property
    def total(self) -> int:
        """Episodes in the run: ``n_tasks * group_size``."""
        return self.n_tasks * self.group_size

    def jobs(self) -> list[tuple[int, int]]:
        """``(task_index, sample_idx)`` of every episode, group by group."""
        return [(i, j) for i in range(self.n_tasks) for j in range(self.group_size)]

    @classmethod
    def of(cls, env_id: str, n_tasks: int, group_size: int, *, max_steps: int = DEFAULT_MAX_STEPS,
           limits: EpisodeLimits | None = None, env_kwargs: Mapping[str, Any] | None = None,
           **fields: Any) -> RunSpec:
        """A spec from a collector's keyword arguments: ``limits``, else ``max_steps`` alone; ``None`` kwargs as ``{}``.

        Example:
            >>> RunSpec.of("Countdown-v0", 1, 2, max_steps=5).limits.max_steps
            5
        """
        if limits is None:
            limits = EpisodeLimits(max_steps=max_steps)
        return cls(env_id, n_tasks, group_size, limits=limits, env_kwargs=dict(env_kwargs or {}), **fields)

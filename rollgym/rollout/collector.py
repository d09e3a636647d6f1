"""The threads driver of the episode engine: runs an agent on an env for groups of episodes.

:func:`collect` plays ``n_tasks`` tasks, each ``group_size`` times with the same
env seed, and returns one :class:`~rollgym.rollout.types.RolloutGroup` per task.
An episode is a loop of ``agent.act`` and ``env.step`` until the env terminates
or truncates (or ``max_steps`` actions), so single-turn and multi-turn envs run
the same way. Episodes run one after another, or in ``workers`` threads, each with
its own env and agent copy.

Seeds, the results file, agent copies and every other per-episode step live in
:mod:`rollgym.rollout.engine` (:class:`~rollgym.rollout.engine.Engine`), shared with the
asyncio and Ray drivers; this module only decides which thread plays which job.

Token-producing agents (:class:`~rollgym.agents.chat.ChatAgent`) expose
``token_record()``, called once when the episode ends; its ``prompt_ids``,
``completion_ids``, ``loss_mask``, ``logprobs`` and ``turns`` become the
trajectory's token fields, exactly as the agent sampled them (never decoded and
re-tokenized). Agents with ``record_reward(r)`` get each step's reward. Text-only
agents leave the token fields empty and get one token-less :class:`Turn` per action.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any

from rollgym.core.agent import Agent
from rollgym.core.errors import ConfigError
from rollgym.core.registration import make
from rollgym.rollout.engine import (
    Engine,
    EpisodePlayer,
    RunPlan,
    agent_name,
    agent_seed,
    episode_seed,
    resolve_env,
    run_id,
    use_prefix_cache,
)
from rollgym.rollout.episode import DEFAULT_MAX_STEPS, run_episode
from rollgym.rollout.pool import EnvPool
from rollgym.rollout.spec import RunSpec
from rollgym.rollout.store import EpisodeRecord
from rollgym.rollout.types import RolloutGroup, Trajectory

if TYPE_CHECKING:
    from rollgym.rollout.curriculum import TaskChooser

__all__ = ["RunPlan", "agent_name", "agent_seed", "collect", "drive_threads", "episode_seed", "make_env",
           "resolve_env", "run_episode", "run_id", "use_prefix_cache"]

ProgressCallback = Callable[[int, int], None]


def make_env(env_id: str, **kwargs: Any) -> Any:
    """Build one env of a run (:func:`rollgym.make`): every driver of the engine builds its envs here."""
    return make(env_id, **kwargs)


def collect(agent: Agent, env_id: str, n_tasks: int, group_size: int, split: str = "test", seed: int = 0,
            out: str | None = None, env_kwargs: dict[str, Any] | None = None, max_steps: int = DEFAULT_MAX_STEPS,
            progress: ProgressCallback | None = None, workers: int = 1, env_pool: EnvPool | None = None,
            task_chooser: TaskChooser | None = None, on_episode: Callable[[Trajectory], None] | None = None,
            prefix_cache: bool | None = None) -> list[RolloutGroup]:
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
    spec = RunSpec.of(env_id, n_tasks, group_size, split=split, seed=seed, out=out, env_kwargs=env_kwargs,
                      max_steps=max_steps)
    return drive_threads(spec, agent, workers=workers, progress=progress, env_pool=env_pool,
                         task_chooser=task_chooser, on_episode=on_episode, prefix_cache=prefix_cache)


def drive_threads(spec: RunSpec, agent: Agent, *, workers: int = 1, **engine_options: Any) -> list[RolloutGroup]:
    """Play ``spec`` in this thread, or in ``workers`` threads; :func:`collect`'s result.

    The first worker plays with ``agent`` itself on the run's checked env; each other worker
    with its own env and its own agent (``agent.spawn()`` when the agent has it, else a deep copy).
    ``engine_options`` go to :class:`~rollgym.rollout.engine.Engine` (``progress``, ``on_episode``,
    ``env_pool``, ``task_chooser``, ``prefix_cache``, ``keep_agent``, ``make_env``).
    """
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ConfigError(f"workers must be an integer >= 1, got {workers!r}.")
    engine = Engine(spec, agent, **{"make_env": make_env, **engine_options})
    engine.start()
    jobs = engine.jobs
    pool = [engine.player()]
    try:
        if workers > 1 and len(jobs) > 1:
            pool += [engine.player() for _ in range(min(workers, len(jobs)) - 1)]
        for record in _play(jobs, pool, engine.job):
            engine.finish(record)
    finally:
        engine.close([player.env for player in pool])
    groups = engine.groups()
    engine.plan.end_step(groups)
    return groups


def _play(
    jobs: list[tuple[int, int]], pool: list[EpisodePlayer], job: Callable[[int, int], Any]
) -> Iterator[EpisodeRecord]:
    """Yield finished episodes: in job order with one player, as they finish with several."""
    if len(pool) == 1:
        for i, j in jobs:
            yield pool[0].play(job(i, j))
        return
    free: queue.SimpleQueue[EpisodePlayer] = queue.SimpleQueue()
    for player in pool:
        free.put(player)

    def run(i: int, j: int) -> EpisodeRecord:
        player = free.get()
        try:
            return player.play(job(i, j))
        finally:
            free.put(player)

    executor = ThreadPoolExecutor(max_workers=len(pool), thread_name_prefix="rollgym-collect")
    try:
        futures = [executor.submit(run, i, j) for i, j in jobs]
        for future in as_completed(futures):
            yield future.result()
    finally:
        executor.shutdown(wait=True, cancel_futures=True)

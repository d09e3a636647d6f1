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
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

import numpy as np

from rollgym.core.errors import ConfigError, RollgymError
from rollgym.core.registration import EnvInfo, env_info, make
from rollgym.core.task import Task
from rollgym.rollout.store import EpisodeRecord, ResultsWriter, assemble_groups
from rollgym.rollout.types import RolloutGroup, Status, Trajectory, Turn, to_jsonable

#: Default cap on agent actions per episode; reaching it truncates the episode.
DEFAULT_MAX_STEPS = 100

#: Keys of the env's ``info`` that a trajectory does not store (they repeat on every line).
_BULKY_INFO_KEYS = frozenset({"system_prompt", "tools"})

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
    if ":" in env_id:
        module = env_id.split(":", 1)[0]
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"Cannot import module {module!r} named in env id {env_id!r} ({exc}).") from exc
    return env_info(env_id)


@dataclass
class _Failure:
    stage: str
    exc: BaseException

    def to_info(self) -> dict[str, Any]:
        frames = traceback.format_exception(type(self.exc), self.exc, self.exc.__traceback__)
        return {
            "stage": self.stage,
            "type": type(self.exc).__name__,
            "message": str(self.exc),
            "traceback": "".join(frames[-3:]),
        }


def _as_turn(value: Any) -> Turn:
    if isinstance(value, Turn):
        return value
    if isinstance(value, Mapping):
        return Turn.from_dict(dict(value))
    return Turn.from_dict({name: getattr(value, name, None) for name in Turn.__dataclass_fields__})


def _token_fields(agent: Any, step_rewards: list[float]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The trajectory's token fields from ``agent.token_record()``, and info notes about them."""
    record_fn = getattr(agent, "token_record", None)
    if not callable(record_fn):
        return {}, {}
    try:
        record = record_fn()
        turns = [_as_turn(t) for t in getattr(record, "turns", [])]
        for turn, reward in zip(turns, step_rewards):
            if turn.reward is None:
                turn.reward = reward
        fields: dict[str, Any] = {
            "prompt_ids": [int(i) for i in record.prompt_ids],
            "completion_ids": [int(i) for i in record.completion_ids],
            "loss_mask": [int(m) for m in record.loss_mask],
            "logprobs": [float(lp) for lp in record.logprobs],
            "turns": turns,
        }
        if not len(fields["completion_ids"]) == len(fields["loss_mask"]) == len(fields["logprobs"]):
            raise ValueError("completion_ids, loss_mask and logprobs differ in length")
    except Exception as exc:  # a bookkeeping bug must not lose the episode's text and reward
        return {}, {"token_record_error": f"{type(exc).__name__}: {exc}"}
    notes = {key: getattr(record, key) for key in ("per_turn_rows", "token_exact") if hasattr(record, key)}
    return fields, notes


def run_episode(
    env: Any,
    agent: Any,
    *,
    seed: int | None,
    agent_seed: int | None = None,
    traj_id: str = "",
    group_id: str = "",
    sample_idx: int = 0,
    env_id: str = "",
    max_steps: int = DEFAULT_MAX_STEPS,
    source: str = "policy",
) -> tuple[Trajectory, Task | None]:
    """Play one episode of ``agent`` on ``env`` and return its trajectory and task.

    Never raises for an exception in the agent or the env: the trajectory then has
    status ``"failed"``, ``reward=None`` and ``info["failure"]`` with the stage
    (``reset``, ``agent_reset``, ``act``, ``step`` or ``record_reward``), exception type, message and
    traceback tail. ``KeyboardInterrupt`` and ``SystemExit`` propagate.

    Example:
        >>> import rollgym
        >>> from rollgym.agents import OracleAgent
        >>> env = rollgym.make("Countdown-v0")  # doctest: +SKIP
        >>> traj, task = run_episode(env, OracleAgent(), seed=0)  # doctest: +SKIP
        >>> traj.reward  # doctest: +SKIP
        1.0
    """
    messages: list[dict[str, str]] = []
    turns: list[Turn] = []
    step_rewards: list[float] = []
    info: dict[str, Any] = {}
    task: Task | None = None
    failure: _Failure | None = None
    status: Status = "truncated"
    agent_s = env_s = 0.0
    record_reward = getattr(agent, "record_reward", None)

    started = time.perf_counter()
    try:
        observation, info = env.reset(seed=seed)
        if not isinstance(info, dict):
            raise TypeError(f"env.reset returned info of type {type(info).__name__}, not dict")
    except Exception as exc:
        failure = _Failure("reset", exc)
    env_s += time.perf_counter() - started
    if failure is None:
        task = getattr(getattr(env, "unwrapped", env), "task", None)
        if not isinstance(task, Task):
            task = None
        system_prompt = info.get("system_prompt")
        if system_prompt:
            messages.append({"role": "system", "content": str(system_prompt)})
        messages.append({"role": "user", "content": str(observation)})
        try:
            agent.reset(seed=agent_seed)
        except Exception as exc:
            failure = _Failure("agent_reset", exc)

    steps = 0
    while failure is None:
        if steps >= max_steps:
            info = {**info, "truncated_by": "max_steps"}
            break
        started = time.perf_counter()
        try:
            action = agent.act(observation, info)
            if not isinstance(action, str):
                raise TypeError(f"the agent returned {type(action).__name__}, not str")
        except Exception as exc:
            failure = _Failure("act", exc)
            break
        finally:
            agent_s += time.perf_counter() - started
        turn = Turn()
        turns.append(turn)
        messages.append({"role": "assistant", "content": action})
        steps += 1
        started = time.perf_counter()
        try:
            observation, raw_reward, terminated, truncated, info = env.step(action)
            reward = float(raw_reward)  # an env bug (a None or str reward) fails the rollout, not the run
            if not isinstance(info, dict):
                raise TypeError(f"env.step returned info of type {type(info).__name__}, not dict")
        except Exception as exc:
            failure = _Failure("step", exc)
            break
        finally:
            env_s += time.perf_counter() - started
        turn.reward = reward
        step_rewards.append(reward)
        if callable(record_reward):
            try:
                record_reward(reward)
            except Exception as exc:
                failure = _Failure("record_reward", exc)
                break
        if observation:
            messages.append({"role": "user", "content": str(observation)})
        if terminated:
            status = "completed"
            break
        if truncated:
            status = "truncated"
            break

    if not isinstance(info, dict):  # a broken env's info; the failure records what it was
        info = {}
    tokens, token_notes = _token_fields(agent, step_rewards)
    stored_info = {k: v for k, v in info.items() if k not in _BULKY_INFO_KEYS} | token_notes
    if failure is not None:
        status = "failed"
        stored_info["failure"] = failure.to_info()
    components = info.get("reward_components")
    trajectory = Trajectory(
        traj_id=traj_id,
        group_id=group_id,
        sample_idx=sample_idx,
        source=source,
        env_id=env_id or str(info.get("env_id", "")),
        task_id=task.id if task is not None else info.get("task_id"),
        seed=seed,
        prompt_ids=tokens.get("prompt_ids", []),
        completion_ids=tokens.get("completion_ids", []),
        loss_mask=tokens.get("loss_mask", []),
        logprobs=tokens.get("logprobs", []),
        reward=None if failure is not None else float(sum(step_rewards)),
        step_rewards=step_rewards,
        reward_components=(
            {str(k): float(v) for k, v in components.items() if isinstance(v, (int, float))}
            if isinstance(components, dict)
            else {}
        ),
        status=status,
        turns=tokens.get("turns", turns),
        messages=messages,
        info=to_jsonable(stored_info),
        metrics={"num_turns": len(turns), "agent_s": round(agent_s, 6), "env_s": round(env_s, 6)},
    )
    return trajectory, task


def agent_name(agent: Any) -> str:
    """The name an agent reports (``agent.name``), else its class name."""
    return str(getattr(agent, "name", None) or type(agent).__name__)


def run_id(header: Mapping[str, Any]) -> str:
    """A short id of a run's identity, the prefix of its group ids."""
    from rollgym.core.seeding import content_digest

    parts = [f"{name}={to_jsonable(header.get(name))!r}" for name in sorted(header)]
    return content_digest(*parts, length=8)


def _validate(n_tasks: int, group_size: int, seed: int, max_steps: int) -> None:
    for name, value, low in (("n_tasks", n_tasks, 1), ("group_size", group_size, 1), ("max_steps", max_steps, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ConfigError(f"{name} must be an integer >= {low}, got {value!r}.")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}.")


def collect(
    agent: Any,
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
    info = resolve_env(env_id)
    kwargs = dict(env_kwargs or {})
    if "split" in kwargs:
        raise ConfigError("Pass the split as collect(split=...), not inside env_kwargs.")
    check = getattr(agent, "check_env", None)
    if callable(check):
        check(info.id)
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
    prefix = f"{run_id(header)}-{info.id}"
    header["rollgym_version"] = __version__

    writer: ResultsWriter | None = None
    records: dict[tuple[int, int], EpisodeRecord] = {}
    try:
        if out is not None:
            writer, existing = ResultsWriter.open(out, header)
            records = {(r.task_index, r.trajectory.sample_idx): r for r in existing}
    except BaseException:
        env.close()
        raise
    jobs = [(i, j) for i in range(n_tasks) for j in range(group_size) if (i, j) not in records]
    total = n_tasks * group_size
    done = total - len(jobs)
    if progress is not None:
        progress(done, total)

    def new_env() -> Any:
        return make(info.id, split=split, **kwargs)

    def job_args(i: int, j: int) -> dict[str, Any]:
        group_id = f"{prefix}-{i:05d}"
        return {
            "seed": episode_seed(seed, i),
            "agent_seed": agent_seed(seed, i, j),
            "traj_id": f"{group_id}-{j}",
            "group_id": group_id,
            "sample_idx": j,
            "env_id": info.id,
            "max_steps": max_steps,
        }

    pool = [_Worker(env, agent, new_env)]
    try:
        if workers > 1 and len(jobs) > 1:
            pool += [_Worker(new_env(), _agent_copy(agent), new_env) for _ in range(min(workers, len(jobs)) - 1)]
        for i, record in _play(jobs, pool, job_args):
            if writer is not None:
                writer.append(record)
            # Normalize through JSON so fresh and resumed results compare equal.
            records[(i, record.trajectory.sample_idx)] = EpisodeRecord.from_json(_json_roundtrip(record))
            done += 1
            if progress is not None:
                progress(done, total)
    finally:
        for worker in pool:
            worker.env.close()
        if writer is not None:
            writer.close()
    return assemble_groups(list(records.values()), group_size, n_tasks)


class _Worker:
    """One env and one agent that play episodes one at a time."""

    def __init__(self, env: Any, agent: Any, new_env: Callable[[], Any]) -> None:
        self.env = env
        self.agent = agent
        self.new_env = new_env

    def play(self, task_index: int, args: dict[str, Any]) -> tuple[int, EpisodeRecord]:
        trajectory, task = run_episode(self.env, self.agent, **args)
        if trajectory.status == "failed" and trajectory.info.get("failure", {}).get("stage") in {"reset", "step"}:
            self.env.close()  # a crashed env may be in any state; start a fresh one
            self.env = self.new_env()
        return task_index, EpisodeRecord(task_index, task, trajectory)


def _agent_copy(agent: Any) -> Any:
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


def _json_roundtrip(record: EpisodeRecord) -> dict[str, Any]:
    import json

    return json.loads(record.to_line())  # type: ignore[no-any-return]

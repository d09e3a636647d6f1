"""Playing one episode: the loop every collector runs, synchronous and async.

An episode is a loop of ``agent.act`` (or ``await agent.aact``) and
``env.step`` until the env terminates or truncates, or a limit is reached.
:class:`EpisodeRecorder` records what happened (messages, turns, rewards, timings,
the failure if any) and builds the :class:`Trajectory`; :func:`run_episode`
and :func:`arun_episode` are the two drivers over it.

Limits (:class:`EpisodeLimits`): ``max_steps`` and ``max_total_tokens`` (the
agent's tokens over all turns, model and env tokens alike, as TRL counts them)
*truncate* the episode; ``step_timeout_s`` and ``episode_timeout_s`` *fail* it,
with the reason in ``info["failure"]``; a failed rollout is never scored 0. An env
that cannot go on (a game whose opponent engine died) ends the episode and puts a
``{"type", "message"}`` dict in ``info["failure"]``; that fails the rollout too,
at stage ``step``.
"""

from __future__ import annotations

import asyncio
import math
import time
import traceback
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from rollgym.core.agent import Agent, conforms
from rollgym.core.errors import ConfigError
from rollgym.core.task import Task
from rollgym.rollout.types import Status, Trajectory, Turn, to_jsonable

#: Default cap on agent actions per episode; reaching it truncates the episode.
DEFAULT_MAX_STEPS = 100

#: Keys of the env's ``info`` that a trajectory does not store (they repeat on every line).
_BULKY_INFO_KEYS = frozenset({"system_prompt", "tools"})

T = TypeVar("T")


# What an episode asks of its agent beyond ``act``, one member each: an agent may have any of them
# (a text agent that only keeps rewards, a token agent without a budget counter). The full
# capabilities of model agents are :mod:`rollgym.core.agent`'s protocols; these are their parts.


@runtime_checkable
class AwaitsActions(Protocol):
    """Has ``aact``: the async driver awaits it instead of calling ``act``."""

    def aact(self, observation: Any, info: dict[str, Any]) -> Awaitable[str]: ...


@runtime_checkable
class KeepsTokenRecord(Protocol):
    """Has ``token_record()``: the trajectory's token fields, read once when the episode ends."""

    def token_record(self) -> Any: ...


@runtime_checkable
class CountsTokens(Protocol):
    """Has ``tokens_used()``: the tokens its context has grown by (for ``max_total_tokens``)."""

    def tokens_used(self) -> int: ...


@runtime_checkable
class TakesRewards(Protocol):
    """Has ``record_reward(r)``: it is told each step's reward."""

    def record_reward(self, reward: float) -> None: ...


@dataclass(frozen=True)
class EpisodeAgent:
    """What one agent can do in an episode, read once when the episode takes it."""

    awaits: bool
    keeps_tokens: bool
    counts_tokens: bool
    takes_rewards: bool

    @classmethod
    def of(cls, agent: Any) -> EpisodeAgent:
        """The members ``agent`` has (see the protocols above)."""
        return cls(awaits=conforms(agent, AwaitsActions), keeps_tokens=conforms(agent, KeepsTokenRecord),
                   counts_tokens=conforms(agent, CountsTokens), takes_rewards=conforms(agent, TakesRewards))


@dataclass(frozen=True)
class EpisodeLimits:
    """Caps on one episode; ``None`` disables a cap."""

    max_steps: int = DEFAULT_MAX_STEPS
    max_total_tokens: int | None = None
    step_timeout_s: float | None = None
    episode_timeout_s: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_steps, int) or isinstance(self.max_steps, bool) or self.max_steps < 1:
            raise ConfigError(f"max_steps must be an integer >= 1, got {self.max_steps!r}.")
        for name in ("max_total_tokens", "step_timeout_s", "episode_timeout_s"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"{name} must be positive or None, got {value!r}.")


class Failure:
    """Why an episode failed: the stage (``reset``, ``act``, ``step``, ...) and the exception."""

    def __init__(self, stage: str, exc: BaseException) -> None:
        self.stage = stage
        self.exc = exc

    def to_info(self) -> dict[str, Any]:
        frames = traceback.format_exception(type(self.exc), self.exc, self.exc.__traceback__)
        message = str(self.exc) or type(self.exc).__name__
        info: dict[str, Any] = {"stage": self.stage, "type": type(self.exc).__name__, "message": message,
                "traceback": "".join(frames[-3:])}
        if getattr(self.exc, "retry_on_resume", False):  # e.g. a lost env server: a resumed run plays it again
            info["retry_on_resume"] = True
        return info


class ReportedFailure(Failure):
    """A failure the env reported in ``info["failure"]`` when it ended the episode."""

    def __init__(self, report: Mapping[str, Any]) -> None:
        self.stage = "step"
        self.report = report

    def to_info(self) -> dict[str, Any]:
        return {"stage": self.stage, "type": str(self.report.get("type") or "EnvFailure"),
                "message": str(self.report.get("message") or ""), "reported_by": "env"}


class StepTimeout(TimeoutError):
    """An agent or env call took longer than ``step_timeout_s``."""


class EpisodeTimeout(TimeoutError):
    """The whole episode took longer than ``episode_timeout_s``."""


def _as_turn(value: Any) -> Turn:
    """A :class:`Turn` of plain ints, floats and strings from a ``Turn``, a dict or an object with its fields."""
    if isinstance(value, Mapping):
        get: Callable[[str], Any] = value.get
    else:
        def get(name: str) -> Any:
            return getattr(value, name, None)
    reward, version, finish = get("reward"), get("policy_version"), get("finish_reason")
    return Turn(
        prompt_ids=list(map(int, get("prompt_ids") or ())),
        output_ids=list(map(int, get("output_ids") or ())),
        output_logprobs=list(map(float, get("output_logprobs") or ())),
        obs_ids=list(map(int, get("obs_ids") or ())),
        reward=None if reward is None else float(reward),
        policy_version=None if version is None else int(version),
        finish_reason=None if finish is None else str(finish),
        output_versions=list(map(int, get("output_versions") or ())),
    )


def _token_fields(agent: Any, step_rewards: list[float]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The trajectory's token fields from ``agent.token_record()``, and info notes about them."""
    if not conforms(agent, KeepsTokenRecord):
        return {}, {}
    try:
        record = agent.token_record()
        turns = [_as_turn(t) for t in getattr(record, "turns", [])]
        for turn, reward in zip(turns, step_rewards):
            if turn.reward is None:
                turn.reward = reward
        fields: dict[str, Any] = {
            "prompt_ids": list(map(int, record.prompt_ids)),
            "completion_ids": list(map(int, record.completion_ids)),
            "loss_mask": list(map(int, record.loss_mask)),
            "logprobs": list(map(float, record.logprobs)),
            "turns": turns,
        }
        if not len(fields["completion_ids"]) == len(fields["loss_mask"]) == len(fields["logprobs"]):
            raise ValueError("completion_ids, loss_mask and logprobs differ in length")
    except Exception as exc:  # a bookkeeping bug must not lose the episode's text and reward
        return {}, {"token_record_error": f"{type(exc).__name__}: {exc}"}
    notes = {key: getattr(record, key) for key in ("per_turn_rows", "token_exact") if hasattr(record, key)}
    return fields, notes


def _tokens_used(agent: Any, counts: bool) -> int:
    """Tokens the agent's context has grown by (model and env tokens), or 0 for text agents."""
    return int(agent.tokens_used()) if counts else 0


def _observation(observation: Any) -> Any:
    """What the agent gets: text, or a screenshot observation's dict (text and image) as it came."""
    return observation if isinstance(observation, dict) else str(observation)


def _observation_text(observation: Any) -> str:
    """What the transcript keeps: the text (of a screenshot observation, its ``"text"``)."""
    return str(observation.get("text", "")) if isinstance(observation, dict) else str(observation)


class EpisodeRecorder:
    """What one episode did so far; turns into a :class:`Trajectory` at the end.

    The drivers (:func:`run_episode`, :func:`arun_episode`, self-play's seats, tree rollouts'
    branches) feed it: :meth:`begin` with the reset, :meth:`acted` with each action, :meth:`stepped`
    with each step's result, :meth:`fail` with an exception; :meth:`trajectory` builds the result.
    """

    def __init__(self, agent: Agent, limits: EpisodeLimits, *, step_timings: bool = False) -> None:
        self.agent = agent
        self.step_timings = step_timings
        self.reset_ms = 0.0
        self.step_ms: list[float] = []
        self.can = EpisodeAgent.of(agent)
        self.limits = limits
        self.messages: list[dict[str, str]] = []
        self.turns: list[Turn] = []
        self.step_rewards: list[float] = []
        self.info: dict[str, Any] = {}
        self.observation: Any = ""
        self.task: Task | None = None
        self.failure: Failure | None = None
        self.status: Status = "truncated"
        self.agent_s = 0.0
        self.env_s = 0.0
        self.tool_calls = 0
        self.tool_rounds = 0  # actions holding at least one tool call: parallel calls in one action are one round
        self.done = False
        self.started = time.perf_counter()

    def fail(self, stage: str, exc: BaseException) -> None:
        self.failure = Failure(stage, exc)
        self.done = True

    def begin(self, env: Any, observation: Any, info: Any) -> None:
        if not isinstance(info, dict):
            raise TypeError(f"env.reset returned info of type {type(info).__name__}, not dict")
        self.observation, self.info = _observation(observation), info
        task = getattr(getattr(env, "unwrapped", env), "task", None)
        self.task = task if isinstance(task, Task) else None
        if info.get("system_prompt"):
            self.messages.append({"role": "system", "content": str(info["system_prompt"])})
        self.messages.append({"role": "user", "content": _observation_text(observation)})

    def check_caps(self) -> bool:
        """Whether a truncating cap is reached before the next action."""
        if len(self.turns) >= self.limits.max_steps:
            self.info = {**self.info, "truncated_by": "max_steps"}
            return True
        budget = self.limits.max_total_tokens
        if budget is not None and _tokens_used(self.agent, self.can.counts_tokens) >= budget:
            self.info = {**self.info, "truncated_by": "token_budget"}
            return True
        return False

    def acted(self, action: Any) -> None:
        if not isinstance(action, str):
            raise TypeError(f"the agent returned {type(action).__name__}, not str")
        self.turns.append(Turn())
        self.messages.append({"role": "assistant", "content": action})
        calls = action.count("<tool_call>")
        self.tool_calls += calls
        self.tool_rounds += int(calls > 0)

    def stepped(self, result: Any) -> None:
        observation, raw_reward, terminated, truncated, info = result
        reward = float(raw_reward)  # an env bug (a None or str reward) fails the rollout, not the run
        if not math.isfinite(reward):
            raise ValueError(f"env.step returned a non-finite reward {reward!r}")
        if not isinstance(info, dict):
            raise TypeError(f"env.step returned info of type {type(info).__name__}, not dict")
        self.observation, self.info = _observation(observation), info
        self.turns[-1].reward = reward
        self.step_rewards.append(reward)
        if _observation_text(observation):
            self.messages.append({"role": "user", "content": _observation_text(observation)})
        if terminated or truncated:
            self.status = "completed" if terminated else "truncated"
            self.done = True
            if isinstance(info.get("failure"), Mapping):
                self.failure = ReportedFailure(info["failure"])
        elif (self.limits.max_total_tokens is not None
              and _tokens_used(self.agent, self.can.counts_tokens) >= self.limits.max_total_tokens):
            self.info = {**self.info, "truncated_by": "token_budget"}
            self.done = True

    def give_reward(self) -> None:
        """Tell agents with ``record_reward`` the last step's reward; a failure there fails the rollout."""
        if self.can.takes_rewards and self.step_rewards:
            try:
                self.agent.record_reward(self.step_rewards[-1])  # type: ignore[attr-defined]
            except Exception as exc:
                self.fail("record_reward", exc)

    def play(self, env: Any, agent_seed: int | None) -> Generator[str, Any, None]:
        """The episode's protocol, shared by :func:`run_episode` and :func:`arun_episode`.

        It yields the call its driver makes next (``"reset"``, ``"pause"``, ``"act"`` or ``"step"``)
        and is sent the call's result, or thrown its exception (``KeyboardInterrupt``, a cancellation
        or an episode timeout go back out). It records each failure with its stage, the time spent in
        the agent and the env (a ``"pause"`` is not timed), the caps and the rewards.
        """
        started = time.perf_counter()
        try:
            self.begin(env, *(yield "reset"))
        except Exception as exc:
            self.fail("reset", exc)
        self.env_s += time.perf_counter() - started
        self.reset_ms = (time.perf_counter() - started) * 1000
        if not self.done:
            try:
                self.agent.reset(seed=agent_seed)
            except Exception as exc:
                self.fail("agent_reset", exc)
        while not self.done and not self.check_caps():
            yield "pause"
            if not (yield from self._timed("act", self.acted, "agent_s")):
                break
            if not (yield from self._timed("step", self.stepped, "env_s")):
                break
            self.give_reward()

    def _timed(self, call: str, record: Callable[[Any], None], clock: str) -> Generator[str, Any, bool]:
        """Make ``call`` through the driver and ``record`` its result, adding its time to the ``clock``
        attribute (also when it raises); ``False`` when it failed, which ends the episode."""
        started = time.perf_counter()
        try:
            record((yield call))
        except Exception as exc:
            self.fail(call, exc)
            return False
        finally:
            setattr(self, clock, getattr(self, clock) + time.perf_counter() - started)
            if call == "step" and self.step_timings:
                self.step_ms.append((time.perf_counter() - started) * 1000)
        return True

    def trajectory(self, *, traj_id: str, group_id: str, sample_idx: int, env_id: str, seed: int | None,
                   source: str) -> Trajectory:
        tokens, notes = _token_fields(self.agent, self.step_rewards)
        info = self.info if isinstance(self.info, dict) else {}
        stored = {k: v for k, v in info.items() if k not in _BULKY_INFO_KEYS} | notes
        status: Status = self.status
        if self.failure is not None:
            status = "failed"
            stored["failure"] = self.failure.to_info()
        components = info.get("reward_components")
        versions = sorted({v for t in tokens.get("turns", []) for v in (t.policy_version, *t.output_versions)
                           if v is not None})
        metrics: dict[str, Any] = {
            "num_turns": len(self.turns), "agent_s": round(self.agent_s, 6), "env_s": round(self.env_s, 6),
            "episode_s": round(time.perf_counter() - self.started, 6), "tool_calls": self.tool_calls,
            "tool_rounds": self.tool_rounds,
        }
        if versions:
            metrics["policy_versions"] = versions
        if self.step_timings:
            metrics["reset_ms"] = round(self.reset_ms, 3)
            metrics["step_ms"] = [round(ms, 3) for ms in self.step_ms]
        if notes.get("per_turn_rows"):
            metrics["per_turn_rows"] = True
        return Trajectory(
            traj_id=traj_id, group_id=group_id, sample_idx=sample_idx, source=source,
            env_id=env_id or str(info.get("env_id", "")),
            task_id=self.task.id if self.task is not None else info.get("task_id"),
            seed=seed,
            prompt_ids=tokens.get("prompt_ids", []), completion_ids=tokens.get("completion_ids", []),
            loss_mask=tokens.get("loss_mask", []), logprobs=tokens.get("logprobs", []),
            reward=None if self.failure is not None else float(sum(self.step_rewards)),
            step_rewards=self.step_rewards,
            reward_components=(
                {str(k): float(v) for k, v in components.items() if isinstance(v, (int, float))}
                if isinstance(components, dict) else {}
            ),
            status=status,
            turns=tokens.get("turns", self.turns),
            messages=self.messages,
            info=to_jsonable(stored),
            metrics=metrics,
        )


def _send(protocol: Generator[str, Any, None], result: Any) -> str | None:
    """The protocol's next call after ``result``; ``None`` when the episode is over."""
    try:
        return protocol.send(result)
    except StopIteration:
        return None


def _throw(protocol: Generator[str, Any, None], exc: BaseException) -> str | None:
    """The protocol's next call after the failed one (it records ``exc``, or raises it); ``None`` when over."""
    try:
        return protocol.throw(exc)
    except StopIteration:
        return None


def reset_kwargs(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{"options": ...}`` for ``env.reset`` when there are options (envs without options never see the key)."""
    return {"options": dict(options)} if options else {}


def run_episode(env: Any, agent: Agent, *, seed: int | None, agent_seed: int | None = None, traj_id: str = "",
                group_id: str = "", sample_idx: int = 0, env_id: str = "", max_steps: int = DEFAULT_MAX_STEPS,
                source: str = "policy", limits: EpisodeLimits | None = None,
                options: Mapping[str, Any] | None = None, step_timings: bool = False) -> tuple[Trajectory, Task | None]:
    """Play one episode of ``agent`` on ``env`` in this thread; return its trajectory and task.

    ``options`` go to ``env.reset`` (e.g. ``{"difficulty": 2}``, as a curriculum chooses them).

    Never raises for an exception in the agent or the env: the trajectory then has
    status ``"failed"``, ``reward=None`` and ``info["failure"]`` with the stage
    (``reset``, ``agent_reset``, ``act``, ``step``, ``record_reward``), exception type, message and
    traceback tail. ``KeyboardInterrupt`` and ``SystemExit`` propagate. Timeouts need
    :func:`arun_episode`; here only ``max_steps`` and ``max_total_tokens`` apply. ``step_timings``
    adds ``metrics["reset_ms"]`` and ``metrics["step_ms"]`` (each ``env.step``, in milliseconds).

    Example:
        >>> import rollgym
        >>> from rollgym.agents import OracleAgent
        >>> traj, task = run_episode(rollgym.make("Countdown-v0"), OracleAgent(), seed=0)
        >>> traj.reward
        1.0
    """
    limits = limits or EpisodeLimits(max_steps=max_steps)
    ep = EpisodeRecorder(agent, limits, step_timings=step_timings)
    protocol = ep.play(env, agent_seed)
    call: str | None = next(protocol)
    while call is not None:
        try:
            if call == "reset":
                result = env.reset(seed=seed, **reset_kwargs(options))
            elif call == "act":
                result = agent.act(ep.observation, ep.info)
            elif call == "step":
                result = env.step(ep.messages[-1]["content"])
            else:  # "pause": nothing parks a synchronous episode
                result = None
        except BaseException as exc:  # the protocol records it (or lets it go back out)
            call = _throw(protocol, exc)
        else:
            call = _send(protocol, result)
    return ep.trajectory(traj_id=traj_id, group_id=group_id, sample_idx=sample_idx, env_id=env_id, seed=seed,
                         source=source), ep.task


async def _call(fn: Callable[..., T], *args: Any, timeout: float | None) -> T:
    """Run a blocking call; in a worker thread with a deadline when a timeout is set."""
    if timeout is None:
        return fn(*args)
    try:
        return await asyncio.wait_for(asyncio.to_thread(fn, *args), timeout)
    except asyncio.TimeoutError as exc:
        raise StepTimeout(f"{getattr(fn, '__qualname__', 'call')} took longer than {timeout} s") from exc


async def _await(coro: Awaitable[T], timeout: float | None) -> T:
    if timeout is None:
        return await coro
    try:
        return await asyncio.wait_for(coro, timeout)
    except asyncio.TimeoutError as exc:
        raise StepTimeout(f"the agent took longer than {timeout} s to act") from exc


async def arun_episode(env: Any, agent: Agent, *, seed: int | None, agent_seed: int | None = None, traj_id: str = "",
                       group_id: str = "", sample_idx: int = 0, env_id: str = "", source: str = "policy",
                       limits: EpisodeLimits | None = None, pause: Callable[[], Awaitable[None]] | None = None,
                       options: Mapping[str, Any] | None = None,
                       step_timings: bool = False) -> tuple[Trajectory, Task | None]:
    """The async driver of :func:`run_episode`, with step and episode timeouts.

    Agents with ``aact`` (LLM agents) are awaited, so many episodes share one event
    loop and their generations batch; synchronous agents and ``env.step`` run in
    worker threads when a step timeout is set, else inline.

    ``pause``, when given, is awaited before every action, outside the step timeout and
    the agent's timing: a collector parks an episode there between training steps
    (partial rollouts, :mod:`rollgym.rollout.partial`).
    """
    limits = limits or EpisodeLimits()
    ep = EpisodeRecorder(agent, limits, step_timings=step_timings)
    timeout = limits.step_timeout_s
    remote = getattr(env, "unwrapped", env)
    areset, astep = getattr(remote, "areset", None), getattr(remote, "astep", None)

    aact = agent.aact if ep.can.awaits else None  # type: ignore[attr-defined]

    async def play() -> None:
        # Without a step timeout, sync calls run inline (no coroutine or thread around each one).
        protocol = ep.play(env, agent_seed)
        call: str | None = next(protocol)
        while call is not None:
            result: Any = None
            try:
                if call == "reset":
                    extra = reset_kwargs(options)
                    if callable(areset):  # remote envs (rollgym.remote) are awaited, not blocked on
                        result = await _await(areset(seed=seed, **extra), timeout)
                    elif timeout is None:
                        result = env.reset(seed=seed, **extra)
                    else:
                        result = await _call(lambda extra=extra: env.reset(seed=seed, **extra), timeout=timeout)
                elif call == "pause":
                    if pause is not None:
                        await pause()
                elif call == "act":
                    if aact is not None:
                        result = await (aact(ep.observation, ep.info) if timeout is None else
                                        _await(aact(ep.observation, ep.info), timeout))
                    elif timeout is None:
                        result = agent.act(ep.observation, ep.info)
                    else:
                        result = await _call(agent.act, ep.observation, ep.info, timeout=timeout)
                else:
                    action = ep.messages[-1]["content"]
                    if callable(astep):
                        result = await _await(astep(action), timeout)
                    elif timeout is None:
                        result = env.step(action)
                    else:
                        result = await _call(env.step, action, timeout=timeout)
            except BaseException as exc:  # the protocol records it (or lets it go back out)
                call = _throw(protocol, exc)
            else:
                call = _send(protocol, result)

    try:
        await (play() if limits.episode_timeout_s is None else _await(play(), limits.episode_timeout_s))
    except StepTimeout:
        ep.fail("episode", EpisodeTimeout(f"the episode took longer than {limits.episode_timeout_s} s"))
    return ep.trajectory(traj_id=traj_id, group_id=group_id, sample_idx=sample_idx, env_id=env_id, seed=seed,
                         source=source), ep.task

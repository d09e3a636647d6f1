"""Web episodes through the episode engine: given tasks, many in flight, with timeouts and a straggler cut.

:func:`collect_web_episodes` plays a list of web tasks (of a
:class:`~rollgym.envs.web.tasks.WebTaskSource` or WebGen's source) as a
:class:`~rollgym.rollout.spec.RunSpec` whose ``tasks`` are those tasks (one group
of one rollout each), driven by the asyncio driver
(:func:`~rollgym.rollout.drivers.run_spec` with ``driver="async"``): ``concurrency``
episodes in flight, each with its own web env (its own browser context in the
shared browser), an episode timeout, the straggler cut, and per-step timings.
:class:`WebEpisodeResult` is a view of each episode's
:class:`~rollgym.rollout.types.Trajectory`, the one episode shape.

Agents are callables ``agent(observation, info) -> action`` that return a string or an awaitable of
one (an async LLM client); plain functions run in a worker thread so a slow one never blocks the
others. The agent sees the reset's ``info`` merged with every later step's.

Why the asyncio driver runs on its own loop, not on the browser runtime's: the engine opens a run
synchronously (it builds the env and resets it once to check it), and a web env's reset blocks until
the runtime's loop has done the work, so the engine driven *on* that loop would wait for itself.
The env's blocking resets and steps run in worker threads instead; :func:`run_web_episodes`
(the coroutine form) runs :func:`collect_web_episodes` in a worker thread, so it may be awaited on
any loop, the runtime's included.

Example:
    >>> from rollgym.envs.web.tasks import WebTaskSource
    >>> from rollgym.envs.web.reference import reference_policy
    >>> tasks = [WebTaskSource(("shop",), "WebShop-v2").task(i) for i in range(4)]
    >>> results = collect_web_episodes(reference_policy, tasks, concurrency=4)  # doctest: +SKIP
    >>> [r.success for r in results]  # doctest: +SKIP
    [True, True, True, True]
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.core.task import Task
from rollgym.rollout.types import Trajectory

AgentFn = Callable[[Any, dict[str, Any]], Any]


@dataclass
class WebEpisodeResult:
    """One finished (or stopped) web episode: a view of its :class:`~rollgym.rollout.types.Trajectory`.

    Attributes:
        task: The task played.
        status: ``"completed"`` (answered), ``"truncated"`` (step cap), ``"failed"``
            (timeout or crash) or ``"aborted"`` (cut as a straggler).
        reward: The rubric's score (0.0 when failed or aborted; check ``status``).
        success: Whether every criterion passed.
        steps: Actions taken.
        transcript: ``[(action, observation), ...]`` after the first observation.
        first_observation: The observation at reset.
        details: The score's details (criteria verdicts), when graded.
        error: Why the episode failed (``"timeout"``, or the exception) or was aborted (``"straggler"``), else ``None``.
        seconds: Wall time of the episode.
        reset_ms: Wall time of the reset in milliseconds.
        step_ms: Wall time of each step in milliseconds (action, settle and observation).
        trajectory: The engine's record of the episode.
    """

    task: Task
    status: str
    reward: float = 0.0
    success: bool = False
    steps: int = 0
    transcript: list[tuple[str, str]] = field(default_factory=list)
    first_observation: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    reset_ms: float = 0.0
    step_ms: list[float] = field(default_factory=list)
    trajectory: Trajectory | None = None

    @classmethod
    def of(cls, task: Task, trajectory: Trajectory) -> WebEpisodeResult:
        """The view of ``trajectory``, an episode of ``task``."""
        info = trajectory.info
        error: str | None = None
        if trajectory.status == "failed":
            failure = info.get("failure") or {}
            error = ("timeout" if failure.get("type") == "EpisodeTimeout"
                     else f"{failure.get('type', 'Error')}: {failure.get('message', '')}")
        elif trajectory.status == "aborted":
            error = str(info.get("aborted") or "aborted")
        graded = trajectory.status in ("completed", "truncated")
        texts = [m for m in trajectory.messages if m["role"] != "system"]
        transcript = [(m["content"], texts[k + 1]["content"]) for k, m in enumerate(texts)
                      if m["role"] == "assistant" and k + 1 < len(texts) and texts[k + 1]["role"] == "user"]
        return cls(task=task, status=trajectory.status,
                   reward=float(trajectory.reward or 0.0) if graded else 0.0,
                   success=graded and info.get("correct") is True,
                   steps=len(transcript), transcript=transcript,
                   first_observation=texts[0]["content"] if texts and texts[0]["role"] == "user" else "",
                   details=dict(info.get("details") or {}) if graded else {}, error=error,
                   seconds=float(trajectory.metrics.get("episode_s", 0.0)),
                   reset_ms=float(trajectory.metrics.get("reset_ms", 0.0)),
                   step_ms=list(trajectory.metrics.get("step_ms", [])), trajectory=trajectory)


async def _call(fn: AgentFn, observation: Any, info: dict[str, Any]) -> str:
    if inspect.iscoroutinefunction(fn):
        return str(await fn(observation, info))
    result = await asyncio.to_thread(fn, observation, info)
    if inspect.isawaitable(result):
        result = await result
    return str(result)


class WebPolicyAgent:
    """The engine's agent around web policies ``f(observation, info) -> action`` (one, or one per group).

    With one policy per group, ``reset(seed)`` picks the group's by its agent seed (``seeds`` maps each
    group's agent seed to its index). ``info`` is the reset's merged with every later step's.
    """

    name = "web-policy"

    def __init__(self, policies: Sequence[AgentFn], seeds: dict[int, int] | None = None) -> None:
        self.policies = list(policies)
        self.seeds = seeds or {}
        self.policy = self.policies[0]
        self.info: dict[str, Any] = {}

    def reset(self, seed: int | None = None) -> None:
        self.policy = self.policies[self.seeds.get(seed, 0) if seed is not None else 0]
        self.info = {}

    def _seen(self, info: dict[str, Any]) -> dict[str, Any]:
        self.info = {**self.info, **info}
        return self.info

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        return asyncio.run(_call(self.policy, observation, self._seen(info)))

    async def aact(self, observation: Any, info: dict[str, Any]) -> str:
        return await _call(self.policy, observation, self._seen(info))

    def spawn(self) -> WebPolicyAgent:
        """Another agent over the same policies (a policy keeps its own per-episode state)."""
        return WebPolicyAgent(self.policies, self.seeds)


def collect_web_episodes(
    agent: AgentFn | Sequence[AgentFn],
    tasks: Sequence[Task],
    *,
    concurrency: int = 8,
    max_steps: int = 30,
    episode_timeout: float = 300.0,
    step_timeout: float = 60.0,
    straggler_fraction: float = 1.0,
    runtime: Any = None,
) -> list[WebEpisodeResult]:
    """Play ``tasks`` through the engine with up to ``concurrency`` episodes in flight; results are in task order.

    Args:
        agent: One agent for every task, or one per task.
        tasks: Web tasks of one env id (a :class:`~rollgym.envs.web.tasks.WebTaskSource`'s, WebGen's).
        concurrency: Episodes in flight at once (one web env, so one browser context, each).
        max_steps: Step cap per episode (the env truncates and grades at it).
        episode_timeout: Seconds before an episode is stopped as ``"failed"`` (``error="timeout"``).
        step_timeout: Seconds allowed for one browser reset or step.
        straggler_fraction: Stop the remaining episodes once this share has finished (1.0 waits for all).
        runtime: Ignored (kept for callers of the earlier runner): the web envs play on the
            process-wide browser runtime.

    Raises:
        ConfigError: for a bad argument, in one sentence, before any episode.
    """
    from rollgym.rollout.drivers import run_spec
    from rollgym.rollout.engine import agent_seed
    from rollgym.rollout.episode import EpisodeLimits
    from rollgym.rollout.spec import RunSpec

    del runtime
    policies = list(agent) if isinstance(agent, Sequence) and not isinstance(agent, str) else [agent] * len(tasks)
    if len(policies) != len(tasks):
        raise ConfigError(f"Got {len(policies)} agents for {len(tasks)} tasks; pass one agent or one per task.")
    if not all(callable(policy) for policy in policies):
        raise ConfigError("Each agent must be a callable agent(observation, info) -> action.")
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency!r}.")
    for name, value in (("episode_timeout", episode_timeout), ("step_timeout", step_timeout)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise ConfigError(f"{name} must be positive seconds, got {value!r}.")
    if not tasks:
        return []
    if not all(isinstance(task, Task) for task in tasks):
        raise ConfigError("tasks must hold rollgym Task objects (from a web task source).")
    env_ids = sorted({task.env_id for task in tasks})
    if len(env_ids) != 1:
        raise ConfigError(f"tasks must be of one env id, got {', '.join(env_ids)}; play each env's tasks apart.")
    seeds = {agent_seed(0, i, 0): i for i in range(len(tasks))} if len(set(map(id, policies))) > 1 else {}
    if seeds and len(seeds) != len(tasks):  # two groups' agent seeds collide: the per-task choice would be ambiguous
        raise ConfigError("Cannot tell the tasks' agents apart by their seeds; play them in separate calls.")
    # the episode timeout bounds the agent, as before; the env's own step_timeout bounds each browser call, and
    # a step timeout on the engine's side runs the env's blocking calls in worker threads, so episodes overlap
    limits = EpisodeLimits(max_steps=max_steps, step_timeout_s=float(episode_timeout),
                           episode_timeout_s=float(episode_timeout))
    spec = RunSpec(env_ids[0], n_tasks=len(tasks), group_size=1, tasks=tuple(tasks), limits=limits,
                   env_kwargs={"max_steps": max_steps, "step_timeout": step_timeout}, step_timings=True)
    groups = run_spec(spec, WebPolicyAgent(policies, seeds), driver="async", parallel=concurrency,
                      straggler_fraction=straggler_fraction, preflight_reset=False)
    return [WebEpisodeResult.of(task, group.trajectories[0]) for task, group in zip(tasks, groups)]


async def run_web_episodes(agent: AgentFn | Sequence[AgentFn], tasks: Sequence[Task],
                           **kwargs: Any) -> list[WebEpisodeResult]:
    """:func:`collect_web_episodes` awaited on any event loop (the browser runtime's too): it runs in a worker
    thread, since the engine's blocking env calls may not run on the runtime's loop."""
    return await asyncio.to_thread(collect_web_episodes, agent, tasks, **kwargs)

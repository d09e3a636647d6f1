"""Vectorised web rollouts: many episodes in flight in one browser, with timeouts and a straggler cut-off.

:func:`run_web_episodes` is a coroutine for the runtime's event loop;
:func:`collect_web_episodes` is its synchronous form for the rollout collector.
Agents are callables ``agent(observation, info) -> action`` that return a
string or an awaitable of one (an async LLM client); plain functions run in a
worker thread so a slow one never blocks the browser.

Episodes that exceed ``episode_timeout`` end with status ``"failed"``
(``error="timeout"``), never a silent 0. Once ``straggler_fraction`` of the
episodes have finished, the rest are stopped with status ``"aborted"``
(``error="straggler"``), as WebGym does to keep a batch from waiting on its
slowest member.

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
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.core.task import Task

AgentFn = Callable[[str, dict[str, Any]], Any]


@dataclass
class WebEpisodeResult:
    """One finished (or stopped) episode.

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
        error: Why the episode failed or was aborted, else ``None``.
        seconds: Wall time of the episode.
        step_ms: Wall time of each step in milliseconds (action, settle and observation).
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


async def _act(agent: AgentFn, observation: str, info: dict[str, Any]) -> str:
    if inspect.iscoroutinefunction(agent):
        return str(await agent(observation, info))
    result = await asyncio.to_thread(agent, observation, info)
    if inspect.isawaitable(result):
        result = await result
    return str(result)


async def _play(
    runtime: Any, agent: AgentFn, task: Task, result: WebEpisodeResult, max_steps: int, step_timeout: float
) -> None:
    from rollgym.envs.web.episode import WebEpisode

    episode = WebEpisode(runtime, task, max_steps=max_steps)
    t0 = time.perf_counter()
    try:
        observation, info = await asyncio.wait_for(episode.start(), step_timeout)
        result.reset_ms = (time.perf_counter() - t0) * 1000
        result.first_observation = observation
        info = {**info, "task_id": task.id, "env_id": task.env_id, "task_meta": dict(task.meta)}
        while True:
            action = await _act(agent, observation, info)
            t1 = time.perf_counter()
            observation, reward, terminated, truncated, step_info = await asyncio.wait_for(
                episode.step(action), step_timeout
            )
            result.step_ms.append((time.perf_counter() - t1) * 1000)
            result.transcript.append((action, observation))
            result.steps = episode.steps
            info = {**info, **step_info}
            if terminated or truncated:
                result.status = "completed" if terminated else "truncated"
                result.reward = float(reward)
                result.success = step_info.get("correct") is True
                result.details = dict(step_info.get("details") or {})
                return
    finally:
        await episode.close()


async def run_web_episodes(
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
    """Play ``tasks`` with up to ``concurrency`` episodes in flight; results are in task order.

    Args:
        agent: One agent for every task, or one per task.
        tasks: Tasks from a :class:`~rollgym.envs.web.tasks.WebTaskSource`.
        concurrency: Episodes in flight at once (one browser context each).
        max_steps: Step cap per episode.
        episode_timeout: Seconds before an episode is stopped as ``"failed"``.
        step_timeout: Seconds allowed for one reset or step.
        straggler_fraction: Stop the remaining episodes once this share has finished (1.0 waits for all).
        runtime: A :class:`~rollgym.envs.web.browser.WebRuntime`; the process-wide one by default.
            Must be the runtime whose loop runs this coroutine.
    """
    agents = list(agent) if isinstance(agent, Sequence) else [agent] * len(tasks)
    if len(agents) != len(tasks):
        raise ConfigError(f"Got {len(agents)} agents for {len(tasks)} tasks; pass one agent or one per task.")
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}.")
    if not 0.0 < straggler_fraction <= 1.0:
        raise ConfigError(f"straggler_fraction must be in (0, 1], got {straggler_fraction}.")
    if runtime is None:
        from rollgym.envs.web.browser import get_runtime

        runtime = get_runtime()
    results = [WebEpisodeResult(task=t, status="aborted", error="not started") for t in tasks]
    gate = asyncio.Semaphore(concurrency)
    finished = asyncio.Event()
    needed = math.ceil(straggler_fraction * len(tasks))
    done_count = 0

    async def one(i: int) -> None:
        nonlocal done_count
        res = results[i]
        async with gate:
            res.error = None
            t0 = time.perf_counter()
            try:
                await asyncio.wait_for(
                    _play(runtime, agents[i], tasks[i], res, max_steps, step_timeout), episode_timeout
                )
            except asyncio.TimeoutError:
                res.status, res.error = "failed", "timeout"
            except asyncio.CancelledError:
                res.status, res.error = "aborted", "straggler"
                raise
            except Exception as exc:
                res.status, res.error = "failed", f"{type(exc).__name__}: {exc}"
            finally:
                res.seconds = time.perf_counter() - t0
        done_count += 1
        if done_count >= needed:
            finished.set()

    jobs = [asyncio.ensure_future(one(i)) for i in range(len(tasks))]
    if jobs:
        waiter: asyncio.Future[Any] = asyncio.ensure_future(finished.wait())
        everyone: asyncio.Future[Any] = asyncio.gather(*jobs, return_exceptions=True)
        await asyncio.wait([waiter, everyone], return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        for job in jobs:
            if not job.done():
                job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        for res in results:
            if res.error == "not started":
                res.error = "straggler"
    return results


def collect_web_episodes(
    agent: AgentFn | Sequence[AgentFn], tasks: Sequence[Task], **kwargs: Any
) -> list[WebEpisodeResult]:
    """Synchronous :func:`run_web_episodes` on the process-wide runtime (call it from any thread but the runtime's)."""
    from rollgym.envs.web.browser import get_runtime

    runtime = get_runtime()
    kwargs.setdefault("runtime", runtime)
    timeout = kwargs.get("episode_timeout", 300.0) * max(1, math.ceil(len(tasks) / kwargs.get("concurrency", 8))) + 60
    return runtime.call(run_web_episodes(agent, tasks, **kwargs), timeout=timeout)  # type: ignore[no-any-return]

"""The vectorised runner: many episodes in one browser, per-episode timeouts, straggler cut-off."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rollgym.core.errors import ConfigError
from rollgym.envs.web.reference import reference_policy
from rollgym.envs.web.tasks import WebTaskSource
from rollgym.rollout.web import collect_web_episodes

pytestmark = pytest.mark.slow
SOURCE = WebTaskSource(("shop", "forum", "travel"), "WebGym-v2")


def live_episodes(runtime: Any) -> int:
    """Episodes the server holds, less the spares the runtime keeps opened ahead (one per site used)."""
    return int(runtime.server.episode_count) - sum(len(s) for s in runtime._spares.values())


def test_parallel_episodes_all_succeed_in_task_order(web_runtime: Any) -> None:
    tasks = [SOURCE.task(i, "validation") for i in range(5)]
    live_before = live_episodes(web_runtime)
    results = collect_web_episodes(reference_policy, tasks, concurrency=3)
    assert [r.task.id for r in results] == [t.id for t in tasks]
    assert all(r.status == "completed" and r.success and r.reward == 1.0 for r in results), [
        (r.task.id, r.status, r.error, r.details) for r in results
    ]
    assert all(r.steps == len(r.transcript) == len(r.step_ms) for r in results)
    # one episode shape: each result is a view of the engine's trajectory of the episode
    assert all(r.trajectory is not None and r.trajectory.task_id == r.task.id and r.trajectory.status == r.status
               and r.trajectory.reward == r.reward and r.trajectory.metrics["step_ms"] == r.step_ms
               and r.reset_ms > 0 for r in results)
    assert live_episodes(web_runtime) == live_before  # every episode's state was freed


def test_same_task_group_runs_isolated(web_runtime: Any) -> None:
    task = WebTaskSource(("shop",), "WebShop-v2", templates=("shop_purchase",)).task(3)
    results = collect_web_episodes(reference_policy, [task] * 3, concurrency=3)
    # each rollout placed its own order in its own database, so every "exactly one new order" check passes
    assert all(r.success for r in results), [(r.status, r.error, r.details) for r in results]


def test_timeouts_fail_and_stragglers_are_cut(web_runtime: Any) -> None:
    async def stuck(observation: str, info: dict[str, Any]) -> str:
        await asyncio.sleep(60)
        return 'answer("late")'

    tasks = [SOURCE.task(i) for i in range(4)]
    results = collect_web_episodes(
        [reference_policy, reference_policy, reference_policy, stuck], tasks, concurrency=4, straggler_fraction=0.75
    )
    assert [r.status for r in results[:3]] == ["completed"] * 3
    assert results[3].status == "aborted" and results[3].error == "straggler"

    results = collect_web_episodes(stuck, tasks[:1], episode_timeout=1.0)
    assert results[0].status == "failed" and results[0].error == "timeout" and results[0].reward == 0.0


def test_bad_runner_arguments_are_reported() -> None:
    with pytest.raises(ConfigError, match="agents for"):
        asyncio.run(_run_bad())
    other = WebTaskSource(("shop",), "WebShop-v2").task(0)
    for kwargs, message in (
        ({"tasks": [SOURCE.task(0), other]}, "tasks must be of one env id, got WebGym-v2, WebShop-v2"),
        ({"tasks": ["task-0"]}, "tasks must hold rollgym Task objects"),
        ({"concurrency": 0}, "concurrency must be at least 1, got 0."),
        ({"episode_timeout": -1}, "episode_timeout must be positive seconds, got -1."),
        ({"agent": "oracle"}, "Each agent must be a callable"),
    ):
        args: dict[str, Any] = {"agent": reference_policy, "tasks": [SOURCE.task(0)], **kwargs}
        with pytest.raises(ConfigError, match=message):
            collect_web_episodes(args.pop("agent"), args.pop("tasks"), **args)
    assert collect_web_episodes(reference_policy, []) == []


async def _run_bad() -> None:
    from rollgym.rollout.web import run_web_episodes

    await run_web_episodes([reference_policy], [SOURCE.task(0), SOURCE.task(1)], runtime=object())


def test_the_rollout_collector_runs_web_groups_in_one_browser(web_runtime: Any) -> None:
    from rollgym.agents import OracleAgent
    from rollgym.rollout import collect

    live_before = live_episodes(web_runtime)
    groups = collect(OracleAgent(), "WebGym-v2", n_tasks=3, group_size=2, split="validation", seed=5, workers=4,
                     max_steps=30)
    assert len(groups) == 3 and all(len(g.trajectories) == 2 for g in groups)
    for group in groups:  # rollouts of one task ran side by side, each in its own database
        assert all(t.status == "completed" and t.reward == 1.0 for t in group.trajectories), [
            (t.status, t.reward, t.info.get("details")) for t in group.trajectories
        ]
    assert live_episodes(web_runtime) == live_before  # every episode's state was freed

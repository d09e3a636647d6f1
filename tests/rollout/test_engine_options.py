"""The engine's options for runs of given tasks (web runs use them): tasks, per-step timings, the straggler cut."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import rollgym_toyenv  # noqa: F401  (registers ToyAdd-v0 and ToyGuess-v0)
from test_collector import comparable

import rollgym
from rollgym.agents import OracleAgent, RandomAgent
from rollgym.core.errors import ConfigError
from rollgym.core.task import Task
from rollgym.rollout import EpisodeLimits, load_results
from rollgym.rollout.drivers import run_spec
from rollgym.rollout.spec import RunSpec


def given(*indices: int) -> tuple[Task, ...]:
    env = rollgym.make("ToyAdd-v0", split="train")
    tasks = []
    for index in indices:
        env.reset(options={"task_index": index})
        tasks.append(env.unwrapped.task)
    env.close()
    return tuple(tasks)


def test_given_tasks_are_played_one_group_each_by_every_driver(tmp_path: Path) -> None:
    tasks = given(4, 9, 4)
    spec = RunSpec("ToyAdd-v0", n_tasks=3, group_size=2, tasks=tasks)  # the run's split is "test": tasks are given
    groups = run_spec(spec, OracleAgent())
    assert [g.task.id for g in groups] == [t.id for t in tasks]
    assert all(t.reward == 1.0 for g in groups for t in g.trajectories)
    assert comparable(run_spec(spec, OracleAgent(), driver="async", parallel=3)) == comparable(groups)
    out = tmp_path / "r.jsonl"
    run_spec(RunSpec("ToyAdd-v0", n_tasks=3, group_size=2, tasks=tasks, out=str(out)), OracleAgent())
    assert load_results(out).header["tasks"] == [t.id for t in tasks]  # part of the run's identity


@pytest.mark.parametrize(("fields", "message"), [
    ({"tasks": given(1)}, "tasks holds 1 tasks but n_tasks is 2; pass as many tasks as n_tasks."),
    ({"tasks": ["toyadd-train-1", "toyadd-train-2"]}, "tasks must hold Task objects, got a str."),
    ({"tasks": "ab"}, "tasks must be a list of Task objects, got str."),
    ({"tasks": given(1, 2), "task_indices": (1, 2)}, "Pass task_indices or tasks, not both"),
    ({"step_timings": "yes"}, "step_timings must be True or False, got 'yes'."),
])
def test_bad_given_tasks_or_timings_are_one_sentence(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RunSpec("ToyAdd-v0", n_tasks=2, group_size=1, **fields)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


@pytest.mark.parametrize("driver", ["threads", "async"])
def test_step_timings_record_the_reset_and_every_step_only_when_asked(driver: str) -> None:
    spec = RunSpec("ToyGuess-v0", n_tasks=2, group_size=2, seed=1, limits=EpisodeLimits(max_steps=5))
    plain = run_spec(spec, RandomAgent(), driver=driver)
    assert all("step_ms" not in t.metrics and "reset_ms" not in t.metrics for g in plain for t in g.trajectories)
    timed = run_spec(RunSpec("ToyGuess-v0", n_tasks=2, group_size=2, seed=1, limits=EpisodeLimits(max_steps=5),
                             step_timings=True), RandomAgent(), driver=driver)
    for traj in (t for g in timed for t in g.trajectories):
        assert len(traj.metrics["step_ms"]) == traj.metrics["num_turns"] == len(traj.step_rewards) > 0
        assert traj.metrics["reset_ms"] > 0 and all(ms >= 0 for ms in traj.metrics["step_ms"])
    timed_data = comparable(timed)
    for group in timed_data:
        for traj in group["trajectories"]:
            del traj["metrics"]["step_ms"], traj["metrics"]["reset_ms"]
    assert timed_data == comparable(plain)  # the timings are the only difference


class SlowOnSome:
    """The oracle, except that it never answers on the tasks it is told to stall on (an awaited agent)."""

    name = "slow-on-some"

    def __init__(self, stall: set[str]) -> None:
        self.stall = stall
        self.oracle = OracleAgent()

    def reset(self, seed: int | None = None) -> None:
        self.oracle.reset(seed=seed)

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        return self.oracle.act(observation, info)

    async def aact(self, observation: Any, info: dict[str, Any]) -> str:
        if info.get("task_id") in self.stall:
            await asyncio.sleep(60)
        return self.oracle.act(observation, info)


def test_the_straggler_cut_aborts_what_is_running_and_what_never_started() -> None:
    tasks = given(0, 1, 2, 3)
    spec = RunSpec("ToyAdd-v0", n_tasks=4, group_size=1, tasks=tasks, step_timings=True)
    started = time.perf_counter()
    groups = run_spec(spec, SlowOnSome({tasks[2].id}), driver="async", parallel=1, straggler_fraction=0.5)
    assert time.perf_counter() - started < 30  # the stalled episode was cancelled, not waited for
    trajs = [g.trajectories[0] for g in groups]
    assert [t.status for t in trajs] == ["completed", "completed", "aborted", "aborted"]  # running, then not started
    assert [t.reward for t in trajs] == [1.0, 1.0, None, None]  # a cut episode is never a 0
    assert all(t.info == {"aborted": "straggler"} and t.task_id == task.id for t, task in zip(trajs[2:], tasks[2:]))
    # without a cut, every episode is waited for
    whole = run_spec(RunSpec("ToyAdd-v0", n_tasks=4, group_size=1, tasks=tasks), SlowOnSome(set()), driver="async",
                     straggler_fraction=1.0)
    assert all(g.trajectories[0].status == "completed" for g in whole)


@pytest.mark.parametrize("fraction", [0.0, 1.5, "half", True])
def test_a_bad_straggler_fraction_is_one_sentence(fraction: Any) -> None:
    with pytest.raises(ConfigError, match=r"^straggler_fraction must be in \(0, 1\], got "):
        run_spec(RunSpec("ToyAdd-v0", 1, 1), OracleAgent(), driver="async", straggler_fraction=fraction)


def test_without_the_preflight_reset_a_reset_mistake_fails_the_rollouts_with_its_reason() -> None:
    spec = RunSpec("ToyAdd-v0", n_tasks=1, group_size=2, split="nope")
    with pytest.raises(ConfigError, match="Unknown split 'nope'"):
        run_spec(spec, OracleAgent())  # the checking reset: one error before any episode
    trajs = run_spec(spec, OracleAgent(), driver="async", preflight_reset=False)[0].trajectories
    assert [(t.status, t.reward, t.info["failure"]["stage"]) for t in trajs] == [("failed", None, "reset")] * 2
    assert "Unknown split 'nope'" in trajs[0].info["failure"]["message"]

"""One engine under every driver: RunSpec checks itself, and threads, asyncio and Ray play the same episodes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import rollgym_toyenv  # noqa: F401  (registers ToyAdd-v0 and ToyGuess-v0)
from test_collector import comparable

from rollgym.agents import OracleAgent, RandomAgent
from rollgym.core.errors import ConfigError
from rollgym.rollout import EpisodeLimits, collect, collect_async, load_results
from rollgym.rollout.drivers import DRIVERS, run_spec
from rollgym.rollout.engine import Engine, EpisodePlayer
from rollgym.rollout.spec import RunSpec


@pytest.mark.parametrize(("fields", "message"), [
    ({"n_tasks": 0}, "n_tasks must be at least 1, got 0."),
    ({"n_tasks": True}, "n_tasks must be an integer, got True."),
    ({"group_size": -1}, "group_size must be at least 1, got -1."),
    ({"seed": -3}, "seed must be at least 0, got -3."),
    ({"seed": 1.5}, "seed must be an integer, got 1.5."),
    ({"env_id": ""}, "env_id must be a non-empty string"),
    ({"split": ""}, "split must be a non-empty string"),
    ({"env_kwargs": {"split": "train"}}, "Pass the split as collect(split=...), not inside env_kwargs."),
    ({"env_kwargs": ["x"]}, "env_kwargs must be a dict"),
    ({"reset_options": 3}, "reset_options must be a dict or None"),
    ({"task_indices": (0, 1)}, "task_indices names 2 tasks but n_tasks is 3"),
    ({"task_indices": (0, -1, 2)}, "each task index must be at least 0, got -1."),
    ({"task_indices": "012"}, "task_indices must be a list of task indices"),
    ({"limits": {"max_steps": 3}}, "limits must be an EpisodeLimits, got dict."),
    ({"out": 5}, "out must be a file path or None, got int."),
    ({"resume": "yes"}, "resume must be True or False, got 'yes'."),
])
def test_a_bad_run_spec_is_one_sentence_at_construction(fields: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"env_id": "ToyAdd-v0", "n_tasks": 3, "group_size": 2, **fields}
    with pytest.raises(ConfigError) as caught:
        RunSpec(**args)
    text = str(caught.value)
    assert text.startswith(message) and text.count("\n") == 0


def test_a_run_spec_has_one_name_per_concept() -> None:
    spec = RunSpec("ToyAdd-v0", n_tasks=2, group_size=3, limits=EpisodeLimits(max_steps=7), env_kwargs={})
    assert (spec.n_tasks, spec.group_size, spec.max_steps, spec.total) == (2, 3, 7, 6)
    assert spec.jobs() == [(i, j) for i in range(2) for j in range(3)]
    assert RunSpec.of("ToyAdd-v0", 1, 1, max_steps=4, env_kwargs=None).limits == EpisodeLimits(max_steps=4)
    with pytest.raises(AttributeError):
        spec.n_tasks = 5  # type: ignore[misc]  # frozen


def _run(driver: str, spec: RunSpec, **options: Any) -> list[Any]:
    agent: Any = RandomAgent if driver == "ray" else RandomAgent()
    return comparable(run_spec(spec, agent, driver=driver, **options))


@pytest.mark.parametrize("env_id", ["ToyAdd-v0", "ToyGuess-v0"])
def test_threads_and_asyncio_play_the_same_trajectories_on_one_spec(env_id: str) -> None:
    spec = RunSpec(env_id, n_tasks=4, group_size=3, seed=5, limits=EpisodeLimits(max_steps=3))
    one_thread = _run("threads", spec)
    assert _run("threads", spec, parallel=3) == one_thread
    assert _run("async", spec) == one_thread
    assert _run("async", spec, parallel=2) == one_thread
    # and the public wrappers build the same spec
    assert comparable(collect(RandomAgent(), env_id, 4, 3, seed=5, max_steps=3)) == one_thread
    assert comparable(collect_async(RandomAgent(), env_id, 4, 3, seed=5, max_steps=3)) == one_thread


def test_an_unknown_driver_is_one_sentence() -> None:
    with pytest.raises(ConfigError, match="driver must be one of 'threads', 'async', 'ray', got 'thread'; did you "
                                          "mean 'threads'"):
        run_spec(RunSpec("ToyAdd-v0", 1, 1), OracleAgent(), driver="thread")
    assert DRIVERS == ("threads", "async", "ray")


def test_task_indices_and_reset_options_reach_every_reset(tmp_path: Path) -> None:
    spec = RunSpec("ToyAdd-v0", n_tasks=3, group_size=2, task_indices=(7, 2, 7))
    groups = run_spec(spec, OracleAgent())
    ids = [g.task.id for g in groups]
    assert ids[0] == ids[2] != ids[1]  # index 7 twice, index 2 once
    import rollgym

    env = rollgym.make("ToyAdd-v0", split="test")
    env.reset(options={"task_index": 2})
    assert ids[1] == env.unwrapped.task.id
    env.close()
    for driver in ("threads", "async"):
        assert comparable(run_spec(spec, OracleAgent(), driver=driver)) == comparable(groups)
    # the indices are part of the run's identity: a results file of another choice is refused
    out = tmp_path / "r.jsonl"
    run_spec(RunSpec("ToyAdd-v0", n_tasks=3, group_size=2, task_indices=(7, 2, 7), out=str(out)), OracleAgent())
    assert load_results(out).header["task_indices"] == [7, 2, 7]
    with pytest.raises(ConfigError, match="different run"):
        run_spec(RunSpec("ToyAdd-v0", n_tasks=3, group_size=2, task_indices=(1, 2, 3), out=str(out)), OracleAgent())


def test_resume_false_refuses_a_file_that_holds_the_run(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    spec = RunSpec("ToyAdd-v0", n_tasks=2, group_size=2, out=str(out))
    first = run_spec(spec, OracleAgent())
    assert comparable(run_spec(spec, OracleAgent())) == comparable(first)  # resume (the default) replays nothing
    with pytest.raises(ConfigError, match="already holds 4 episodes of this run; pass resume=True"):
        run_spec(RunSpec("ToyAdd-v0", n_tasks=2, group_size=2, out=str(out), resume=False), OracleAgent())


def test_the_engine_is_the_one_place_a_driver_needs() -> None:
    """A new driver: jobs from the engine, episodes on its players, every finished one handed back."""
    seen: list[tuple[int, int]] = []
    engine = Engine(RunSpec("ToyGuess-v0", n_tasks=2, group_size=2, seed=3), RandomAgent(),
                    progress=lambda done, total: seen.append((done, total)))
    engine.start()
    players = [engine.player(), engine.player()]
    assert all(isinstance(p, EpisodePlayer) for p in players)

    async def drive() -> None:
        for k, (i, j) in enumerate(engine.jobs):
            engine.finish(await players[k % 2].aplay(engine.job(i, j)))

    asyncio.run(drive())
    engine.close([p.env for p in players])
    assert seen == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    assert comparable(engine.groups()) == comparable(collect(RandomAgent(), "ToyGuess-v0", 2, 2, seed=3))


def test_ray_plays_the_same_trajectories_as_threads_on_one_spec() -> None:
    from tests.conftest import require_module

    require_module("ray")
    import ray

    spec = RunSpec("Sudoku4x4-v0", n_tasks=3, group_size=2, seed=9, limits=EpisodeLimits(max_steps=3))
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        assert _run("ray", spec, parallel=2) == _run("threads", spec)
    finally:
        if started:
            ray.shutdown()


def test_rollgym_eval_chooses_the_driver_with_one_option_and_keeps_the_old_names(
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from rollgym.cli import main

    base = ["eval", "rollgym_toyenv:ToyGuess-v0", "--agent", "random", "--n", "3", "--group-size", "2",
            "--seed", "4", "--max-steps", "3", "--json"]
    summaries = []
    for extra in ([], ["--driver", "async"], ["--driver", "threads", "--parallel", "3"], ["--workers", "2"],
                  ["--driver", "async", "--concurrency", "2"]):
        assert main([*base, *extra]) == 0
        summaries.append(json.loads(capsys.readouterr().out.strip().splitlines()[-1]))
    assert all(s == summaries[0] for s in summaries) and summaries[0]["episodes"] == 6
    with pytest.raises(SystemExit):
        main([*base, "--driver", "ray"])  # Ray is the library's driver (collect_ray), not the command's

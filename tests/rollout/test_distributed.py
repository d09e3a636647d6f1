"""collect_ray on a real local Ray instance: same results as the local collector; a killed worker loses nothing."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from test_collector import comparable

from rollgym.agents import OracleAgent, RandomAgent
from rollgym.rollout import collect, load_results
from tests.conftest import require_module

require_module("ray")
import ray  # noqa: E402

from rollgym.rollout.distributed import collect_ray  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def test_ray_matches_the_local_collector(tmp_path: Path):
    out = tmp_path / "ray.jsonl"
    remote = collect_ray(OracleAgent, "Countdown-v0", 4, 2, seed=1, out=str(out), num_workers=2)
    local = collect(OracleAgent(), "Countdown-v0", 4, 2, seed=1)
    assert comparable(remote) == comparable(local)
    assert comparable(load_results(out).groups()) == comparable(local)


def test_killing_a_worker_mid_run_loses_no_finished_rollout(tmp_path: Path):
    out = tmp_path / "killed.jsonl"
    killed: list[int] = []

    def kill_one(done: int, workers: list) -> None:
        if done == 5 and not killed:
            pid = ray.get(workers[0].pid.remote())
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    groups = collect_ray(RandomAgent, "Sudoku4x4-v0", 6, 3, seed=4, out=str(out), num_workers=2,
                         episodes_per_worker=2, on_result=kill_one)
    assert killed, "the test never killed a worker"
    assert all(len(g.trajectories) == 3 for g in groups)
    straight = collect(RandomAgent(), "Sudoku4x4-v0", 6, 3, seed=4)
    assert comparable(groups) == comparable(straight)
    assert len(load_results(out).episodes) == 18


def test_ray_workers_play_an_llm_through_an_http_model_server(tiny_backend, tiny_server, tiny_model_dir):
    from test_stream import check_tokens

    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import RemoteChatAgent

    factory = RemoteChatAgent(tiny_server.url, tokenizer=str(tiny_model_dir), sampling=SamplingParams(max_tokens=8))
    groups = collect_ray(factory, "Countdown-v0", 3, 2, seed=2, num_workers=2, episodes_per_worker=2)
    trajectories = [t for g in groups for t in g.trajectories]
    assert len(trajectories) == 6 and all(t.status == "completed" for t in trajectories)
    for traj in trajectories:  # the exact tokens the server sampled, with its logprobs, came back from the workers
        check_tokens(tiny_backend, traj)


def test_kept_workers_play_every_run_on_the_same_actors_and_match_the_local_collector(tmp_path: Path):
    """RayWorkers starts its actors once: runs after the first play on the same workers (no new actor), with
    collect's results; a results file resumes as with collect_ray; after close, a run is a clear error."""
    import asyncio

    from rollgym.core.errors import ConfigError
    from rollgym.rollout.distributed import RayWorkers

    with RayWorkers(OracleAgent, "Countdown-v0", num_workers=2) as workers:
        assert workers.handles == []
        first = workers.collect(4, 2, seed=1)
        started = {h._actor_id.hex() for h in workers.handles}
        assert len(started) == 2
        second = workers.collect(6, 2, seed=2, out=str(tmp_path / "run.jsonl"))
        streamed = asyncio.run(_gather(workers.stream(3, 2, seed=3)))
        assert {h._actor_id.hex() for h in workers.handles} == started
        played_by = {t.metrics["worker"] for g in first + second + streamed for t in g.trajectories}
        assert played_by <= started and len(played_by) == 2
        assert comparable(first) == comparable(collect(OracleAgent(), "Countdown-v0", 4, 2, seed=1))
        assert comparable(second) == comparable(collect(OracleAgent(), "Countdown-v0", 6, 2, seed=2))
        assert comparable(load_results(tmp_path / "run.jsonl").groups()) == comparable(second)
        in_order = sorted(streamed, key=lambda g: g.group_id)
        assert comparable(in_order) == comparable(collect(OracleAgent(), "Countdown-v0", 3, 2, seed=3))
    assert workers.handles == []
    with pytest.raises(ConfigError, match="closed"):
        workers.collect(1, 1)


def test_a_kept_worker_lost_between_runs_is_replaced_and_nothing_changes():
    from rollgym.rollout.distributed import RayWorkers

    with RayWorkers(OracleAgent, "Countdown-v0", num_workers=2) as workers:
        workers.collect(2, 2, seed=4)
        lost = workers.handles[0]
        ray.kill(lost, no_restart=True)
        groups = workers.collect(8, 2, seed=5)
        assert comparable(groups) == comparable(collect(OracleAgent(), "Countdown-v0", 8, 2, seed=5))
        assert lost._actor_id.hex() not in {h._actor_id.hex() for h in workers.handles}
        assert len(workers.handles) == 2


async def _gather(stream):
    return [group async for group in stream]


def test_the_grpo_rollout_step_plays_on_kept_workers_and_refuses_workers_of_another_run():
    from rollgym.core.errors import ConfigError
    from rollgym.rollout.distributed import RayWorkers
    from rollgym.train.rollouts import collect_groups

    with RayWorkers(OracleAgent, "Countdown-v0", split="train", num_workers=2) as workers:
        for step in range(2):
            kept = collect_groups(OracleAgent, "Countdown-v0", 3, 2, seed=step, ray=workers)
            assert comparable(kept) == comparable(collect_groups(OracleAgent, "Countdown-v0", 3, 2, seed=step))
            if step == 0:
                started = {h._actor_id.hex() for h in workers.handles}
        assert {h._actor_id.hex() for h in workers.handles} == started
        with pytest.raises(ConfigError, match="another run"):
            collect_groups(OracleAgent, "Sudoku4x4-v0", 1, 1, ray=workers)
        with pytest.raises(ConfigError, match="another run"):
            collect_groups(OracleAgent, "Countdown-v0", 1, 1, split="test", ray=workers)
    with pytest.raises(ConfigError, match="RayWorkers"):
        collect_groups(OracleAgent, "Countdown-v0", 1, 1, ray=3)  # type: ignore[arg-type]

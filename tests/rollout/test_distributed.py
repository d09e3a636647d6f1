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

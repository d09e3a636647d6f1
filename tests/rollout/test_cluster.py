"""collect_ray and stream_ray on a real 3-node Ray cluster on this machine (separate raylets and object stores).

Nodes: the head (the driver's node, ``lane``), an engine node (``stockfish``, ``lane``) and a
plain node (``lane``). Tests add and remove further nodes. Checked: workers land only on nodes
that offer what the env needs; every trajectory names its node and worker; a node removed
mid-run, gracefully or not, changes no result and loses no finished episode; a node that joins
mid-run gets work.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from test_collector import comparable

from rollgym.agents import OracleAgent, RandomAgent
from rollgym.rollout import EpisodeLimits, collect, load_results
from tests.conftest import require_module

require_module("ray")
import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from rollgym.rollout import distributed  # noqa: E402
from rollgym.rollout.distributed import ClusterError, collect_ray, collect_ray_async, stream_ray  # noqa: E402
from rollgym.rollout.placement import Needs  # noqa: E402

SMALL = {"object_store_memory": 80 * 1024**2}  # Ray's minimum is 75 MiB
LANE = Needs(0, {"lane": 1})


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"lane": 2, "late": 1}, "include_dashboard": False, **SMALL})
    nodes = {"head": cluster.head_node.node_id}
    try:
        nodes["engine"] = cluster.add_node(num_cpus=2, resources={"stockfish": 2, "lane": 2}, **SMALL).node_id
        nodes["plain"] = cluster.add_node(num_cpus=1, resources={"lane": 2}, **SMALL).node_id
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        yield cluster, nodes
    finally:
        ray.shutdown()
        cluster.shutdown()


def nodes_of(groups: list) -> list[str]:
    return [t.metrics["node"] for g in groups for t in g.trajectories]


def test_workers_land_on_the_nodes_that_offer_what_the_env_needs(cluster):
    _, nodes = cluster
    chess = {"opponent": "stockfish-nodes-1"}  # Chess against Stockfish needs a node with a stockfish
    groups = collect_ray(RandomAgent, "Chess-v1", 3, 1, seed=3, env_kwargs=chess, num_workers=3,
                         limits=EpisodeLimits(max_steps=2))
    assert set(nodes_of(groups)) == {nodes["engine"]}
    workers = {t.metrics["worker"] for g in groups for t in g.trajectories}
    assert 1 <= len(workers) <= 2  # the engine node holds two (2 CPUs, 2 stockfish), however many were asked
    with pytest.raises(ClusterError, match="gpu-browser: 1"):
        collect_ray(OracleAgent, "Countdown-v0", 2, 1, needs=Needs(0, {"gpu-browser": 1}))


def test_every_trajectory_records_its_node_and_worker(cluster, tmp_path: Path):
    handle, nodes = cluster
    ray.shutdown()  # and join again by address, as a script on another host would
    out = tmp_path / "spread.jsonl"
    groups = collect_ray(OracleAgent, "Countdown-v0", 6, 2, seed=1, out=str(out), address=handle.address,
                         needs=LANE, num_workers=3)
    assert set(nodes_of(groups)) == set(nodes.values())  # three workers, one on each node
    where = {(t.metrics["worker"], t.metrics["node"]) for g in groups for t in g.trajectories}
    assert len({worker for worker, _ in where}) == len(where) == 3  # a worker stays on its node
    assert comparable(groups) == comparable(collect(OracleAgent(), "Countdown-v0", 6, 2, seed=1))
    recorded = {r.trajectory.traj_id: r.trajectory.metrics["node"] for r in load_results(out).episodes}
    assert recorded == {t.traj_id: t.metrics["node"] for g in groups for t in g.trajectories}


def _recorded_nodes(out: Path) -> list[str]:
    lines = out.read_text().splitlines()[1:]  # the header first
    return [json.loads(line)["trajectory"]["metrics"]["node"] for line in lines if line.strip()]


@pytest.mark.parametrize("graceful", [True, False], ids=["graceful", "killed"])
def test_a_node_removed_mid_run_changes_no_result(cluster, tmp_path: Path, graceful: bool):
    handle, _ = cluster
    spot = handle.add_node(num_cpus=1, resources={"lane": 2}, **SMALL)
    handle.wait_for_nodes()
    out = tmp_path / "removed.jsonl"
    removed: list[int] = []

    def remove_spot_once_it_finished_something(done: int, workers: list[Any]) -> None:
        if not removed and spot.node_id in _recorded_nodes(out):
            handle.remove_node(spot, allow_graceful=graceful)
            removed.append(done)

    groups = collect_ray(RandomAgent, "Sudoku4x4-v0", 12, 4, seed=4, out=str(out), needs=LANE, num_workers=4,
                         on_result=remove_spot_once_it_finished_something)
    assert removed, "the spot node never finished an episode, so the test never removed it"
    assert comparable(groups) == comparable(collect(RandomAgent(), "Sudoku4x4-v0", 12, 4, seed=4))
    assert spot.node_id in nodes_of(groups)  # what the node finished before it went is kept, not played again
    assert len(load_results(out).episodes) == 48


def test_a_node_added_mid_run_gets_work(cluster, monkeypatch: pytest.MonkeyPatch):
    handle, _ = cluster
    monkeypatch.setattr(distributed, "NODE_POLL_S", 0.0)  # look for new nodes after every batch
    added: list[str] = []

    def add_a_node(done: int, workers: list[Any]) -> None:
        if not added:
            added.append(handle.add_node(num_cpus=1, resources={"late": 2}, **SMALL).node_id)
            handle.wait_for_nodes()

    groups = collect_ray(OracleAgent, "Countdown-v0", 16, 4, seed=2, needs=Needs(0, {"late": 1}), num_workers=1,
                         on_result=add_a_node)
    assert added and added[0] in nodes_of(groups)
    assert comparable(groups) == comparable(collect(OracleAgent(), "Countdown-v0", 16, 4, seed=2))


def test_stream_ray_yields_every_group_from_three_nodes_and_resumes_from_its_file(cluster, tmp_path: Path):
    handle, nodes = cluster
    out = tmp_path / "stream.jsonl"

    async def streamed() -> list:
        return [g async for g in stream_ray(OracleAgent, "Countdown-v0", 6, 2, seed=1, out=str(out),
                                            address=handle.address, needs=LANE, num_workers=3)]

    groups = asyncio.run(streamed())
    assert set(nodes_of(groups)) == set(nodes.values())
    expected = comparable(collect(OracleAgent(), "Countdown-v0", 6, 2, seed=1))
    by_id = sorted(comparable(groups), key=lambda g: g["group_id"])
    assert by_id == sorted(expected, key=lambda g: g["group_id"])  # groups come as they finish, not in task order
    assert len(load_results(out).episodes) == 12

    again = asyncio.run(collect_ray_async(OracleAgent, "Countdown-v0", 6, 2, seed=1, out=str(out),
                                          address=handle.address, needs=LANE, num_workers=3))
    assert comparable(again) == expected  # task order, read back from the file: nothing played twice
    assert len(load_results(out).episodes) == 12


@pytest.mark.slow
def test_the_grpo_rollout_step_on_the_cluster_plays_the_groups_it_plays_in_process(cluster, tiny_server,
                                                                                    tiny_model_dir):
    """GRPOTrainer.rollout_step(ray=ADDRESS): a tiny model's sampled groups, played by Ray workers on three nodes
    through an OpenAI-compatible server, equal those played in this process for the same seed; GRPO trains on them."""
    require_module("torch")
    require_module("transformers")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import RemoteChatAgent
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer
    from rollgym.train.rollouts import collect_groups

    handle, _ = cluster
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    agent_factory = RemoteChatAgent(tiny_server.url, tokenizer=str(tiny_model_dir),
                                    sampling=SamplingParams(max_tokens=8, temperature=1.0))

    here = collect_groups(agent_factory, "Countdown-v0", 3, 4, seed=7)
    ray.shutdown()  # and join by address, as a trainer on another host would
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    trainer = GRPOTrainer(model, tokenizer, GRPOConfig(learning_rate=1e-3))
    groups, stats = trainer.rollout_step(agent_factory, "Countdown-v0", 3, 4, seed=7, ray=handle.address,
                                         num_workers=3)

    live = {node.node_id for node in handle.list_all_nodes()}  # earlier tests add nodes that the default needs fit
    assert set(nodes_of(groups)) <= live and len(set(nodes_of(groups))) >= 2

    def sampled(gs: list) -> list:
        return [[(t.traj_id, t.task_id, t.reward, t.status, t.prompt_ids, t.completion_ids, t.loss_mask)
                 for t in g.trajectories] for g in gs]

    assert sampled(groups) == sampled(here)
    assert any(len({tuple(t.completion_ids) for t in g.trajectories}) > 1 for g in groups)  # sampled, not fixed
    trajs = [t for g in groups for t in g.trajectories]
    assert all(t.completion_ids and len(t.logprobs) == len(t.completion_ids) for t in trajs)
    for ours, theirs in zip(trajs, (t for g in here for t in g.trajectories)):  # server batching moves last bits
        assert ours.logprobs == pytest.approx(theirs.logprobs, abs=1e-4)
    twin = GRPOTrainer(AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)), tokenizer,
                       GRPOConfig(learning_rate=1e-3))
    in_process = twin.step(here)  # the same update from the groups played here
    assert stats["groups"] == 3 and stats["rows"] == in_process["rows"] == 12 and trainer.global_step == 1
    assert stats["reward_mean"] == in_process["reward_mean"]
    assert stats["loss"] == pytest.approx(in_process["loss"], abs=1e-5)


def test_collect_groups_names_a_wrong_ray_argument_in_one_sentence():
    from rollgym.core.errors import ConfigError
    from rollgym.train.rollouts import collect_groups

    with pytest.raises(ConfigError, match=r"ray must be False, True(,| or) a cluster address"):
        collect_groups(OracleAgent, "Countdown-v0", 1, 1, ray=3)  # type: ignore[arg-type]

"""rollgym.remote under the collector: same rewards and tokens as in-process; a killed server loses nothing."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import rollgym
import rollgym.remote
from rollgym.agents import OracleAgent
from rollgym.rollout import collect
from rollgym.rollout.stream import collect_async
from rollgym.serve.spawn import ServeEnvProcess
from tests.conftest import require_module


def _signature(groups):
    return [[(t.sample_idx, t.reward, t.status, t.task_id, t.step_rewards, [m["content"] for m in t.messages],
              t.prompt_ids, t.completion_ids, t.loss_mask) for t in g.trajectories] for g in groups]


@pytest.mark.parametrize("env_id", ["Countdown-v0", "ToolWorld-v0"])
def test_collect_and_collect_async_over_remote_match_in_process_oracle(server_url, env_id):
    local = collect_async(OracleAgent(), env_id, n_tasks=3, group_size=2, seed=5, concurrency=4)
    url_id = f"{server_url}/{env_id}"
    remote = collect_async(OracleAgent(), url_id, n_tasks=3, group_size=2, seed=5, concurrency=4)
    assert _signature(remote) == _signature(local)
    assert all(t.reward == 1.0 for g in remote for t in g.trajectories)
    proxy = rollgym.remote.register(server_url, env_id)[0]
    assert proxy.startswith("remote-127_0_0_1-") and proxy.endswith("/" + env_id)
    sync = collect(OracleAgent(), proxy, n_tasks=3, group_size=2, seed=5, workers=2)
    assert _signature(sync) == _signature(local)


def test_a_synchronous_agent_over_a_remote_env_keeps_several_episodes_in_flight(server_url, monkeypatch):
    # A sync agent on an in-process env plays episodes one after another; over the network they must overlap.
    from rollgym.serve.client import RemoteEnv

    in_flight, peak = 0, 0
    astep = RemoteEnv.astep

    async def counted(self, action):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await astep(self, action)
        finally:
            in_flight -= 1

    monkeypatch.setattr(RemoteEnv, "astep", counted)
    groups = collect_async(OracleAgent(), f"{server_url}/Countdown-v0", n_tasks=4, group_size=2, seed=2,
                           concurrency=4)
    assert all(t.reward == 1.0 for g in groups for t in g.trajectories)
    assert peak > 1


@pytest.mark.slow
def test_tiny_model_tokens_over_remote_equal_in_process_and_grpo_trains_on_them(server_url, tiny_backend,
                                                                                 tiny_model_dir):
    require_module("torch")
    from transformers import AutoModelForCausalLM

    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer

    def run(env_id):
        agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=8, temperature=1.0))
        return collect_async(agent, env_id, n_tasks=2, group_size=2, seed=1, concurrency=4)

    local, remote = run("Countdown-v0"), run(f"{server_url}/Countdown-v0")
    assert _signature(remote) == _signature(local)
    trajs = [t for g in remote for t in g.trajectories]
    assert all(t.status in ("completed", "truncated") for t in trajs)
    assert all(t.completion_ids and len(t.completion_ids) == len(t.loss_mask) == len(t.logprobs) for t in trajs)
    for ours, theirs in zip(trajs, (t for g in local for t in g.trajectories)):  # batching moves the last bits
        assert ours.logprobs == pytest.approx(theirs.logprobs, abs=1e-4)
    for t in trajs:  # make the group rewards differ so that GRPO has a signal
        t.reward = float(t.sample_idx)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    trainer = GRPOTrainer(model, tiny_backend.tokenizer, GRPOConfig(learning_rate=1e-3))
    before = [p.detach().clone() for p in model.parameters()]
    stats = trainer.step(remote)
    assert stats and any(not (a == b).all() for a, b in zip(before, model.parameters()))


def test_unreachable_server_is_one_clear_error_before_any_work():
    with pytest.raises(rollgym.RollgymError, match="Cannot reach an env server"):
        collect(OracleAgent(), "http://127.0.0.1:9/Countdown-v0", n_tasks=1, group_size=1)


def test_killing_the_server_mid_run_loses_no_finished_episode_and_the_rerun_completes(tmp_path: Path):
    from rollgym.rollout import load_results

    out = tmp_path / "run.jsonl"
    first = ServeEnvProcess("Countdown-v0")
    port = first.url.rsplit(":", 1)[1]
    env_id = f"{first.url}/Countdown-v0"

    def lines() -> list[dict]:
        return [json.loads(x) for x in out.read_text().splitlines()[1:]] if out.exists() else []

    def killer() -> None:  # kill -9 once a few episodes are on disk
        deadline = time.monotonic() + 120
        while len(lines()) < 6 and time.monotonic() < deadline:
            time.sleep(0.02)
        first.kill()

    class SlowOracle(OracleAgent):
        def act(self, observation, info):
            time.sleep(0.05)  # so that the run is still going when the server dies
            return super().act(observation, info)

    # Each episode left when the server dies tries its 3 reconnections before it is marked failed; with the
    # default backoff (0.25 s, doubling) that waited 1.75 s per episode, most of this test's time. The attempts
    # are the same with a shorter backoff, which is not what this test checks.
    fast_retries = {"backoff_s": 0.01}
    thread = threading.Thread(target=killer)
    thread.start()
    try:
        groups = collect(SlowOracle(), env_id, n_tasks=20, group_size=2, seed=3, out=str(out), env_kwargs=fast_retries)
    finally:
        thread.join()
        first.close()
    statuses = [t.status for g in groups for t in g.trajectories]
    finished_before = {(r["task_index"], r["trajectory"]["sample_idx"]): r["trajectory"]["reward"]
                       for r in lines() if r["trajectory"]["status"] == "completed"}
    assert len(finished_before) >= 6 and "failed" in statuses
    failure = next(t for g in groups for t in g.trajectories if t.status == "failed").info["failure"]
    assert failure["type"] == "EnvServerGone" and failure["retry_on_resume"] is True
    assert "unreachable" in failure["message"] and "rerun with the same results file" in failure["message"]
    assert all(t.reward is None for g in groups for t in g.trajectories if t.status == "failed")  # never a silent 0

    second = ServeEnvProcess("Countdown-v0", port=int(port))  # the same address, so the run's identity holds
    try:
        resumed = collect(SlowOracle(), env_id, n_tasks=20, group_size=2, seed=3, out=str(out),
                          env_kwargs=fast_retries)
    finally:
        second.close()
    by_key = {(i, t.sample_idx): t for i, g in enumerate(resumed) for t in g.trajectories}
    assert all(t.status == "completed" and t.reward == 1.0 for t in by_key.values())
    for key, reward in finished_before.items():  # nothing finished was lost, or played again
        assert by_key[key].reward == reward
    final = load_results(out).groups()
    assert sum(len(g.trajectories) for g in final) == 40
    assert all(t.status == "completed" for g in final for t in g.trajectories), [
        (t.traj_id, t.status, t.info.get("failure")) for g in final for t in g.trajectories if t.status != "completed"]


def test_trl_environment_factory_plays_a_remote_env_through_its_tool_methods(server_url):
    require_module("transformers")
    from rollgym.train.adapters.trl import environment_factory, task_rows

    proxy = rollgym.remote.register(server_url, "ToolWorld-v0")[0]
    row = task_rows("ToolWorld-v0", 1, split="test")[0]  # the row's task travels to the server
    env = environment_factory(proxy, max_turns=5)()
    assert env.reset(**row) is None  # the dataset prompt already holds the server env's first observation
    assert "tool_response" in env.contacts_search(query="a") and env.get_reward() == 0.0
    env.complete_task()
    assert "over" in env.contacts_search(query="a")


def test_remote_info_equals_local_info_at_every_step_even_with_compact_replies(server_url):
    from rollgym.serve.client import RemoteEnv

    def strip(info: dict) -> dict:
        return {k: v for k, v in info.items() if k != "episode_id"}  # names the env instance

    local, remote = rollgym.make("ToolWorld-v0", split="test"), RemoteEnv(server_url, "ToolWorld-v0", split="test")
    assert remote.compact
    (obs, info), (robs, rinfo) = local.reset(seed=8), remote.reset(seed=8)
    assert robs == obs and strip(rinfo) == strip(info) and rinfo["tools"]
    agent = OracleAgent()
    done = False
    while not done:
        action = agent.act(obs, info)
        obs, reward, terminated, truncated, info = local.step(action)
        robs, rreward, rterminated, rtruncated, rinfo = remote.step(action)
        assert (robs, rreward, rterminated, rtruncated) == (obs, reward, terminated, truncated)
        assert strip(rinfo) == strip(info) and "_same" not in rinfo
        done = terminated or truncated
    remote.close()

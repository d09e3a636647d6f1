"""The collector's fast paths keep its results exact: records are JSON values as built, streams keep no
finished group, the results file survives a killed process, envs are reused, prompts are rendered once."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
import rollgym_toyenv  # noqa: F401  (registers ToyAdd-v0 and ToyGuess-v0)

from rollgym.agents import OracleAgent, RandomAgent
from rollgym.core.task import Task
from rollgym.rollout import EpisodeRecord, ResultsWriter, Trajectory, collect, load_results, run_episode, store, stream
from tests.conftest import require_module


@pytest.mark.parametrize(("env_id", "agent"), [
    ("Countdown-v0", OracleAgent()), ("ToolWorld-v0", OracleAgent()), ("ConnectFour-v0", RandomAgent()),
    ("Sudoku4x4-v0", RandomAgent()), ("ToyGuess-v0", OracleAgent()),
])
def test_kept_records_equal_what_the_results_file_reads_back(tmp_path: Path, env_id: str, agent: Any):
    # No JSON round trip per episode any more: what the collector keeps must already be JSON values.
    out = tmp_path / "run.jsonl"
    groups = collect(agent, env_id, n_tasks=3, group_size=2, seed=5, out=str(out))
    loaded = load_results(out).groups()
    assert groups == loaded  # dataclass equality: every field, timings included
    for group in groups:
        for traj in group.trajectories:
            line = EpisodeRecord(0, group.task, traj).to_line()
            assert json.loads(line)["trajectory"] == json.loads(json.dumps(traj.to_dict()))


def test_llm_records_equal_what_the_results_file_reads_back(tmp_path: Path, tiny_backend):
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent

    out = tmp_path / "llm.jsonl"
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=5))
    groups = collect(agent, "ToyGuess-v0", n_tasks=2, group_size=2, seed=1, out=str(out),
                     env_kwargs={"max_guesses": 3})
    assert any(t.completion_ids for g in groups for t in g.trajectories)
    assert groups == load_results(out).groups()


class NaNRewardEnv(gym.Env[str, str]):
    """An env with a bug: its step reward is NaN."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        return "go", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return "", float("nan"), True, False, {}


class SayGo:
    name = "go"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return "go"


def test_a_non_finite_reward_fails_the_rollout_not_the_run():
    traj, _ = run_episode(NaNRewardEnv(), SayGo(), seed=0)
    assert traj.status == "failed" and traj.reward is None
    assert traj.info["failure"]["stage"] == "step" and "non-finite reward" in traj.info["failure"]["message"]
    EpisodeRecord(0, None, traj).to_line()  # and the record writes


def test_both_json_encoders_write_the_same_values_and_refuse_nan(monkeypatch):
    groups = collect(OracleAgent(), "ToolWorld-v0", n_tasks=1, group_size=1, seed=2)
    record = EpisodeRecord(0, groups[0].task, groups[0].trajectories[0])
    fast = record.to_line()
    monkeypatch.setattr(store, "_orjson", None)
    monkeypatch.setattr(store, "_orjson_checked", True)
    slow = record.to_line()
    assert json.loads(fast) == json.loads(slow)
    assert EpisodeRecord.from_json(store.loads_line(fast)) == EpisodeRecord.from_json(json.loads(slow))
    broken = Trajectory("t", "g", 0, "Countdown-v0", None, None, logprobs=[float("nan")], completion_ids=[1],
                        loss_mask=[1])
    with pytest.raises(ValueError):
        EpisodeRecord(0, None, broken).to_line()
    monkeypatch.undo()
    with pytest.raises(ValueError):  # orjson would write NaN as null; the finite check sends it to the stdlib
        EpisodeRecord(0, None, broken).to_line()
    assert store.dumps_line({"big": 2**70}, finite=True) == b'{"big": 1180591620717411303424}\n'


def test_a_streamed_run_keeps_no_finished_group():
    async def run() -> list[int]:
        live, seen = [], 0
        async for group in stream(OracleAgent(), "ToyAdd-v0", 60, 3, concurrency=4):
            del group
            seen += 1
            if seen % 6 == 0:  # a full heap walk per group costs a second in a big test process
                gc.collect()
                live.append(sum(type(o) is Trajectory for o in gc.get_objects()))
        return live

    live = asyncio.run(run())
    assert len(live) == 10
    assert max(live) <= 4 + 3  # the episodes in flight and one group: nothing accumulates over 180 episodes


class _SlowOracle(OracleAgent):
    """An oracle that takes 3 ms per action: longer than the stream's yield interval (2 ms)."""

    def act(self, observation: str, info: dict) -> str:
        time.sleep(0.003)
        return super().act(observation, info)


@pytest.mark.parametrize("agent", [OracleAgent, _SlowOracle])
def test_a_synchronous_agent_streamed_inline_still_lets_the_loop_run_other_tasks(agent, monkeypatch):
    # Sync agents on in-process envs play without a task per episode; the loop must not starve meanwhile:
    # the stream yields to it at least every YIELD_EVERY_S (here 0 for the fast agent: after every episode).
    if agent is OracleAgent:  # (rollgym.rollout's `stream` function hides its module of the same name)
        monkeypatch.setattr(sys.modules["rollgym.rollout.stream"], "YIELD_EVERY_S", 0.0)

    async def run() -> tuple[int, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        started = ticks
        async for group in stream(agent(), "ToyAdd-v0", 1, 20, concurrency=4):
            assert len(group.trajectories) == 20
        task.cancel()
        return started, ticks

    started, ticks = asyncio.run(run())
    assert ticks - started >= 10  # the other task ran between the group's episodes, not only after them


def test_the_results_file_keeps_every_finished_episode_when_the_process_is_killed(tmp_path: Path):
    out = tmp_path / "killed.jsonl"
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path[:0] = [{str(Path.cwd())!r}, {str(Path(__file__).parent)!r}]
        import rollgym_toyenv
        from rollgym.agents import OracleAgent
        from rollgym.rollout import stream, collect_async
        calls = 0
        def progress(done, total):
            if done == 7:
                os.kill(os.getpid(), signal.SIGKILL)  # no close, no fsync: the OS still has every write
        collect_async(OracleAgent(), "ToyAdd-v0", 5, 2, seed=3, out={str(out)!r}, progress=progress, concurrency=1)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == -9, done.stderr
    assert len(load_results(out).episodes) == 7
    resumed = collect(OracleAgent(), "ToyAdd-v0", 5, 2, seed=3, out=str(out))
    assert [t.reward for g in resumed for t in g.trajectories] == [1.0] * 10
    assert len(load_results(out).episodes) == 10


def test_the_writer_syncs_within_its_interval_and_at_close(tmp_path: Path, monkeypatch):
    syncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (syncs.append(fd), real_fsync(fd))[1])
    record = EpisodeRecord(0, None, collect(OracleAgent(), "ToyAdd-v0", 1, 1)[0].trajectories[0])
    writer, _ = ResultsWriter.open(tmp_path / "every.jsonl", {"env_id": "x"}, sync_interval_s=0)
    syncs.clear()
    for _ in range(3):
        writer.append(record)
    assert len(syncs) == 3  # interval 0: every episode is on disk before append returns
    writer.close()
    writer, _ = ResultsWriter.open(tmp_path / "batched.jsonl", {"env_id": "x"}, sync_interval_s=3600)
    syncs.clear()
    for _ in range(50):
        writer.append(record)
    assert syncs == []  # within the interval, the disk is not waited on
    writer.close()
    assert len(syncs) == 1 and len(load_results(tmp_path / "batched.jsonl").episodes) == 1  # one traj_id


def test_play_tasks_reuses_a_pool_of_envs_across_calls():
    from rollgym.train.adapters.episodes import play_tasks

    env = rollgym_toyenv_env()
    tasks: list[Task] = []
    for index in range(3):
        env.reset(options={"task_index": index})
        tasks.append(env.unwrapped.task)
    pool: list[Any] = []
    first = play_tasks(OracleAgent(), "ToyAdd-v0", tasks, envs=pool)
    built = {id(e) for e in pool}
    second = play_tasks(OracleAgent(), "ToyAdd-v0", tasks, envs=pool)
    assert {id(e) for e in pool} == built and len(built) >= 1
    fresh = play_tasks(OracleAgent(), "ToyAdd-v0", tasks)
    assert [t.reward for t in first] == [t.reward for t in second] == [t.reward for t in fresh] == [1.0] * 3
    assert [t.task_id for t in second] == [t.id for t in tasks]


def rollgym_toyenv_env() -> Any:
    import rollgym

    return rollgym.make("ToyAdd-v0")


def test_a_group_renders_and_tokenizes_its_first_prompt_once(tiny_backend, monkeypatch):
    require_module("transformers")
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent, PromptCache
    from rollgym.rollout import collect_async

    renders: list[int] = []
    real = PromptCache.render
    monkeypatch.setattr(PromptCache, "render", lambda self, m, t: (renders.append(len(m)), real(self, m, t))[1])
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=4))
    groups = collect_async(agent, "Countdown-v0", 2, 4, seed=0)
    assert len(renders) == 2  # one first prompt per task, shared by the group's 4 rollouts
    for group in groups:
        prompts = [t.prompt_ids for t in group.trajectories]
        assert all(p == prompts[0] for p in prompts)
        text = tiny_backend.tokenizer.decode(prompts[0])
        assert prompts[0] == list(tiny_backend.tokenizer(text, add_special_tokens=False)["input_ids"])


def test_an_env_pool_builds_envs_once_across_runs_and_drops_crashed_ones(monkeypatch):
    from rollgym.rollout import EnvPool, collect_async
    from rollgym.rollout import collector as collector_module

    built: list[Any] = []
    real_make = collector_module.make

    def counting_make(*args: Any, **kwargs: Any) -> Any:
        built.append(real_make(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(collector_module, "make", counting_make)
    plain = collect_async(RandomAgent(), "ToyAdd-v0", 12, 2, seed=1, concurrency=4, env_kwargs={"crash": True})
    built.clear()
    with EnvPool() as pool:
        first = collect_async(RandomAgent(), "ToyAdd-v0", 12, 2, seed=1, concurrency=4, env_pool=pool,
                              env_kwargs={"crash": True})
        crashes = sum(t.status == "failed" for g in first for t in g.trajectories)
        assert crashes > 0  # each crash closes its env and builds a fresh one
        kept = len(pool)
        assert kept >= 1 and len(built) == kept + crashes  # every sound env went back to the pool
        built.clear()
        second = collect_async(RandomAgent(), "ToyAdd-v0", 12, 2, seed=1, concurrency=4, env_pool=pool,
                               env_kwargs={"crash": True})
        assert len(built) == crashes and len(pool) == kept  # only the crashed envs are built again
        other = collect(RandomAgent(), "ToyAdd-v0", 2, 1, seed=1, env_pool=pool)  # another configuration
        assert len(other) == 2 and len(pool) == kept + 1
    assert len(pool) == 0
    assert [[t.reward for t in g.trajectories] for g in first] == [[t.reward for t in g.trajectories] for g in plain]
    assert [[t.reward for t in g.trajectories] for g in second] == [[t.reward for t in g.trajectories] for g in plain]

"""rollgym.vector: per-env infos from gym.make_vec, and VectorAgent over sync and async vector envs."""

from __future__ import annotations

import asyncio

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import rollgym
from rollgym.agents import OracleAgent
from rollgym.core.errors import ConfigError
from rollgym.vector import VectorAgent, split_infos

MODES = ["sync", "async"]


def single_env_first_episode(env_id: str, seed: int) -> tuple[float, int, dict]:
    """Play one episode with the oracle on a plain env: total reward, steps, final info."""
    env = rollgym.make(env_id)
    agent = OracleAgent()
    obs, info = env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        total, steps = total + float(reward), steps + 1
        if terminated or truncated:
            env.close()
            return total, steps, info


@pytest.mark.parametrize("mode", MODES)
def test_split_infos_gives_each_sub_env_the_info_a_plain_env_gives(mode: str) -> None:
    envs = gym.make_vec("Countdown-v0", num_envs=3, vectorization_mode=mode)
    try:
        _, infos = envs.reset(seed=5)
        per_env = split_infos(infos)
        assert len(per_env) == 3
        for i, info in enumerate(per_env):
            _, alone = rollgym.make("Countdown-v0").reset(seed=5 + i)
            assert info == alone  # nested task_meta included, with plain Python values
            assert type(info["task_index"]) is int and type(info["task_meta"]["target"]) is int
        _, _, _, _, infos = envs.step(("<answer>1 + 1</answer>", "no tags", OracleAgent().act("", per_env[2])))
        after = split_infos(infos)
        assert [i["correct"] for i in after] == [False, False, True]
        assert all(type(i["correct"]) is bool for i in after)
        assert after[1]["error"] == "no_answer" and after[2]["error"] is None
    finally:
        envs.close()


@pytest.mark.parametrize("mode", MODES)
def test_vector_agent_solves_a_batch_of_countdown_tasks(mode: str) -> None:
    envs = gym.make_vec("Countdown-v0", num_envs=4, vectorization_mode=mode)
    try:
        agent = VectorAgent(OracleAgent(), envs)
        observations, infos = envs.reset(seed=0)
        actions = agent.act(observations, infos)
        assert isinstance(actions, tuple) and len(actions) == 4
        _, rewards, terminated, _, infos = envs.step(actions)
        assert rewards.tolist() == [1.0] * 4 and terminated.all()
        assert [i["correct"] for i in split_infos(infos)] == [True] * 4
    finally:
        envs.close()


@pytest.mark.parametrize("mode", MODES)
def test_multi_turn_episodes_of_different_lengths_with_next_step_autoreset(mode: str) -> None:
    """ToolWorld episodes end at different steps: finished sub-envs reset while the others go on."""
    n, seed = 3, 7
    envs = gym.make_vec("ToolWorld-v1", num_envs=n, vectorization_mode=mode)
    expected = [single_env_first_episode("ToolWorld-v1", seed + i) for i in range(n)]
    assert len({steps for _, steps, _ in expected}) > 1, "pick seeds whose episodes differ in length"
    try:
        agent = VectorAgent(OracleAgent(), envs)
        observations, infos = envs.reset(seed=seed)
        totals, steps, finished = np.zeros(n), [0] * n, [0] * n
        first: list[tuple[float, int, dict] | None] = [None] * n
        done = np.zeros(n, dtype=bool)
        for _ in range(100):
            actions = agent.act(observations, infos, done=done)
            assert all(a == "" for a, d in zip(actions, done) if d)  # the autoreset step ignores the action
            observations, rewards, terminated, truncated, infos = envs.step(actions)
            per_env = split_infos(infos, n)
            for i in range(n):
                if done[i]:  # this step was sub-env i's reset: a fresh first observation and info
                    assert "task_id" in per_env[i] and "correct" not in per_env[i]
                    continue
                totals[i] += rewards[i]
                steps[i] += 1
                if terminated[i] or truncated[i]:
                    finished[i] += 1
                    if first[i] is None:
                        first[i] = (totals[i], steps[i], per_env[i])
                    else:  # the second episode, on the task the sub-env reset to, is solved too
                        assert per_env[i]["correct"] is True
                    totals[i], steps[i] = 0.0, 0
            done = terminated | truncated
            if min(finished) >= 2:
                break
        assert min(finished) >= 2
        for i in range(n):
            got = first[i]
            assert got is not None
            assert got[0] == expected[i][0] and got[1] == expected[i][1]
            assert got[2]["correct"] is True and got[2]["task_id"] == expected[i][2]["task_id"]
    finally:
        envs.close()


def test_same_step_autoreset_keeps_the_final_info_per_env() -> None:
    envs = gym.make_vec("Countdown-v0", num_envs=2, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    try:
        agent = VectorAgent(OracleAgent(), envs)
        assert agent.autoreset == "same_step"
        observations, infos = envs.reset(seed=0)
        observations, rewards, terminated, _, infos = envs.step(agent.act(observations, infos))
        per_env = split_infos(infos)
        assert all(i["final_info"]["correct"] is True for i in per_env)  # the finished episode's info
        assert all("task_meta" in i for i in per_env)                    # and the new episode's reset info
        actions = agent.act(observations, infos, done=terminated)  # the new tasks: acted on at once
        _, rewards, _, _, _ = envs.step(actions)
        assert rewards.tolist() == [1.0, 1.0]
    finally:
        envs.close()


def test_split_infos_leaves_out_what_a_sub_env_did_not_set() -> None:
    infos = {
        "reward": np.array([1.0, 0.0, 0.0]), "_reward": np.array([True, True, False]),
        "details": {"reason": np.array([None, "wrong", None], dtype=object),
                    "_reason": np.array([False, True, False]),
                    "grid": np.zeros((3, 2, 2)), "_grid": np.array([True, True, True])},
        "_details": np.array([True, True, False]),
        "final_obs": np.array([None, "end", None], dtype=object), "_final_obs": np.array([False, True, False]),
    }
    a, b, c = split_infos(infos)
    assert a == {"reward": 1.0, "details": {"grid": a["details"]["grid"]}}
    assert isinstance(a["details"]["grid"], np.ndarray) and a["details"]["grid"].shape == (2, 2)
    assert b["details"]["reason"] == "wrong" and b["final_obs"] == "end" and type(b["reward"]) is float
    assert c == {}
    assert split_infos({}) == [] and split_infos({}, num_envs=2) == [{}, {}]
    with pytest.raises(ConfigError, match="infos dict"):
        split_infos([1, 2])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="entries"):
        split_infos({"x": np.zeros(2), "_x": np.array([True, True])}, num_envs=3)


class SlowAsyncAgent:
    """An agent with aact that records how many calls overlap (as a batching backend would see)."""

    name = "slow"

    def __init__(self, meter: dict[str, int]) -> None:
        self.meter = meter

    def spawn(self) -> SlowAsyncAgent:
        return SlowAsyncAgent(self.meter)

    def reset(self, seed: int | None = None) -> None:
        self.meter["resets"] += 1

    def act(self, observation: str, info: dict) -> str:
        raise AssertionError("VectorAgent should await aact")

    async def aact(self, observation: str, info: dict) -> str:
        self.meter["now"] += 1
        self.meter["most"] = max(self.meter["most"], self.meter["now"])
        await asyncio.sleep(0.05)
        self.meter["now"] -= 1
        return f"<answer>{info['task_index']}</answer>"


def test_async_agents_act_concurrently_and_bad_input_is_one_clear_error() -> None:
    meter = {"now": 0, "most": 0, "resets": 0}
    with VectorAgent(SlowAsyncAgent(meter), 4) as agent:
        infos = {"task_index": np.arange(4), "_task_index": np.ones(4, dtype=bool)}
        assert agent.act(["a", "b", "c", "d"], infos) == tuple(f"<answer>{i}</answer>" for i in range(4))
        assert meter["most"] == 4
        assert agent.act(["a", "b", "c", "d"], infos, done=[True, False, False, True])[0] == ""
        assert meter["resets"] == 2
        with pytest.raises(ConfigError, match="Expected 4 observations"):
            agent.act(["a"], infos)
        with pytest.raises(ConfigError, match="done flags"):
            agent.act(["a", "b", "c", "d"], infos, done=[True])
    with pytest.raises(ConfigError, match="vector env or a number"):
        VectorAgent(OracleAgent(), "four")
    with pytest.raises(ConfigError, match="autoreset"):
        VectorAgent(OracleAgent(), 2, autoreset="sometimes")
    with pytest.raises(ConfigError, match="act"):
        VectorAgent(lambda: object(), 2)  # type: ignore[arg-type,return-value]


def test_async_shared_memory_carries_any_unicode_text_at_every_step() -> None:
    """gymnasium reads a Text space's shared buffer once and writes only its charset; rollgym's TextSpace works."""
    from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

    space = rollgym.TextSpace(50)
    memory = create_shared_memory(space, n=3)
    view = read_from_shared_memory(space, memory, n=3)
    texts = ["Reach 24 with 3, 8, 8 (× and ÷)", "", "emoji 🎲 and a lone surrogate \ud800"]
    for i, text in enumerate(texts):
        write_to_shared_memory(space, i, text, memory)
    assert tuple(view) == tuple(texts)  # the view made before the writes sees them
    write_to_shared_memory(space, 1, "changed", memory)
    assert view[1] == "changed" and view[-1] == texts[2] and view[:2] == (texts[0], "changed")
    with pytest.raises(ConfigError, match="does not fit"):
        write_to_shared_memory(space, 0, "x" * 51, memory)

    envs = gym.make_vec("ToolWorld-v1", num_envs=2, vectorization_mode="async")  # shared memory by default
    plain = gym.make_vec("ToolWorld-v1", num_envs=2, vectorization_mode="async",
                         vector_kwargs={"shared_memory": False})
    try:
        first, _ = envs.reset(seed=3)
        expected, _ = plain.reset(seed=3)
        assert isinstance(first, tuple) and first == expected and first[0].startswith("You are acting for")
        action = '<tool_call>{"name": "contacts_search", "arguments": {"query": "a"}}</tool_call>'
        second = envs.step((action, action))[0]
        assert second == plain.step((action, action))[0] and second != first
    finally:
        envs.close()
        plain.close()


def test_async_workers_started_with_spawn_also_write_text_observations() -> None:
    """Workers that do not fork import rollgym afresh (through the env's entry point) and get the same support."""
    envs = gym.make_vec("Countdown-v0", num_envs=2, vectorization_mode="async", vector_kwargs={"context": "spawn"})
    try:
        observations, infos = envs.reset(seed=0)
        assert observations[0].startswith("Countdown: combine the numbers")
        assert observations[0] == rollgym.make("Countdown-v0").reset(seed=0)[0]
        _, rewards, _, _, _ = envs.step(VectorAgent(OracleAgent(), envs).act(observations, infos))
        assert rewards.tolist() == [1.0, 1.0]
    finally:
        envs.close()

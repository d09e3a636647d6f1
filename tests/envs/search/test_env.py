"""Search-v1 and SearchQA-v1: the oracle solves every difficulty, reward hacks score 0, bad calls never crash."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import rollgym  # noqa: F401  (registers the ids)
from rollgym.agents.base import OracleAgent, RandomAgent
from rollgym.core.errors import ConfigError
from rollgym.envs.search.policies import parse_responses
from tests.conftest import check_env_quietly, require_module

require_module("bm25s")

DIFFICULTIES = ["easy", "medium", "hard", "expert"]


def play(env, agent, **reset_kwargs):
    obs, info = env.reset(**reset_kwargs)
    if hasattr(agent, "reset"):
        agent.reset()
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        total += reward
        done = terminated or truncated
    return total, info


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_oracle_scores_one_for_many_seeds(difficulty):
    env = gym.make("Search-v1", difficulty=difficulty)
    oracle = OracleAgent()
    for seed in range(20):
        reward, info = play(env, oracle, seed=seed)
        assert reward == 1.0, (seed, info["task_meta"]["plan"], info.get("parsed"))
        # the oracle may take a remote fact from a search snippet without opening that article
        assert info["correct"] and info["evidence_coverage"] >= 0.5
        assert info["rounds"] >= info["task_meta"]["hops"] and info["calls"] >= info["rounds"]


@pytest.mark.parametrize("topology,hops", [("intersection", 1), ("tree", 2), ("chain", 4)])
def test_oracle_scores_one_on_every_topology(topology, hops):
    env = gym.make("Search-v1", topology=topology, hops=hops, dispersion=None)
    for seed in range(12):
        assert play(env, OracleAgent(), seed=seed)[0] == 1.0


def test_oracle_scores_one_on_searchqa_mix_and_test_split():
    env = gym.make("SearchQA-v1", split="test")
    hops = set()
    for seed in range(25):
        reward, info = play(env, OracleAgent(), seed=seed)
        assert reward == 1.0
        hops.add(info["task_meta"]["hops"])
    assert {1, 2, 3} <= hops


class _Scripted:
    def __init__(self, actions):
        self.actions = list(actions)

    def act(self, observation, info):
        return self.actions.pop(0)


def _final(env, seed, text):
    env.reset(seed=seed)
    return env.step(text)


@pytest.mark.parametrize("reward", ["em", "f1"])
@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_reward_hacks_score_zero(difficulty, reward):
    env = gym.make("Search-v1", difficulty=difficulty, reward=reward)
    world = env.unwrapped.index.corpus.world
    for seed in range(10):
        env.reset(seed=seed)
        task = env.unwrapped.task
        kind = task.meta["answer_kind"]
        question = task.prompt.split("\n\n")[0]
        same_kind = [e.name for e in world.entities.values() if e.kind == kind][:400]
        years = " ".join(str(y) for y in range(1000, 2000))
        everything = ", ".join(same_kind) if kind != "year" else years
        for hack in [f"<answer>{kind}</answer>", f"<answer>the {kind}</answer>", f"<answer>{everything}</answer>",
                     f"<answer>{question}</answer>", "<answer></answer>", "<answer>unknown</answer>",
                     task.answer["text"],  # right text without the tag
                     f"<answer>{task.answer['text']} or {same_kind[0] if same_kind else '1900'}</answer>",
                     # a short hedge: the gold among a few candidates, under the answer length cap
                     f"<answer>{', '.join([*(same_kind[:3] or ['1900']), task.answer['text']])}</answer>"]:
            _, reward, terminated, _, info = _final(env, seed, hack)
            assert reward == 0.0, (hack[:80], info)
            assert terminated == hack.startswith("<answer>")


def test_v1_closes_the_f1_hedge_that_v0_paid_for():
    new, old = gym.make("Search-v1", reward="f1"), gym.make("Search-v0", reward="f1")
    world = new.unwrapped.index.corpus.world
    paid_by_v0 = 0
    for seed in range(10):
        new.reset(seed=seed)
        old.reset(seed=seed)
        assert old.unwrapped.task.answer == new.unwrapped.task.answer  # the same questions, scored differently
        assert old.unwrapped.task.id.split("/", 1)[1] == new.unwrapped.task.id.split("/", 1)[1]
        task = new.unwrapped.task
        gold = task.answer["text"]
        other = next((e.name for e in world.entities.values() if e.kind == task.meta["answer_kind"] and e.name != gold),
                     str(int(gold) + 1) if gold.isdigit() else "Someone Else")
        hedge = f"<answer>{gold} or {other}</answer>"
        assert new.step(hedge)[1] == 0.0
        paid_by_v0 += old.step(hedge)[1] > 0
        for env in (new, old):  # the right answer alone scores 1 under both
            env.reset(seed=seed)
            assert env.step(f"<answer>{gold}</answer>")[1] == 1.0
    assert paid_by_v0 == 10


def test_aliases_and_normalisation_are_accepted():
    env = gym.make("Search-v1", topology="chain", hops=1, dispersion=None)
    seen_alias = False
    for seed in range(40):
        env.reset(seed=seed)
        answer = env.unwrapped.task.answer
        for text in [answer["text"], f"  the {answer['text'].upper()}! ", *answer["aliases"]]:
            _, reward, *_ = _final(env, seed, f"<answer>{text}</answer>")
            assert reward == 1.0, text
        seen_alias = seen_alias or bool(answer["aliases"])
    assert seen_alias


def test_f1_mode_and_efficiency_term():
    env = gym.make("Search-v1", difficulty="easy", reward="f1")
    for seed in range(30):
        env.reset(seed=seed)
        gold = env.unwrapped.task.answer["text"]
        if len(gold.split()) == 2:
            _, reward, _, _, info = env.step(f"<answer>{gold.split()[0]}</answer>")
            assert 0.0 < reward < 1.0 and not info["correct"]
            assert info["details"]["f1"] == pytest.approx(2 / 3, abs=1e-3)
            break
    else:
        pytest.fail("no two-word answer found")
    env = gym.make("Search-v1", difficulty="medium", efficiency_weight=0.5)
    full, info = play(env, OracleAgent(), seed=1)
    assert full == 1.0  # the oracle stays within the reference budget
    env.unwrapped.budget_scale = 0.25  # tightened: the same play now costs
    tight, info = play(env, OracleAgent(), seed=1)
    assert 0.5 <= tight < 1.0 and info["details"]["efficiency"] < 1.0


MALFORMED = [
    "<tool_call>{not json}</tool_call>",
    '<tool_call>{"name": "search", "arguments": {"query": "x"}',
    '<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "search", "arguments": {"query": 5}}</tool_call>',
    '<tool_call>{"name": "search", "arguments": {"query": "a", "k": 500}}</tool_call>',
    '<tool_call>{"name": "search", "arguments": {"query": "a", "type": "planet"}}</tool_call>',
    '<tool_call>{"name": "search", "arguments": {"query": "   "}}</tool_call>',
    '<tool_call>{"name": "search", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "open", "arguments": {"doc_id": "d99999"}}</tool_call>',
    '<tool_call>{"name": "open", "arguments": {"doc_id": "d00001", "page": 99}}</tool_call>',
    '<tool_call>{"name": "open", "arguments": {"doc_id": "d00001", "page": -1}}</tool_call>',
    '<tool_call>{"name": "find", "arguments": {"doc_id": "d00001", "text": ""}}</tool_call>',
    '<tool_call>{"name": "find", "arguments": {"doc_id": ["x"], "text": "a"}}</tool_call>',
    '<tool_call>{"name": "open", "arguments": "not an object"}</tool_call>',
    '<tool_call>{"name": "open", "arguments": {"doc_id": "d00001", "extra": 1}}</tool_call>',
    '<tool_call>["a list"]</tool_call>',
    "just some text without a call",
    "",
    "<answer>",
    "\x00\ud800" * 3,
]


@pytest.mark.parametrize("action", MALFORMED)
def test_malformed_calls_get_error_observations(action):
    env = gym.make("Search-v1")
    env.reset(seed=0)
    obs, reward, terminated, truncated, _ = env.step(action)
    assert reward == 0.0 and not terminated and not truncated
    assert "error" in obs or "No tool call" in obs
    assert env.observation_space.contains(obs)
    # the episode goes on: a good call still works afterwards
    obs, *_ = env.step('<tool_call>{"name": "search", "arguments": {"query": "born"}}</tool_call>')
    assert '"results"' in obs


def test_parallel_calls_run_in_one_round_and_results_are_deterministic():
    env = gym.make("Search-v1")
    action = ('<tool_call>{"name": "search", "arguments": {"query": "founded press", "k": 3}}</tool_call>'
              '<tool_call>{"name": "open", "arguments": {"doc_id": "d00010"}}</tool_call>'
              '<tool_call>{"name": "find", "arguments": {"doc_id": "d00010", "text": "[["}}</tool_call>')
    env.reset(seed=0)
    obs_a, _, _, _, info = env.step(action)
    env.reset(seed=5)
    obs_b, *_ = env.step(action)
    assert obs_a == obs_b and obs_a.count("<tool_response") == 3
    assert info["rounds"] == 1 and info["calls"] == 3 and info["errors"] == 0
    blocks = parse_responses(obs_a)
    assert len(blocks[0]["results"]) == 3 and blocks[1]["page"] == 1 and blocks[2]["count"] >= 1


def test_per_turn_call_cap_and_turn_limit():
    env = gym.make("Search-v1", max_turns=2, max_calls_per_turn=2)
    env.reset(seed=0)
    call = '<tool_call>{"name": "search", "arguments": {"query": "born"}}</tool_call>'
    obs, _, _, truncated, info = env.step(call * 3)
    assert "at most 2 calls per turn" in obs and info["calls"] == 2 and not truncated
    obs, reward, terminated, truncated, info = env.step(call)
    assert truncated and not terminated and reward == 0.0


def test_info_has_tools_and_no_answer():
    env = gym.make("Search-v1", difficulty="hard")
    obs, info = env.reset(seed=3)
    assert {t["function"]["name"] for t in info["tools"]} == {"search", "open", "find"}
    assert info["task_meta"]["hops"] == 3 and info["task_meta"]["dispersion"] == 2
    assert env.unwrapped.task.answer["text"] not in json.dumps(info) + obs
    assert "<answer>" in info["system_prompt"]


def test_random_agent_never_crashes():
    env = gym.make("SearchQA-v1")
    agent = RandomAgent(seed=0)
    for seed in range(10):
        play(env, agent, seed=seed)


@pytest.mark.parametrize("env_id", ["Search-v1", "SearchQA-v1"])
def test_check_env_passes_without_warnings(env_id):
    check_env_quietly(gym.make(env_id))


def test_bad_arguments_are_refused_before_work():
    with pytest.raises(ConfigError, match="difficulty must be one of"):
        gym.make("Search-v1", difficulty="impossible")
    with pytest.raises(ConfigError, match="reward must be"):
        gym.make("Search-v1", reward="vibes")
    with pytest.raises(ConfigError, match="hops for a tree"):
        gym.make("Search-v1", topology="tree", hops=1)
    with pytest.raises(ConfigError, match="Unknown reset option"):
        gym.make("Search-v1").reset(options={"hops": 3})


@pytest.mark.parametrize("difficulty", ["easy", "expert"])
def test_other_world_sizes_and_seeds_work(difficulty):
    env = gym.make("Search-v1", difficulty=difficulty, world_size=300, world_seed=7)
    _, info = env.reset(seed=0)
    assert info["task_meta"]["world_size"] == 300 and info["task_meta"]["world_seed"] == 7
    assert len(env.unwrapped.index.corpus.docs) < 320
    for seed in range(5):
        assert play(env, OracleAgent(), seed=seed)[0] == 1.0
    with pytest.raises(ConfigError, match="world_size must be between 200 and 200000"):
        gym.make("Search-v1", world_size=50)

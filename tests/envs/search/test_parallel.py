"""SearchParallel-v0: several tool calls per round, rounds and calls counted apart, a reward for fewer rounds."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from tests.conftest import require_module

require_module("bm25s")

import rollgym  # noqa: E402
from rollgym.core.errors import ConfigError  # noqa: E402
from rollgym.core.toolcalls import tool_response_bodies  # noqa: E402
from rollgym.envs.search.comparison import ComparisonTaskSource, comparison_key, render_comparison  # noqa: E402
from rollgym.envs.search.parallel_policies import parallel_oracle, sequential_oracle  # noqa: E402

ENV_ID = "SearchParallel-v0"


def _call(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def _names(env: Any) -> list[str]:
    return list(env.unwrapped.task.meta["plan"]["entities"])


def _play(env: Any, policy: Any, index: int) -> tuple[float, dict[str, Any]]:
    observation, info = env.reset(seed=index, options={"task_index": index, "split": "test"})
    for _ in range(60):
        observation, reward, terminated, truncated, info = env.step(policy(observation, info))
        if terminated or truncated:
            return float(reward), info
    raise AssertionError("the episode did not end")


@pytest.fixture(scope="module")
def env():
    made = rollgym.make(ENV_ID)
    yield made
    made.close()


def test_questions_name_every_entity_and_hide_the_answer_among_them():
    source = ComparisonTaskSource(2000, 0)
    for index in range(10):
        task = source.task(index, "test")
        plan = task.meta["plan"]
        assert 3 <= len(plan["entities"]) <= 5 and task.answer["text"] in plan["entities"]
        assert render_comparison(plan) in task.prompt
        assert "answer" not in json.dumps(plan) and task.answer["entity_id"] not in json.dumps(task.meta)
        assert 1 <= task.meta["reference_rounds"] <= task.meta["sequential_rounds"]
        assert task == source.task(index, "test")  # a pure function of (split, index)
    train = {comparison_key(source.task(i, "train").meta["plan"]) for i in range(30)}
    test = {comparison_key(source.task(i, "test").meta["plan"]) for i in range(30)}
    assert not train & test


def test_several_calls_in_one_action_run_in_one_round_and_come_back_in_one_observation(env):
    env.reset(seed=0, options={"task_index": 0})
    names = _names(env)
    action = "Looking them up.\n" + "\n".join(_call("open", doc_id=n) for n in names)
    observation, reward, terminated, truncated, info = env.step(action)
    bodies = [json.loads(b) for b in tool_response_bodies(observation)]
    assert [b["title"] for b in bodies] == names
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert (info["rounds"], info["tool_calls"], info["calls"], info["turn"]) == (1, len(names), len(names), 1)
    # a JSON list of OpenAI-style calls is a round too
    listed = json.dumps([{"type": "function", "function": {"name": "find", "arguments": json.dumps(
        {"doc_id": n, "text": "founded"})}} for n in names[:2]])
    observation, _, _, _, info = env.step(listed)
    assert len(tool_response_bodies(observation)) == 2
    assert (info["rounds"], info["tool_calls"], info["turn"]) == (2, len(names) + 2, 2)


def test_the_parallel_oracle_needs_fewer_rounds_than_the_sequential_one_at_the_same_accuracy(env):
    for index in range(8):
        _, par = _play(env, parallel_oracle, index)
        _, seq = _play(env, sequential_oracle, index)
        meta = par["task_meta"]
        assert par["correct"] and seq["correct"], (index, par["details"], seq["details"])
        assert par["tool_calls"] == seq["tool_calls"] == meta["sequential_rounds"]  # the same look-ups
        assert (par["rounds"], seq["rounds"]) == (meta["reference_rounds"], meta["sequential_rounds"])


def test_the_oracle_solves_every_level_within_its_reference_rounds(env):
    for k, level in enumerate(env.unwrapped.difficulty.levels):
        observation, info = env.reset(seed=k, options={"difficulty": k})
        assert len(_names(env)) == level.knobs["entities"]
        for _ in range(30):
            observation, _, terminated, truncated, info = env.step(parallel_oracle(observation, info))
            if terminated or truncated:
                break
        assert info["correct"] and info["rounds"] == info["task_meta"]["reference_rounds"]


def test_fewer_rounds_pay_more_only_when_the_answer_is_right():
    env = rollgym.make(ENV_ID, efficiency_weight=0.5)
    try:
        par_reward, par = _play(env, parallel_oracle, 1)
        seq_reward, seq = _play(env, sequential_oracle, 1)
        assert par["correct"] and seq["correct"] and seq["rounds"] > par["rounds"]
        assert par_reward == 1.0
        budget = par["task_meta"]["reference_rounds"]
        assert seq_reward == pytest.approx(0.5 + 0.5 * budget / seq["rounds"]) and 0.5 <= seq_reward < 1.0
        # a wrong answer pays nothing, after one round or none
        env.reset(seed=1, options={"task_index": 1, "split": "test"})
        gold = env.unwrapped.task.answer["text"]
        wrong = next(n for n in _names(env) if n != gold)
        env.step(_call("open", doc_id=wrong))
        reward, info = env.step(f"<answer>{wrong}</answer>")[1], env.unwrapped._step_info()
        assert reward == 0.0 and info["rounds"] == 1
        env.reset(seed=1, options={"task_index": 1, "split": "test"})
        assert env.step(f"<answer>{wrong}</answer>")[1] == 0.0
    finally:
        env.close()


@pytest.mark.parametrize("weight", [0.0, 0.3, 1.0])
def test_a_correct_answer_never_scores_below_a_wrong_one_and_rounds_never_pay(weight):
    env = rollgym.make(ENV_ID, efficiency_weight=weight)
    try:
        paid = []
        for rounds in range(0, 12):
            rewards = {}
            for correct in (True, False):
                env.reset(seed=2, options={"task_index": 2})
                gold = env.unwrapped.task.answer["text"]
                for _ in range(rounds):
                    env.step(_call("search", query="archive"))
                answer = gold if correct else "Nobody"
                rewards[correct] = env.step(f"<answer>{answer}</answer>")[1]
            assert rewards[False] == 0.0 and rewards[True] >= rewards[False]
            paid.append(rewards[True])
        assert all(a >= b for a, b in itertools.pairwise(paid))  # never more for more rounds
        assert paid[0] == 1.0 and (paid[-1] < 1.0) == (weight > 0)
    finally:
        env.close()


def test_the_efficiency_term_is_off_by_default(env):
    reward, info = _play(env, sequential_oracle, 1)
    assert info["correct"] and info["rounds"] > info["task_meta"]["reference_rounds"] and reward == 1.0


def test_calls_beyond_the_cap_are_not_run_and_say_so_in_a_sentence():
    env = rollgym.make(ENV_ID, max_calls_per_turn=2)
    try:
        env.reset(seed=0, options={"task_index": 0, "difficulty": "five"})
        names = _names(env)
        observation, _, terminated, truncated, info = env.step("\n".join(_call("open", doc_id=n) for n in names))
        bodies = [json.loads(b) for b in tool_response_bodies(observation)]
        assert [b["title"] for b in bodies[:2]] == names[:2]
        assert bodies[2] == {"error": "call 3 was not run: at most 2 calls per round; send it in the next round."}
        assert all(b["error"].endswith("send it in the next round.") for b in bodies[2:])
        assert (info["rounds"], info["tool_calls"], info["skipped_calls"]) == (1, 2, 3)
        assert not (terminated or truncated)
    finally:
        env.close()
    with pytest.raises(ConfigError, match="max_calls_per_turn"):
        rollgym.make(ENV_ID, max_calls_per_turn=0)
    with pytest.raises(ConfigError, match="min_entities"):
        rollgym.make(ENV_ID, min_entities=1)
    with pytest.raises(ConfigError, match="must not exceed"):
        rollgym.make(ENV_ID, min_entities=5, max_entities=3)


def test_repeating_one_call_in_a_round_inflates_nothing(env):
    env.reset(seed=0, options={"task_index": 3})
    name = _names(env)[0]
    once = env.step(_call("open", doc_id=name))
    passages_once = len(env.unwrapped.passages)
    env.reset(seed=0, options={"task_index": 3})
    observation, _, _, _, info = env.step("\n".join([_call("open", doc_id=name)] * 40))
    bodies = [json.loads(b) for b in tool_response_bodies(observation)]
    assert bodies[0] == json.loads(tool_response_bodies(once[0])[0])
    assert bodies[1] == {"error": "call 2 repeats call 1 of this round; it was not run again."}
    assert (info["rounds"], info["tool_calls"], info["calls"], info["duplicate_calls"]) == (1, 1, 1, 39)
    assert info["skipped_calls"] == 0 and info["errors"] == 0  # repeats do not eat the cap or count as errors
    assert len(env.unwrapped.passages) == passages_once  # nor multiply the verification evidence
    assert info["evidence_coverage"] == once[4]["evidence_coverage"]
    # key order in the arguments does not make a repeat new
    env.reset(seed=0, options={"task_index": 3})
    doc = json.dumps(name)
    pair = (f'<tool_call>{{"name": "open", "arguments": {{"doc_id": {doc}, "page": 1}}}}</tool_call>'
            f'<tool_call>{{"arguments": {{"page": 1, "doc_id": {doc}}}, "name": "open"}}</tool_call>')
    assert env.step(pair)[4]["tool_calls"] == 1


def test_search_v1_keeps_counting_every_copy_as_its_docs_say():
    old = rollgym.make("Search-v1")
    try:
        old.reset(seed=0)
        info = old.step("\n".join([_call("search", query="archive")] * 8))[4]
        assert (info["rounds"], info["calls"]) == (1, 8)  # unchanged id; SearchParallel-v0 counts it once
    finally:
        old.close()


def test_a_malformed_block_does_not_stop_the_good_calls_of_its_round(env):
    env.reset(seed=0, options={"task_index": 0})
    name = _names(env)[0]
    observation, _, _, _, info = env.step("<tool_call>{oops</tool_call>" + _call("open", doc_id=name))
    bodies = [json.loads(b) for b in tool_response_bodies(observation)]
    assert bodies[0]["error"].startswith("malformed tool call: call 1: not valid JSON")
    assert bodies[1]["title"] == name
    assert (info["rounds"], info["tool_calls"], info["errors"]) == (1, 1, 1)


MALFORMED = [
    "",
    "<tool_call>",
    "<tool_call>{oops</tool_call>" + _call("search", query="x"),
    '<tool_call>["open", "d00001"]</tool_call><tool_call>{"name": ""}</tool_call>',
    '[{"name": "open"}, 5, null, {"type": "function", "function": {"name": "find", "arguments": "{bad"}}]',
    '<tool_call>{"name": "open", "arguments": {"doc_id": "d00001", "page": 1e999}}</tool_call>',
    "<tool_call>" + "[" * 5000 + "</tool_call>",
    "\n".join(_call("nope", x=i) for i in range(70)),
    "\n".join(_call("open", doc_id="\ud800", page=-1) for _ in range(3)),
    _call("search", query="a" * 10_000, k=10**40) + "<answer>",
    "<answer>" + _call("open", doc_id="d00001") + "</answer>",
]


@pytest.mark.parametrize("action", MALFORMED)
def test_malformed_multi_call_output_never_crashes(env, action):
    env.reset(seed=0, options={"task_index": 0})
    observation, reward, terminated, _, info = env.step(action)
    assert isinstance(observation, str) and isinstance(reward, float) and reward == 0.0
    assert info["tool_calls"] + info["duplicate_calls"] + info["skipped_calls"] <= 64
    if not terminated:
        assert observation and info["rounds"] <= 1


class _PolicyAgent:
    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return str(self.policy(observation, info))


def test_the_episode_record_counts_rounds_and_calls_apart(env):
    from rollgym.rollout.episode import run_episode

    for policy in (parallel_oracle, sequential_oracle):
        traj, _ = run_episode(env, _PolicyAgent(policy), seed=4, options={"task_index": 4})
        assert traj.correct
        assert traj.metrics["tool_rounds"] == traj.info["rounds"] == traj.metrics["num_turns"] - 1
        assert traj.metrics["tool_calls"] == traj.info["tool_calls"] == traj.info["task_meta"]["sequential_rounds"]
    assert traj.metrics["tool_rounds"] == traj.metrics["tool_calls"]  # sequential: one call per round


def test_nothing_hidden_shows_before_the_answer_and_constant_answers_win_nothing(env):
    for seed in range(5):
        observation, info = env.reset(seed=seed)
        answer = env.unwrapped.task.answer
        hidden = [answer["entity_id"], *(e["doc_id"] for e in answer["evidence"]),
                  *(a for a in answer["aliases"] if a not in observation)]
        shown = observation + json.dumps(info, default=str)
        assert not [h for h in hidden if h in shown], seed
        for junk in ("", "I don't know.", "0", "yes", observation):  # the echo holds the prompt's <answer>...</answer>
            observation, reward, terminated, truncated, info = env.step(junk)
            assert reward == 0.0 and not info.get("correct")
            if terminated or truncated:
                break
            assert not [h for h in hidden if h in observation + json.dumps(info, default=str)], (seed, junk)

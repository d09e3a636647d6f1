"""T^3RL through the real envs: the typed ``info["verified"]`` signal, verified voting, and a pluggable verifier.

Every rollout here is played through a registered env (MATH500Tool with the real sandbox,
Search, MATH500 single-turn) by a scripted agent, so the infos are the envs' own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import rollgym
from rollgym.core.registration import make
from rollgym.rollout.collector import run_episode
from rollgym.rollout.strategies import MajorityVoteScorer, VerifiedVoteScorer
from rollgym.rollout.types import RolloutGroup, Trajectory
from rollgym.rollout.verification import CodeCheckVerifier, code_from_reply, env_verdict
from tests.conftest import task_at

pytestmark = pytest.mark.timeout(600)

DIVISORS_INDEX = 3  # MATH500 test problem 3: "How many positive whole-number divisors does 196 have?" (answer 9)
COUNT_DIVISORS = "print(sum(1 for d in range(1, 197) if 196 % d == 0))"


@pytest.fixture(autouse=True)
def _data_dir(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLLGYM_DATA_DIR", str(shared_data))


class Scripted:
    """An agent that plays a fixed list of actions."""

    name = "scripted"

    def __init__(self, actions: list[str]) -> None:
        self.actions = actions
        self.i = 0

    def reset(self, seed: int | None = None) -> None:
        self.i = 0

    def act(self, observation: str, info: dict[str, Any]) -> str:
        action = self.actions[min(self.i, len(self.actions) - 1)]
        self.i += 1
        return action


def python_call(code: str) -> str:
    return "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"


def play(env_id: str, actions: list[str], i: int, task_index: int = DIVISORS_INDEX, **env_kwargs: Any) -> Trajectory:
    env = make(env_id, **env_kwargs)
    task = env.unwrapped.source.task(task_index, env.unwrapped.split)
    from rollgym.train.adapters.episodes import FixedTask

    try:
        traj, _ = run_episode(FixedTask(env, task), Scripted(actions), seed=0, traj_id=f"r{i}", group_id="g",
                              sample_idx=i, env_id=env_id, max_steps=6)
    finally:
        env.close()
    return traj


def tool_group(env_id: str) -> RolloutGroup:
    """One rollout whose python run printed the true answer 9; two that agree on 999 without verification."""
    verified = play(env_id, ["Count them.\n" + python_call(COUNT_DIVISORS), "So \\boxed{9}."], 0)
    wrong_a = play(env_id, ["196 = 14^2, so about \\boxed{999}."], 1)
    wrong_b = play(env_id, [python_call("print(2 + 2)"), "\\boxed{999}"], 2)  # code ran, printed something else
    return RolloutGroup("g", None, 3, [wrong_a, verified, wrong_b])


def math_tool_ids() -> list[str]:
    return [i for i in ("MATH500Tool-v0", "MATH500Tool-v1") if i in {e.id for e in rollgym.list_envs()}]


@pytest.mark.parametrize("env_id", math_tool_ids())
def test_math_tool_env_sets_a_bool_and_moves_the_evidence_into_details(env_id: str) -> None:
    group = tool_group(env_id)
    wrong_a, verified, wrong_b = group.trajectories
    assert verified.info["verified"] is True and verified.reward == 1.0
    evidence = verified.info["details"]["verification"]
    assert evidence["method"] == "python_rerun" and evidence["printed_answer"] and evidence["matching_calls"] == [0]
    assert evidence["computed_calls"] == [0]  # re-run with 197 for 196, the code no longer printed 9
    assert wrong_a.info["verified"] is False and wrong_a.info["details"]["verification"]["calls"] == 0
    assert wrong_b.info["verified"] is False and wrong_b.info["details"]["verification"]["code_ran"] is True
    assert [t.reward for t in group.trajectories] == [0.0, 1.0, 0.0]  # the signal never changes the reward


@pytest.mark.parametrize("env_id", math_tool_ids())
def test_the_verified_answer_beats_an_unverified_majority_above_weight_two(env_id: str) -> None:
    group = tool_group(env_id)
    ttrl = RolloutGroup.from_dict(group.to_dict())
    MajorityVoteScorer()(ttrl)
    assert ttrl.pseudo_label == "999"  # TTRL: the spurious consensus wins
    for weight, label in [(1.0, "999"), (2.5, "9"), (3.0, "9"), (5.0, "9")]:
        weighted = RolloutGroup.from_dict(group.to_dict())
        VerifiedVoteScorer(verified_weight=weight)(weighted)
        assert weighted.pseudo_label == label, weight
    default = RolloutGroup.from_dict(group.to_dict())
    VerifiedVoteScorer()(default)
    assert default.pseudo_label == "9" and [t.reward for t in default.trajectories] == [0.0, 1.0, 0.0]
    assert [t.metrics["verified_by"] for t in default.trajectories] == ["env"] * 3


def test_a_truncated_tool_episode_is_not_verified() -> None:
    traj = play("MATH500Tool-v0", [python_call(COUNT_DIVISORS)] * 3, 0, max_turns=2)
    assert traj.status == "truncated" and traj.info["verified"] is False
    assert traj.info["details"]["verification"]["printed_answer"] is False


def test_search_verifies_an_answer_found_in_a_retrieved_passage() -> None:
    task = task_at("Search-v1", 0, difficulty="easy")
    gold = task.answer["text"]
    evidence_doc = task.answer["evidence"][-1]["doc_id"]
    opened = play("Search-v1", [
        "<tool_call>" + json.dumps({"name": "find", "arguments": {"doc_id": evidence_doc, "text": gold}})
        + "</tool_call>", f"<answer>{gold}</answer>"], 0, task_index=0, difficulty="easy")
    blind = play("Search-v1", [f"<answer>{gold}</answer>"], 1, task_index=0, difficulty="easy")
    assert opened.info["verified"] is True and evidence_doc in opened.info["details"]["verification"]["found_in"]
    assert blind.info["verified"] is False and blind.info["details"]["verification"]["passages"] == 0
    assert opened.reward == blind.reward == 1.0
    assert env_verdict(opened) is True


def test_a_code_check_verifier_verifies_envs_that_cannot() -> None:
    right = play("MATH500-v0", ["\\boxed{9}"], 0)
    wrong = [play("MATH500-v0", ["\\boxed{999}"], i) for i in (1, 2)]
    assert "verified" not in right.info  # the single-turn env has no tool evidence
    group = RolloutGroup("g", None, 3, [wrong[0], right, wrong[1]])

    def checker(traj: Trajectory, grp: RolloutGroup, candidate: str) -> str:
        return COUNT_DIVISORS  # a checker that computes the answer independently

    verifier = CodeCheckVerifier(checker)
    VerifiedVoteScorer(verifier=verifier)(group)
    assert group.pseudo_label == "9"
    assert [t.metrics["verified"] for t in group.trajectories] == [False, True, False]
    assert verifier.checks == 2  # 999 is checked once: the same candidate and text are cached
    assert verifier.evidence["r1"]["code_ran"] and not verifier.evidence["r1"]["printed_answer"]
    assert verifier.evidence["r0"]["printed_answer"]


def test_an_agent_can_be_the_checker() -> None:
    class CheckerAgent:
        def reset(self, seed: int | None = None) -> None:
            pass

        def act(self, observation: str, info: dict[str, Any]) -> str:
            assert "Candidate answer: 9" in observation and "196" in observation
            return "Let me check.\n" + python_call(COUNT_DIVISORS)

    right = play("MATH500-v0", ["\\boxed{9}"], 0)
    env = make("MATH500-v0")
    task = env.unwrapped.source.task(DIVISORS_INDEX, env.unwrapped.split)
    env.close()
    assert CodeCheckVerifier(CheckerAgent())(right, RolloutGroup("g", task, 1, [right])) is True


def test_code_is_read_from_tool_calls_or_fenced_blocks() -> None:
    assert code_from_reply(python_call("print(1)")) == "print(1)"
    assert code_from_reply("x\n```python\nprint(2)\n```\n") == "print(2)"
    assert code_from_reply("no code") is None
    assert code_from_reply('<tool_call>{"name": "python", "arguments": {"code": </tool_call>') is None

"""Branching rollouts: env copies continue like the original and share nothing, exact branch tokens, fork selection."""

from __future__ import annotations

import math
import sqlite3
import threading
from typing import Any

import numpy as np
import pytest

import rollgym
from rollgym.agents import OracleAgent, RandomAgent
from rollgym.agents.backends.base import SamplingParams
from rollgym.agents.chat import ChatAgent
from rollgym.rollout.branching import (
    Branch,
    ForkPoint,
    NotForkable,
    clone_env,
    fork_candidates,
    grow_tree,
    select_forks,
)
from rollgym.rollout.types import Trajectory, to_jsonable

# One env of every family whose state can be copied (multi-turn ones are forked after their first step).
CLONABLE = ["Countdown-v0", "Sudoku4x4-v0", "MATH-v1", "MATHTool-v1", "ConnectFour-v0", "Hex-v0", "Chess-v1",
            "Search-v1", "ToolWorld-v1", "ToolGen-v0", "HumanEval-v0", "WorldModel-v0"]
# Envs whose policy script needs the oracle to reach state-changing steps (random text would only be rejected).
ORACLE_PLAYED = {"ToolWorld-v1", "ToolGen-v0", "Search-v1", "MATHTool-v1"}


def _agent(env_id: str) -> Any:
    return OracleAgent() if env_id in ORACLE_PLAYED else RandomAgent(seed=7)


def _comparable(result: tuple[Any, ...]) -> Any:
    """A step result as plain data, without wall-clock fields and the env instance's episode id (never shared)."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()
                    if not (k.endswith("_s") or "seconds" in k or k in ("time", "episode_id"))}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return strip(to_jsonable(result))


def _play(env: Any, agent: Any, observation: Any, info: dict[str, Any], steps: int) -> list[Any]:
    """Up to ``steps`` actions of ``agent``; the list of (action, result) pairs."""
    out = []
    for _ in range(steps):
        action = agent.act(observation, info)
        result = env.step(action)
        out.append((action, _comparable(result)))
        observation, _, terminated, truncated, info = result
        if terminated or truncated:
            break
    return out


def _fork_point(env_id: str, seed: int = 0) -> tuple[Any, Any, Any, dict[str, Any]]:
    """An env after its first step (or after reset, for single-turn envs), the agent, and what it last saw."""
    env = rollgym.make(env_id)
    agent = _agent(env_id)
    agent.reset(seed=3)
    observation, info = env.reset(seed=seed)
    probe = rollgym.make(env_id)
    probe_obs, probe_info = probe.reset(seed=seed)
    first = probe.step(_agent(env_id).act(probe_obs, probe_info))
    probe.close()
    if not (first[2] or first[3]):  # multi-turn: fork after one step
        observation, _, _, _, info = env.step(agent.act(observation, info))
    return env, agent, observation, info


@pytest.mark.parametrize("env_id", CLONABLE)
def test_a_fork_continues_exactly_like_the_unforked_episode(env_id: str) -> None:
    env, agent, observation, info = _fork_point(env_id)
    twin = clone_env(env)
    for _ in range(4):
        action = agent.act(observation, info)
        original, copied = env.step(action), twin.step(action)
        assert _comparable(copied) == _comparable(original)
        observation, _, terminated, truncated, info = original
        if terminated or truncated:
            break
    env.close()
    twin.close()


@pytest.mark.parametrize("env_id", CLONABLE)
def test_a_fork_leaks_nothing_into_its_sibling(env_id: str) -> None:
    """Playing one copy to the end leaves the other exactly where an env that was never forked would be."""
    env, agent, observation, info = _fork_point(env_id)
    sibling = clone_env(env)
    _play(sibling, RandomAgent(seed=99), observation, info, steps=6)  # a different line of play, to the end
    reference, ref_agent, ref_obs, ref_info = _fork_point(env_id)
    assert _play(env, agent, observation, info, steps=4) == _play(reference, ref_agent, ref_obs, ref_info, steps=4)


def _connections(obj: Any, seen: set[int] | None = None) -> list[sqlite3.Connection]:
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, (str, bytes, int, float, type(None))):
        return []
    seen.add(id(obj))
    if isinstance(obj, sqlite3.Connection):
        return [obj]
    values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else (
        vars(obj).values() if hasattr(obj, "__dict__") and not isinstance(obj, type) else ())
    return [c for v in list(values) for c in _connections(v, seen)]


@pytest.mark.parametrize("env_id", ["ToolWorld-v1", "ToolGen-v0"])
def test_a_database_write_in_one_branch_is_not_in_the_other(env_id: str) -> None:
    env = rollgym.make(env_id)
    env.reset(seed=1)
    twin = clone_env(env)
    mine, theirs = _connections(env.unwrapped.session), _connections(twin.unwrapped.session)
    assert mine and len(mine) == len(theirs) and not {id(c) for c in mine} & {id(c) for c in theirs}
    theirs[0].execute("CREATE TABLE branch_probe (x INTEGER)")
    theirs[0].execute("INSERT INTO branch_probe VALUES (1)")
    tables = "SELECT name FROM sqlite_master WHERE name = 'branch_probe'"
    assert theirs[0].execute(tables).fetchall() and not mine[0].execute(tables).fetchall()


def test_envs_whose_state_lives_outside_the_process_say_why() -> None:
    with pytest.raises(NotForkable, match=r"^WebShop-v2 cannot be forked: it drives a live browser page"):
        clone_env(rollgym.make("WebShop-v2"))  # refused before any browser starts
    terminal = rollgym.make("Terminal-v0")
    terminal.reset(seed=0)
    try:
        with pytest.raises(NotForkable, match="live sandbox session whose processes and files cannot be copied"):
            clone_env(terminal)
    finally:
        terminal.close()

    class HoldsALock:
        def __init__(self) -> None:
            self.guard = threading.Lock()

    with pytest.raises(NotForkable, match=r"it holds a live lock at env\.guard, whose state cannot be copied"):
        clone_env(HoldsALock())


def test_a_token_prefix_needs_an_agent_that_works_in_tokens() -> None:
    root = Branch.start(rollgym.make("Countdown-v0"), OracleAgent(), seed=0)
    with pytest.raises(NotForkable, match="cannot continue a reply from a token prefix"):
        root.fork(agent_seed=1, traj_id="b", prefix_ids=[1, 2])
    branch = root.fork(agent_seed=1, traj_id="b")  # a fork at the turn needs no tokens
    assert root.turn == branch.turn == 0 and branch.fork_point == ForkPoint(0, 0)


# -- the agent and the tokens ---------------------------------------------------------------------------------

OBSERVATIONS = ["Reach 24 with 3 8 8.", "Not quite. Try again.", "Last chance."]


def test_a_forked_chat_agent_with_the_same_seed_samples_the_same_tokens(tiny_backend: Any) -> None:
    info = {"system_prompt": "Answer briefly."}
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=8))
    agent.reset(seed=5)
    agent.act(OBSERVATIONS[0], info)
    twin = agent.fork()
    other = agent.fork(seed=6)
    for obs in OBSERVATIONS[1:]:
        assert twin.act(obs, info) == agent.act(obs, info)
        other.act(obs, info)
    assert twin.token_record().completion_ids == agent.token_record().completion_ids
    assert other.token_record().completion_ids[:len(agent.turns[0].output_ids)] == agent.turns[0].output_ids
    assert other.turns[1].output_ids != agent.turns[1].output_ids  # its own sampling after the fork
    assert agent.turns[0].prompt_ids is not twin.turns[0].prompt_ids  # nothing shared that could be edited


def test_branch_tokens_are_the_parents_tokens_then_their_own(tiny_backend: Any) -> None:
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=12))
    trajectories = grow_tree(rollgym.make("Countdown-v0"), agent, seed=3, roots=2, token_budget=60,
                             forks_per_round=2, group_id="g")
    by_id = {t.traj_id: t for t in trajectories}
    branches = [t for t in trajectories if t.parent_id is not None]
    assert len(trajectories) > 2 and branches
    model, torch = tiny_backend.model, tiny_backend._torch
    for branch in branches:
        parent, shared = by_id[branch.parent_id], branch.shared_tokens
        assert branch.fork_turn == 0 and shared == branch.fork_token > 0
        assert branch.prompt_ids == parent.prompt_ids
        assert branch.completion_ids[:shared] == parent.completion_ids[:shared]
        assert branch.loss_mask[:shared] == [0] * shared and branch.logprobs[:shared] == [0.0] * shared
        assert sum(branch.loss_mask) == len(branch.turns[0].output_ids) - shared  # the rest it sampled itself
        # every token the branch sampled has the logprob a forward pass over the whole sequence gives
        again = tiny_backend.logprobs_of(branch.prompt_ids, branch.completion_ids)
        own = [(a, b) for a, b, m in zip(again, branch.logprobs, branch.loss_mask) if m]
        assert own and max(abs(a - b) for a, b in own) < 1e-4
        # and its text is the decoded tokens
        assert tiny_backend.tokenizer.decode(branch.turns[0].output_ids, skip_special_tokens=True) == \
            branch.messages[-2 if branch.messages[-1]["role"] == "user" else -1]["content"]
    with torch.inference_mode():  # the recorded entropies are the raw next-token distributions' entropies
        root = agent.spawn()
        root.reset(seed=11)
        env = rollgym.make("Countdown-v0")
        observation, info = env.reset(seed=3)
        root.act(observation, info)
        turn = root.turns[0]
        ids = torch.tensor([turn.prompt_ids + turn.output_ids])
        logp = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)
        start = len(turn.prompt_ids) - 1
        expected = [float(-(logp[start + j].exp() * logp[start + j]).sum()) for j in range(len(turn.output_ids))]
        assert len(turn.output_entropies) == len(turn.output_ids)
        assert max(abs(a - b) for a, b in zip(expected, turn.output_entropies)) < 1e-3


def test_shared_tokens_are_masked_once_in_a_multi_turn_tree() -> None:
    """A turn-level fork of a multi-turn game: the branch shares the earlier turns and records where it left."""
    env = rollgym.make("ConnectFour-v0")
    root = Branch.start(env, RandomAgent(seed=1), seed=0, traj_id="root", group_id="g")
    import asyncio

    snapshots: list[Branch] = []
    root_traj = asyncio.run(root.aplay(snapshots=snapshots))
    assert len(snapshots) == len(root_traj.turns) >= 2
    branch = snapshots[1].fork(agent_seed=2, traj_id="b")
    traj = asyncio.run(branch.aplay())
    assert (traj.parent_id, traj.fork_turn, traj.fork_token) == (snapshots[1].traj_id, 1, 0)
    assert traj.messages[:3] == root_traj.messages[:3]  # the first reply and the env's answer are the parent's
    assert Trajectory.from_dict(traj.to_dict()) == traj
    assert "parent_id" not in root_traj.to_dict()  # ordinary rollouts serialize as before


# -- where to fork --------------------------------------------------------------------------------------------

def test_selection_picks_the_highest_entropy_points() -> None:
    scores = [0.1, 2.0, 1.9, 0.3, 1.5, 2.5]
    candidates = [(ForkPoint(0, j), s) for j, s in enumerate(scores)]
    assert select_forks(candidates, 3) == [ForkPoint(0, 1), ForkPoint(0, 2), ForkPoint(0, 5)]
    # min_gap keeps one run of uncertain tokens from taking the whole budget (ECHO's rollout collapse)
    assert select_forks(candidates, 3, min_gap=2) == [ForkPoint(0, 1), ForkPoint(0, 3), ForkPoint(0, 5)]
    assert select_forks(candidates, 10) == [p for p, _ in candidates]
    random = select_forks(candidates, 3, rule="random", rng=np.random.default_rng(0))
    assert len(random) == 3 and set(random) <= {p for p, _ in candidates}


def test_candidates_come_from_entropies_or_surprisal() -> None:
    class Turn:
        def __init__(self, ids: list[int], logprobs: list[float], entropies: list[float]) -> None:
            self.output_ids, self.output_logprobs, self.output_entropies = ids, logprobs, entropies

    turns = [Turn([1, 2], [-0.1, -0.2], [0.5, 3.0]), Turn([3, 4, 5], [-2.0, -0.1, -0.3], [])]
    tokens = fork_candidates(turns)
    assert tokens[:2] == [(ForkPoint(0, 0), 0.5), (ForkPoint(0, 1), 3.0)]
    assert tokens[2:] == [(ForkPoint(1, 0), 2.0), (ForkPoint(1, 1), 0.1), (ForkPoint(1, 2), 0.3)]  # -logprob
    per_turn = fork_candidates(turns, level="turn")
    assert [p for p, _ in per_turn] == [ForkPoint(0, 0), ForkPoint(1, 0)]
    assert math.isclose(per_turn[0][1], 1.75) and math.isclose(per_turn[1][1], 0.8)
    assert select_forks(per_turn, 1) == [ForkPoint(0, 0)]


def test_a_resum_branch_continues_after_an_injected_phrase_that_is_masked(tiny_backend: Any) -> None:
    import asyncio

    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=12))
    root = Branch.start(rollgym.make("Countdown-v0"), agent, seed=4, agent_seed=1, traj_id="root")
    snapshots: list[Branch] = []
    parent = asyncio.run(root.aplay(snapshots=snapshots))
    phrase = tiny_backend.tokenizer.encode(" think", add_special_tokens=False)
    kept = parent.turns[0].output_ids[:2]
    branch = snapshots[0].fork(agent_seed=9, traj_id="resum", prefix_ids=kept, injected_ids=phrase,
                               prefix_logprobs=parent.turns[0].output_logprobs[:2])
    traj = asyncio.run(branch.aplay())
    n = len(phrase)
    assert traj.completion_ids[:2] == kept and traj.completion_ids[2:2 + n] == phrase
    assert (traj.shared_tokens, traj.fork_token, traj.metrics["injected_tokens"]) == (2, 2, n)
    assert traj.loss_mask[:2 + n] == [0] * (2 + n) and traj.logprobs[:2 + n] == [0.0] * (2 + n)
    assert sum(traj.loss_mask) == len(traj.turns[0].output_ids) - 2 - n > 0
    again = tiny_backend.logprobs_of(traj.prompt_ids, traj.completion_ids)
    own = [(a, b) for a, b, m in zip(again, traj.logprobs, traj.loss_mask) if m]
    assert max(abs(a - b) for a, b in own) < 1e-4  # sampled after the phrase, exactly as recorded


def test_the_experiment_counts_rollouts_only_while_their_tokens_fit_the_budget() -> None:
    from research.budget import within_budget

    def made(sampled: int) -> Trajectory:
        return Trajectory("t", "g", 0, "Countdown-v0", None, None, completion_ids=[1] * 5,
                          loss_mask=[0] * (5 - sampled) + [1] * sampled, logprobs=[0.0] * 5)

    rollouts = [made(5), made(3), made(4), made(1)]
    assert within_budget(rollouts, 12) == rollouts[:3]  # 5 + 3 + 4; the fourth would be the 13th token
    assert within_budget(rollouts, 4) == []  # the first one alone is over: nothing counts

"""ECHO's tree-rollout options: confidence pruning (never the last branch), adaptive width, and off = as before."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import pytest

import rollgym
from rollgym.agents import RandomAgent
from rollgym.agents.backends.base import SamplingParams
from rollgym.agents.chat import ChatAgent
from rollgym.core.errors import ConfigError
from rollgym.rollout.branching import grow_tree
from rollgym.rollout.echo import EchoOptions, Pruner, branch_width, tail_confidence, tree_stats


@dataclass
class _Record:
    output_ids: list[int]
    output_logprobs: list[float]
    output_entropies: list[float] = field(default_factory=list)


class ScriptedConfidence:
    """A random player whose replies are recorded as 4 tokens of a fixed probability: 0.9 for even seeds, 0.1 else."""

    def __init__(self, seed: int = 0) -> None:
        self.player = RandomAgent(seed=seed)
        self.prob = 0.9 if seed % 2 == 0 else 0.1
        self.turns: list[_Record] = []

    def reset(self, seed: int | None = None) -> None:
        self.player.reset(seed=seed)
        self.turns = []

    def fork(self, seed: int | None = None) -> ScriptedConfidence:
        child = copy.deepcopy(self)
        if seed is not None:
            child.player = RandomAgent(seed=seed)
            child.prob = 0.9 if seed % 2 == 0 else 0.1
        return child

    def act(self, observation: str, info: dict[str, Any]) -> str:
        lp = math.log(self.prob)
        self.turns.append(_Record([1, 2, 3, 4], [lp] * 4, [1.0, 2.0, 0.5, 0.5]))
        return self.player.act(observation, info)


def _tree(agent: Any, echo: EchoOptions | None, roots: int = 4, budget: int = 0, **kw: Any) -> list[Any]:
    return grow_tree(rollgym.make("ConnectFour-v0"), agent, seed=1, roots=roots, token_budget=budget,
                     agent_seed=0, group_id="g", echo=echo, **kw)


def test_pruning_stops_persistently_unsure_branches_and_keeps_the_sure_ones() -> None:
    options = EchoOptions(prune_below=0.5, patience=2, tail_window=4)
    trajs = _tree(ScriptedConfidence(), options)
    # roots get agent seeds 0, 1_000_003 * 0 + 1, ... : even ones are sure (p = 0.9), odd ones unsure (p = 0.1)
    unsure = [t for t, i in zip(trajs, range(4)) if i % 2 == 1]
    sure = [t for t, i in zip(trajs, range(4)) if i % 2 == 0]
    assert all(t.metrics.get("pruned") and t.info["truncated_by"] == "pruned" for t in unsure)
    assert all(t.metrics["num_turns"] == 2 for t in unsure)  # stopped at the second failed check, online
    assert all(not t.metrics.get("pruned") and t.metrics["num_turns"] > 2 for t in sure)
    assert tree_stats(trajs) == {"trajectories": 4.0, "branches": 0.0, "pruned": 2.0, "pruned_live": 2.0}


def test_pruning_never_prunes_the_last_branch() -> None:
    agent = ScriptedConfidence()
    agent.fork = lambda seed=None: _unsure(agent)  # type: ignore[method-assign]  # every root is unsure
    trajs = _tree(agent, EchoOptions(prune_below=0.5, patience=1, tail_window=4), roots=3)
    kept = [t for t in trajs if not t.metrics.get("pruned")]
    assert len(kept) == 1 and kept[0].metrics["num_turns"] > 1  # the last one plays on to the end
    assert sum(bool(t.metrics.get("pruned")) for t in trajs) == 2
    pruner = Pruner(EchoOptions(prune_below=0.5, patience=1))
    pruner.adopt("only", None)
    assert not pruner.check("only", [_Record([1], [math.log(0.01)])])  # alone in its tree: never pruned


def _unsure(agent: ScriptedConfidence) -> ScriptedConfidence:
    child = copy.deepcopy(agent)
    child.prob = 0.1
    return child


def test_a_branch_inherits_its_parents_streak() -> None:
    pruner = Pruner(EchoOptions(prune_below=0.5, patience=2))
    low = [_Record([1, 2], [math.log(0.2)] * 2)]
    for name in ("other", "parent"):
        pruner.adopt(name, None)
    assert not pruner.check("parent", low)  # one failed check: not yet persistent
    pruner.adopt("child", "parent")
    assert pruner.check("child", low)  # the second along the path prunes
    assert tail_confidence([_Record([1, 2, 3], [0.0, math.log(0.5), math.log(0.25)])], 8, skip=1) == 0.375


def test_adaptive_width_gives_uncertain_points_more_children(tiny_backend: Any) -> None:
    assert branch_width(2.0, 1.0, 0.25, base=1, max_width=4) == 3
    assert branch_width(0.2, 1.0, 0.25) == 1 and branch_width(9.0, 1.0, 0.0, max_width=4) == 4
    assert branch_width(1.0, 1.0, 1.0) == 1  # a group that agrees completely: one child
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=12))
    kwargs = dict(seed=3, roots=2, token_budget=40, forks_per_round=1, group_id="g", agent_seed=5)
    fixed = grow_tree(rollgym.make("Countdown-v0"), agent, **kwargs)
    wide = grow_tree(rollgym.make("Countdown-v0"), agent, echo=EchoOptions(adaptive_width=True, max_width=4),
                     **kwargs)
    children: dict[tuple[str, int], int] = {}
    for t in wide:
        if t.parent_id is not None:
            key = (t.parent_id, t.fork_token)
            children[key] = children.get(key, 0) + 1
    assert max(children.values()) > 1  # some fork point got several children
    assert [t.completion_ids for t in wide[:2]] == [t.completion_ids for t in fixed[:2]]  # the same roots


def test_options_off_grow_the_same_tree(tiny_backend: Any) -> None:
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=12))
    kwargs = dict(seed=3, roots=2, token_budget=60, forks_per_round=2, group_id="g", agent_seed=1)
    before = grow_tree(rollgym.make("Countdown-v0"), agent, **kwargs)
    off = grow_tree(rollgym.make("Countdown-v0"), agent, echo=EchoOptions(), **kwargs)

    def view(ts: list[Any]) -> list[Any]:
        return [(t.traj_id, t.parent_id, t.fork_token, t.completion_ids, t.loss_mask, t.reward) for t in ts]

    assert view(off) == view(before)
    assert not any(t.metrics.get("pruned") for t in off)


def test_bad_options_say_which_field() -> None:
    with pytest.raises(ConfigError, match="prune_below"):
        EchoOptions(prune_below=1.5)
    with pytest.raises(ConfigError, match="base_width"):
        EchoOptions(base_width=5, max_width=4)


def test_pruned_lines_free_their_budget_for_the_kept_ones(tiny_backend: Any) -> None:
    """Every sample of the untrained tiny model is unsure: all lines but one are pruned, and the budget goes on it."""
    from rollgym.rollout.branching import sampled_tokens

    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=12))
    trajs = grow_tree(rollgym.make("Countdown-v0"), agent, seed=5, roots=3, token_budget=80, forks_per_round=1,
                      group_id="g", agent_seed=2, echo=EchoOptions(prune_below=0.99, patience=1))
    kept = [t for t in trajs if not t.metrics.get("pruned")]
    assert len(kept) == 1  # never the last one
    assert all(t.parent_id is None or t.parent_id == kept[0].traj_id for t in trajs)  # forks only from the kept line
    assert sum(sampled_tokens(t) for t in trajs) >= 80  # the tree refilled from its unused points until the budget
    assert tree_stats(trajs)["pruned"] == len(trajs) - 1

"""Majority voting and the zero-variance filter on hand-built groups (the envs' own signals: test_verification.py)."""

from __future__ import annotations

import pytest

from rollgym.core import ConfigError, Task
from rollgym.rollout.strategies import (
    MajorityVoteScorer,
    VerifiedVoteScorer,
    drop_zero_variance,
)
from rollgym.rollout.types import RolloutGroup, Trajectory

TASK = Task("task-1", "E-v0", "q", "42")


def traj(i, parsed=None, reward=0.0, verified=None, status="completed", tokens=4, source="policy"):
    info = {"parsed": parsed}
    if verified is not None:
        info["verified"] = verified
    return Trajectory(f"t{i}", "g", i, "E-v0", "task-1", 0, source=source, reward=reward, status=status,
                      info=info, completion_ids=list(range(tokens)), loss_mask=[1] * tokens,
                      logprobs=[-0.1] * tokens)


def group(*members):
    return RolloutGroup("g", TASK, len(members), list(members))


def test_majority_vote_sets_pseudo_label_and_rewards():
    g = group(traj(0, "42"), traj(1, " 42 "), traj(2, "41"), traj(3, None), traj(4, "41", status="failed"))
    MajorityVoteScorer(label_fn=lambda grp: grp.task.answer)(g)
    assert g.pseudo_label == "42"
    assert [t.reward for t in g.trajectories] == [1.0, 1.0, 0.0, 0.0, 0.0]  # failed: untouched
    assert g.trajectories[0].metrics["label_correct"] is True
    assert g.trajectories[0].metrics["vote_share"] == pytest.approx(2 / 3)


def test_ties_go_to_the_first_answer_seen():
    g = group(traj(0, "7"), traj(1, "8"))
    MajorityVoteScorer()(g)
    assert g.pseudo_label == "7"


def test_verified_votes_can_outweigh_a_plain_majority():
    members = [traj(0, "10", verified=True), traj(1, "12"), traj(2, "12")]
    plain = group(*[Trajectory.from_dict(t.to_dict()) for t in members])
    MajorityVoteScorer()(plain)
    assert plain.pseudo_label == "12"
    weighted = group(*members)
    VerifiedVoteScorer(verified_weight=3.0)(weighted)
    assert weighted.pseudo_label == "10"
    assert [t.reward for t in weighted.trajectories] == [1.0, 0.0, 0.0]
    with pytest.raises(ConfigError):
        VerifiedVoteScorer(verified_weight=0.5)


def test_only_a_bool_counts_as_verified():
    # evidence dicts (the old MATH*Tool format) or truthy strings are not the typed signal
    members = [traj(0, "10", verified={"printed_answer": True}), traj(1, "10", verified="yes"), traj(2, "12"),
               traj(3, "12", verified=True)]
    g = group(*members)
    VerifiedVoteScorer(verified_weight=5.0)(g)
    assert g.pseudo_label == "12"
    assert [t.metrics["verified"] for t in g.trajectories] == [False, False, False, True]


def test_dynamic_sampling_drops_flat_groups():
    flat = group(traj(0, reward=1.0), traj(1, reward=1.0))
    varied = RolloutGroup("h", TASK, 2, [traj(0, reward=1.0), traj(1, reward=0.0)])
    assert drop_zero_variance([flat, varied]) == [varied]

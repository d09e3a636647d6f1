"""Majority voting, verified voting, external-rollout mixing and dynamic sampling on hand-built groups."""

from __future__ import annotations

import pytest

from rollgym.core import ConfigError, Task
from rollgym.rollout.strategies import (
    MajorityVoteScorer,
    VerifiedVoteScorer,
    drop_zero_variance,
    mix_external,
    truncate_trajectory,
)
from rollgym.rollout.types import RolloutGroup, Trajectory
from rollgym.train.advantages import group_advantages

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


def test_external_rollouts_join_only_when_better_and_fit_the_budget():
    on_policy = group(traj(0, reward=0.0, tokens=5), traj(1, reward=0.0, tokens=3))
    long_good = traj(9, reward=1.0, tokens=12, source="external:oracle")
    short_good = traj(8, reward=1.0, tokens=4, source="external:oracle")
    worse = traj(7, reward=0.0, tokens=2, source="external:oracle")
    ext = {"task-1": [long_good, worse]}
    (mixed,) = mix_external([on_policy], ext, length="truncate")
    added = mixed.trajectories[-1]
    assert added.source == "external:oracle" and len(added.completion_ids) == 5 and added.status == "truncated"
    assert added.metrics["truncated_from"] == 12 and added.group_id == "g" and added.sample_idx == 2
    (selected,) = mix_external([on_policy], {"task-1": [long_good, short_good]}, length="select")
    assert [t.traj_id for t in selected.trajectories][-1] == "g-ext0"
    assert len(selected.trajectories[-1].completion_ids) == 4
    (whole,) = mix_external([on_policy], ext, length="none")
    assert len(whole.trajectories[-1].completion_ids) == 12
    (none_added,) = mix_external([on_policy], {"task-1": [worse]})
    assert len(none_added.trajectories) == 2
    (replaced,) = mix_external([on_policy], ext, replace_worst=True)
    assert len(replaced.trajectories) == 2 and replaced.trajectories[-1].source == "external:oracle"
    assert len(on_policy.trajectories) == 2  # the input group is not modified


def test_joint_versus_source_specific_advantages_after_mixing():
    (mixed,) = mix_external([group(traj(0, reward=0.0), traj(1, reward=1.0))],
                            {"task-1": [traj(5, reward=2.0, source="external:oracle")]}, only_if_better=True)
    joint = group_advantages([mixed], scale="none")
    split = group_advantages([mixed], scale="none", by_source=True)
    assert joint["g-ext0"] == pytest.approx(1.0)
    assert split["g-ext0"] == 0.0 and split["t1"] == 0.5


def test_truncate_keeps_short_rollouts():
    t = traj(0, tokens=3)
    assert truncate_trajectory(t, 10) is t


def test_dynamic_sampling_drops_flat_groups():
    flat = group(traj(0, reward=1.0), traj(1, reward=1.0))
    varied = RolloutGroup("h", TASK, 2, [traj(0, reward=1.0), traj(1, reward=0.0)])
    assert drop_zero_variance([flat, varied]) == [varied]

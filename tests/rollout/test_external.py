"""ERILS: source-specific and joint advantages by hand, and length control that re-scores the cut text."""

from __future__ import annotations

import pytest

from rollgym.core import ConfigError, Task
from rollgym.rollout.external import EnvRescorer, mix_external, truncate_trajectory
from rollgym.rollout.types import RolloutGroup, Trajectory
from rollgym.train.advantages import group_advantages
from tests.conftest import task_at

TASK = Task("task-1", "E-v0", "q", "42")


def traj(i, reward, source="policy", tokens=4, status="completed"):
    return Trajectory(f"t{i}", "g", i, "E-v0", "task-1", 0, source=source, reward=reward, status=status,
                      completion_ids=list(range(tokens)), loss_mask=[1] * tokens, logprobs=[-0.1] * tokens)


def mixed(policy_rewards, external_reward):
    members = [traj(i, r) for i, r in enumerate(policy_rewards)]
    members.append(traj(9, external_reward, source="external:oracle"))
    return RolloutGroup("g", TASK, len(members), members)


def test_per_source_external_advantage_is_baselined_on_the_policy_group():
    group = mixed([0.0, 0.0, 1.0, 0.0], 1.0)
    per = group_advantages([group], by_source=True)
    mean, std = 0.25, 0.4330127
    assert per["t9"] == pytest.approx((1.0 - mean) / std, rel=1e-5)  # positive: it beats the on-policy mean
    assert per["t2"] == pytest.approx((1.0 - mean) / std, rel=1e-5)  # on-policy: plain GRPO, unchanged
    assert per["t0"] == pytest.approx(-mean / std, rel=1e-5)
    joint = group_advantages([group], by_source=False)
    assert joint["t9"] == pytest.approx((1.0 - 0.4) / 0.4898979, rel=1e-5)
    assert joint["t0"] == pytest.approx(-0.4 / 0.4898979, rel=1e-5)
    assert joint["t9"] != pytest.approx(per["t9"]) and joint["t0"] != pytest.approx(per["t0"])


def test_an_external_success_in_a_group_that_solved_nothing_gets_a_real_advantage():
    group = mixed([0.0, 0.0, 0.0, 0.0], 1.0)
    per = group_advantages([group], by_source=True)
    assert per["t9"] == pytest.approx(1.0, rel=1e-5)  # r_ext - mean_policy, divided by 1 (flat on-policy group)
    assert all(per[f"t{i}"] == 0.0 for i in range(4))  # the on-policy rollouts are not pushed down
    joint = group_advantages([group], by_source=False)
    assert joint["t9"] == pytest.approx(2.0, rel=1e-5) and joint["t0"] == pytest.approx(-0.5, rel=1e-5)
    assert group_advantages([group], by_source=True, scale="none")["t9"] == pytest.approx(1.0)


def test_per_source_advantages_follow_the_on_policy_mean_in_every_scale():
    below = mixed([1.0, 1.0, 0.0, 1.0], 0.5)
    for scale in ("group", "batch", "none"):
        adv = group_advantages([below], by_source=True, scale=scale)
        assert adv["t9"] < 0, scale  # worse than what the policy achieves: pushed down
    above = mixed([0.2, 0.4], 0.9)
    none = group_advantages([above], by_source=True, scale="none")
    assert none["t9"] == pytest.approx(0.9 - 0.3) and none["t0"] == pytest.approx(-0.1)
    batch = group_advantages([above], by_source=True, scale="batch")
    pooled_std = float(__import__("numpy").std([0.2, 0.4, 0.9]))
    assert batch["t9"] == pytest.approx(0.6 / pooled_std, rel=1e-5)


def test_failed_rollouts_stay_out_and_external_only_groups_centre_on_themselves():
    group = mixed([0.0, 1.0], 1.0)
    group.trajectories.append(traj(5, None, status="failed"))
    adv = group_advantages([group], by_source=True, scale="none")
    assert "t5" not in adv and adv["t9"] == pytest.approx(0.5)
    only = RolloutGroup("h", TASK, 2, [traj(7, 1.0, source="external:a"), traj(8, 0.0, source="external:b")])
    assert group_advantages([only], by_source=True, scale="none") == {"t7": 0.5, "t8": -0.5}


# -- length control ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def countdown(tiny_backend):
    """An oracle Countdown answer as an external rollout (tokens of the tiny tokenizer), and its task."""
    from rollgym.train.sft import demonstration_for, external_trajectory

    task = task_at("Countdown-v0", 5, num_numbers=3)
    demo = demonstration_for("Countdown-v0", task, tiny_backend.tokenizer, env_kwargs={"num_numbers": 3})
    ext = external_trajectory(demo, tiny_backend, group_id="g")
    assert ext.reward == 1.0
    return task, ext, EnvRescorer("Countdown-v0", tiny_backend.tokenizer, env_kwargs={"num_numbers": 3})


def tokens_before_close_tag(tokenizer, ext):
    """The longest prefix whose text still lacks the closing ``</answer>``."""
    n = len(ext.completion_ids)
    while "</answer>" in tokenizer.decode(ext.completion_ids[:n]):
        n -= 1
    return n


def test_a_cut_that_removes_the_answer_earns_zero(countdown, tiny_backend):
    task, ext, rescore = countdown
    n = tokens_before_close_tag(tiny_backend.tokenizer, ext)
    cut = truncate_trajectory(ext, n, rescore=rescore, task=task)
    assert cut.reward == 0.0 and cut.info["correct"] is False and cut.status == "truncated"
    assert cut.metrics["reward_before_cut"] == 1.0 and cut.metrics["rescored"] == "env"
    assert len(cut.completion_ids) == len(cut.loss_mask) == len(cut.logprobs) == n
    assert sum(len(t.output_ids) for t in cut.turns) == n
    unverified = truncate_trajectory(ext, n)  # no rescorer: a cut of sampled text earns nothing
    assert unverified.reward == 0.0 and unverified.metrics["rescored"] == "unverified_cut"


def test_a_cut_that_keeps_the_answer_keeps_its_reward(countdown):
    task, ext, rescore = countdown
    cut = truncate_trajectory(ext, len(ext.completion_ids) - 1, rescore=rescore, task=task)  # only end-of-turn cut
    assert cut.reward == 1.0 and cut.info["correct"] is True
    assert truncate_trajectory(ext, len(ext.completion_ids), rescore=rescore, task=task) is ext


def test_mix_external_truncates_rescores_selects_and_skips(countdown, tiny_backend):
    task, ext, rescore = countdown
    n = len(ext.completion_ids)
    short = tokens_before_close_tag(tiny_backend.tokenizer, ext)
    policy = [Trajectory(f"p{i}", "g", i, "Countdown-v0", task.id, 0, reward=0.0, completion_ids=[1] * short,
                         loss_mask=[1] * short, logprobs=[0.0] * short) for i in range(2)]
    group = RolloutGroup("g", task, 2, policy)
    external = {task.id: [ext]}
    (cut,) = mix_external([group], external, length="truncate", rescore=rescore)
    assert len(cut.trajectories) == 2  # the cut answer earns 0, so it does not beat the group
    (whole,) = mix_external([group], external, length="none")
    assert whole.trajectories[-1].reward == 1.0 and len(whole.trajectories[-1].completion_ids) == n
    assert whole.trajectories[-1].metrics["length_control"] == "none"
    (selected,) = mix_external([group], external, length="select")
    assert len(selected.trajectories) == 2  # too long for the budget: not selected
    (fits,) = mix_external([group], external, length="select", budget=n)
    added = fits.trajectories[-1]
    assert added.source == "external:oracle" and added.metrics["length_control"] == "fit"
    assert added.traj_id == "g-ext0" and added.sample_idx == 2 and added.group_id == "g"
    (kept,) = mix_external([group], external, length="truncate", rescore=rescore, budget=n - 1)
    assert kept.trajectories[-1].reward == 1.0 and kept.trajectories[-1].metrics["length_control"] == "truncated"
    (replaced,) = mix_external([group], external, length="none", replace_worst=True)
    assert len(replaced.trajectories) == 2 and replaced.trajectories[-1].source == "external:oracle"
    assert len(group.trajectories) == 2  # the input group is not modified
    with pytest.raises(ConfigError):
        mix_external([group], external, length="cut")  # type: ignore[arg-type]

"""Advantages, clipping and masks against hand-computed values."""

from __future__ import annotations

import math

import pytest

from rollgym.core import ConfigError
from rollgym.rollout.types import RolloutGroup, Trajectory
from rollgym.train.advantages import group_advantages, zero_variance
from tests.conftest import require_module


def traj(i, reward, source="policy", status="completed", group="g"):
    return Trajectory(f"{group}{i}", group, i, "E-v0", "t", 0, source=source, reward=reward, status=status)


def test_group_scaling_by_hand():
    g = RolloutGroup("g", None, 4, [traj(0, 1.0), traj(1, 0.0), traj(2, 0.0), traj(3, 1.0)])
    adv = group_advantages([g], scale="group", eps=0.0)
    # mean 0.5, population std 0.5
    assert adv == {"g0": 1.0, "g1": -1.0, "g2": -1.0, "g3": 1.0}


def test_mean_only_and_batch_scaling_by_hand():
    a = RolloutGroup("a", None, 2, [traj(0, 1.0, group="a"), traj(1, 0.0, group="a")])
    b = RolloutGroup("b", None, 2, [traj(0, 3.0, group="b"), traj(1, 1.0, group="b")])
    none = group_advantages([a, b], scale="none")
    assert none == {"a0": 0.5, "a1": -0.5, "b0": 1.0, "b1": -1.0}
    batch = group_advantages([a, b], scale="batch", eps=0.0)
    std = math.sqrt(sum((r - 1.25) ** 2 for r in [1, 0, 3, 1]) / 4)  # batch std of raw rewards
    assert batch["b0"] == pytest.approx(1.0 / std) and batch["a1"] == pytest.approx(-0.5 / std)


def test_failed_rollouts_are_left_out_not_scored_zero():
    g = RolloutGroup("g", None, 3, [traj(0, 1.0), traj(1, None, status="failed"), traj(2, 0.0)])
    adv = group_advantages([g], scale="none")
    assert set(adv) == {"g0", "g2"} and adv["g0"] == 0.5


def test_by_source_normalises_external_rollouts_separately():
    g = RolloutGroup("g", None, 4, [traj(0, 0.0), traj(1, 1.0), traj(2, 1.0, "external:oracle"),
                                    traj(3, 1.0, "external:oracle")])
    joint = group_advantages([g], scale="none")
    split = group_advantages([g], scale="none", by_source=True)
    assert joint["g2"] == pytest.approx(0.25) and joint["g0"] == pytest.approx(-0.75)
    assert split["g2"] == 0.0 and split["g0"] == -0.5 and split["g1"] == 0.5


def test_zero_variance_groups():
    assert zero_variance(RolloutGroup("g", None, 2, [traj(0, 1.0), traj(1, 1.0)]))
    assert not zero_variance(RolloutGroup("g", None, 2, [traj(0, 1.0), traj(1, 0.0)]))


def test_bad_scale():
    with pytest.raises(ConfigError, match="scale must be"):
        group_advantages([], scale="std")  # type: ignore[arg-type]


require_module("torch")
import torch  # noqa: E402


def test_clipping_by_hand():
    from rollgym.train.loss import grpo_loss

    old = torch.zeros(1, 3)
    new = torch.log(torch.tensor([[1.5, 0.5, 1.0]]))  # ratios 1.5, 0.5, 1.0
    mask = torch.tensor([[1, 1, 0]])
    loss, stats = grpo_loss(new, old, torch.tensor([1.0]), mask, clip_low=0.2, clip_high=0.2)
    # A=+1: token 0 clipped to 1.2; token 1 keeps 0.5 (min picks the unclipped 0.5); token 2 masked
    assert float(loss) == pytest.approx(-(1.2 + 0.5) / 2)
    assert stats.clip_fraction == pytest.approx(0.5) and stats.tokens == 2
    loss_neg, _ = grpo_loss(new, old, torch.tensor([-1.0]), mask)
    # A=-1: min(-1.5, -1.2) = -1.5 ; min(-0.5, -0.8) = -0.8
    assert float(loss_neg) == pytest.approx((1.5 + 0.8) / 2)


def test_sequence_aggregation_and_kl_by_hand():
    from rollgym.train.loss import grpo_loss

    old = torch.zeros(2, 3)
    new = torch.zeros(2, 3, requires_grad=True)
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    adv = torch.tensor([1.0, 2.0])
    token_loss, _ = grpo_loss(new, old, adv, mask, aggregation="token")
    seq_loss, _ = grpo_loss(new, old, adv, mask, aggregation="sequence")
    assert float(token_loss) == pytest.approx(-(3 * 1.0 + 2.0) / 4)
    assert float(seq_loss) == pytest.approx(-(1.0 + 2.0) / 2)
    ref = torch.full((2, 3), math.log(2.0))
    loss, stats = grpo_loss(new, old, adv, mask, ref_logprobs=ref, beta=0.1)
    k3 = 2.0 - math.log(2.0) - 1.0
    assert stats.kl == pytest.approx(k3)
    assert float(loss) == pytest.approx(-(5.0 / 4) + 0.1 * k3)
    loss.backward()
    assert new.grad is not None and float(new.grad[1, 1]) == 0.0  # masked tokens get no gradient

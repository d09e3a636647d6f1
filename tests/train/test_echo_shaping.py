"""ECHO's hybrid advantage shaping and confidence-adaptive clipping, by hand and through the trainer."""

from __future__ import annotations

import math

import pytest

from tests.conftest import require_module

require_module("torch")
import torch  # noqa: E402

from rollgym.core.errors import ConfigError  # noqa: E402
from rollgym.rollout.types import RolloutGroup, Trajectory, Turn  # noqa: E402
from rollgym.train.credit import broadcast  # noqa: E402
from rollgym.train.echo import EchoShaping, confidence_clip_high, echo_advantages  # noqa: E402
from rollgym.train.grpo import GRPOConfig, GRPOTrainer  # noqa: E402
from rollgym.train.loss import grpo_loss  # noqa: E402
from tests.train.test_grpo import fresh_model, make_groups  # noqa: E402


def _traj(name: str, probs: list[float], reward: float, *, mask: list[int] | None = None,
          obs: int = 0) -> Trajectory:
    lps = [math.log(p) for p in probs]
    turn = Turn([9], list(range(len(probs))), lps, obs_ids=[7] * obs)
    n = len(probs)
    return Trajectory(name, "g", 0, "E-v0", None, None, prompt_ids=[9], completion_ids=list(range(n)) + [7] * obs,
                      loss_mask=(mask or [1] * n) + [0] * obs, logprobs=lps + [0.0] * obs, turns=[turn],
                      reward=reward)


def test_the_shaping_formula_by_hand() -> None:
    # surprisal stands in for entropy: probs 0.5, 0.25 -> h = ln 2, 2 ln 2; mean 1.5 ln 2; relative 2/3, 4/3
    t = _traj("t", [0.5, 0.25], 1.0)
    out = echo_advantages([RolloutGroup("g", None, 1, [t])], {"t": 2.0}, alpha=0.6, gamma=0.4, bound=0.5)["t"]
    confidence = math.sqrt(0.5 * 0.25)  # exp(mean logprob)
    damp = 1 - 0.4 * confidence
    assert out == pytest.approx([2.0 * (1 + 0.6 * (2 / 3 - 1)) * damp, 2.0 * (1 + 0.6 * (4 / 3 - 1)) * damp])
    # a failure keeps its full penalty (no damping), and the weight is clipped to [1 - bound, 1 + bound]
    u = _traj("u", [0.5, 0.5], 0.0)
    out = echo_advantages([RolloutGroup("g", None, 1, [u])], {"u": -1.0}, alpha=1.0, gamma=0.9, bound=0.5,
                          entropies={"u": [4.0, 1.0]})["u"]
    # h = [4, 1]: mean 2.5, relative 1.6 and 0.4 -> weights 1 + 0.6 = 1.6 -> clipped 1.5, and 0.4 -> clipped 0.5
    assert out == pytest.approx([-1.5, -0.5])


def test_shared_prefix_and_env_tokens_get_no_shaped_credit() -> None:
    # a branch: its first two tokens are its parent's (mask 0), then two of its own, then three env tokens
    t = _traj("b", [0.9, 0.9, 0.5, 0.25], 1.0, mask=[0, 0, 1, 1], obs=3)
    out = echo_advantages([RolloutGroup("g", None, 1, [t])], {"b": 1.0}, alpha=0.6, gamma=0.0)["b"]
    assert len(out) == 7 and out[:2] == [0.0, 0.0] and out[4:] == [0.0, 0.0, 0.0]
    # only its own tokens enter the statistics: the same numbers as a rollout of those two tokens alone
    alone = echo_advantages([RolloutGroup("g", None, 1, [_traj("a", [0.5, 0.25], 1.0)])], {"a": 1.0},
                            alpha=0.6, gamma=0.0)["a"]
    assert out[2:4] == pytest.approx(alone)


def test_zero_weights_are_plain_grpo() -> None:
    ts = [_traj("x", [0.3, 0.6, 0.9], 1.0), _traj("y", [0.2, 0.7], 0.0, obs=2)]
    groups = [RolloutGroup("g", None, 2, ts)]
    adv = {"x": 0.7, "y": -0.7}
    shaped = echo_advantages(groups, adv, alpha=0.0, gamma=0.0)
    plain = broadcast(groups, adv)
    for t in ts:
        assert [a * m for a, m in zip(shaped[t.traj_id], t.loss_mask)] == \
            [a * m for a, m in zip(plain[t.traj_id], t.loss_mask)]
    with pytest.raises(ConfigError, match="gamma"):
        echo_advantages(groups, adv, gamma=1.5)


def test_confidence_clipping_tightens_sure_rows_only() -> None:
    old = torch.log(torch.tensor([[0.9, 0.9], [0.1, 0.1]]))
    mask = torch.ones(2, 2)
    high = confidence_clip_high(old, mask, 0.2, 0.5)
    assert high.flatten().tolist() == pytest.approx([0.2 * (1 - 0.5 * 0.9), 0.2 * (1 - 0.5 * 0.1)])
    assert confidence_clip_high(old, mask, 0.2, 0.0).flatten().tolist() == pytest.approx([0.2, 0.2])
    # the loss with a per-row range is the loss of each row with its own float range
    new = old + torch.tensor([[0.3, 0.3], [0.3, 0.3]])  # ratio e^0.3 = 1.35 on every token: both rows clip
    adv = torch.tensor([1.0, 1.0])
    together, _ = grpo_loss(new, old, adv, mask, clip_high=high, aggregation="sequence")
    rows = [grpo_loss(new[i:i + 1], old[i:i + 1], adv[i:i + 1], mask[i:i + 1], clip_high=float(high[i]))[0]
            for i in range(2)]
    assert float(together) == pytest.approx(float(sum(rows)) / 2)
    assert float(rows[0]) > float(rows[1])  # the sure row is clipped harder: a smaller (less negative) gain


def test_the_trainer_takes_the_shaping_and_the_clipping(tiny_model_dir, tiny_backend) -> None:
    groups = make_groups(tiny_backend, target_token=-1)
    for g in groups:
        g.trajectories[0].reward = 1.0
    calls: list[int] = []
    shaping = EchoShaping(alpha=0.5, gamma=0.5)

    def credit(gs, adv):  # type: ignore[no-untyped-def]
        calls.append(len(adv))
        return shaping(gs, adv)

    trainer = GRPOTrainer(fresh_model(tiny_model_dir), tiny_backend.tokenizer,
                          GRPOConfig(learning_rate=1e-3, confidence_clip=0.5), credit=credit)
    stats = trainer.step(groups)
    assert calls == [8] and math.isfinite(stats["loss"]) and stats["clip_fraction"] == 0.0
    with pytest.raises(ConfigError, match="confidence_clip"):
        GRPOConfig(confidence_clip=1.0)

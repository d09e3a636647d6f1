"""The train-inference mismatch per GRPO step, and its correction by truncated importance weights."""

from __future__ import annotations

import math

import pytest

from tests.conftest import require_module

require_module("torch")
require_module("transformers")
import torch  # noqa: E402

from rollgym.agents.backends.hf import TransformersBackend  # noqa: E402
from rollgym.core.errors import ConfigError  # noqa: E402
from rollgym.train.grpo import GRPOConfig, GRPOTrainer  # noqa: E402
from rollgym.train.loss import grpo_loss  # noqa: E402
from rollgym.train.mismatch import Mismatch  # noqa: E402
from tests.train.test_grpo import fresh_model, make_groups  # noqa: E402

MISMATCH_KEYS = ("mismatch_kl", "mismatch_max_ratio", "mismatch_min_ratio", "mismatch_abs_diff")


def _step_stats(tiny_model_dir, tokenizer, quantize, config=None):
    model = fresh_model(tiny_model_dir)
    backend = TransformersBackend(model, tokenizer, quantize=quantize)
    groups = make_groups(backend, target_token=-1, reward_fn=lambda ids: float(len(ids) % 2), max_tokens=8)
    trainer = GRPOTrainer(model, tokenizer, config or GRPOConfig(learning_rate=1e-3))
    return trainer.step(groups)


def test_int8_rollouts_show_a_mismatch_that_float_rollouts_do_not(tiny_model_dir, tiny_backend):
    int8 = _step_stats(tiny_model_dir, tiny_backend.tokenizer, "int8")
    full = _step_stats(tiny_model_dir, tiny_backend.tokenizer, None)
    assert all(int8[k] is not None and full[k] is not None for k in MISMATCH_KEYS)
    assert int8["mismatch_kl"] > 1e-8 and int8["mismatch_abs_diff"] > 1e-4
    assert int8["mismatch_max_ratio"] > 1.0 + 1e-4 and int8["mismatch_min_ratio"] < 1.0 - 1e-4
    assert full["mismatch_kl"] < 1e-10 and full["mismatch_abs_diff"] < 2e-5  # float rounding only
    assert abs(full["mismatch_max_ratio"] - 1.0) < 1e-4 and abs(full["mismatch_min_ratio"] - 1.0) < 1e-4
    assert int8["mismatch_abs_diff"] > 20 * full["mismatch_abs_diff"]


def test_the_mismatch_figures_on_a_hand_computed_example():
    m = Mismatch()
    train = torch.log(torch.tensor([[0.5, 0.2, 0.1, 0.9]]))
    behaviour = torch.log(torch.tensor([[0.5, 0.05, 0.4, 0.01]]))
    m.add(train, behaviour, torch.tensor([[1.0, 1.0, 1.0, 0.0]]))  # the last token is masked out
    ratios = [1.0, 4.0, 0.25]
    stats = m.stats()
    assert stats["mismatch_max_ratio"] == pytest.approx(4.0) and stats["mismatch_min_ratio"] == pytest.approx(0.25)
    assert stats["mismatch_kl"] == pytest.approx(sum(r - math.log(r) - 1 for r in ratios) / 3)
    assert stats["mismatch_abs_diff"] == pytest.approx(sum(abs(math.log(r)) for r in ratios) / 3)
    assert Mismatch().stats()["mismatch_kl"] is None


def test_truncated_importance_weights_change_the_loss_exactly_as_specified():
    # trainer / behaviour ratios 1, 4 and 1/4; the cap C = 2 truncates the 4
    new = torch.log(torch.tensor([[0.5, 0.2, 0.1]])).requires_grad_(True)
    old = torch.log(torch.tensor([[0.5, 0.05, 0.4]]))
    adv, mask = torch.tensor([1.5]), torch.ones(1, 3)
    loss, stats = grpo_loss(new, old, adv, mask, tis_cap=2.0)
    weights = [1.0, 2.0, 0.25]  # min(ratio, C), detached; the PPO ratio against the trainer's own logprobs is 1
    assert float(loss.detach()) == pytest.approx(-1.5 * sum(weights) / 3)
    loss.backward()
    # d loss / d logp_new_t = -w_t * A / tokens: no gradient through the weight, and the truncated one is C
    assert new.grad.tolist()[0] == pytest.approx([-w * 1.5 / 3 for w in weights])
    assert stats.tis_weight == pytest.approx(sum(weights) / 3) and stats.tis_truncated == pytest.approx(1 / 3)
    assert stats.clip_fraction == 0.0  # the mismatch no longer reaches the PPO clip


def test_without_the_cap_the_loss_is_the_plain_clipped_objective():
    new = torch.log(torch.tensor([[0.5, 0.2, 0.1]])).requires_grad_(True)
    old = torch.log(torch.tensor([[0.5, 0.05, 0.4]]))
    loss, stats = grpo_loss(new, old, torch.tensor([1.5]), torch.ones(1, 3))
    # ratios 1, 4, 1/4 clipped to [0.8, 1.2] for a positive advantage: min(r A, clip(r) A)
    assert float(loss.detach()) == pytest.approx(-1.5 * (1.0 + 1.2 + 0.25) / 3)
    assert stats.tis_weight == 0.0 and stats.clip_fraction == pytest.approx(1 / 3)


def test_the_trainer_applies_the_cap_and_reports_it(tiny_model_dir, tiny_backend):
    stats = _step_stats(tiny_model_dir, tiny_backend.tokenizer, "int8", GRPOConfig(learning_rate=1e-3, tis_cap=2.0))
    assert 0.0 < stats["tis_weight"] <= 2.0 and 0.0 <= stats["tis_truncated"] <= 1.0
    assert stats["mismatch_abs_diff"] > 1e-4
    plain = _step_stats(tiny_model_dir, tiny_backend.tokenizer, "int8")
    assert "tis_weight" not in plain


@pytest.mark.parametrize("cap", [0.0, -1.0])
def test_a_cap_that_is_not_positive_is_refused(cap):
    with pytest.raises(ConfigError, match=r"^tis_cap must be above 0"):
        GRPOConfig(tis_cap=cap)

"""``run_trl_grpo`` takes a ``TRLRunConfig`` (or its fields as keywords), checked before any model work."""

from __future__ import annotations

import dataclasses

import pytest

from rollgym.core.errors import ConfigError
from rollgym.train.adapters.trl import TRLRunConfig, run_trl_grpo
from rollgym.train.grpo import GRPOConfig

BASE = dict(steps=2, group_size=4, learning_rate=1e-3, max_tokens=8, temperature=1.0, seed=0)


def _never(_step: int) -> list:
    raise AssertionError("a bad setting must fail before any prompt is built")


def test_the_loss_defaults_are_grpoconfigs():
    config = TRLRunConfig(**BASE)
    for name in ("clip_low", "clip_high", "scale", "aggregation", "max_grad_norm", "weight_decay", "micro_batch_size"):
        assert getattr(config, name) == getattr(GRPOConfig(), name), name


@pytest.mark.parametrize(("settings", "sentence"), [
    ({"group_size": 1}, "group_size must be at least 2, got 1."),
    ({"temperature": 0.0}, "temperature must be above 0, got 0.0."),
    ({"steps": 0}, "steps must be at least 1, got 0."),
    ({"aggregation": "tokens"}, "aggregation must be one of 'token', 'sequence', got 'tokens'; did you mean 'token'?"),
    ({"clip_low": 1.0}, "clip_low must be in [0, 1), got 1.0."),
    ({"learning_rate": -1e-3}, "learning_rate must be above 0, got -0.001."),
])
def test_a_bad_setting_is_one_sentence_in_either_form(settings, sentence):
    with pytest.raises(ConfigError) as keywords:
        run_trl_grpo(None, None, step_prompts=_never, reward=lambda text, task: 0.0, **{**BASE, **settings})
    assert str(keywords.value) == sentence
    with pytest.raises(ConfigError) as config:
        run_trl_grpo(None, None, TRLRunConfig(**BASE), step_prompts=_never, reward=lambda t, k: 0.0, **settings)
    assert str(config.value) == sentence


def test_an_unknown_or_missing_setting_is_named():
    with pytest.raises(ConfigError, match="run_trl_grpo has no option 'group_sise'; did you mean 'group_size'"):
        run_trl_grpo(None, None, step_prompts=_never, reward=lambda t, k: 0.0, **BASE, group_sise=4)
    partial = {k: v for k, v in BASE.items() if k != "seed"}
    with pytest.raises(ConfigError, match=r"^run_trl_grpo needs seed\.$"):
        run_trl_grpo(None, None, step_prompts=_never, reward=lambda t, k: 0.0, **partial)
    with pytest.raises(ConfigError, match="takes a TRLRunConfig"):
        run_trl_grpo(None, None, GRPOConfig(), step_prompts=_never, reward=lambda t, k: 0.0)


def test_keywords_override_a_given_config():
    config = TRLRunConfig(**BASE)
    assert dataclasses.replace(config, seed=3).seed == 3
    with pytest.raises(ConfigError, match="seed must be an integer"):
        run_trl_grpo(None, None, config, step_prompts=_never, reward=lambda t, k: 0.0, seed="3")

"""A GRPO step with no learning signal: AdamW's momentum still moves the weights unless ``skip_idle_steps``.

The realmodel-qwen runs that collapsed kept training for five steps on groups whose rewards were all 0 (every
advantage 0); this shows that such steps are not no-ops by default, and that the option makes them so.
"""

from __future__ import annotations

from tests.conftest import require_module

require_module("torch")
import torch  # noqa: E402

from rollgym.train.grpo import GRPOConfig, GRPOTrainer  # noqa: E402
from tests.train.test_grpo import fresh_model, make_groups  # noqa: E402


def _weights(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters() if p.requires_grad]


def _moved(before: list[torch.Tensor], model) -> float:
    return max(float((a - b).abs().max()) for a, b in zip(before, _weights(model), strict=True))


def _signal_then_idle(tiny_model_dir, tiny_backend, skip: bool) -> tuple[float, dict]:
    trainer = GRPOTrainer(fresh_model(tiny_model_dir), tiny_backend.tokenizer,
                          GRPOConfig(learning_rate=1e-3, skip_idle_steps=skip))
    learn = make_groups(tiny_backend, target_token=-1)
    for t in learn[0].trajectories[:2]:
        t.reward = 1.0  # a signal: the first step moves the weights and fills AdamW's moments
    trainer.step(learn)
    idle = make_groups(tiny_backend, target_token=-1, seed=1)  # every reward 0: every advantage 0
    before = _weights(trainer.model)
    stats = trainer.step(idle)
    return _moved(before, trainer.model), stats


def test_an_idle_step_moves_the_weights_by_default(tiny_model_dir, tiny_backend):
    moved, stats = _signal_then_idle(tiny_model_dir, tiny_backend, skip=False)
    assert moved > 0 and "skipped" not in stats and stats["rows"] == 8


def test_skip_idle_steps_leaves_the_weights_alone(tiny_model_dir, tiny_backend):
    moved, stats = _signal_then_idle(tiny_model_dir, tiny_backend, skip=True)
    assert moved == 0.0 and stats["skipped"] == "no signal" and stats["tokens"] == 0
    assert stats["step"] == 1  # the step still counts


def test_a_step_with_signal_is_never_skipped(tiny_model_dir, tiny_backend):
    trainer = GRPOTrainer(fresh_model(tiny_model_dir), tiny_backend.tokenizer,
                          GRPOConfig(learning_rate=1e-3, skip_idle_steps=True))
    groups = make_groups(tiny_backend, target_token=-1)
    groups[1].trajectories[0].reward = 1.0
    before = _weights(trainer.model)
    stats = trainer.step(groups)
    assert "skipped" not in stats and _moved(before, trainer.model) > 0


def test_a_term_that_learns_without_advantages_keeps_the_step(tiny_model_dir, tiny_backend):
    import dataclasses

    from rollgym.train.grpo import rows_from_groups

    trainer = GRPOTrainer(fresh_model(tiny_model_dir), tiny_backend.tokenizer, GRPOConfig(skip_idle_steps=True))
    groups = make_groups(tiny_backend, target_token=-1)
    rows = rows_from_groups(groups, {t.traj_id: 0.0 for g in groups for t in g.trajectories})
    assert trainer.idle(rows)
    for change in ({"beta": 0.1}, {"distill_forward_kl": 0.5}, {"skip_idle_steps": False}):
        trainer.config = dataclasses.replace(trainer.config, skip_idle_steps=True, beta=0.0, distill_forward_kl=0.0)
        trainer.config = dataclasses.replace(trainer.config, **change)
        assert not trainer.idle(rows), change

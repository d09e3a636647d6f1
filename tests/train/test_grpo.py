"""The reference GRPO trainer on the tiny model: on-policy ratios, learning signal, exact resume."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import require_module

require_module("torch")
import torch  # noqa: E402

from rollgym.agents.backends.base import SamplingParams  # noqa: E402
from rollgym.rollout.types import RolloutGroup, Trajectory, Turn  # noqa: E402
from rollgym.train.grpo import GRPOConfig, GRPOTrainer, plot_log, read_log  # noqa: E402

PROMPT = [5, 17, 42, 99, 7]


def fresh_model(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir)


def make_groups(backend, target_token, n_groups=2, size=4, seed=0, reward_fn=None, max_tokens=6):
    """Sampled rollouts whose reward is 1 when the target token was sampled: a learnable signal."""
    groups = []
    for g in range(n_groups):
        sampling = SamplingParams(max_tokens=max_tokens, n=size, seed=seed * 100 + g)
        gens = asyncio.run(backend.generate([PROMPT], sampling))
        trajs = []
        for i, gen in enumerate(gens):
            reward = reward_fn(gen.token_ids) if reward_fn else float(target_token in gen.token_ids)
            trajs.append(Trajectory(
                f"g{g}-{i}", f"g{g}", i, "Toy-v0", "t", 0, prompt_ids=list(PROMPT),
                completion_ids=list(gen.token_ids), loss_mask=[1] * len(gen.token_ids),
                logprobs=list(gen.logprobs), reward=reward,
                turns=[Turn(list(PROMPT), list(gen.token_ids), list(gen.logprobs))]))
        groups.append(RolloutGroup(f"g{g}", None, size, trajs))
    return groups


def test_first_update_is_on_policy(tiny_model_dir, tiny_backend):
    trainer = GRPOTrainer(fresh_model(tiny_model_dir), tiny_backend.tokenizer, GRPOConfig(learning_rate=1e-3))
    groups = make_groups(tiny_backend, target_token=-1)  # reward 0 everywhere: no signal
    for t in groups[0].trajectories[:2]:
        t.reward = 1.0
    stats = trainer.step(groups)
    assert stats["rows"] == 8 and stats["tokens"] == sum(len(t.completion_ids) for g in groups for t in g.trajectories)
    assert stats["clip_fraction"] == 0.0  # behaviour logprobs equal the trainer's own at step 0


def low_id_mass(model, prompt):
    with torch.no_grad():
        probs = torch.softmax(model(input_ids=torch.tensor([prompt])).logits[0, -1].float(), dim=-1)
    return float(probs[:200].sum())


def test_rewarded_tokens_become_more_likely(tiny_model_dir, tiny_backend):
    from rollgym.agents.backends.hf import TransformersBackend

    model = fresh_model(tiny_model_dir)
    backend = TransformersBackend(model, tiny_backend.tokenizer)
    trainer = GRPOTrainer(model, tiny_backend.tokenizer, GRPOConfig(learning_rate=3e-2))
    before = low_id_mass(model, PROMPT)
    for step in range(6):  # reward: the first sampled token has an id below 200
        trainer.step(make_groups(backend, None, n_groups=4, seed=step, max_tokens=1,
                                 reward_fn=lambda ids: float(ids[0] < 200)))
    assert low_id_mass(model, PROMPT) > before + 0.05


def test_resume_from_checkpoint_is_identical(tiny_model_dir, tiny_backend, tmp_path):
    groups = [make_groups(tiny_backend, target_token=7, seed=s) for s in range(3)]
    for batch in groups:  # make sure there is signal in every batch
        batch[0].trajectories[0].reward = 1.0
    config = GRPOConfig(learning_rate=1e-3, micro_batch_size=3)

    straight = GRPOTrainer(fresh_model(tiny_model_dir), tiny_backend.tokenizer, config)
    for batch in groups:
        straight.step(batch)

    first = GRPOTrainer(fresh_model(tiny_model_dir), tiny_backend.tokenizer, config, log_path=tmp_path / "log.jsonl")
    first.step(groups[0])
    first.save_checkpoint(tmp_path / "ckpt.pt", extra={"next_batch": 1})
    resumed = GRPOTrainer(fresh_model(tiny_model_dir), tiny_backend.tokenizer, config, log_path=tmp_path / "log.jsonl")
    assert resumed.load_checkpoint(tmp_path / "ckpt.pt") == {"next_batch": 1}
    for batch in groups[1:]:
        resumed.step(batch)
    assert resumed.global_step == straight.global_step == 3
    for (name, a), b in zip(straight.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(a, b), name
    records = read_log(tmp_path / "log.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2]
    png = plot_log(records, tmp_path / "curve.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_micro_batches_accumulate_to_the_full_batch_gradient(tiny_model_dir, tiny_backend):
    groups = make_groups(tiny_backend, target_token=7)
    groups[0].trajectories[0].reward = 1.0
    grads = []
    for size in (16, 3):
        model = fresh_model(tiny_model_dir)
        trainer = GRPOTrainer(model, tiny_backend.tokenizer, GRPOConfig(micro_batch_size=size, max_grad_norm=0))
        trainer.optimizer.step = lambda: None  # keep the weights; compare gradients only
        trainer.step(groups)
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


def test_kl_needs_a_reference_model(tiny_model_dir, tiny_backend):
    from rollgym.core import ConfigError

    with pytest.raises(ConfigError, match="ref_model"):
        GRPOTrainer(fresh_model(tiny_model_dir), tiny_backend.tokenizer, GRPOConfig(beta=0.1))
    trainer = GRPOTrainer(fresh_model(tiny_model_dir), tiny_backend.tokenizer, GRPOConfig(beta=0.1),
                          ref_model=fresh_model(tiny_model_dir))
    groups = make_groups(tiny_backend, target_token=7)
    groups[0].trajectories[0].reward = 1.0
    stats = trainer.step(groups)
    assert stats["kl"] == pytest.approx(0.0, abs=1e-6)  # same weights as the reference at step 0

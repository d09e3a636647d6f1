"""Two GRPO steps on Countdown with rollgym's trainer and with TRL's (``run_trl_grpo``), on the same prompts.

Each run takes exactly two optimiser updates from ``step_prompts``, with ``reward(text, task)`` and an
``evaluate(step)`` hook, as the real-model experiment drives both trainers. The tiny random model always
runs; SmolLM2-135M-Instruct runs when ``ROLLGYM_REAL_MODEL`` is set (it is pulled) or the cache holds
it, and skips otherwise with the reason. Part of each model is frozen: it must not move, the rest must.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path

import pytest

from tests.conftest import require_module

require_module("torch")
require_module("trl")
import torch  # noqa: E402

from rollgym.core.registration import make  # noqa: E402
from rollgym.core.task import Task  # noqa: E402
from rollgym.train.adapters.trl import run_trl_grpo  # noqa: E402
from rollgym.train.grpo import GRPOConfig, GRPOTrainer  # noqa: E402
from tests.train.small_envs import COUNTDOWN  # noqa: E402

REAL = "smollm2-135m-instruct"
STEPS, PROMPTS, GROUP, MAX_TOKENS = 2, 2, 2, 12


@pytest.fixture(params=["tiny", "real"])
def model_dir(request: pytest.FixtureRequest, tiny_model_dir: Path) -> Path:
    """The tiny random model, or the real one when it is cached or ROLLGYM_REAL_MODEL asks for it."""
    if request.param == "tiny":
        return tiny_model_dir
    from rollgym.agents.backends import catalog

    if catalog.is_pulled(catalog.model_dir(REAL), catalog.KNOWN_MODELS[REAL]):
        return catalog.model_dir(REAL)
    if not os.environ.get("ROLLGYM_REAL_MODEL"):
        pytest.skip(f"{REAL} is not cached and ROLLGYM_REAL_MODEL is unset (rollgym models pull {REAL})")
    require_module("gguf")
    return catalog.pull_model(REAL)


def load(folder: Path) -> tuple[torch.nn.Module, object, list[str]]:
    """The model with its first decoder layer frozen, its tokenizer, and the names of the frozen parameters.

    The real model also freezes all but its last two layers (its embeddings are tied to the output layer, so
    they are frozen too): two steps of AdamW over 135M parameters would cost minutes for nothing more.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    layers = model.model.layers
    frozen_modules = [layers[0]] if len(layers) <= 2 else [model.model.embed_tokens, *layers[:-2]]
    for module in frozen_modules:
        module.requires_grad_(False)
    frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
    assert frozen and len(frozen) < len(list(model.parameters()))
    return model, tokenizer, frozen


def step_prompts(step: int) -> list[tuple[list[dict[str, str]], Task]]:
    """Step ``step``'s Countdown prompts (system message included) and their tasks, as the experiment gives them."""
    env = make("Countdown-v0", split="train", **COUNTDOWN)
    try:
        out = []
        for index in range(step * PROMPTS, (step + 1) * PROMPTS):
            observation, info = env.reset(options={"task_index": index})
            messages = [{"role": "system", "content": str(info["system_prompt"])},
                        {"role": "user", "content": str(observation)}]
            out.append((messages, env.unwrapped.task))
        return out
    finally:
        env.close()


class Spy:
    """``reward(text, task)``: Countdown's verifier plus a length bonus (a random model scores 0, and the
    gradient must not vanish), recording every call."""

    def __init__(self) -> None:
        env = make("Countdown-v0", **COUNTDOWN)
        self.verify = env.unwrapped.verify
        env.close()
        self.calls: list[tuple[str, Task]] = []

    def __call__(self, text: str, task: Task) -> float:
        self.calls.append((text, task))
        return float(self.verify(task, text).reward) + len(text) / 50


class Evaluations:
    """``evaluate(step)``: records when it is called and a fingerprint of the trainable weights it sees."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.seen: list[tuple[int, float]] = []

    def __call__(self, step: int) -> float:
        fingerprint = float(sum(p.detach().double().sum() for p in self.model.parameters() if p.requires_grad))
        self.seen.append((step, fingerprint))
        return fingerprint


def snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def check_training(model: torch.nn.Module, before: dict[str, torch.Tensor], frozen: list[str],
                   evaluations: Evaluations, curve: list[tuple[int, float]]) -> None:
    """Frozen weights unchanged, every trainable tensor moved, evaluate called at 0, 1, 2 on moving weights."""
    after = dict(model.named_parameters())
    assert all(torch.equal(before[n], after[n]) for n in frozen), "a frozen parameter changed"
    unchanged = [n for n in before if n not in frozen and torch.equal(before[n], after[n].detach())]
    assert not unchanged, f"training left trainable parameters unchanged: {unchanged}"
    assert [s for s, _ in evaluations.seen] == [0, 1, 2]
    assert curve == evaluations.seen
    fingerprints = [f for _, f in evaluations.seen]
    assert fingerprints[0] != fingerprints[1] != fingerprints[2], "evaluate must see the weights of its step"


def expected_tasks() -> list[str]:
    """Task ids the reward must see, in order: each prompt of each step, ``GROUP`` times."""
    return [task.id for step in range(STEPS) for _, task in step_prompts(step) for _ in range(GROUP)]


def test_rollgym_grpo_two_steps(model_dir: Path) -> None:
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.hf import TransformersBackend, render_chat_ids
    from rollgym.rollout.types import RolloutGroup, Trajectory, Turn

    model, tokenizer, frozen = load(model_dir)
    backend = TransformersBackend(model, tokenizer)  # shares the weights the trainer updates
    trainer = GRPOTrainer(model, tokenizer, GRPOConfig(learning_rate=1e-3, seed=0))
    reward, evaluations = Spy(), Evaluations(model)
    before = snapshot(model)
    curve = [(0, evaluations(0))]
    completions: list[list[int]] = []
    means = []
    for step in range(STEPS):
        groups = []
        for p, (messages, task) in enumerate(step_prompts(step)):
            prompt = render_chat_ids(tokenizer, messages)
            sampling = SamplingParams(max_tokens=MAX_TOKENS, temperature=1.0, n=GROUP, seed=100 * step + p)
            trajs = []
            for i, gen in enumerate(asyncio.run(backend.generate([prompt], sampling))):
                completions.append(list(gen.token_ids))
                trajs.append(Trajectory(f"s{step}p{p}-{i}", f"s{step}p{p}", i, "Countdown-v0", task.id, 0,
                                        prompt_ids=prompt, completion_ids=list(gen.token_ids),
                                        loss_mask=[1] * len(gen.token_ids), logprobs=list(gen.logprobs),
                                        reward=reward(gen.text, task),
                                        turns=[Turn(prompt, list(gen.token_ids), list(gen.logprobs))]))
            groups.append(RolloutGroup(f"s{step}p{p}", task.id, GROUP, trajs))
        stats = trainer.step(groups)
        assert stats["rows"] == PROMPTS * GROUP and stats["tokens"] > 0
        means.append(stats["reward_mean"])
        curve.append((step + 1, evaluations(step + 1)))
    assert trainer.global_step == STEPS
    check_training(model, before, frozen, evaluations, curve)
    # the reward scored the text of exactly the tokens the trainer trained on
    assert [text for text, _ in reward.calls] == [tokenizer.decode(ids, skip_special_tokens=True)
                                                  for ids in completions]
    assert [task.id for _, task in reward.calls] == expected_tasks()
    values = [reward.verify(t, x).reward + len(x) / 50 for x, t in reward.calls]
    half = PROMPTS * GROUP
    assert means == pytest.approx([sum(values[:half]) / half, sum(values[half:]) / half])


def test_trl_grpo_two_steps(model_dir: Path, tmp_path: Path) -> None:
    model, tokenizer, frozen = load(model_dir)
    reward, evaluations = Spy(), Evaluations(model)
    generated: list[torch.Tensor] = []
    original = model.generate

    def recording_generate(*args, **kwargs):  # what TRL's sampling really produced
        out = original(*args, **kwargs)
        prompt_length = kwargs["input_ids"].shape[1]
        generated.extend(out[:, prompt_length:].cpu())
        return out

    model.generate = recording_generate
    before = snapshot(model)
    result = run_trl_grpo(model, tokenizer, step_prompts=step_prompts, reward=reward, steps=STEPS,
                          group_size=GROUP, learning_rate=1e-3, max_tokens=MAX_TOKENS, temperature=1.0, seed=0,
                          evaluate=evaluations, eval_every=1, log_path=tmp_path / "trl.jsonl",
                          micro_batch_size=2)
    assert result["steps"] == STEPS and result["seconds"] > 0
    check_training(model, before, frozen, evaluations, result["curve"])
    # the reward scored the decoded text of every sampled completion (up to its first EOS), in order
    eos = {int(tokenizer.eos_token_id)}
    texts = []
    for ids in generated:
        ids = ids.tolist()
        cut = next((i + 1 for i, t in enumerate(ids) if t in eos), len(ids))
        texts.append(tokenizer.decode(ids[:cut], skip_special_tokens=True))
    assert len(generated) == STEPS * PROMPTS * GROUP
    assert [text for text, _ in reward.calls] == texts
    assert [task.id for _, task in reward.calls] == expected_tasks()
    values = [reward.verify(t, x).reward + len(x) / 50 for x, t in reward.calls]
    half = PROMPTS * GROUP
    assert result["reward_mean"] == pytest.approx([sum(values[:half]) / half, sum(values[half:]) / half])
    logged = [line for line in (tmp_path / "trl.jsonl").read_text().splitlines() if '"loss"' in line]
    assert len(logged) == STEPS
    assert not model.training


def test_trl_defaults_are_rollgyms() -> None:
    """run_trl_grpo's clipping, scaling, aggregation, clipping norm, decay and micro-batch follow GRPOConfig."""
    from rollgym.train.adapters.trl import TRLRunConfig

    defaults = {f.name: f.default for f in dataclasses.fields(TRLRunConfig)}
    config = GRPOConfig()
    for field in ("clip_low", "clip_high", "scale", "aggregation", "max_grad_norm", "weight_decay",
                  "micro_batch_size"):
        assert defaults[field] == getattr(config, field), field
    assert {f.name for f in dataclasses.fields(config)} >= set(defaults) - {
        "steps", "group_size", "max_tokens", "temperature", "eval_every"}


def test_trl_rejects_bad_settings_in_one_sentence(tiny_model_dir: Path) -> None:
    from rollgym.core.errors import ConfigError

    model, tokenizer, _ = load(tiny_model_dir)
    common = dict(reward=lambda text, task: 0.0, steps=2, learning_rate=1e-3, max_tokens=4, seed=0)
    with pytest.raises(ConfigError, match="group_size must be at least 2"):
        run_trl_grpo(model, tokenizer, step_prompts=step_prompts, group_size=1, temperature=1.0, **common)
    with pytest.raises(ConfigError, match="temperature must be above 0"):
        run_trl_grpo(model, tokenizer, step_prompts=step_prompts, group_size=2, temperature=0.0, **common)
    with pytest.raises(ConfigError, match="same number"):
        run_trl_grpo(model, tokenizer, step_prompts=lambda k: step_prompts(k)[: k + 1], group_size=2,
                     temperature=1.0, **common)

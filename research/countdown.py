"""The shared setting of the Countdown experiments: the CPU demonstration's tiny model, warmed up, and a GRPO loop.

``prepare`` builds the tiny Llama-architecture model and its byte-level BPE
tokenizer (trained on the env's own prompts; :func:`rollgym.train.demo.build_demo_model`),
warms it up with a short supervised fine-tuning on oracle answers and keeps the
warm weights, so every arm of every seed starts from the same model. Seed ``s``
draws the same training tasks and sampling seeds in every arm, and the held-out
accuracy is greedy decoding on the same ``test`` tasks, as the papers' deterministic
single-completion accuracy.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from research.runner import Prepared
from rollgym.rollout.types import RolloutGroup

BASE: dict[str, Any] = {
    "env_id": "Countdown-v0",
    "env_kwargs": {"num_numbers": 3, "operators": "+-", "min_value": 1, "max_value": 9, "min_target": 10,
                   "max_target": 20},
    "vocab_size": 1024, "hidden_size": 64, "layers": 2, "sft_batch": 32, "sft_lr": 3e-3,
    "max_tokens": 16, "temperature": 0.7, "learning_rate": 5e-4,
}
# The quick (smoke-test) runs: a smaller model, two warm-up steps, four held-out tasks ...
QUICK: dict[str, Any] = {**BASE, "vocab_size": 400, "hidden_size": 32, "sft_steps": 2, "sft_batch": 4, "eval_tasks": 4}
# ... and, for the GRPO arms, steps of two tasks x two rollouts, evaluated after each step.
QUICK_GRPO: dict[str, Any] = {**QUICK, "tasks_per_step": 2, "group_size": 2, "eval_every": 1}


@dataclass
class TinyCountdown(Prepared):
    """A warmed-up tiny model (``start``: the warm weights) and its held-out accuracy."""

    accuracy_warm: float


def demo_config(config: dict[str, Any]) -> Any:
    """The :class:`rollgym.train.demo.DemoConfig` of these settings (for its model builder)."""
    from rollgym.train.demo import DemoConfig

    return replace(DemoConfig(), env_id=config["env_id"], env_kwargs=dict(config["env_kwargs"]),
                   vocab_size=config["vocab_size"], hidden_size=config["hidden_size"], layers=config["layers"])


def prepare(config: dict[str, Any], workdir: Path) -> TinyCountdown:
    """Build the tiny model, warm it up on oracle answers, and keep the warm weights."""
    import torch

    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.train.demo import build_demo_model
    from rollgym.train.sft import oracle_demonstrations, sft_train

    torch.manual_seed(0)
    model, tokenizer = build_demo_model(workdir / "model", demo_config(config))
    demos = oracle_demonstrations(config["env_id"], tokenizer, range(max(256, config["sft_batch"])),
                                  env_kwargs=config["env_kwargs"], system_prompt="")
    sft_train(model, demos, steps=config["sft_steps"], batch_size=config["sft_batch"], learning_rate=config["sft_lr"],
              pad_id=int(tokenizer.pad_token_id), seed=0)
    ctx = TinyCountdown(model, tokenizer, copy.deepcopy(model.state_dict()), config, 0.0)
    ctx.accuracy_warm = accuracy(TransformersBackend(model, tokenizer, max_batch=512), config)
    return ctx


def accuracy(backend: Any, config: dict[str, Any]) -> float:
    """Greedy held-out accuracy on the first ``eval_tasks`` test tasks."""
    from rollgym.train.sft import greedy_accuracy

    return greedy_accuracy(backend, config["env_id"], range(config["eval_tasks"]), env_kwargs=config["env_kwargs"],
                           max_tokens=config["max_tokens"], system_prompt="")


def train_tasks(config: dict[str, Any], step: int, seed: int, n: int | None = None) -> list[Any]:
    """Training tasks of one step: the same in every arm for a given seed."""
    import numpy as np

    from rollgym.core.registration import make

    rng = np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(7, step)))
    env = make(config["env_id"], split="train", **config["env_kwargs"])
    try:
        tasks = []
        for index in rng.integers(1_000, 10_000_000, size=n or config["tasks_per_step"]):
            env.reset(options={"task_index": int(index)})
            tasks.append(env.unwrapped.task)  # type: ignore[attr-defined]
        return tasks
    finally:
        env.close()


def sample_groups(backend: Any, config: dict[str, Any], tasks: Sequence[Any], seed: int, tag: str
                  ) -> list[RolloutGroup]:
    """``group_size`` sampled rollouts of each task, played through rollgym's episode runner."""
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent
    from rollgym.train.adapters.episodes import play_groups

    sampling_seed = seed * 1_000_003 + _tag(tag)
    agent = ChatAgent(backend, SamplingParams(max_tokens=config["max_tokens"], temperature=config["temperature"],
                                              seed=sampling_seed), system_prompt="")
    return play_groups(agent, config["env_id"], list(tasks), config["group_size"], env_kwargs=config["env_kwargs"],
                       max_turns=1, seed=sampling_seed, prefix=f"{tag}-g")


def _tag(tag: str) -> int:
    """A stable small integer of a text tag (Python's ``hash`` of a str changes between processes)."""
    import zlib

    return zlib.crc32(tag.encode()) % 1_000_003


def fresh(ctx: TinyCountdown) -> Any:
    """The model reset to the warm weights, and a backend over it."""
    from rollgym.agents.backends.hf import TransformersBackend

    ctx.model.load_state_dict(ctx.start)
    return TransformersBackend(ctx.model, ctx.tokenizer, max_batch=512, batch_window_s=0.02)


def policy_cost(groups: Sequence[RolloutGroup]) -> tuple[int, int]:
    """Policy rollouts and policy-sampled tokens in ``groups``."""
    rollouts = [t for g in groups for t in g.trajectories if t.source == "policy"]
    return len(rollouts), sum(sum(t.loss_mask) for t in rollouts)


def grpo_run(ctx: TinyCountdown, seed: int, config: dict[str, Any],
             batch: Callable[[Any, int], tuple[list[RolloutGroup], dict[str, float]]], *,
             by_source: bool = False, steps: int | None = None,
             stop: Callable[[dict[str, float]], bool] | None = None,
             x_key: str = "grpo_steps") -> tuple[list[tuple[float, float]], dict[str, float]]:
    """A GRPO run from the warm weights: ``batch(backend, step)`` gives each step's groups and their cost.

    Returns the held-out accuracy curve ``[(x, accuracy)]`` (``x``: the summed cost ``x_key``, GRPO steps by
    default) and the summed cost. The run ends after ``steps`` (default ``config["grpo_steps"]``) or when
    ``stop(cost)`` says so.
    """
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer

    backend = fresh(ctx)
    trainer = GRPOTrainer(ctx.model, ctx.tokenizer, GRPOConfig(learning_rate=config["learning_rate"],
                                                               by_source=by_source, micro_batch_size=64, seed=seed))
    curve = [(0.0, ctx.accuracy_warm)]
    total: dict[str, float] = {"grpo_steps": 0.0}
    n_steps = steps if steps is not None else config["grpo_steps"]
    step = 0
    while step < n_steps and not (stop is not None and stop(total)):
        groups, cost = batch(backend, step)
        for key, value in cost.items():
            total[key] = total.get(key, 0.0) + float(value)
        stats = trainer.step(groups)
        total["rows_trained"] = total.get("rows_trained", 0.0) + stats["rows"]
        total["grpo_steps"] += 1
        step += 1
        if step % config["eval_every"] == 0:
            curve.append((total.get(x_key, 0.0), accuracy(backend, config)))
    if curve[-1][0] != total.get(x_key, 0.0) or len(curve) == 1:
        curve.append((total.get(x_key, 0.0), accuracy(backend, config)))
    return curve, total

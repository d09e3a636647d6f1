"""Supervised warm-up on oracle demonstrations, oracle rollouts in tokens, and greedy evaluation.

Used by the CPU demonstration (:mod:`rollgym.train.demo`): a tiny random model
first learns the answer format from :class:`~rollgym.agents.base.OracleAgent`
answers, then GRPO improves it. The same tokenized oracle answers serve as
*external* rollouts (``source="external:oracle"``) in the external-rollout study;
their behaviour logprobs come from a forward pass of the current policy.

Prompts are rendered exactly as :class:`~rollgym.agents.chat.ChatAgent` renders
them (system prompt, tools, first observation, generation prompt), and an
answer's tokens are its text followed by the end-of-turn token, which is what
the policy would sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rollgym.agents.backends.hf import render_chat_text
from rollgym.core.registration import make
from rollgym.core.task import Task
from rollgym.rollout.types import Trajectory, Turn
from rollgym.train.sequences import right_padded


@dataclass
class Demonstration:
    """One single-turn oracle answer in tokens."""

    task: Task
    prompt_ids: list[int]
    completion_ids: list[int]
    text: str
    reward: float
    correct: bool = False


def prompt_ids_of(tokenizer: Any, observation: str, info: dict[str, Any], system_prompt: str | None = None
                  ) -> list[int]:
    """The first prompt's ids, rendered as :class:`ChatAgent` renders it (``system_prompt`` overrides the env's)."""
    messages: list[dict[str, Any]] = []
    system = system_prompt if system_prompt is not None else info.get("system_prompt")
    if system:
        messages.append({"role": "system", "content": str(system)})
    messages.append({"role": "user", "content": observation})
    text = render_chat_text(tokenizer, messages, info.get("tools") or None)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def answer_ids_of(tokenizer: Any, text: str) -> list[int]:
    """The tokens of an assistant answer as the policy would emit it: the text, then end-of-turn."""
    return [*list(tokenizer(text, add_special_tokens=False)["input_ids"]), int(tokenizer.eos_token_id)]


def oracle_demonstrations(
    env_id: str, tokenizer: Any, indices: Sequence[int], *, split: str = "train",
    env_kwargs: dict[str, Any] | None = None, system_prompt: str | None = None,
) -> list[Demonstration]:
    """The oracle's answer to tasks ``indices`` of ``split`` of a single-turn env, in tokens, with its reward."""
    env = make(env_id, split=split, **(env_kwargs or {}))
    try:
        return [_demonstrate(env, {"task_index": int(i)}, tokenizer, system_prompt) for i in indices]
    finally:
        env.close()


def demonstration_for(env_id: str, task: Task, tokenizer: Any, *, env_kwargs: dict[str, Any] | None = None,
                      system_prompt: str | None = None) -> Demonstration:
    """The oracle's answer to ``task`` in tokens, with its reward."""
    env = make(env_id, **(env_kwargs or {}))
    try:
        return _demonstrate(env, {"task": task}, tokenizer, system_prompt)
    finally:
        env.close()


def _demonstrate(env: Any, options: dict[str, Any], tokenizer: Any, system_prompt: str | None) -> Demonstration:
    from rollgym.agents.base import OracleAgent

    observation, info = env.reset(options=options)
    text = OracleAgent().act(observation, info)
    _, reward, _, _, final = env.step(text)
    task = env.unwrapped.task
    return Demonstration(task, prompt_ids_of(tokenizer, observation, info, system_prompt),
                         answer_ids_of(tokenizer, text), text, float(reward), bool(final.get("correct", False)))


def padded_batch(demos: Sequence[Demonstration], rng: Any, batch_size: int, pad_id: int
                 ) -> tuple[list[Demonstration], Any, Any]:
    """A random batch of demonstrations (no repeats) and its right-padded prompt + answer ids and attention mask."""
    batch = [demos[int(i)] for i in rng.choice(len(demos), size=min(batch_size, len(demos)), replace=False)]
    ids, attention = right_padded([d.prompt_ids + d.completion_ids for d in batch], pad_id)
    return batch, ids, attention


def sft_train(model: Any, demos: Sequence[Demonstration], *, steps: int, batch_size: int = 16,
              learning_rate: float = 3e-3, pad_id: int = 0, seed: int = 0) -> list[float]:
    """Fine-tune ``model`` on the demonstrations' answer tokens (prompt tokens get no loss); returns the losses."""
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    model.train()
    losses = []
    for _ in range(steps):
        batch, ids, attention = padded_batch(demos, rng, batch_size, pad_id)
        labels = torch.full(ids.shape, -100, dtype=torch.long)
        for row, d in enumerate(batch):
            labels[row, len(d.prompt_ids) : len(d.prompt_ids) + len(d.completion_ids)] = torch.tensor(d.completion_ids)
        loss = model(input_ids=ids, attention_mask=attention, labels=labels).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def external_trajectory(demo: Demonstration, backend: Any, *, group_id: str = "", name: str = "oracle") -> Trajectory:
    """An oracle answer as an ``external:<name>`` rollout: its tokens, mask 1, and the current policy's logprobs.

    The logprobs come from one forward pass of ``backend``'s model (its current weights), so the first
    GRPO update sees a ratio of 1 on these tokens, as on the policy's own samples.
    """
    logprobs = backend.logprobs_of(demo.prompt_ids, demo.completion_ids)
    n = len(demo.completion_ids)
    return Trajectory(
        traj_id=f"{demo.task.id}-{name}", group_id=group_id, sample_idx=0, env_id=demo.task.env_id,
        task_id=demo.task.id, seed=None, source=f"external:{name}", prompt_ids=list(demo.prompt_ids),
        completion_ids=list(demo.completion_ids), loss_mask=[1] * n, logprobs=logprobs, reward=demo.reward,
        step_rewards=[demo.reward], turns=[Turn(list(demo.prompt_ids), list(demo.completion_ids), logprobs)],
        messages=[{"role": "assistant", "content": demo.text}], info={"correct": demo.correct},
    )


def greedy_accuracy(backend: Any, env_id: str, indices: Sequence[int], *, split: str = "test",
                    env_kwargs: dict[str, Any] | None = None, max_tokens: int = 32,
                    system_prompt: str | None = None) -> float:
    """Fraction of tasks ``indices`` of ``split`` that greedy decoding solves (single-turn envs), in one batch."""
    import asyncio

    from rollgym.agents.backends.base import SamplingParams

    env = make(env_id, split=split, **(env_kwargs or {}))
    try:
        prompts, tasks = [], []
        for index in indices:
            observation, info = env.reset(options={"task_index": int(index)})
            prompts.append(prompt_ids_of(backend.tokenizer, observation, info, system_prompt))
            tasks.append(env.unwrapped.task)  # type: ignore[attr-defined]
        gens = asyncio.run(backend.generate(prompts, SamplingParams(max_tokens=max_tokens, temperature=0.0)))
        solved = 0
        for task, gen in zip(tasks, gens):
            env.reset(options={"task": task})
            solved += float(env.step(gen.text)[1]) > 0
    finally:
        env.close()
    return solved / max(len(tasks), 1)

"""Generalization: a tiny model trained on ToolGen's train apps, scored on train, test and test_unseen side by side.

The ``generalization`` suite's tiny-model row. The setting is ``ToolGen-v0`` with options that fit a small
context (:data:`ENV_KWARGS`): the two single-call creation kinds (``create_party``, ``create_item``), no
distractor app, and compact tool schemas, so that a first prompt (the app's tool schemas and the request)
fits a 1,024-token context (the committed run's longest: 389 tokens on train and test, 784 on test_unseen).
A task is solved in one action: the create call with the request's values, then ``complete_task``; the model
gets that one action.

A tiny Llama-architecture model (built from a config; its byte-level BPE tokenizer is trained on the
rendered prompts and answers of the warm-up tasks, all of the ``train`` split) is warmed up once, on the
oracle's one-action answers to the first ``sft_tasks`` train tasks (the oracle's calls joined into one
action, each checked to score 1.0 in one step). Every seed starts from these warm weights. Arms:

- ``warm-up``: the warmed-up model;
- ``GRPO``: the same weights after ``grpo_steps`` GRPO steps (:mod:`rollgym.train.grpo`) on fresh train tasks.

Seed ``s`` scores both arms by greedy decoding on tasks ``s * n .. s * n + n - 1`` (``n = eval_tasks``) of
each split: ``train`` (among the warm-up tasks: seen), ``test`` (new tasks on the 208 seen apps) and
``test_unseen`` (the 48 apps of six held-out domains; no schema of theirs is in train, nor in the tokenizer's
corpus). The oracle and the random policy play the same tasks (the random policy with the suite's 40-step
budget). The side-by-side table pools every seed's distinct tasks into each cell, with its 95% Wilson
interval.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from research.runner import ArmResult, Experiment, markdown_table

ENV = "ToolGen-v0"
ENV_KWARGS: dict[str, Any] = {"kinds": ["create_party", "create_item"], "distractors": 0,
                              "tool_schemas": "compact"}
"""The ToolGen options of the small-context setting (the suite's ``toolgen-small-*`` entries use the same)."""
SPLITS = ("train", "test", "test_unseen")
ARMS = ("warm-up", "GRPO")


def _render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """A chat rendered with the tiny model's template, without a tokenizer (for the tokenizer's own corpus)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from rollgym.agents.backends.tiny import CHAT_TEMPLATE

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda value: json.dumps(value, ensure_ascii=False)
    return env.from_string(CHAT_TEMPLATE).render(messages=messages, tools=tools, add_generation_prompt=True)


def one_action_answer(env: Any, index: int) -> tuple[str, dict[str, Any], str, Any]:
    """The oracle's calls for task ``index`` joined into one action, checked to score 1.0 in one step.

    Returns the first observation, its info, the action and the task.
    """
    from rollgym.envs.tools.generated.policies import oracle_policy

    observation, info = env.reset(options={"task_index": int(index)})
    task = env.unwrapped.task
    first, first_info = observation, info
    actions: list[str] = []
    for _ in range(10):
        action = oracle_policy(observation, info)
        actions.append(action)
        observation, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    text = "".join(actions)
    env.reset(options={"task": task})
    reward = env.step(text)[1]
    if reward != 1.0:
        raise RuntimeError(f"The joined oracle answer to {task.id} scored {reward}, not 1.0: {text!r}")
    return first, first_info, text, task


def demonstrations(config: dict[str, Any]) -> tuple[list[tuple[str, dict[str, Any], str, Any]], list[str]]:
    """The warm-up answers (first observation, info, action, task) and the tokenizer's corpus, all train."""
    from rollgym.core.registration import make

    env = make(ENV, split="train", **config["env_kwargs"])
    try:
        answers = [one_action_answer(env, i) for i in range(config["sft_tasks"])]
    finally:
        env.close()
    corpus = [_render([{"role": "user", "content": obs}], info["tools"]) + text + "<|im_end|>"
              for obs, info, text, _ in answers]
    return answers, corpus


def prepare(config: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """The warm-up (once, shared by every seed) and the tokenizer; each seed's baselines are added by :func:`run`."""
    answers, corpus = demonstrations(config)
    ctx: dict[str, Any] = {"answers": answers, "corpus": corpus, "workdir": workdir, "baselines": {}}
    ctx["model"], ctx["tokenizer"], ctx["warm"], ctx["warm_info"] = warm_up(answers, corpus, config, workdir)
    return ctx


def eval_indices(config: dict[str, Any], seed: int) -> range:
    """The task indices seed ``seed`` is scored on, in every split: ``seed * n .. seed * n + n - 1``."""
    n = config["eval_tasks"]
    return range(seed * n, seed * n + n)


def baselines(config: dict[str, Any], seed: int) -> dict[str, dict[str, int]]:
    """Successes of the oracle and of the random policy (40 steps, as in the suite) on seed ``seed``'s tasks."""
    import numpy as np

    from rollgym.core.registration import make
    from rollgym.envs.tools.generated.policies import oracle_policy
    from rollgym.envs.tools.policies import random_policy

    out: dict[str, dict[str, int]] = {"oracle": {}, "random": {}}
    for split in SPLITS:
        env = make(ENV, split=split, **config["env_kwargs"])
        rng = np.random.default_rng(seed)
        for name in ("oracle", "random"):
            solved = 0
            for index in eval_indices(config, seed):
                observation, info = env.reset(options={"task_index": index})
                for _ in range(40):
                    action = oracle_policy(observation, info) if name == "oracle" else random_policy(
                        observation, info, rng)
                    observation, reward, terminated, truncated, info = env.step(action)
                    if terminated or truncated:
                        break
                solved += int(float(reward) > 0)
            out[name][split] = solved
        env.close()
    return out


def sft_answers(model: Any, demos: Sequence[Any], *, steps: int, batch_size: int, learning_rate: float,
                pad_id: int, seed: int) -> list[float]:
    """Supervised fine-tuning on the answers' tokens, as :func:`rollgym.train.sft.sft_train`, with the output
    layer applied to the answer positions only (the prompts are 5-10x longer than the answers here, and the
    output layer over the vocabulary is most of a forward pass) and the learning rate decayed linearly to a
    tenth. Returns the losses."""
    import numpy as np
    import torch

    from rollgym.train.sft import padded_batch

    rng = np.random.default_rng(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 1.0 - 0.9 * k / max(1, steps))
    model.train()
    losses = []
    for _ in range(steps):
        batch, ids, attention = padded_batch(demos, rng, batch_size, pad_id)
        rows, cols, targets = [], [], []
        for row, d in enumerate(batch):
            for k, token in enumerate(d.completion_ids):  # position p predicts token p + 1
                rows.append(row)
                cols.append(len(d.prompt_ids) + k - 1)
                targets.append(token)
        hidden = model.model(input_ids=ids, attention_mask=attention).last_hidden_state
        logits = model.lm_head(hidden[torch.tensor(rows), torch.tensor(cols)]).float()
        loss = torch.nn.functional.cross_entropy(logits, torch.tensor(targets))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def warm_up(answers: Sequence[tuple[str, dict[str, Any], str, Any]], corpus: Sequence[str], config: dict[str, Any],
            workdir: Path) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    """Build the tiny model (seed 0) and its tokenizer, and fine-tune it on the one-action answers.

    Returns the model, the tokenizer, the warm weights and what the warm-up measured.
    """
    import torch

    from rollgym.train.demo import DemoConfig, build_demo_model
    from rollgym.train.sft import Demonstration, answer_ids_of, prompt_ids_of

    demo = DemoConfig(env_id=ENV, vocab_size=config["vocab_size"], hidden_size=config["hidden_size"],
                      layers=config["layers"], seed=0)
    model, tokenizer = build_demo_model(workdir / "model", demo, texts=list(corpus), text_tool_tags=True)
    demos = [Demonstration(task, prompt_ids_of(tokenizer, obs, info, ""), answer_ids_of(tokenizer, text), text, 1.0,
                           True) for obs, info, text, task in answers]
    torch.manual_seed(0)
    losses = sft_answers(model, demos, steps=config["sft_steps"], batch_size=config["sft_batch"],
                         learning_rate=config["sft_lr"], pad_id=int(tokenizer.pad_token_id), seed=0)
    info = {"sft_loss_first_last": [round(losses[0], 4), round(losses[-1], 4)],
            "warm_up_prompt_tokens": max(len(d.prompt_ids) for d in demos),
            "answer_tokens": max(len(d.completion_ids) for d in demos)}
    return model, tokenizer, copy.deepcopy(model.state_dict()), info


def evaluate(backend: Any, config: dict[str, Any], seed: int) -> dict[str, Any]:
    """Greedy successes on seed ``seed``'s tasks of each split, one action each, and the longest prompt."""
    import asyncio

    from rollgym.agents.backends.base import SamplingParams
    from rollgym.core.registration import make
    from rollgym.train.sft import prompt_ids_of

    out: dict[str, Any] = {"prompt_tokens": {}}
    for split in SPLITS:
        env = make(ENV, split=split, **config["env_kwargs"])
        try:
            prompts, tasks = [], []
            for index in eval_indices(config, seed):
                observation, info = env.reset(options={"task_index": index})
                prompts.append(prompt_ids_of(backend.tokenizer, observation, info, ""))
                tasks.append(env.unwrapped.task)  # type: ignore[attr-defined]
            gens = asyncio.run(backend.generate(prompts, SamplingParams(max_tokens=config["max_tokens"],
                                                                        temperature=0.0)))
            solved = 0
            for task, gen in zip(tasks, gens):
                env.reset(options={"task": task})
                solved += int(float(env.step(gen.text)[1]) > 0)
        finally:
            env.close()
        out[split] = solved
        out["prompt_tokens"][split] = max(len(p) for p in prompts)
    return out


def train_tasks(config: dict[str, Any], step: int, seed: int) -> list[Any]:
    """One GRPO step's fresh train tasks (indices past the warm-up and evaluation tasks)."""
    import numpy as np

    from rollgym.core.registration import make

    rng = np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(11, step)))
    env = make(ENV, split="train", **config["env_kwargs"])
    try:
        tasks = []
        for index in rng.integers(10_000, 10_000_000, size=config["tasks_per_step"]):
            env.reset(options={"task_index": int(index)})
            tasks.append(env.unwrapped.task)  # type: ignore[attr-defined]
        return tasks
    finally:
        env.close()


def grpo(model: Any, tokenizer: Any, backend: Any, config: dict[str, Any], seed: int) -> list[tuple[float, float]]:
    """``grpo_steps`` GRPO steps on fresh train tasks; returns ``(step, sampled success)`` per step."""
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent
    from rollgym.train.adapters.episodes import play_groups
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer

    trainer = GRPOTrainer(model, tokenizer, GRPOConfig(learning_rate=config["learning_rate"],
                                                       micro_batch_size=config["micro_batch"], seed=seed))
    curve = []
    for step in range(config["grpo_steps"]):
        sampling_seed = seed * 1_000_003 + step
        agent = ChatAgent(backend, SamplingParams(max_tokens=config["max_tokens"], temperature=config["temperature"],
                                                  seed=sampling_seed), system_prompt="")
        groups = play_groups(agent, ENV, train_tasks(config, step, seed), config["group_size"],
                             env_kwargs=config["env_kwargs"], max_turns=1, seed=sampling_seed, prefix=f"s{step}-g")
        stats = trainer.step(groups)
        curve.append((float(step + 1), float(stats["reward_mean"])))
    return curve


def run(ctx: dict[str, Any], arm: str, seed: int, config: dict[str, Any]) -> ArmResult:
    """One arm on one seed: the warm-up model, or the warm-up model after GRPO; scored on the three splits."""
    import torch

    from rollgym.agents.backends.hf import TransformersBackend

    torch.manual_seed(seed)
    model, tokenizer = ctx["model"], ctx["tokenizer"]
    model.load_state_dict(ctx["warm"])
    backend = TransformersBackend(model, tokenizer, max_batch=config["eval_tasks"], batch_window_s=0.02)
    curve: list[tuple[float, float]] = []
    if arm == "GRPO":
        curve = grpo(model, tokenizer, backend, config, seed)
    scores = evaluate(backend, config, seed)
    if seed not in ctx["baselines"]:
        ctx["baselines"][seed] = baselines(config, seed)
    n = config["eval_tasks"]
    rates = {split: scores[split] / n for split in SPLITS}
    extras: dict[str, Any] = {**rates, "gap train - test_unseen": rates["train"] - rates["test_unseen"],
                              "solved": {split: scores[split] for split in SPLITS}, "n": n,
                              "tasks": [eval_indices(config, seed).start, eval_indices(config, seed).stop],
                              "prompt_tokens": scores["prompt_tokens"], **ctx["warm_info"],
                              "baselines": ctx["baselines"][seed]}
    steps = config["grpo_steps"] if arm == "GRPO" else 0
    cost = {"sft_steps": config["sft_steps"], "grpo_steps": steps,
            "grpo_rollouts": steps * config["tasks_per_step"] * config["group_size"]}
    return ArmResult(rates["test_unseen"], cost, curve, extras)


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of ``successes`` out of ``n``."""
    from rollgym.benchmarks.metrics import wilson_interval

    return wilson_interval(successes, n)


def side_by_side(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The table's rows: per agent and split, successes over every seed, the rate, its Wilson interval and the
    per-seed rates (a pure function of the experiment's JSON)."""
    runs = data["runs"]
    rows: list[dict[str, Any]] = []
    per_seed = {r["seed"]: r["extras"] for r in runs}  # the baselines of each seed's tasks
    for name in ("oracle", "random"):
        if per_seed:
            rows.append({"agent": name, "cells": {s: _cell(sum(e["baselines"][name][s] for e in per_seed.values()),
                                                          sum(e["n"] for e in per_seed.values()), [])
                                                   for s in SPLITS}})
    label = {"warm-up": "tiny model, warm-up only", "GRPO": "tiny model, after GRPO"}
    for arm in data["arms_order"]:
        mine = sorted((r for r in runs if r["arm"] == arm), key=lambda r: r["seed"])
        if not mine:
            continue
        cells = {}
        for split in SPLITS:
            solved = sum(r["extras"]["solved"][split] for r in mine)
            total = sum(r["extras"]["n"] for r in mine)
            cells[split] = _cell(solved, total, [r["extras"][split] for r in mine])
        rows.append({"agent": label.get(arm, arm), "cells": cells})
    return rows


def _cell(solved: int, n: int, per_seed: Sequence[float]) -> dict[str, Any]:
    low, high = wilson(solved, n)
    return {"solved": solved, "n": n, "rate": solved / n if n else 0.0, "low": low, "high": high,
            "per_seed": list(per_seed)}


def render_side_by_side(data: dict[str, Any]) -> str:
    """The Markdown table of :func:`side_by_side`: rate [95% Wilson interval] (per seed)."""
    def cell(c: dict[str, Any]) -> str:
        seeds = f" ({', '.join(f'{v:.2f}' for v in c['per_seed'])})" if c["per_seed"] else ""
        return f"{c['rate']:.3f} [{c['low']:.2f}, {c['high']:.2f}]{seeds}"

    header = ["agent", "train (seen tasks)", "test (new tasks, seen apps)", "test_unseen (held-out apps)"]
    rows = [[row["agent"], *(cell(row["cells"][split]) for split in SPLITS)] for row in side_by_side(data)]
    return "\n".join(["Train vs test vs test_unseen (success over all seeds, 95% Wilson interval, per seed in "
                      "brackets):", "", *markdown_table(header, rows)])


EXPERIMENT = Experiment(
    name="generalization",
    title="Generalization: a tiny model on ToolGen train vs test vs test_unseen",
    question="After a warm-up on oracle answers and a short GRPO run on ToolGen's train apps, how much of a tiny "
             "model's success carries over to new tasks (test) and to apps it never saw (test_unseen)?",
    metric="test_unseen success",
    arms=ARMS,
    baseline="warm-up",
    secondary=("train", "test", "gap train - test_unseen"),
    prepare=prepare,
    run=run,
    configs={
        "full": {"env_kwargs": ENV_KWARGS, "vocab_size": 4096, "hidden_size": 128, "layers": 4, "sft_tasks": 2048,
                 "sft_steps": 500, "sft_batch": 16, "sft_lr": 3e-3, "grpo_steps": 10, "tasks_per_step": 8,
                 "group_size": 8, "micro_batch": 16, "max_tokens": 96, "temperature": 0.3, "learning_rate": 1e-4,
                 "eval_tasks": 100},
        "quick": {"env_kwargs": ENV_KWARGS, "vocab_size": 600, "hidden_size": 32, "layers": 1, "sft_tasks": 6,
                  "sft_steps": 2, "sft_batch": 4, "sft_lr": 3e-3, "grpo_steps": 1, "tasks_per_step": 2,
                  "group_size": 2, "micro_batch": 4, "max_tokens": 8, "temperature": 0.7, "learning_rate": 5e-4,
                  "eval_tasks": 3},
    },
    seeds=5,
    quick_seeds=1,
    x_label="GRPO step (sampled success)",
    notes="Setting: `ToolGen-v0` with `kinds: [create_party, create_item]`, `distractors: 0`, "
          "`tool_schemas: compact` (the suite's `toolgen-small-*` entries); one action per task. One warm-up "
          "(seed 0) is shared by every seed; seed s differs in its GRPO tasks and sampling and in the evaluated "
          "tasks (indices s*n to s*n+n-1 of each split, n = eval_tasks).",
    render_extra=render_side_by_side,
    plot_curves=False,
)

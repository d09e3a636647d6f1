"""A real model learning on a CPU: SmolLM2-135M-Instruct, GRPO on the easiest Countdown level.

The model is ``smollm2-135m-instruct`` (``rollgym models pull smollm2-135m-instruct``), float32, on the
CPU. Out of the box it scores 0 on every Countdown level: it restates the target or copies the
prompt's format example, ``(6 + 4) * 3``, and rarely closes an ``<answer>`` block (docs/baselines.md).
The setting below was found by that search (reported in docs/experiments.md):

- **Task**: Countdown level ``n2`` (two numbers from 1-20, a target of 10-99, ``+ - * /``): the
  ladder's easiest level. Training tasks come from the ``train`` split, the held-out accuracy is
  greedy decoding on the first ``eval_tasks`` tasks of the ``test`` split (the splits share no puzzle).
- **Agent**: :class:`~rollgym.agents.chat.ChatAgent` with the env's own prompts and the reply prefilled
  with ``<answer>`` (``reply_prefix``; the same agent before and after training), stopping at
  ``</answer>``. The env scores the reply exactly as it scores any other.
- **Reward shaping** (training only): the env's strict reward is 0 on nearly every sampled reply of
  the untrained model, so GRPO would see no signal. The trainer's reward is 1.0 for a correct reply,
  else 0.1 for a closed ``<answer>`` block that holds an expression plus 0.4 times the overlap between the
  numbers written in it and the puzzle's offered numbers (as multisets, over the larger count;
  :func:`shaped_reward`; an empty block or the numbers echoed without an operator earn 0). The
  numbers are the puzzle's public statement, never its solution. A first setting that paid for the
  env's error labels instead (closed 0.1, wrong numbers 0.2, right numbers 0.3) collapsed onto the
  prompt's format example, ``(6 + 4) * 3``: after 12 steps 96 of 96 held-out replies and 93 of 96
  samples were that copy. The metric is the env's strict reward.
- **What trains**: the top ``train_layers`` transformer blocks (the rest and the tied embeddings are
  frozen; a partial fine-tune, chosen because a full backward pass over 30 blocks costs about 2.5x a
  forward on 2 cores).

Arms: ``base`` (the untrained model's accuracy; the same on every seed) and ``grpo`` (rollgym's
:class:`~rollgym.train.grpo.GRPOTrainer`). The twin experiment ``realmodel-trl``
(:mod:`research.realmodel_trl`) runs ``trl``, TRL's ``GRPOTrainer`` through
:func:`rollgym.train.adapters.trl.run_trl_grpo` on the same tasks, rewards, group size, learning rate and
steps, with the same settings, so its runs pair with these seed by seed. Each seed draws its own
training tasks and sampling seeds. A run checkpoints every ``checkpoint_every`` steps under the cache
(``~/.cache/rollgym/experiments/realmodel/<settings hash>/``) and resumes from there when interrupted;
the runner keeps each finished (arm, seed) in the results file. (The ``trl`` arm has no checkpoints: a
TRL run that is interrupted starts again.)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from research import countdown
from research.runner import ArmResult, Experiment, Prepared, markdown_table
from rollgym.rollout.types import RolloutGroup, Trajectory

MODEL = "smollm2-135m-instruct"

ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
#: Two numbers joined by an arithmetic operator (parentheses allowed between): a block without one is no expression.
OPERATION = re.compile(r"\d[\s)]*[-+*/][\s(]*\d")
#: The env's labels for a block that holds no expression (empty, or numbers and words that do not parse).
NOT_AN_EXPRESSION = ("no_answer", "malformed")
#: Bumped whenever :func:`shaped_reward` changes, so that a run never resumes checkpoints trained on another rule.
SHAPED_RULE = 2


LEVEL_N2: dict[str, Any] = {"num_numbers": 2, "min_value": 1, "max_value": 20, "min_target": 10, "max_target": 99}

BASE: dict[str, Any] = {
    "model": MODEL, "env_id": "Countdown-v0", "env_kwargs": LEVEL_N2, "reply_prefix": "<answer>",
    "stop": ["</answer>"], "max_tokens": 24, "temperature": 0.7, "group_size": 4, "tasks_per_step": 6,
    "learning_rate": 1.5e-4, "train_layers": 6, "grpo_steps": 24, "eval_every": 12, "eval_tasks": 96,
    "checkpoint_every": 4,
}


@dataclass
class RealModel(Prepared):
    """The loaded model, its starting weights (the trainable part), and its held-out accuracy before training."""

    accuracy_base: float
    extras_base: dict[str, float]
    checkpoints: Path | None = None
    """Where runs checkpoint: ``None`` for the cache (full runs); the quick form keeps them in its scratch folder."""


def shaped_reward(text: str, reward: float | None, info: dict[str, Any], *, closed_bonus: float = 0.1,
                  overlap_weight: float = 0.4) -> float:
    """The training reward of a reply: 1.0 when correct, else ``closed_bonus`` for a closed answer block plus
    ``overlap_weight`` x the overlap of the numbers in it with the offered numbers (multiset intersection over
    the larger count); 0 without one. A block that is no expression earns 0 too: an empty one, one the env
    labels ``no_answer`` or ``malformed`` (``<answer>17 9</answer>``, the offered numbers echoed), or one with
    no operator between two numbers (``<answer>17</answer>``). (Rule 1, before rollgym 0.2, paid 0.1 for an
    empty block and 0.5 for the echo.) Settings other than the defaults are search pilots (:func:`pilot`)."""
    if reward is None:
        return 0.0
    if reward >= 1.0:
        return 1.0
    blocks = ANSWER.findall(text)
    if not blocks or info.get("error") in NOT_AN_EXPRESSION or not OPERATION.search(blocks[-1]):
        return 0.0  # no block, an empty one, or the offered numbers echoed without an operation
    used = Counter(int(n) for n in re.findall(r"\d+", blocks[-1]))
    offered = Counter(int(n) for n in (info.get("task_meta") or {}).get("numbers") or ())
    larger = max(sum(used.values()), sum(offered.values()), 1)
    return closed_bonus + overlap_weight * sum((used & offered).values()) / larger


def _weights(config: dict[str, Any]) -> dict[str, float]:
    return {k: config[k] for k in ("closed_bonus", "overlap_weight") if k in config}


def shaped(traj: Trajectory, config: dict[str, Any] | None = None) -> float:
    """:func:`shaped_reward` of one rollout's reply."""
    replies = [m["content"] for m in traj.messages if m.get("role") == "assistant"]
    return shaped_reward(replies[-1] if replies else "", traj.reward, traj.info, **_weights(config or {}))


def reward_of_text(env: Any, task: Any, text: str, config: dict[str, Any] | None = None) -> float:
    """:func:`shaped_reward` of a reply given as text (the TRL arm scores its own completions with this)."""
    env.reset(options={"task": task})
    _, reward, _, _, info = env.step(text)
    return shaped_reward(text, float(reward), info, **_weights(config or {}))


def freeze_all_but_top(model: Any, layers: int) -> list[str]:
    """Leave only the top ``layers`` transformer blocks trainable; returns the trainable parameter names."""
    blocks = model.model.layers
    for param in model.parameters():
        param.requires_grad_(False)
    for block in blocks[len(blocks) - layers:]:
        for param in block.parameters():
            param.requires_grad_(True)
    return [name for name, p in model.named_parameters() if p.requires_grad]


def trainable_state(model: Any) -> dict[str, Any]:
    """A copy of the trainable parameters (what a run changes)."""
    return {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}


def restore(ctx: RealModel) -> None:
    """Put the starting weights back (every arm and seed starts from the same model)."""
    import torch

    params = dict(ctx.model.named_parameters())
    with torch.no_grad():
        for name, value in ctx.start.items():
            params[name].copy_(value)


def agent_of(backend: Any, config: dict[str, Any], *, temperature: float, seed: int | None) -> Any:
    """The agent of every arm and of the evaluation: env prompts, the reply prefilled, stop at the closing tag."""
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent

    sampling = SamplingParams(max_tokens=config["max_tokens"], temperature=temperature, seed=seed,
                              stop=tuple(config["stop"]))
    return ChatAgent(backend, sampling, reply_prefix=config["reply_prefix"])


def evaluate(backend: Any, config: dict[str, Any]) -> tuple[float, dict[str, float]]:
    """Greedy held-out accuracy on the first ``eval_tasks`` test tasks, and the share of each error label."""
    from rollgym.core.registration import make
    from rollgym.train.adapters.episodes import play_tasks

    env = make(config["env_id"], split="test", **config["env_kwargs"])
    try:
        tasks = []
        for index in range(config["eval_tasks"]):
            env.reset(options={"task_index": index})
            tasks.append(env.unwrapped.task)  # type: ignore[attr-defined]
    finally:
        env.close()
    trajs = play_tasks(agent_of(backend, config, temperature=0.0, seed=None), config["env_id"], tasks,
                       env_kwargs={**config["env_kwargs"], "split": "test"}, max_turns=1)
    labels: dict[str, float] = {}
    for t in trajs:
        label = "correct" if (t.reward or 0.0) >= 1.0 else str(t.info.get("error"))
        labels[label] = labels.get(label, 0.0) + 1.0 / len(trajs)
    return sum((t.reward or 0.0) >= 1.0 for t in trajs) / len(trajs), labels


def prepare(config: dict[str, Any], workdir: Path) -> RealModel:
    """Load the pulled model, freeze all but the top blocks, and measure it before any training."""
    from rollgym.agents.backends.hf import TransformersBackend

    model = config["model"]
    if model == "tiny":  # the quick form: the pipeline end to end on the tiny random model, no pulled weights
        from rollgym.agents.backends.tiny import build_tiny_model

        model = str(build_tiny_model(workdir / "tiny", seed=0))
    backend = TransformersBackend.from_pretrained(model, max_batch=128)
    freeze_all_but_top(backend.model, config["train_layers"])
    ctx = RealModel(backend.model, backend.tokenizer, trainable_state(backend.model), config, 0.0, {},
                    workdir / "checkpoints" if config["model"] == "tiny" else None)
    ctx.accuracy_base, ctx.extras_base = evaluate(backend, config)
    return ctx


def backend_of(ctx: RealModel) -> Any:
    from rollgym.agents.backends.hf import TransformersBackend

    return TransformersBackend(ctx.model, ctx.tokenizer, max_batch=128, batch_window_s=0.02)


def resumed(trainer: Any, latest: Path, fresh: dict[str, Any], run: str) -> dict[str, Any]:
    """The run's state saved with the checkpoint ``latest`` (the trainer restored to it, and ``run`` says so),
    else ``fresh``: a run resumes where it stopped."""
    if not latest.exists():
        return fresh
    state: dict[str, Any] = trainer.load_checkpoint(latest)
    print(f"{run}: resumed at step {trainer.global_step}", flush=True)
    return state


def checkpoint_dir(config: dict[str, Any], arm: str, seed: int, root: Path | None = None) -> Path:
    """Where a run's checkpoints live: keyed by the settings, so a changed setting never resumes an old run."""
    from rollgym.agents.backends.catalog import cache_root

    keyed = {**config, "shaped_rule": SHAPED_RULE} if SHAPED_RULE != 1 else config
    digest = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:12]
    base = root if root is not None else cache_root().parent / "experiments" / "realmodel"
    return base / digest / f"{arm}-seed{seed}"


def step_groups(backend: Any, config: dict[str, Any], seed: int, step: int) -> list[RolloutGroup]:
    """Step ``step``'s groups: ``tasks_per_step`` training tasks x ``group_size`` sampled replies, shaped rewards."""
    from rollgym.train.adapters.episodes import play_groups

    tasks = countdown.train_tasks(config, step, seed)
    sampling_seed = seed * 1_000_003 + step
    agent = agent_of(backend, config, temperature=config["temperature"], seed=sampling_seed)
    groups = play_groups(agent, config["env_id"], tasks, config["group_size"], env_kwargs=config["env_kwargs"],
                         max_turns=1, seed=sampling_seed, prefix=f"s{step}-g")
    return [dataclasses.replace(g, trajectories=[dataclasses.replace(t, reward=shaped(t, config), info={
        **t.info, "env_reward": t.reward}) for t in g.trajectories]) for g in groups]


def run_grpo(ctx: RealModel, seed: int, config: dict[str, Any]) -> ArmResult:
    """rollgym's GRPO from the starting weights, resuming from the latest checkpoint of this (arm, seed)."""
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer

    restore(ctx)
    backend = backend_of(ctx)
    trainer = GRPOTrainer(ctx.model, ctx.tokenizer, GRPOConfig(learning_rate=config["learning_rate"],
                                                               micro_batch_size=8, seed=seed))
    folder = checkpoint_dir(config, "grpo", seed, ctx.checkpoints)
    latest = folder / "latest.pt"
    state = resumed(trainer, latest, {"curve": [[0, ctx.accuracy_base]], "rewards": [], "strict": [], "seconds": 0.0},
                    f"[realmodel] grpo seed {seed}")
    started = time.perf_counter() - state["seconds"]
    while trainer.global_step < config["grpo_steps"]:
        step = trainer.global_step
        groups = step_groups(backend, config, seed, step)
        trainer.step(groups)
        trajs = [t for g in groups for t in g.trajectories]
        state["rewards"].append(sum(t.reward or 0.0 for t in trajs) / len(trajs))
        state["strict"].append(sum((t.info.get("env_reward") or 0.0) >= 1.0 for t in trajs) / len(trajs))
        if trainer.global_step % config["eval_every"] == 0 or trainer.global_step == config["grpo_steps"]:
            accuracy, state["labels"] = evaluate(backend, config)
            state["curve"].append([trainer.global_step, accuracy])
        print(f"[realmodel] grpo seed {seed} step {trainer.global_step}: shaped reward {state['rewards'][-1]:.3f} "
              f"strict {state['strict'][-1]:.3f} ({time.perf_counter() - started:.0f} s)", flush=True)
        if trainer.global_step % config["checkpoint_every"] == 0 or trainer.global_step == config["grpo_steps"]:
            state["seconds"] = time.perf_counter() - started
            trainer.save_checkpoint(latest, extra=state)
    accuracy, labels = state["curve"][-1][1], state.get("labels")
    seconds = time.perf_counter() - started
    return ArmResult(accuracy, {"grpo_steps": float(trainer.global_step),
                                "policy_rollouts": float(trainer.global_step * config["tasks_per_step"]
                                                         * config["group_size"]), "train_seconds": seconds},
                     [(float(x), float(y)) for x, y in state["curve"]],
                     {"reward_curve": state["rewards"], "strict_train_curve": state["strict"], "labels": labels})


def trl_messages(observation: str, info: dict[str, Any], config: dict[str, Any]) -> list[dict[str, Any]]:
    """The TRL arm's prompt of one task: the env's system prompt and first observation, and the reply prefix as a
    final assistant message that the reply continues (:func:`~rollgym.train.adapters.trl.run_trl_grpo` hands
    TRL the text a ChatAgent with ``reply_prefix`` samples from)."""
    return [{"role": "system", "content": info["system_prompt"]}, {"role": "user", "content": observation},
            {"role": "assistant", "content": config["reply_prefix"]}]


def run_trl(ctx: RealModel, seed: int, config: dict[str, Any]) -> ArmResult:
    """TRL's GRPOTrainer on the same tasks, rewards and budget (the prompts rendered by the same agent)."""
    from rollgym.core.registration import make
    from rollgym.train.adapters.trl import run_trl_grpo

    restore(ctx)
    backend = backend_of(ctx)
    env = make(config["env_id"], **config["env_kwargs"])

    def step_prompts(step: int) -> list[tuple[list[dict[str, Any]], Any]]:
        rows = []
        for task in countdown.train_tasks(config, step, seed):
            observation, info = env.reset(options={"task": task})
            rows.append((trl_messages(observation, info, config), task))
        return rows

    def reward(text: str, task: Any) -> float:
        # TRL's generate has no stop strings here: score the reply up to the first stop, as the agent would see it
        for stop in config["stop"]:
            if stop in text:
                text = text[: text.index(stop) + len(stop)]
        return reward_of_text(env, task, config["reply_prefix"] + text, config)

    try:
        out = run_trl_grpo(ctx.model, ctx.tokenizer, step_prompts=step_prompts, reward=reward,
                           steps=config["grpo_steps"], group_size=config["group_size"],
                           learning_rate=config["learning_rate"], max_tokens=config["max_tokens"],
                           temperature=config["temperature"], seed=seed,
                           evaluate=lambda _step: evaluate(backend, config)[0], eval_every=config["eval_every"])
    finally:
        env.close()
    accuracy, labels = evaluate(backend, config)
    return ArmResult(accuracy, {"grpo_steps": float(out["steps"]), "train_seconds": float(out["seconds"])},
                     [(float(x), float(y)) for x, y in out["curve"]],
                     {"reward_curve": list(out.get("reward_mean", [])), "labels": labels,
                      "trl_version": out.get("trl_version")})


def label_measures(labels: dict[str, float] | None) -> dict[str, float]:
    """Two held-out measures read off the reply labels: ``answer_block``, the share of replies with a closed
    ``<answer>`` block (every label but ``no_answer``), and ``offered_numbers``, the share whose expression uses
    exactly the offered numbers (``correct``, ``wrong`` or ``division_by_zero``)."""
    if not labels:
        return {}  # nothing measured
    return {"answer_block": 1.0 - labels.get("no_answer", 0.0),
            "offered_numbers": sum(labels.get(k, 0.0) for k in ("correct", "wrong", "division_by_zero"))}


def run(ctx: RealModel, arm: str, seed: int, config: dict[str, Any]) -> ArmResult:
    if arm == "base":
        result = ArmResult(ctx.accuracy_base, {"grpo_steps": 0.0}, [(0.0, ctx.accuracy_base)],
                           {"labels": ctx.extras_base})
    elif arm == "grpo":
        result = run_grpo(ctx, seed, config)
    else:
        result = run_trl(ctx, seed, config)
    result.extras.update(label_measures(result.extras.get("labels")))
    return result


def pilot(overrides: dict[str, Any], seed: int = 0, out: str | Path | None = None) -> dict[str, Any]:
    """One seed of rollgym's GRPO arm in another setting (a step of the search, not a committed arm).

    ``overrides`` change the full settings (e.g. ``{"closed_bonus": 0.0, "overlap_weight": 0.5}``); the run
    checkpoints and resumes like an arm. Returns, and writes to ``out`` as JSON, the settings, the untrained
    model's measures, the run's held-out curve, its labels and its training rewards.
    """
    import tempfile

    config = {**BASE, **overrides}
    ctx = prepare(config, Path(tempfile.mkdtemp(prefix="rollgym-realmodel-pilot-")))
    result = run_grpo(ctx, seed, config)
    record = {"settings": config, "seed": seed, "base": {"accuracy": ctx.accuracy_base,
                                                         **label_measures(ctx.extras_base)},
              "after": {"accuracy": result.metric, **label_measures(result.extras.get("labels"))},
              "curve": result.curve, "labels": result.extras.get("labels"), "cost": result.cost,
              "reward_curve": result.extras.get("reward_curve")}
    if out is not None:
        Path(out).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def labels_table(runs: Sequence[dict[str, Any]], *, seeds: bool = False) -> str:
    """The share of each error label in the held-out replies, per arm (mean over seeds), labels in name order;
    ``seeds`` adds how many seeds each arm has and puts ``correct`` first."""
    arms: dict[str, list[dict[str, float]]] = {}
    for r in runs:
        if r["extras"].get("labels"):
            arms.setdefault(r["arm"], []).append(r["extras"]["labels"])
    keys = sorted({k for rows in arms.values() for row in rows for k in row},
                  key=(lambda k: (k != "correct", k)) if seeds else None)
    table = [[arm, *([len(rows)] if seeds else []), *(f"{sum(r.get(k, 0.0) for r in rows) / len(rows):.2f}"
                                                       for k in keys)] for arm, rows in arms.items()]
    return "\n".join(markdown_table(["arm", *(["seeds"] if seeds else []), *keys], table))


EXPERIMENT = Experiment(
    name="realmodel",
    title="A real model trained on a CPU: SmolLM2-135M-Instruct, GRPO on Countdown n2",
    question="Does GRPO on rollgym's rewards, on a CPU, raise a real small instruct model's held-out greedy "
             "accuracy, and what does it learn?",
    metric="held-out greedy accuracy (strict env reward)",
    arms=("base", "grpo"),
    baseline="base",
    prepare=prepare,
    run=run,
    configs={
        "full": dict(BASE),
        "quick": {**BASE, "model": "tiny", "train_layers": 1, "grpo_steps": 2, "eval_every": 1, "eval_tasks": 4,
                  "tasks_per_step": 2, "group_size": 2, "max_tokens": 8, "checkpoint_every": 1},
    },
    secondary=("answer_block", "offered_numbers"),
    seeds=3,
    quick_seeds=1,
    notes="Compute per trained arm and seed: grpo_steps x tasks_per_step x group_size sampled replies; the "
          "trainable part is the top train_layers blocks. The base arm is the untrained model (no variance "
          "across seeds: the held-out tasks are fixed).",
    render_extra=lambda data: "Held-out reply labels (share of the eval tasks):\n\n" + labels_table(data["runs"]),
)

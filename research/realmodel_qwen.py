"""Learning beyond format: Qwen2.5-Coder-0.5B-Instruct, GRPO on CodeGen against a format-only control.

The model is ``qwen2.5-coder-0.5b-instruct`` (the pulled model's cache folder), on the CPU. Untrained, it
solves some of CodeGen's easier tasks greedily (docs/baselines.md), so the env's strict reward already has
signal and no shaping is needed. The setting:

- **Task**: ``CodeGen-v0`` at level ``steps-2`` (two chained operations, inputs up to 20, no edge cases).
  Training tasks come from the ``train`` split; the held-out set is the first ``eval_tasks`` *distinct* tasks
  of the ``test`` split (:func:`held_out_tasks`: distinct by their reference solution, the function itself, so
  two tasks that only differ in their examples count once; the splits share no function). Level ``steps-1``
  has too few distinct functions for such a set: the first 1,500 test tasks hold 173, of which 128 are one
  family's (``recursion``), so 100 distinct ones would be mostly that family.
- **Agent**: :class:`~rollgym.agents.chat.ChatAgent` with the env's own prompts, the reply prefilled with
  `` ```python`` and a newline, stopping at the closing fence (the same agent in every arm and in the
  evaluation). The env grades the reply as it grades any other.
- **Arms**: ``base`` (the untrained model; the same on every seed), ``grpo`` (rollgym's
  :class:`~rollgym.train.grpo.GRPOTrainer` on the env's strict reward: 1 when every hidden test passes, else 0)
  and ``format`` (the control: the same trainer, tasks, sampling seeds and budget, rewarded by
  :func:`format_reward`, which pays a well-formed answer whether or not it is right). Both trained arms start
  from the same weights on every seed, so ``grpo - format`` is paired and shows what the strict reward teaches
  beyond the format.
- **What trains**: the top ``train_layers`` transformer blocks, kept in float32 over a bfloat16 rest
  (:func:`mixed_precision`): bfloat16 decodes several times faster on this CPU (it has AMX), and AdamW's
  small steps vanish when rounded to bfloat16 weights. Runs use the CPU's own kernels (``--native-kernels``),
  since the AVX2 pin turns the bfloat16 kernels off.

A run checkpoints every ``checkpoint_every`` steps under the cache
(``~/.cache/rollgym/experiments/realmodel-qwen/<settings hash>/``) and resumes from there; the runner keeps each
finished (arm, seed) in the results file, so a stopped run picks up where it was.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from research import countdown, realmodel
from research.runner import ArmResult, Experiment, Prepared
from rollgym.core.errors import ConfigError
from rollgym.rollout.types import RolloutGroup, Trajectory

MODEL = "qwen2.5-coder-0.5b-instruct"

#: CodeGen's ``steps-2`` level (:data:`rollgym.envs.code.config.CODEGEN_LEVELS`).
LEVEL_STEPS2: dict[str, Any] = {"steps": 2, "input_size": 20, "tricky": False}

#: The reward each trained arm learns from.
REWARDS = {"grpo": "strict", "format": "format"}

BASE: dict[str, Any] = {
    "model": MODEL, "dtype": "bfloat16", "env_id": "CodeGen-v0", "env_kwargs": LEVEL_STEPS2,
    "reply_prefix": "```python\n", "stop": ["```"], "max_tokens": 160, "temperature": 1.0, "group_size": 4,
    "tasks_per_step": 4, "learning_rate": 5e-5, "train_layers": 4, "grpo_steps": 8, "eval_every": 8,
    "eval_tasks": 100, "checkpoint_every": 1,
}

QUICK: dict[str, Any] = {**BASE, "model": "tiny", "dtype": "float32", "train_layers": 1, "grpo_steps": 1,
                         "eval_every": 1, "eval_tasks": 4, "tasks_per_step": 2, "group_size": 2, "max_tokens": 8}


def check_settings(config: dict[str, Any]) -> None:
    """One clear sentence (a :class:`ConfigError`) when the settings cannot make a sound run."""
    missing = sorted(set(BASE) - set(config))
    if missing:
        raise ConfigError(f"realmodel-qwen settings lack {', '.join(missing)}.")
    for key in ("max_tokens", "group_size", "tasks_per_step", "train_layers", "grpo_steps", "eval_every",
                "eval_tasks", "checkpoint_every"):
        if not isinstance(config[key], int) or isinstance(config[key], bool) or config[key] < 1:
            raise ConfigError(f"{key} must be a positive integer, got {config[key]!r}.")
    if config["group_size"] < 2:
        raise ConfigError(f"group_size must be at least 2 (GRPO compares replies within a group), "
                          f"got {config['group_size']}.")
    if config["dtype"] not in ("float32", "bfloat16"):
        raise ConfigError(f"dtype must be 'float32' or 'bfloat16', got {config['dtype']!r}.")
    if not (isinstance(config["learning_rate"], float) and 0 < config["learning_rate"] < 1):
        raise ConfigError(f"learning_rate must be a number in (0, 1), got {config['learning_rate']!r}.")
    if not 0 < float(config["temperature"]) <= 2:
        raise ConfigError(f"temperature must be in (0, 2], got {config['temperature']!r}.")


def format_reward(text: str, entry_point: str) -> float:
    """The control arm's reward: 1.0 when the reply's last ```` ```python ```` block parses and defines
    ``entry_point`` at its top level, else 0.0. It never runs the code, so a wrong function earns what a right
    one earns: the reward pays for the format alone."""
    from rollgym.envs.code.program import extract_code

    code = extract_code(text, require_block=True) if isinstance(text, str) else None
    if code is None:
        return 0.0
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return 0.0
    return 1.0 if any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point
                      for node in tree.body) else 0.0


def reply_of(traj: Trajectory) -> str:
    replies = [m["content"] for m in traj.messages if m.get("role") == "assistant"]
    return replies[-1] if replies and isinstance(replies[-1], str) else ""


def train_reward(traj: Trajectory, kind: str) -> float:
    """A rollout's training reward: the env's strict reward (``strict``) or :func:`format_reward` (``format``)."""
    if kind == "strict":
        return 1.0 if (traj.reward or 0.0) >= 1.0 else 0.0
    entry = str((traj.info.get("task_meta") or {}).get("entry_point") or "")
    return format_reward(reply_of(traj), entry) if entry else 0.0


def held_out_tasks(config: dict[str, Any]) -> list[Any]:
    """The first ``eval_tasks`` test tasks that are distinct by content (their reference solution): a function
    met again with other examples is skipped. Raises when the split runs dry within 50 x ``eval_tasks`` draws."""
    from rollgym.core.registration import make

    env = make(config["env_id"], split="test", **config["env_kwargs"])
    tasks: list[Any] = []
    seen: set[str] = set()
    try:
        for index in range(50 * config["eval_tasks"]):
            if len(tasks) == config["eval_tasks"]:
                break
            env.reset(options={"task_index": index})
            task = env.unwrapped.task  # type: ignore[attr-defined]
            key = content_key(task)
            if key not in seen:
                seen.add(key)
                tasks.append(task)
    finally:
        env.close()
    if len(tasks) < config["eval_tasks"]:
        raise ConfigError(f"The test split holds only {len(tasks)} distinct tasks at these settings; "
                          f"ask for fewer than {config['eval_tasks']}.")
    return tasks


def content_key(task: Any) -> str:
    """What makes a CodeGen task distinct: its reference solution (the function and its operations)."""
    answer = task.answer if isinstance(task.answer, dict) else {}
    return str(answer.get("reference") or task.prompt)


@dataclass
class QwenContext(Prepared):
    """The loaded model, its starting weights (the trainable part), the held-out tasks and the base measures."""

    held_out: list[Any]
    accuracy_base: float = 0.0
    extras_base: dict[str, Any] = dataclasses.field(default_factory=dict)
    checkpoints: Path | None = None


def _cast(value: Any, dtype: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    if isinstance(value, tuple):
        return tuple(_cast(v, dtype) for v in value)
    return value


def mixed_precision(model: Any, layers: int) -> None:
    """Put the top ``layers`` blocks and the final norm in float32 over a bfloat16 rest, casting the hidden state
    on the way in (to float32) and on the way to the output layer (back to the output layer's dtype)."""
    import torch

    blocks = model.model.layers
    def into(dtype: Any) -> Any:
        def hook(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
            return _cast(args, dtype), {k: _cast(v, dtype) for k, v in kwargs.items()}
        return hook

    for block in blocks[len(blocks) - layers:]:
        block.float()
        block.register_forward_pre_hook(into(torch.float32), with_kwargs=True)
    model.model.norm.float()
    head = model.get_output_embeddings()
    head.register_forward_pre_hook(into(head.weight.dtype), with_kwargs=True)


def model_path(name: str, workdir: Path) -> str:
    """A loadable folder for ``name``: the tiny random model for ``tiny``, a known model's cache folder, or the
    folder ``name`` in the model cache; one sentence when it is not there."""
    from rollgym.agents.backends.catalog import KNOWN_MODELS, cache_root, resolve_model

    if name == "tiny":
        from rollgym.agents.backends.tiny import build_tiny_model

        return str(build_tiny_model(workdir / "tiny", seed=0))
    if name in KNOWN_MODELS:
        return resolve_model(name)
    folder = cache_root() / name
    if (folder / "config.json").exists():
        return str(folder)
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    raise ConfigError(f"Model {name!r} is not in the cache ({folder}); run `rollgym models pull {name}` first.")


def prepare(config: dict[str, Any], workdir: Path) -> QwenContext:
    """Load the model, let the top blocks train (in float32), and measure it on the held-out tasks."""
    from rollgym.agents.backends.hf import TransformersBackend

    check_settings(config)
    held_out = held_out_tasks(config)
    backend = TransformersBackend.from_pretrained(model_path(config["model"], workdir), dtype=config["dtype"],
                                                  max_batch=128)
    if config["dtype"] != "float32":
        mixed_precision(backend.model, config["train_layers"])
    realmodel.freeze_all_but_top(backend.model, config["train_layers"])
    ctx = QwenContext(backend.model, backend.tokenizer, realmodel.trainable_state(backend.model), config, held_out,
                      checkpoints=workdir / "checkpoints" if config["model"] == "tiny" else None)
    ctx.accuracy_base, ctx.extras_base = evaluate(backend, ctx)
    return ctx


def backend_of(ctx: QwenContext) -> Any:
    from rollgym.agents.backends.hf import TransformersBackend

    return TransformersBackend(ctx.model, ctx.tokenizer, max_batch=128, batch_window_s=0.02)


def evaluate(backend: Any, ctx: QwenContext) -> tuple[float, dict[str, Any]]:
    """Greedy strict accuracy on the held-out tasks, the share of each reply label, and the format share."""
    from rollgym.train.adapters.episodes import play_tasks

    config = ctx.config
    trajs = play_tasks(realmodel.agent_of(backend, config, temperature=0.0, seed=None), config["env_id"],
                       ctx.held_out, env_kwargs={**config["env_kwargs"], "split": "test"}, max_turns=1)
    labels: dict[str, float] = {}
    for t in trajs:
        label = "correct" if (t.reward or 0.0) >= 1.0 else str(t.info.get("error"))
        labels[label] = labels.get(label, 0.0) + 1.0 / len(trajs)
    accuracy = sum((t.reward or 0.0) >= 1.0 for t in trajs) / len(trajs)
    well_formed = sum(train_reward(t, "format") for t in trajs) / len(trajs)
    return accuracy, {"labels": labels, "well_formed": well_formed,
                      "held_out_tasks": len(ctx.held_out),
                      "held_out_distinct": len({content_key(t) for t in ctx.held_out})}


def checkpoint_dir(config: dict[str, Any], arm: str, seed: int, root: Path | None = None) -> Path:
    """Where a run's checkpoints live, keyed by the settings (a changed setting never resumes an old run)."""
    from rollgym.agents.backends.catalog import cache_root

    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]
    base = root if root is not None else cache_root().parent / "experiments" / "realmodel-qwen"
    return base / digest / f"{arm}-seed{seed}"


def step_groups(backend: Any, config: dict[str, Any], seed: int, step: int, kind: str) -> list[RolloutGroup]:
    """Step ``step``'s groups (the same tasks and sampling seeds in both trained arms), rewarded by ``kind``."""
    from rollgym.train.adapters.episodes import play_groups

    tasks = countdown.train_tasks(config, step, seed)
    sampling_seed = seed * 1_000_003 + step
    agent = realmodel.agent_of(backend, config, temperature=config["temperature"], seed=sampling_seed)
    groups = play_groups(agent, config["env_id"], tasks, config["group_size"], env_kwargs=config["env_kwargs"],
                         max_turns=1, seed=sampling_seed, prefix=f"s{step}-g")
    return [dataclasses.replace(g, trajectories=[dataclasses.replace(t, reward=train_reward(t, kind), info={
        **t.info, "env_reward": t.reward}) for t in g.trajectories]) for g in groups]


def run_trained(ctx: QwenContext, arm: str, seed: int, config: dict[str, Any]) -> ArmResult:
    """One trained arm from the starting weights, resuming from its latest checkpoint."""
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer

    kind = REWARDS[arm]
    realmodel.restore(ctx)  # type: ignore[arg-type]
    backend = backend_of(ctx)
    trainer = GRPOTrainer(ctx.model, ctx.tokenizer, GRPOConfig(learning_rate=config["learning_rate"],
                                                               micro_batch_size=4, seed=seed))
    latest = checkpoint_dir(config, arm, seed, ctx.checkpoints) / "latest.pt"
    state = realmodel.resumed(trainer, latest, {"curve": [[0, ctx.accuracy_base]], "rewards": [], "strict": [],
                                                "format": [], "seconds": 0.0}, f"[realmodel-qwen] {arm} seed {seed}")
    started = time.perf_counter() - state["seconds"]
    while trainer.global_step < config["grpo_steps"]:
        step = trainer.global_step
        groups = step_groups(backend, config, seed, step, kind)
        trainer.step(groups)
        trajs = [t for g in groups for t in g.trajectories]
        state["rewards"].append(sum(t.reward or 0.0 for t in trajs) / len(trajs))
        state["strict"].append(sum((t.info.get("env_reward") or 0.0) >= 1.0 for t in trajs) / len(trajs))
        state["format"].append(sum(train_reward(t, "format") for t in trajs) / len(trajs))
        if trainer.global_step % config["eval_every"] == 0 or trainer.global_step == config["grpo_steps"]:
            accuracy, state["after"] = evaluate(backend, ctx)
            state["curve"].append([trainer.global_step, accuracy])
        print(f"[realmodel-qwen] {arm} seed {seed} step {trainer.global_step}: reward {state['rewards'][-1]:.3f} "
              f"strict {state['strict'][-1]:.3f} format {state['format'][-1]:.3f} "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
        if trainer.global_step % config["checkpoint_every"] == 0 or trainer.global_step == config["grpo_steps"]:
            state["seconds"] = time.perf_counter() - started
            trainer.save_checkpoint(latest, extra=state)
    after = state.get("after") or {}
    seconds = time.perf_counter() - started
    return ArmResult(state["curve"][-1][1], {
        "grpo_steps": float(trainer.global_step),
        "policy_rollouts": float(trainer.global_step * config["tasks_per_step"] * config["group_size"]),
        "train_seconds": seconds}, [(float(x), float(y)) for x, y in state["curve"]],
        {"reward_curve": state["rewards"], "strict_train_curve": state["strict"],
         "format_train_curve": state["format"], "labels": after.get("labels"),
         "well_formed": after.get("well_formed"), "held_out_tasks": after.get("held_out_tasks"),
         "held_out_distinct": after.get("held_out_distinct"), "labels_before": ctx.extras_base.get("labels")})


def run(ctx: QwenContext, arm: str, seed: int, config: dict[str, Any]) -> ArmResult:
    if arm == "base":
        return ArmResult(ctx.accuracy_base, {"grpo_steps": 0.0}, [(0.0, ctx.accuracy_base)],
                         {**ctx.extras_base, "labels_before": ctx.extras_base.get("labels")})
    return run_trained(ctx, arm, seed, config)


def render_extra(data: dict[str, Any]) -> str:
    distinct = sorted({(r["extras"].get("held_out_tasks"), r["extras"].get("held_out_distinct"))
                       for r in data["runs"] if r["extras"].get("held_out_tasks") is not None})
    told = "; ".join(f"{n} tasks, {d} distinct by reference solution" for n, d in distinct) or "not recorded"
    return (f"Held-out set: {told}.\n\nHeld-out reply labels, greedy (share of the held-out tasks; the base row "
            f"is the model before training, the others after):\n\n" + realmodel.labels_table(data["runs"], seeds=True))


EXPERIMENT = Experiment(
    name="realmodel-qwen",
    title="Learning beyond format: Qwen2.5-Coder-0.5B-Instruct, GRPO on CodeGen steps-2 against a format-only control",
    question="Does GRPO on CodeGen's strict reward raise a real 0.5B model's held-out greedy accuracy beyond what "
             "the same training rewarded for format alone does?",
    metric="held-out greedy accuracy (strict env reward)",
    arms=("base", "format", "grpo"),
    baseline="base",
    comparisons=(("grpo", "format"), ("grpo", "base"), ("format", "base")),
    prepare=prepare,
    run=run,
    configs={"full": dict(BASE), "quick": dict(QUICK)},
    secondary=("well_formed",),
    seeds=5,
    quick_seeds=1,
    notes="Compute per trained arm and seed: grpo_steps x tasks_per_step x group_size sampled replies; the "
          "trainable part is the top train_layers blocks (float32 over a bfloat16 rest). The base arm is the "
          "untrained model (no variance across seeds: the held-out tasks are fixed). Run with --native-kernels.",
    render_extra=render_extra,
)


def _pct(value: float) -> str:
    return f"{round(100 * value)}"


def readme_claim(data: dict[str, Any]) -> str:
    """README's sentence on this experiment, rendered from its results file (a test checks README carries it).

    It names the untrained model's held-out score with its Wilson interval, every seed of both trained arms, the
    paired ``grpo - format`` and ``format - base`` comparisons with their 95% intervals and readings, and how many
    GRPO seeds ended with no held-out reply well-formed (the collapses).
    """
    from rollgym.benchmarks.metrics import wilson_interval

    arms, n_tasks = data["arms"], int(data["config"]["eval_tasks"])
    base = arms["base"]["per_seed"][0]
    low, high = wilson_interval(round(base * n_tasks), n_tasks)
    by = {(c["a"], c["b"], c["metric"]): c for c in data["comparisons"]}
    gain = by[("grpo", "format", data["metric"])]
    formats = by[("format", "base", "well_formed")]
    format_acc = by[("format", "base", data["metric"])]
    grpo, control = arms["grpo"], arms["format"]
    collapsed = sum(1 for r in data["runs"] if r["arm"] == "grpo" and r["extras"].get("well_formed") == 0.0)

    def seeds(arm: dict[str, Any]) -> str:
        values = [_pct(v) for v in arm["per_seed"]]
        return (", ".join(values[:-1]) + " and " + values[-1]) if len(values) > 1 else values[0]

    def diff(c: dict[str, Any]) -> str:
        mde = "" if c.get("mde") is None else f", MDE {c['mde']:.2f}"
        return f"{c['mean']:+.2f} ± {c['half_width']:.2f} ({c['verdict']}{mde})"

    first, last = grpo["seeds"][0], grpo["seeds"][-1]
    reading = ("**GRPO's gain beyond format is shown**" if gain["verdict"] == "higher" else
               "**a gain beyond format is not shown**")
    steps = int(data["config"]["grpo_steps"])
    return (
        f"A real 0.5B model, Qwen2.5-Coder-0.5B-Instruct (`rollgym models pull qwen2.5-coder-0.5b-instruct`), "
        f"solves {_pct(base)} of {n_tasks} distinct held-out CodeGen steps-2 tasks greedily (Wilson 95% "
        f"[{_pct(low)}, {_pct(high)}]). After {steps} GRPO steps on a CPU with the strict reward it solves "
        f"{seeds(grpo)} of {n_tasks} (seeds {first}-{last}), against {seeds(control)} for the same training "
        f"rewarded for format alone: GRPO minus the format control is {diff(gain)}, so {reading}; "
        f"{collapsed} of {len(grpo['seeds'])} GRPO seeds collapsed to syntax errors. The format control raises "
        f"well-formed replies by {diff(formats)} and accuracy by {diff(format_acc)}: "
        f"[experiment](docs/experiments.md#realmodel-qwen)."
    )

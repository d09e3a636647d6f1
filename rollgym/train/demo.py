"""A CPU demonstration of GRPO on an easy Countdown, and a small external-rollout study.

Run ``python -m rollgym.train.demo`` (a few minutes on a CPU; ``--quick`` for a
smoke run). It

1. builds a tiny Llama-architecture model and a byte-level BPE tokenizer
   trained on the env's own prompts (no download);
2. warms it up with supervised fine-tuning on :class:`OracleAgent` answers
   (:mod:`rollgym.train.sft`), deliberately briefly, so that GRPO has room;
3. trains it with the reference :class:`~rollgym.train.grpo.GRPOTrainer` on
   rollouts that :class:`~rollgym.agents.chat.ChatAgent` plays through rollgym's
   episode runner, under four conditions, each over a few seeds:

   * ``on-policy``: plain GRPO;
   * ``external``: oracle answers added as ``external:oracle`` rollouts to groups
     that solved nothing (:func:`~rollgym.rollout.strategies.mix_external`), no
     length control, joint reward processing;
   * ``external+length``: the same, cut to the group's own longest completion;
   * ``external+length+by-source``: the same, with advantages normalised per
     source (``GRPOConfig(by_source=True)``);

4. measures greedy accuracy on held-out tasks (the ``test`` split) along the
   way, writes every figure to a JSON file, draws the plots and renders the
   table in ``docs/training.md`` from that JSON.

The prompts omit the env's one-line system prompt (``ChatAgent(system_prompt="")``)
to keep sequences short on a CPU.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rollgym.core.registration import make

CONDITIONS: dict[str, dict[str, Any]] = {
    "on-policy": {"external": False},
    "external": {"external": True, "length": "none", "by_source": False},
    "external+length": {"external": True, "length": "truncate", "by_source": False},
    "external+length+by-source": {"external": True, "length": "truncate", "by_source": True},
}

TABLE_BEGIN = "<!-- grpo-demo-table:begin -->"
TABLE_END = "<!-- grpo-demo-table:end -->"


@dataclass
class DemoConfig:
    """Every setting of the demonstration (the defaults are the documented run)."""

    env_id: str = "Countdown-v0"
    env_kwargs: dict[str, Any] = field(default_factory=lambda: {
        "num_numbers": 3, "operators": "+-", "min_value": 1, "max_value": 9, "min_target": 10, "max_target": 20})
    vocab_size: int = 1024
    hidden_size: int = 64
    layers: int = 2
    sft_steps: int = 150
    sft_batch: int = 32
    sft_lr: float = 3e-3
    grpo_steps: int = 40
    tasks_per_step: int = 8
    group_size: int = 8
    max_tokens: int = 16
    temperature: float = 0.7
    learning_rate: float = 5e-4
    eval_tasks: int = 96
    eval_every: int = 8
    seeds: tuple[int, ...] = (0, 1, 2)
    conditions: tuple[str, ...] = tuple(CONDITIONS)
    seed: int = 0

    @classmethod
    def quick(cls) -> DemoConfig:
        """A seconds-long smoke run of the whole pipeline (used by the test suite)."""
        return cls(vocab_size=400, hidden_size=32, sft_steps=2, sft_batch=4, grpo_steps=2, tasks_per_step=2,
                   group_size=2, max_tokens=8, eval_tasks=4, eval_every=1, seeds=(0,),
                   conditions=("on-policy", "external+length+by-source"))


def build_demo_model(folder: str | Path, config: DemoConfig) -> tuple[Any, Any]:
    """A tiny random chat model whose BPE tokenizer is trained on the env's prompts (no download)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from rollgym.agents.backends.tiny import CHAT_TEMPLATE, SPECIAL_TOKENS

    env = make(config.env_id, split="train", **config.env_kwargs)
    texts = []
    try:
        for index in range(300):
            observation, _ = env.reset(options={"task_index": index})
            texts.append(observation)
    finally:
        env.close()
    texts += [f"<answer>{a} + {b} - {c}</answer>" for a in range(10) for b in range(10) for c in range(3)]
    core = Tokenizer(models.BPE(unk_token=None))
    # digits stay single tokens; everything else may merge across words, so the fixed rules text of
    # every prompt shrinks to a few tokens and sequences stay short on a CPU
    core.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(texts, trainer=trainers.BpeTrainer(
        vocab_size=config.vocab_size, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        bos_token=None)
    tokenizer.chat_template = CHAT_TEMPLATE
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    torch.manual_seed(config.seed)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=config.hidden_size, intermediate_size=config.hidden_size * 2,
        num_hidden_layers=config.layers, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
        tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None))
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def _train_tasks(config: DemoConfig, step: int, seed: int) -> list[Any]:
    import numpy as np

    rng = np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(7, step)))
    env = make(config.env_id, split="train", **config.env_kwargs)
    try:
        tasks = []
        for index in rng.integers(1_000, 1_000_000, size=config.tasks_per_step):
            env.reset(options={"task_index": int(index)})
            tasks.append(env.unwrapped.task)  # type: ignore[attr-defined]
        return tasks
    finally:
        env.close()


def run_condition(model: Any, tokenizer: Any, config: DemoConfig, condition: str, seed: int,
                  log_path: Path | None = None) -> dict[str, Any]:
    """GRPO from the warm-up weights under one condition; returns the accuracy curve and step statistics."""
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.agents.chat import ChatAgent
    from rollgym.rollout.strategies import mix_external
    from rollgym.train.adapters.episodes import play_groups
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer
    from rollgym.train.sft import demonstration_for, external_trajectory, greedy_accuracy

    settings = CONDITIONS[condition]
    backend = TransformersBackend(model, tokenizer, max_batch=256, batch_window_s=0.02)
    trainer = GRPOTrainer(model, tokenizer, GRPOConfig(learning_rate=config.learning_rate,
                                                       by_source=bool(settings.get("by_source")),
                                                       micro_batch_size=32, seed=seed), log_path=log_path)

    def accuracy() -> float:
        return greedy_accuracy(backend, config.env_id, range(config.eval_tasks), env_kwargs=config.env_kwargs,
                               max_tokens=config.max_tokens, system_prompt="")

    curve = [{"step": 0, "accuracy": accuracy()}]
    steps = []
    for step in range(config.grpo_steps):
        tasks = _train_tasks(config, step, seed)
        agent = ChatAgent(backend, SamplingParams(max_tokens=config.max_tokens, temperature=config.temperature,
                                                  seed=seed * 1_000_003 + step), system_prompt="")
        groups = play_groups(agent, config.env_id, tasks, config.group_size, env_kwargs=config.env_kwargs,
                             max_turns=1, seed=seed * 1_000_003 + step, prefix=f"s{step}-g")
        added = 0
        if settings["external"]:
            external = {}
            for group in groups:
                assert group.task is not None
                demo = demonstration_for(config.env_id, group.task, tokenizer, env_kwargs=config.env_kwargs,
                                         system_prompt="")
                external[group.task.id] = [external_trajectory(demo, backend, group_id=group.group_id)]
            mixed = mix_external(groups, external, per_group=1, only_if_better=True, length=settings["length"])
            added = sum(len(m.trajectories) - len(g.trajectories) for m, g in zip(mixed, groups))
            groups = mixed
        stats = trainer.step(groups)
        policy = [t.reward for g in groups for t in g.usable() if t.source == "policy" and t.reward is not None]
        steps.append({"step": step + 1, "policy_reward": sum(policy) / max(len(policy), 1), "external": added,
                      "loss": stats["loss"], "rows": stats["rows"]})
        if (step + 1) % config.eval_every == 0 or step + 1 == config.grpo_steps:
            curve.append({"step": step + 1, "accuracy": accuracy()})
    return {"condition": condition, "seed": seed, "curve": curve, "steps": steps}


def run_demo(config: DemoConfig, workdir: str | Path, *, progress: bool = True) -> dict[str, Any]:
    """Build, warm up, and run every condition and seed; returns the JSON-ready results."""
    import torch

    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.train.sft import greedy_accuracy, oracle_demonstrations, sft_train

    started = time.perf_counter()
    torch.manual_seed(config.seed)
    model, tokenizer = build_demo_model(Path(workdir) / "model", config)
    demos = oracle_demonstrations(config.env_id, tokenizer, range(max(256, config.sft_batch)),
                                  env_kwargs=config.env_kwargs, system_prompt="")
    before = greedy_accuracy(TransformersBackend(model, tokenizer), config.env_id, range(config.eval_tasks),
                             env_kwargs=config.env_kwargs, max_tokens=config.max_tokens, system_prompt="")
    losses = sft_train(model, demos, steps=config.sft_steps, batch_size=config.sft_batch,
                       learning_rate=config.sft_lr, pad_id=int(tokenizer.pad_token_id), seed=config.seed)
    warm = copy.deepcopy(model.state_dict())
    runs = []
    for condition in config.conditions:
        for seed in config.seeds:
            model.load_state_dict(warm)
            t0 = time.perf_counter()
            run = run_condition(model, tokenizer, config, condition, seed)
            run["seconds"] = round(time.perf_counter() - t0, 1)
            runs.append(run)
            if progress:
                print(f"{condition:28s} seed {seed}: accuracy {run['curve'][0]['accuracy']:.3f} -> "
                      f"{run['curve'][-1]['accuracy']:.3f} ({run['seconds']} s)", flush=True)
    return {
        "config": {**asdict(config), "seeds": list(config.seeds), "conditions": list(config.conditions)},
        "prompt_tokens": len(demos[0].prompt_ids),
        "accuracy_untrained": before,
        "sft_loss_first_last": [losses[0], losses[-1]] if losses else [],
        "runs": runs,
        "summary": summarize(runs),
        "seconds": round(time.perf_counter() - started, 1),
    }


def summarize(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per condition: mean (and per-seed) held-out accuracy after warm-up and after GRPO."""
    out = []
    for condition in dict.fromkeys(r["condition"] for r in runs):
        mine = [r for r in runs if r["condition"] == condition]
        start = [r["curve"][0]["accuracy"] for r in mine]
        end = [r["curve"][-1]["accuracy"] for r in mine]
        external = [sum(s["external"] for s in r["steps"]) for r in mine]
        out.append({"condition": condition, "seeds": [r["seed"] for r in mine],
                    "accuracy_start": sum(start) / len(start), "accuracy_end": sum(end) / len(end),
                    "accuracy_end_per_seed": end, "gain": (sum(end) - sum(start)) / len(end),
                    "external_rollouts": sum(external) / len(external)})
    return out


def render_table(results: dict[str, Any]) -> str:
    """The Markdown table of :func:`summarize` (what ``docs/training.md`` shows)."""
    lines = ["| condition | held-out accuracy after warm-up | after GRPO (mean) | per seed | gain | "
             "external rollouts added |", "|---|---|---|---|---|---|"]
    for row in results["summary"]:
        seeds = ", ".join(f"{a:.3f}" for a in row["accuracy_end_per_seed"])
        lines.append(f"| {row['condition']} | {row['accuracy_start']:.3f} | {row['accuracy_end']:.3f} | {seeds} | "
                     f"{row['gain']:+.3f} | {row['external_rollouts']:.1f} |")
    cfg = results["config"]
    lines.append("")
    lines.append(f"{cfg['env_id']} {json.dumps(cfg['env_kwargs'])}; {cfg['sft_steps']} warm-up steps, "
                 f"{cfg['grpo_steps']} GRPO steps of {cfg['tasks_per_step']} tasks x {cfg['group_size']} rollouts, "
                 f"seeds {cfg['seeds']}, {cfg['eval_tasks']} test tasks, greedy decoding; untrained accuracy "
                 f"{results['accuracy_untrained']:.3f}; whole run {results['seconds']:.0f} s.")
    return "\n".join(lines)


def plot_results(results: dict[str, Any], folder: str | Path) -> list[Path]:
    """``grpo_demo.png`` (on-policy accuracy per seed) and ``grpo_external.png`` (mean curve per condition)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for run in results["runs"]:
        if run["condition"] == "on-policy":
            ax.plot([p["step"] for p in run["curve"]], [p["accuracy"] for p in run["curve"]], marker="o",
                    label=f"seed {run['seed']}")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("held-out accuracy (greedy)")
    ax.set_title(f"GRPO on {results['config']['env_id']} (tiny model, CPU)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    paths.append(folder / "grpo_demo.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for condition in dict.fromkeys(r["condition"] for r in results["runs"]):
        mine = [r for r in results["runs"] if r["condition"] == condition]
        steps = [p["step"] for p in mine[0]["curve"]]
        mean = [sum(r["curve"][i]["accuracy"] for r in mine) / len(mine) for i in range(len(steps))]
        ax.plot(steps, mean, marker="o", label=condition)
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("held-out accuracy (mean over seeds)")
    ax.set_title("External oracle rollouts in GRPO groups")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(folder / "grpo_external.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def write_table(results: dict[str, Any], doc: str | Path) -> None:
    """Replace the text between the table markers of ``doc`` with :func:`render_table`."""
    doc = Path(doc)
    text = doc.read_text(encoding="utf-8")
    if TABLE_BEGIN not in text or TABLE_END not in text:
        raise ValueError(f"{doc} has no {TABLE_BEGIN} ... {TABLE_END} markers.")
    head, rest = text.split(TABLE_BEGIN, 1)
    _, tail = rest.split(TABLE_END, 1)
    doc.write_text(f"{head}{TABLE_BEGIN}\n{render_table(results)}\n{TABLE_END}{tail}", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m rollgym.train.demo [--quick] [--out docs/img] [--doc docs/training.md]``."""
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a seconds-long smoke run")
    parser.add_argument("--out", default="docs/img", help="folder for grpo_demo.json and the PNG plots")
    parser.add_argument("--doc", default=None, help="Markdown file whose table markers receive the table")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--grpo-steps", type=int, default=None)
    parser.add_argument("--sft-steps", type=int, default=None)
    parser.add_argument("--seeds", type=int, nargs="*", default=None)
    parser.add_argument("--conditions", nargs="*", choices=list(CONDITIONS), default=None)
    parser.add_argument("--lr", type=float, default=None, help="GRPO learning rate")
    parser.add_argument("--temperature", type=float, default=None, help="rollout sampling temperature")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(max(1, args.threads))
    config = DemoConfig.quick() if args.quick else DemoConfig()
    if args.grpo_steps is not None:
        config = replace(config, grpo_steps=args.grpo_steps)
    if args.sft_steps is not None:
        config = replace(config, sft_steps=args.sft_steps)
    if args.seeds:
        config = replace(config, seeds=tuple(args.seeds))
    if args.conditions:
        config = replace(config, conditions=tuple(args.conditions))
    if args.lr is not None:
        config = replace(config, learning_rate=args.lr)
    if args.temperature is not None:
        config = replace(config, temperature=args.temperature)
    with tempfile.TemporaryDirectory(prefix="rollgym-demo-") as workdir:
        results = run_demo(config, workdir)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "grpo_demo.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    plot_results(results, out)
    if args.doc:
        write_table(results, args.doc)
    print(render_table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

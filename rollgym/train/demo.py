"""A CPU demonstration of GRPO on an easy Countdown: the whole pipeline, with its gain measured honestly.

Run ``python -m rollgym.train.demo`` (minutes on a CPU; ``--quick`` for a smoke
run). It

1. builds a tiny Llama-architecture model and a byte-level BPE tokenizer
   trained on the env's own prompts (no download);
2. warms it up with supervised fine-tuning on :class:`OracleAgent` answers
   (:mod:`rollgym.train.sft`), deliberately briefly, so that GRPO has room;
3. trains it with the reference :class:`~rollgym.train.grpo.GRPOTrainer` on
   rollouts that :class:`~rollgym.agents.chat.ChatAgent` plays through rollgym's
   episode runner, once per seed;
4. measures greedy accuracy on held-out tasks (the ``test`` split) along the
   way and reports the gain over the warm-up model with its 95% interval over
   seeds.

It writes its JSON and plot to a new temporary folder (or ``--out``), never over
tracked files; only ``--doc`` (same as ``--doc docs/training.md``) writes
``docs/img/grpo_demo.*`` and the table in ``docs/training.md``.
The strategy comparisons (external rollouts, verified voting, dynamic sampling,
partial rollouts) are powered experiments in the repository's ``research/`` tree (``python -m research``
from a checkout).

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

from rollgym.core.doc_sections import replace_section
from rollgym.core.registration import make
from rollgym.train.figures import save_figure

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
    eval_tasks: int = 300
    eval_every: int = 8
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    seed: int = 0

    @classmethod
    def quick(cls) -> DemoConfig:
        """A seconds-long smoke run of the whole pipeline (used by the test suite)."""
        return cls(vocab_size=400, hidden_size=32, sft_steps=2, sft_batch=4, grpo_steps=2, tasks_per_step=2,
                   group_size=2, max_tokens=8, eval_tasks=4, eval_every=1, seeds=(0, 1))


def build_demo_model(folder: str | Path, config: DemoConfig, texts: Sequence[str] | None = None, *,
                     text_tool_tags: bool = False) -> tuple[Any, Any]:
    """A tiny random chat model whose BPE tokenizer is trained on the env's prompts (no download).

    ``texts`` replaces the training corpus of the tokenizer (by default: 300 of the env's first
    observations and Countdown-style answers). With ``text_tool_tags``, ``<tool_call>`` and
    ``</tool_call>`` are ordinary added tokens rather than special ones, so that decoding with
    ``skip_special_tokens=True`` (as the transformers backend does) keeps them, as Qwen's tokenizer does.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from rollgym.agents.backends.tiny import CHAT_TEMPLATE, SPECIAL_TOKENS

    if texts is None:
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
    tool_tags = [t for t in SPECIAL_TOKENS if "tool_call" in t]
    specials = [t for t in SPECIAL_TOKENS if t not in tool_tags] if text_tool_tags else SPECIAL_TOKENS
    core.train_from_iterator(texts, trainer=trainers.BpeTrainer(
        vocab_size=config.vocab_size, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    if text_tool_tags:
        core.add_tokens(tool_tags)  # added, not special: decoding keeps them
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


def run_seed(model: Any, tokenizer: Any, config: DemoConfig, seed: int, log_path: Path | None = None
             ) -> dict[str, Any]:
    """On-policy GRPO from the warm-up weights with one seed; returns the accuracy curve and step statistics."""
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.agents.chat import ChatAgent
    from rollgym.train.adapters.episodes import play_groups
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer
    from rollgym.train.sft import greedy_accuracy

    backend = TransformersBackend(model, tokenizer, max_batch=512, batch_window_s=0.02)
    trainer = GRPOTrainer(model, tokenizer, GRPOConfig(learning_rate=config.learning_rate, micro_batch_size=32,
                                                       seed=seed), log_path=log_path)

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
        stats = trainer.step(groups)
        rewards = [t.reward for g in groups for t in g.usable() if t.reward is not None]
        steps.append({"step": step + 1, "policy_reward": sum(rewards) / max(len(rewards), 1),
                      "loss": stats["loss"], "rows": stats["rows"]})
        if (step + 1) % config.eval_every == 0 or step + 1 == config.grpo_steps:
            curve.append({"step": step + 1, "accuracy": accuracy()})
    return {"seed": seed, "curve": curve, "steps": steps}


def run_demo(config: DemoConfig, workdir: str | Path, *, progress: bool = True) -> dict[str, Any]:
    """Build, warm up, and train once per seed; returns the JSON-ready results."""
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
    for seed in config.seeds:
        model.load_state_dict(warm)
        t0 = time.perf_counter()
        run = run_seed(model, tokenizer, config, seed)
        run["seconds"] = round(time.perf_counter() - t0, 1)
        runs.append(run)
        if progress:
            print(f"seed {seed}: accuracy {run['curve'][0]['accuracy']:.3f} -> {run['curve'][-1]['accuracy']:.3f} "
                  f"({run['seconds']} s)", flush=True)
    return {
        "config": {**asdict(config), "seeds": list(config.seeds)},
        "prompt_tokens": len(demos[0].prompt_ids),
        "accuracy_untrained": before,
        "sft_loss_first_last": [losses[0], losses[-1]] if losses else [],
        "runs": runs,
        "summary": summarize(runs),
        "seconds": round(time.perf_counter() - started, 1),
    }


def summarize(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Held-out accuracy after warm-up and after GRPO, and the per-seed gain with its 95% t interval."""
    from rollgym.train.stats import estimate

    start = [r["curve"][0]["accuracy"] for r in runs]
    end = [r["curve"][-1]["accuracy"] for r in runs]
    gain = estimate([b - a for a, b in zip(start, end)])
    return {"seeds": [r["seed"] for r in runs], "accuracy_start": sum(start) / len(start),
            "accuracy_end": estimate(end).to_dict(), "accuracy_end_per_seed": end, "gain": gain.to_dict(),
            "reading": gain.verdict("GRPO raised held-out accuracy", "GRPO lowered held-out accuracy")}


def render_table(results: dict[str, Any]) -> str:
    """The Markdown table of :func:`summarize` (what ``docs/training.md`` shows)."""
    summary = results["summary"]
    end, gain = summary["accuracy_end"], summary["gain"]

    def interval(d: dict[str, Any], signed: bool = False) -> str:
        half = "n/a" if d["half_width"] is None else f"{d['half_width']:.3f}"
        return f"{d['mean']:{'+' if signed else ''}.3f} ± {half}"

    seeds = ", ".join(f"{a:.3f}" for a in summary["accuracy_end_per_seed"])
    lines = ["| held-out accuracy after warm-up | after GRPO (mean ± 95% CI) | per seed | gain (mean ± 95% CI) | "
             "reading |", "|---|---|---|---|---|",
             f"| {summary['accuracy_start']:.3f} | {interval(end)} | {seeds} | {interval(gain, True)} | "
             f"{summary['reading']} |"]
    cfg = results["config"]
    lines.append("")
    lines.append(f"{cfg['env_id']} {json.dumps(cfg['env_kwargs'])}; {cfg['sft_steps']} warm-up steps, "
                 f"{cfg['grpo_steps']} GRPO steps of {cfg['tasks_per_step']} tasks x {cfg['group_size']} rollouts, "
                 f"seeds {cfg['seeds']}, {cfg['eval_tasks']} test tasks, greedy decoding; untrained accuracy "
                 f"{results['accuracy_untrained']:.3f}; whole run {results['seconds']:.0f} s.")
    return "\n".join(lines)


def plot_results(results: dict[str, Any], folder: str | Path) -> list[Path]:
    """``grpo_demo.png``: held-out accuracy per seed along the run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for run in results["runs"]:
        ax.plot([p["step"] for p in run["curve"]], [p["accuracy"] for p in run["curve"]], marker="o",
                label=f"seed {run['seed']}")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("held-out accuracy (greedy)")
    ax.set_title(f"GRPO on {results['config']['env_id']} (tiny model, CPU)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return [save_figure(fig, Path(folder) / "grpo_demo.png", dpi=110)]


def write_table(results: dict[str, Any], doc: str | Path) -> None:
    """Replace the text between the table markers of ``doc`` with :func:`render_table`."""
    doc = Path(doc)
    table = render_table(results)
    text = replace_section(doc.read_text(encoding="utf-8"), TABLE_BEGIN, TABLE_END, table, where=str(doc))
    doc.write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m rollgym.train.demo [--quick] [--out DIR | --doc [docs/training.md]]``."""
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a seconds-long smoke run")
    parser.add_argument("--out", default=None,
                        help="folder for grpo_demo.json and grpo_demo.png (default: a new temporary folder)")
    parser.add_argument("--doc", nargs="?", const=str(Path("docs") / "training.md"), default=None, metavar="MD",
                        help="regenerate the committed figures: the table between the markers of MD (default "
                             "docs/training.md) and grpo_demo.* in the img folder beside it")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--grpo-steps", type=int, default=None)
    parser.add_argument("--sft-steps", type=int, default=None)
    parser.add_argument("--seeds", type=int, nargs="*", default=None)
    parser.add_argument("--lr", type=float, default=None, help="GRPO learning rate")
    parser.add_argument("--temperature", type=float, default=None, help="rollout sampling temperature")
    args = parser.parse_args(argv)
    doc = Path(args.doc) if args.doc else None
    if doc is not None and (args.quick or args.out):
        parser.error("--doc regenerates the committed figures from a full run; it takes neither --quick nor --out")
    if doc is not None and not doc.exists():
        parser.error(f"--doc: {doc} not found; run from the repository root or name the Markdown file")
    import torch

    torch.set_num_threads(max(1, args.threads))
    config = DemoConfig.quick() if args.quick else DemoConfig()
    if args.grpo_steps is not None:
        config = replace(config, grpo_steps=args.grpo_steps)
    if args.sft_steps is not None:
        config = replace(config, sft_steps=args.sft_steps)
    if args.seeds:
        config = replace(config, seeds=tuple(args.seeds))
    if args.lr is not None:
        config = replace(config, learning_rate=args.lr)
    if args.temperature is not None:
        config = replace(config, temperature=args.temperature)
    with tempfile.TemporaryDirectory(prefix="rollgym-demo-") as workdir:
        results = run_demo(config, workdir)
    out = doc.parent / "img" if doc is not None else Path(args.out or tempfile.mkdtemp(prefix="rollgym-demo-out-"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "grpo_demo.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    plot_results(results, out)
    if doc is not None:
        write_table(results, doc)
    print(render_table(results))
    print(f"\nwrote {out / 'grpo_demo.json'} and {out / 'grpo_demo.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""GRPO with a tiny model on Countdown's easiest level: train vs test vs a harder level, and a curriculum run.

Run: nice python examples/curriculum_grpo.py [--quick] [--out docs/img] [--seeds 0 1 2]

A tiny Llama-architecture model (built from a config, tokenizer trained on the env's own
prompts; no download) is warmed up on 256 oracle answers of Countdown level 0 (``n2``: two
numbers from 1-20, a target of 10-99), then trained for a few dozen GRPO steps with
rollgym's reference trainer (:mod:`rollgym.train.grpo`) on fresh level-0 training tasks.
Greedy success is measured on three sets of 96 tasks, before and after GRPO:

* ``train``: level 0, ``train`` split, the first 96 of the warm-up tasks (seen);
* ``test``: level 0, ``test`` split (new tasks of the same level; no task shared with train);
* ``harder``: level 1 (``n3``: three numbers), ``test`` split: a level it never trained on.

Countdown has no ``test_unseen`` split; the unseen *level* plays that role here. The oracle
and the random policy are measured on the same sets. A last run trains from the same
warm-up weights with a :class:`~rollgym.rollout.curriculum.Curriculum` choosing the level,
and reports its schedule. Everything goes to ``<out>/curriculum_grpo.json`` and the table
is printed (docs/curriculum.md shows it). ``--quick`` is a seconds-long smoke run.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

ENV = "Countdown-v0"


@dataclass(frozen=True)
class Settings:
    """The run's settings (the defaults are the documented run)."""

    sft_steps: int = 150
    sft_tasks: int = 256
    grpo_steps: int = 40
    tasks_per_step: int = 8
    group_size: int = 8
    learning_rate: float = 5e-4
    temperature: float = 0.7
    max_tokens: int = 16
    eval_tasks: int = 96
    band: tuple[float, float] = (0.3, 0.7)
    seeds: tuple[int, ...] = (0, 1, 2)

    @classmethod
    def quick(cls) -> Settings:
        return cls(sft_steps=2, sft_tasks=8, grpo_steps=2, tasks_per_step=2, group_size=2, eval_tasks=4, seeds=(0,))


def level_kwargs(level: int) -> dict[str, Any]:
    """The env options of a Countdown level (its knobs are ``CountdownEnv`` arguments)."""
    import rollgym

    env = rollgym.make(ENV)
    try:
        return dict(env.unwrapped.difficulty.levels[level].knobs)  # type: ignore[attr-defined]
    finally:
        env.close()


SETS = (("train", "train", 0), ("test", "test", 0), ("harder", "test", 1))


def evaluate(backend: Any, settings: Settings) -> dict[str, float]:
    """Greedy success on the three sets."""
    from rollgym.train.sft import greedy_accuracy

    return {name: greedy_accuracy(backend, ENV, range(settings.eval_tasks), split=split, env_kwargs=level_kwargs(lv),
                                  max_tokens=settings.max_tokens, system_prompt="")
            for name, split, lv in SETS}


def baselines(settings: Settings) -> dict[str, dict[str, float]]:
    """The oracle's and the random policy's success on the three sets (the random policy averaged over 20 draws)."""
    import numpy as np

    import rollgym
    from rollgym.envs.countdown import countdown_oracle, countdown_random_policy

    rng = np.random.default_rng(0)
    out: dict[str, dict[str, float]] = {"oracle": {}, "random": {}}
    for name, split, lv in SETS:
        env = rollgym.make(ENV, split=split, **level_kwargs(lv))
        oracle = random = 0.0
        for index in range(settings.eval_tasks):
            observation, info = env.reset(options={"task_index": index})
            task = env.unwrapped.task  # type: ignore[attr-defined]
            oracle += env.step(countdown_oracle(observation, info))[4]["correct"]
            for _ in range(20):
                env.reset(options={"task": task})
                random += env.step(countdown_random_policy(observation, info, rng))[4]["correct"] / 20
        env.close()
        out["oracle"][name], out["random"][name] = oracle / settings.eval_tasks, random / settings.eval_tasks
    return out


def grpo(model: Any, tokenizer: Any, backend: Any, settings: Settings, seed: int,
         curriculum: Any = None) -> list[dict[str, Any]]:
    """GRPO steps on fresh training tasks: level 0, or the curriculum's level when one is given."""
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent
    from rollgym.rollout import collect_async
    from rollgym.train.grpo import GRPOConfig, GRPOTrainer

    trainer = GRPOTrainer(model, tokenizer, GRPOConfig(learning_rate=settings.learning_rate, micro_batch_size=32,
                                                       seed=seed))
    steps = []
    for step in range(settings.grpo_steps):
        agent = ChatAgent(backend, SamplingParams(max_tokens=settings.max_tokens, temperature=settings.temperature,
                                                  seed=seed * 1_000_003 + step), system_prompt="")
        groups = collect_async(agent, ENV, n_tasks=settings.tasks_per_step, group_size=settings.group_size,
                               split="train", seed=seed * 1_000_003 + step,
                               concurrency=settings.tasks_per_step * settings.group_size,
                               env_kwargs=None if curriculum is not None else level_kwargs(0),
                               task_chooser=curriculum)
        stats = trainer.step(groups)
        steps.append({"step": step + 1, "sampled_success": stats["reward_mean"], "loss": stats["loss"]})
    return steps


def run(settings: Settings, workdir: Path, progress: bool = True) -> dict[str, Any]:
    """Every seed's fixed-level run, the curriculum run (first seed) and the baselines; JSON-ready."""
    import torch

    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.rollout.curriculum import Curriculum
    from rollgym.train.demo import DemoConfig, build_demo_model
    from rollgym.train.sft import oracle_demonstrations, sft_train

    started = time.perf_counter()
    results: dict[str, Any] = {"settings": asdict(settings), "baselines": baselines(settings), "runs": []}
    for seed in settings.seeds:
        t0 = time.perf_counter()
        torch.manual_seed(seed)
        model, tokenizer = build_demo_model(workdir / f"model-{seed}", DemoConfig(env_kwargs=level_kwargs(0),
                                                                                   seed=seed))
        backend = TransformersBackend(model, tokenizer, max_batch=256, batch_window_s=0.02)
        demos = oracle_demonstrations(ENV, tokenizer, range(settings.sft_tasks), env_kwargs=level_kwargs(0),
                                      system_prompt="")
        sft_train(model, demos, steps=settings.sft_steps, batch_size=32, learning_rate=3e-3,
                  pad_id=int(tokenizer.pad_token_id), seed=seed)
        warm = copy.deepcopy(model.state_dict())
        before = evaluate(backend, settings)
        steps = grpo(model, tokenizer, backend, settings, seed)
        after = evaluate(backend, settings)
        results["runs"].append({"seed": seed, "before": before, "after": after, "steps": steps,
                                "seconds": round(time.perf_counter() - t0, 1)})
        if progress:
            print(f"seed {seed}: {before} -> {after} ({time.perf_counter() - t0:.0f} s)", flush=True)
        if seed == settings.seeds[0]:
            model.load_state_dict(warm)
            curriculum = Curriculum(band=settings.band, min_episodes=settings.tasks_per_step * settings.group_size,
                                    seed=seed)
            steps = grpo(model, tokenizer, backend, settings, seed, curriculum=curriculum)
            results["curriculum"] = {"seed": seed, "band": list(settings.band), "after": evaluate(backend, settings),
                                     "levels": [r["envs"][ENV]["level"] for r in curriculum.schedule],
                                     "decisions": [r["envs"][ENV]["decision"] for r in curriculum.schedule],
                                     "steps": steps}
    results["seconds"] = round(time.perf_counter() - started, 1)
    return results


def table(results: dict[str, Any]) -> str:
    """The Markdown table docs/curriculum.md shows."""
    lines = ["| agent | train (level 0, seen) | test (level 0) | harder (level 1, never trained) |",
             "|---|---|---|---|"]
    for name in ("oracle", "random"):
        row = results["baselines"][name]
        lines.append(f"| {name} | {row['train']:.3f} | {row['test']:.3f} | {row['harder']:.3f} |")
    for when in ("before", "after"):
        cells = []
        for set_name in ("train", "test", "harder"):
            values = [r[when][set_name] for r in results["runs"]]
            cells.append(f"{sum(values) / len(values):.3f} ({', '.join(f'{v:.2f}' for v in values)})")
        label = "tiny model, warm-up only" if when == "before" else "tiny model, after GRPO"
        lines.append(f"| {label} | {' | '.join(cells)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a seconds-long smoke run")
    parser.add_argument("--out", default="docs/img", help="folder for curriculum_grpo.json")
    parser.add_argument("--seeds", type=int, nargs="*", default=None)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    settings = Settings.quick() if args.quick else Settings()
    if args.seeds:
        settings = replace(settings, seeds=tuple(args.seeds))
    with tempfile.TemporaryDirectory(prefix="rollgym-curriculum-") as workdir:
        results = run(settings, Path(workdir))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "curriculum_grpo.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(table(results))
    print(f"curriculum (band {results['curriculum']['band']}): levels {results['curriculum']['levels']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

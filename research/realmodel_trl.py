"""The real-model experiment's twin: TRL's ``GRPOTrainer`` on the very settings of ``realmodel``.

Same model, tasks, shaped reward, group size, learning rate, steps and held-out evaluation as
:mod:`research.realmodel` (whose docstring describes them); the ``trl`` arm trains
through :func:`rollgym.train.adapters.trl.run_trl_grpo`. The ``base`` arm is the same untrained model,
so seed ``s`` here pairs with seed ``s`` there.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from research import realmodel
from research.pairing import run_start
from research.runner import by_arm, extra, mde_text, paired_comparison, save_figure
from rollgym.core.errors import ConfigError
from rollgym.train.stats import estimate

EXPERIMENT = dataclasses.replace(
    realmodel.EXPERIMENT,
    name="realmodel-trl",
    title="The real-model experiment's twin: TRL's GRPOTrainer on the same settings",
    question="Does TRL's GRPOTrainer, driven by rollgym on the same tasks and rewards, move SmolLM2-135M-Instruct "
             "as rollgym's trainer does?",
    arms=("base", "trl"),
)


#: What the two trainers are compared on: the held-out metric, then the two label measures.
MEASURES = ("metric", "answer_block", "offered_numbers")


def _per_seed(data: dict[str, Any], arm: str, measure: str) -> dict[int, float]:
    return by_arm(data["runs"], arm, (lambda run: run["metric"]) if measure == "metric" else extra(measure))


def compare_trainers(ours: dict[str, Any], theirs: dict[str, Any]) -> list[dict[str, Any]]:
    """Paired differences ``trl - grpo`` over the seeds both results files hold, one row per measure.

    ``ours`` is the ``realmodel`` JSON (arm ``grpo``), ``theirs`` the ``realmodel-trl`` JSON (arm ``trl``). Seed
    ``s`` of both trains on the same tasks, so the difference is paired. Each row has the estimate, the runner's
    reading (``no detectable difference`` is "they agree within noise") and the minimum detectable effect.
    """
    if ours.get("config") != theirs.get("config"):
        raise ConfigError("the two results files were run with different settings, so they cannot be paired; "
                          "rerun realmodel-trl with realmodel's settings")
    starts = {run_start(r, data.get("starting_point")) for data, arm in ((ours, "grpo"), (theirs, "trl"))
              for r in data["runs"] if r["arm"] == arm}
    if None in starts or len(starts) != 1:
        raise ConfigError("the two results files' runs do not record one starting point (the same model weights "
                          "and tokenizer), so the trainers cannot be paired; rerun both from the same model")
    rows = []
    for measure in MEASURES:
        a, b = _per_seed(theirs, "trl", measure), _per_seed(ours, "grpo", measure)
        seeds = sorted(set(a) & set(b))
        if not seeds:
            continue
        rows.append({"measure": measure, "trl": [a[s] for s in seeds], "grpo": [b[s] for s in seeds],
                     **paired_comparison("trl", "grpo", measure, seeds, [a[s] - b[s] for s in seeds])})
    return rows


def _mean_curve(curves: list[list[float]]) -> tuple[list[int], list[float], list[float]]:
    """Per step: the mean over seeds and the 95% half-width (0 with one seed)."""
    width = min(len(c) for c in curves)
    xs, means, halves = [], [], []
    for i in range(width):
        est = estimate([c[i] for c in curves])
        xs.append(i + 1)
        means.append(est.mean)
        halves.append(est.half_width if math.isfinite(est.half_width) else 0.0)
    return xs, means, halves


def plot_side_by_side(ours: dict[str, Any], theirs: dict[str, Any], path: str | Path) -> Path:
    """One PNG, both trainers: mean train reward per step (95% band over seeds) and held-out accuracy at each
    evaluation (mean over seeds), rollgym's ``grpo`` beside TRL's ``trl``, over the seeds both files hold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paired = set(_per_seed(ours, "grpo", "metric")) & set(_per_seed(theirs, "trl", "metric"))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for data, arm, label in ((ours, "grpo", "rollgym GRPOTrainer"), (theirs, "trl", "TRL GRPOTrainer")):
        runs = [r for r in data["runs"] if r["arm"] == arm and int(r["seed"]) in paired]
        rewards = [list(r["extras"].get("reward_curve") or []) for r in runs]
        rewards = [c for c in rewards if c]
        if rewards:
            xs, means, halves = _mean_curve(rewards)
            (line,) = left.plot(xs, means, label=f"{label} ({len(rewards)} seeds)")
            left.fill_between(xs, [m - h for m, h in zip(means, halves)], [m + h for m, h in zip(means, halves)],
                              color=line.get_color(), alpha=0.2)
        curves = [r["curve"] for r in runs if r["curve"]]
        if curves:
            width = min(len(c) for c in curves)
            xs_eval = [curves[0][i][0] for i in range(width)]
            ys = [sum(c[i][1] for c in curves) / len(curves) for i in range(width)]
            right.plot(xs_eval, ys, marker="o", label=label)
    left.set_xlabel("training step")
    left.set_ylabel("mean shaped train reward (95% band)", fontsize=8)
    right.set_xlabel("training step")
    right.set_ylabel("held-out greedy accuracy (mean over seeds)", fontsize=8)
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("SmolLM2-135M-Instruct on Countdown n2: rollgym's GRPO and TRL's, same tasks and rewards", fontsize=10)
    return save_figure(fig, path)


def render_comparison(rows: list[dict[str, Any]]) -> str:
    """The comparison rows as a Markdown table."""
    lines = ["| measure | TRL per seed | rollgym per seed | TRL - rollgym (95% CI) | reading | MDE |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        mde = mde_text(row, 3)
        lines.append(f"| {row['measure']} | {', '.join(f'{v:.3f}' for v in row['trl'])} | "
                     f"{', '.join(f'{v:.3f}' for v in row['grpo'])} | {row['mean']:+.3f} "
                     f"[{row['low']:+.3f}, {row['high']:+.3f}] | {row['verdict']} | {mde} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m research.realmodel_trl [GRPO_JSON TRL_JSON OUT_PNG]``: print the paired
    comparison of the two trainers and draw them side by side (defaults: the committed files)."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    grpo_path, trl_path, png = (args + [None] * 3)[:3] if args else (None, None, None)
    ours = json.loads(Path(grpo_path or "docs/experiments/realmodel.json").read_text(encoding="utf-8"))
    theirs = json.loads(Path(trl_path or "docs/experiments/realmodel-trl.json").read_text(encoding="utf-8"))
    print(render_comparison(compare_trainers(ours, theirs)))
    print(f"wrote {plot_side_by_side(ours, theirs, png or 'docs/img/realmodel_trainers.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

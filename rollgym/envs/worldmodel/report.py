"""Evaluate the reference world models on held-out scenes and draw the figures of docs/worldmodel.md.

Usage: ``python -m rollgym.envs.worldmodel.report --episodes 32 --out docs``

Writes ``<out>/img/worldmodel_strip_<model>.png`` (comparison strips of test
scene 0) and ``<out>/img/worldmodel_results.png`` (masked skills over copy-last
per model with 95% intervals, and per frame along the autoregressive rollout;
needs matplotlib), and prints a markdown table of episode-level scores per model
and mode. Every number comes from ``WorldModel-v0`` itself on test-split scenes.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from rollgym.core.io import atomic_path
from rollgym.envs.worldmodel.env import WorldModelEnv
from rollgym.envs.worldmodel.pictures import comparison_strip, write_png

COLOURS = {
    "copy_last": (120, 120, 120),
    "linear": (230, 160, 30),
    "supervised": (40, 110, 220),
    "finetuned": (220, 40, 60),
}


def _models() -> dict[str, Any]:
    from rollgym.envs.worldmodel.models import CopyLastModel, FlowWarpWorldModel, LinearExtrapolationModel

    models: dict[str, Any] = {"copy_last": CopyLastModel(), "linear": LinearExtrapolationModel()}
    try:
        models["supervised"] = FlowWarpWorldModel("supervised")
        models["finetuned"] = FlowWarpWorldModel("finetuned")
    except ImportError:
        pass
    return models


def run_episode(model: Any, env: WorldModelEnv, index: int) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """Play one held-out episode; return its ``episode`` info, true frames and predictions."""
    obs, info = env.reset(options={"task_index": index, "split": "test"})
    truths, preds, done = [], [], False
    state: dict[str, Any] = {}
    while not done:
        pred = model.act(obs, info)
        obs, _, done, _, info = env.step(pred)
        state = env._state or {}
        truths.append(state["last_truth"])
        preds.append(state["last_prediction"])
    return info["episode"], np.concatenate(truths, axis=1), np.concatenate(preds, axis=1)


LABELS = {"copy_last": "copy-last", "linear": "linear extrapolation", "supervised": "flow-warp CNN, supervised",
          "finetuned": "flow-warp CNN, reward fine-tuned"}


def _clean(x: float) -> float:
    """``x`` as a float, with rounding noise around zero (copy-last's -1e-16) printed as +0."""
    return 0.0 if abs(x) < 1e-12 else float(x)


def _ci95(values: list[float]) -> float:
    """Half-width of a normal 95% interval of the mean (0 for a single value)."""
    return float(1.96 * np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def results_figure(path: Path, per_episode: dict[str, list[dict[str, float]]],
                   curves: dict[str, dict[str, np.ndarray]], episodes: int) -> Path:
    """Draw the four-panel summary of docs/worldmodel.md (needs matplotlib) and write it as a PNG.

    Top: episode-level masked SSIM and PSNR skill over copy-last per model, with 95% intervals over the
    held-out scenes. Bottom: the same skills per frame along the autoregressive rollout. Linear
    extrapolation is far below zero and left out of the panels (it is in the printed table).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        from rollgym.core.errors import MissingDependencyError

        raise MissingDependencyError("The world-model figures need matplotlib: pip install matplotlib.") from exc
    names = [n for n in ("copy_last", "supervised", "finetuned") if n in per_episode]
    fig, axes = plt.subplots(2, 2, figsize=(10.5, 7.5))
    for ax, key, title in ((axes[0, 0], "ssim_skill_masked", "masked SSIM skill over copy-last"),
                           (axes[0, 1], "psnr_skill_masked_db", "masked PSNR skill over copy-last (dB)")):
        means = [float(np.mean([e[key] for e in per_episode[n]])) for n in names]
        errs = [_ci95([e[key] for e in per_episode[n]]) for n in names]
        colours = [np.array(COLOURS[n]) / 255 for n in names]
        bars = ax.bar(range(len(names)), means, yerr=errs, capsize=5, color=colours)
        ax.bar_label(bars, labels=[f"{m:+.3f}" for m in means], padding=3)
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(range(len(names)), [LABELS[n].replace(", ", ",\n") for n in names])
        ax.set_title(title)
        ax.set_ylim(min(0.0, min(m - e for m, e in zip(means, errs))) * 1.2,
                    max(m + e for m, e in zip(means, errs)) * 1.45)
        if "supervised" in per_episode and "finetuned" in per_episode:  # paired: the same scenes for both
            diff = [f[key] - s[key] for s, f in zip(per_episode["supervised"], per_episode["finetuned"])]
            wins = sum(d > 0 for d in diff)
            ax.text(0.02, 0.97, f"fine-tuned - supervised, paired:\n{np.mean(diff):+.4f} +/- {_ci95(diff):.4f}, "
                    f"higher on {wins}/{len(diff)} scenes", transform=ax.transAxes, va="top", fontsize=8)
    for ax, metric, title in ((axes[1, 0], "ssim", "masked SSIM skill per predicted frame"),
                              (axes[1, 1], "psnr", "masked PSNR skill per predicted frame (dB)")):
        for n in names:
            if n in curves[metric]:
                s = curves[metric][n]
                ax.plot(np.arange(1, len(s) + 1), s, marker="o", ms=3, color=np.array(COLOURS[n]) / 255,
                        label=LABELS[n])
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xlabel("frame of the autoregressive rollout (no ground truth after reset)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[1, 1].legend(loc="lower right", fontsize=8)
    title = f"WorldModel-v0, autoregressive, {episodes} held-out test scenes, 3 views (bars: mean and 95% interval)"
    if "supervised" in per_episode and "finetuned" in per_episode:
        diff = [f["reward"] - s["reward"] for s, f in zip(per_episode["supervised"], per_episode["finetuned"])]
        title += (f"\nenv reward, fine-tuned - supervised (paired): {np.mean(diff):+.4f} +/- {_ci95(diff):.4f}, "
                  f"higher on {sum(d > 0 for d in diff)}/{len(diff)} scenes")
    fig.suptitle(title)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> None:
    """Evaluate, print the table, write the figures."""
    parser = argparse.ArgumentParser(description="Evaluate reference world models on held-out scenes.")
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--chunks", type=int, default=3)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--out", type=Path, default=Path("worldmodel-report"),
                        help="folder for img/*.png (default worldmodel-report; "
                             "--out docs regenerates the docs' figures)")
    args = parser.parse_args(argv)
    models = _models()
    rows = []
    curves: dict[str, dict[str, list[np.ndarray]]] = {m: {name: [] for name in models} for m in ("ssim", "psnr")}
    autoregressive: dict[str, list[dict[str, float]]] = {}
    for mode in ("autoregressive", "teacher_forced"):
        env = WorldModelEnv(size=args.size, min_chunks=args.chunks, max_chunks=args.chunks, mode=mode)
        for name, model in models.items():
            eps = []
            for i in range(args.episodes):
                ep, truth, pred = run_episode(model, env, i)
                eps.append(ep)
                if mode == "autoregressive":
                    c = ep["curves"]
                    for metric in ("ssim", "psnr"):
                        gain = [np.array(c[v][f"{metric}_masked"], float)
                                - np.array(c[v][f"baseline_{metric}_masked"], float) for v in c]
                        curves[metric][name].append(np.nanmean(gain, axis=0))
                    if i == 0:
                        strip = comparison_strip(truth[:, ::2], pred[:, ::2])
                        write_png(args.out / "img" / f"worldmodel_strip_{name}.png", strip)
            if mode == "autoregressive":
                autoregressive[name] = [{**e["reward_components"], "reward": e["reward"]} for e in eps]
            comp = {k: _clean(np.mean([e["reward_components"][k] for e in eps])) for k in eps[0]["reward_components"]}
            rows.append((mode, name, _clean(np.mean([e["reward"] for e in eps])), comp))
    print("| mode | model | reward | SSIM skill | PSNR skill (dB) | masked SSIM skill | masked PSNR skill (dB) |")
    print("|---|---|---|---|---|---|---|")
    for mode, name, reward, c in rows:
        print(f"| {mode} | {name} | {reward:+.4f} | {c['ssim_skill']:+.4f} | {c['psnr_skill_db']:+.3f} | "
              f"{c['ssim_skill_masked']:+.4f} | {c['psnr_skill_masked_db']:+.3f} |")
    means = {metric: {name: np.nanmean(np.stack(v), axis=0) for name, v in curves[metric].items() if v}
             for metric in ("ssim", "psnr")}
    for metric, chart in means.items():
        for name, s in chart.items():
            print(f"{name}: per-frame masked {metric.upper()} skill " + " ".join(f"{x:+.3f}" for x in s))
    if "supervised" in autoregressive and "finetuned" in autoregressive:
        for key in ("reward", "ssim_skill_masked", "psnr_skill_masked_db"):
            diff = [f[key] - s[key] for s, f in zip(autoregressive["supervised"], autoregressive["finetuned"])]
            print(f"autoregressive, fine-tuned - supervised, {key}: {np.mean(diff):+.4f} +/- {_ci95(diff):.4f} "
                  f"(95%), higher on {sum(d > 0 for d in diff)}/{len(diff)} scenes")
        for name, eps in autoregressive.items():
            for key in ("reward", "ssim_skill_masked", "psnr_skill_masked_db"):
                values = [e[key] for e in eps]
                print(f"autoregressive, {name}, {key}: {np.mean(values):+.4f} +/- {_ci95(values):.4f} (95%)")
    print(f"wrote {results_figure(args.out / 'img' / 'worldmodel_results.png', autoregressive, means, args.episodes)}")


if __name__ == "__main__":
    main()

"""Evaluate the reference world models on held-out scenes and draw the figures of docs/worldmodel.md.

Usage: ``python -m rollgym.envs.worldmodel.report --episodes 8 --out docs``

Writes ``<out>/img/worldmodel_*.png`` (comparison strips and a per-frame skill
chart) and prints a markdown table of episode-level scores per model and mode.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from rollgym.envs.worldmodel.env import WorldModelEnv
from rollgym.envs.worldmodel.pictures import comparison_strip, write_png

COLOURS = {
    "copy_last": (120, 120, 120),
    "linear": (230, 160, 30),
    "supervised": (40, 110, 220),
    "finetuned": (220, 40, 60),
}


def _models() -> dict[str, Any]:
    from rollgym.agents.worldmodels import CopyLastModel, FlowWarpWorldModel, LinearExtrapolationModel

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


def _line_chart(series: dict[str, np.ndarray], height: int = 220, width: int = 420) -> np.ndarray:
    """A plain line chart (no text) of equally long series on a white canvas with a zero line."""
    img = np.full((height, width, 3), 255, np.uint8)
    values = np.concatenate(list(series.values()))
    lo, hi = min(0.0, float(values.min())), max(0.0, float(values.max()))
    span = hi - lo or 1.0
    pad = 12

    def y(v: float) -> int:
        return round(height - pad - (v - lo) / span * (height - 2 * pad))

    img[y(0.0), pad : width - pad] = (0, 0, 0)
    for name, s in series.items():
        xs = np.linspace(pad, width - pad, len(s))
        for i in range(len(s) - 1):
            for t in np.linspace(0, 1, 40):
                cx = round(float(xs[i] + t * (xs[i + 1] - xs[i])))
                cy = y(float(s[i] + t * (s[i + 1] - s[i])))
                img[max(cy - 1, 0) : cy + 2, max(cx - 1, 0) : cx + 2] = COLOURS.get(name, (0, 0, 0))
    return img


def main(argv: list[str] | None = None) -> None:
    """Evaluate, print the table, write the figures."""
    parser = argparse.ArgumentParser(description="Evaluate reference world models on held-out scenes.")
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--chunks", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("docs"))
    args = parser.parse_args(argv)
    models = _models()
    rows = []
    curves: dict[str, dict[str, list[np.ndarray]]] = {m: {name: [] for name in models} for m in ("ssim", "psnr")}
    for mode in ("autoregressive", "teacher_forced"):
        env = WorldModelEnv(min_chunks=args.chunks, max_chunks=args.chunks, mode=mode)
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
            comp = {k: float(np.mean([e["reward_components"][k] for e in eps])) for k in eps[0]["reward_components"]}
            rows.append((mode, name, float(np.mean([e["reward"] for e in eps])), comp))
    print("| mode | model | reward | SSIM skill | PSNR skill (dB) | masked SSIM skill | masked PSNR skill (dB) |")
    print("|---|---|---|---|---|---|---|")
    for mode, name, reward, c in rows:
        print(f"| {mode} | {name} | {reward:+.4f} | {c['ssim_skill']:+.4f} | {c['psnr_skill_db']:+.3f} | "
              f"{c['ssim_skill_masked']:+.4f} | {c['psnr_skill_masked_db']:+.3f} |")
    for metric in ("ssim", "psnr"):
        chart = {name: np.nanmean(np.stack(v), axis=0) for name, v in curves[metric].items() if v}
        write_png(args.out / "img" / f"worldmodel_masked_{metric}_skill.png", _line_chart(chart))
        for name, s in chart.items():
            print(f"{name}: per-frame masked {metric.upper()} skill " + " ".join(f"{x:+.3f}" for x in s))


if __name__ == "__main__":
    main()

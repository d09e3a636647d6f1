"""Benchmark the world-model family: simulator frames per second and reward time per clip.

Usage: ``python bench/bench_worldmodel.py [--steps 600] [--size 64]``

- Simulator: scripted policy + physics + rendering of three 64x64 views, one core;
  target at least 150 steps/s.
- Reward: one clip (3 views x 4 frames) scored by rollgym's vectorised SSIM/PSNR
  (prediction, copy-last baseline, full frame and motion mask) against the peer a
  user would otherwise pick, scikit-image's ``structural_similarity`` and
  ``peak_signal_noise_ratio`` called per frame for the same full-frame numbers.
- Env: one ``WorldModel-v0`` step (simulate the next chunk, score, observe).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from rollgym.envs.worldmodel.env import WorldModelEnv
from rollgym.envs.worldmodel.episode import GroundTruthEpisode
from rollgym.envs.worldmodel.metrics import score_clip
from rollgym.envs.worldmodel.render import Renderer


def bench_simulator(steps: int, size: int) -> tuple[float, float]:
    """Steps per second of policy + physics + three rendered views: per wall second and per CPU second."""
    renderer = Renderer(size=size)
    done, began, cpu = 0, time.perf_counter(), time.process_time()
    index = 0
    while done < steps:
        ep = GroundTruthEpisode.from_index("train", index, renderer, context=1)
        n = min(50, steps - done)
        ep.next_chunk(n)
        done += n + 1
        index += 1
    return done / (time.perf_counter() - began), done / (time.process_time() - cpu)


def _clip(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ep = GroundTruthEpisode.from_index("test", 0, Renderer(size=size), context=1, policy="push")
    base = ep.context[:, 0].astype(np.float32) / 255
    truth = ep.next_chunk(4).frames.astype(np.float32) / 255
    pred = np.clip(truth + np.random.default_rng(0).normal(0, 0.03, truth.shape), 0, 1).astype(np.float32)
    return truth, pred, base


def bench_reward(size: int, repeats: int = 20) -> tuple[float, float | None]:
    """CPU seconds per clip: rollgym's full scoring, and scikit-image's per-frame SSIM + PSNR (or None)."""
    truth, pred, base = _clip(size)
    score_clip(truth, pred, base)
    began = time.process_time()
    for _ in range(repeats):
        score_clip(truth, pred, base)
    ours = (time.process_time() - began) / repeats
    try:
        from skimage.metrics import peak_signal_noise_ratio, structural_similarity
    except ImportError:
        return ours, None
    began = time.process_time()
    for _ in range(max(1, repeats // 4)):
        for v in range(truth.shape[0]):
            for f in range(truth.shape[1]):
                for p in (pred[v, f], base[v]):
                    structural_similarity(p, truth[v, f], data_range=1.0, channel_axis=-1, gaussian_weights=True,
                                          sigma=1.5, use_sample_covariance=False)
                    peak_signal_noise_ratio(truth[v, f], p, data_range=1.0)
    return ours, (time.process_time() - began) / max(1, repeats // 4)


def bench_env(size: int, steps: int = 30) -> float:
    """CPU seconds per env step (4 frames, 3 views)."""
    env = WorldModelEnv(size=size)
    env.reset(seed=0)
    pred = np.zeros(env.action_space.shape, np.float32)
    began, done_steps = time.process_time(), 0
    while done_steps < steps:
        _, _, terminated, _, _ = env.step(pred)
        done_steps += 1
        if terminated:
            env.reset()
    return (time.process_time() - began) / steps


def main() -> None:
    """Run every benchmark and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--size", type=int, default=64)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    sps, sps_cpu = bench_simulator(args.steps, args.size)
    ours, peer = bench_reward(args.size)
    env_step = bench_env(args.size)
    print(f"simulator ({args.size}x{args.size}, 3 views, 1 core): {sps:8.1f} steps/s wall, "
          f"{sps_cpu:8.1f} steps per CPU second  (target >= 150)")
    print(f"reward per clip (3 views x 4 frames, full + masked + baseline): {ours * 1e3:7.1f} ms CPU")
    if peer is not None:
        print(f"scikit-image SSIM+PSNR per frame, full frame only, same clip: {peer * 1e3:7.1f} ms CPU "
              f"(rollgym is {peer / ours:.1f}x faster while computing twice as many metrics)")
    print(f"WorldModel-v0 step (simulate 4 frames x 3 views + score): {env_step * 1e3:7.1f} ms CPU")
    print("(CPU time is reported because the wall clock on a shared machine measures the other tenants)")
    if (args.steps, args.size) == (parser.get_default("steps"), parser.get_default("size")):
        from publish import save_results

        rows = [{"what": f"World-model simulator, three {args.size}x{args.size} views", "rollgym":
                 f"{sps:.0f} steps/s ({sps_cpu:.0f} per CPU s)", "peer": "target 150", "ratio": ""}]
        if peer is not None:
            rows.append({"what": "World-model reward per clip (3 views x 4 frames, full + masked)",
                         "rollgym": f"{ours * 1e3:.0f} ms",
                         "peer": f"scikit-image {peer * 1e3:.0f} ms (half the metrics)",
                         "ratio": f"{peer / ours:.1f}x"})
        save_results("worldmodel", {"steps_per_s": sps, "steps_per_cpu_s": sps_cpu, "reward_s": ours,
                                    "peer_reward_s": peer, "env_step_s": env_step}, rows,
                     command="python bench/bench_worldmodel.py", load_before=load_before)


if __name__ == "__main__":
    main()

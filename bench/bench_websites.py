"""Benchmark of the generated websites (WebGen-v0): reset and step latency by observation mode, memory per episode.

Run: ``python bench/bench_websites.py [--resets 12] [--steps 30] [--json out.json]``

Measures, on this machine, with the system Chromium:

* reset time: ``env.reset()`` wall time over ``--resets`` tasks on different generated sites
  (a fresh context, the site's database copied, its home page, the observation), with three
  steps between resets as in training;
* step latency: ``env.step("click(id)")`` wall time on links of a listing and of items (the
  click, the page settling, the observation), in each ``obs_mode`` (``text``, ``screenshot``:
  a PNG screenshot decoded to an array, ``both``);
* memory per episode in flight: the growth of unique memory (USS) of this process and every
  Chromium process with 8 episodes of 8 different generated sites open, divided by 8.

The peer is BrowserGym (the figures measured on this machine in
shared/research/anchors_web_tools.md: 3.5 s per step, 5.8 s per reset with its defaults; pass
``--browsergym-step-s``/``--browsergym-reset-s`` for other figures, or run bench/bench_web.py
with ``--browsergym-python`` to measure it in the same session); ratios are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import gymnasium as gym
import psutil
from measure import add_browsergym_figures, memory_in_flight

import rollgym  # noqa: F401
from rollgym.envs.web.browser import get_runtime, shutdown_runtime
from rollgym.envs.web.gen.tasks import GenTaskSource
from rollgym.envs.web.observation import PageView


def _text(obs: Any) -> str:
    return str(obs["text"]) if isinstance(obs, dict) else str(obs)


def bench_mode(mode: str, resets: int, steps: int) -> dict[str, float]:
    """Reset and step latency of WebGen-v0 in one observation mode: link clicks by element id (``text``,
    ``both``) or by pixels (``screenshot``)."""
    env = gym.make("WebGen-v0", obs_mode=mode, max_steps=10_000).unwrapped
    source = GenTaskSource("WebGen-v0")
    reset_ms: list[float] = []
    step_ms: list[float] = []
    for i in range(resets):
        task = source.task(i, "train")
        t0 = time.perf_counter()
        obs, _ = env.reset(options={"task": task})
        reset_ms.append((time.perf_counter() - t0) * 1000)
        for _ in range(max(3, steps // resets)):
            view = PageView.parse(_text(obs)) if mode != "screenshot" else None
            if view is None:  # screenshot mode: a link clicked by its pixels (its box is looked up untimed)
                boxes = [b for b in env.element_boxes() if b["tag"] == "a" and 0 <= b["y"] < 840][1:]
                box = boxes[(len(step_ms) * 7) % len(boxes)]
                action = f"click_at({int(box['x'] + box['width'] / 2)}, {int(box['y'] + box['height'] / 2)})"
            else:
                links = [e for e in view.elements if e.role == "link"][1:]
                action = f"click({links[(len(step_ms) * 7) % len(links)].id})"
            t0 = time.perf_counter()
            obs, _, _, _, _ = env.step(action)
            step_ms.append((time.perf_counter() - t0) * 1000)
    env.close()
    step_ms.sort()
    return {
        f"{mode}_reset_median_ms": statistics.median(reset_ms),
        f"{mode}_reset_p90_ms": sorted(reset_ms)[int(0.9 * len(reset_ms)) - 1],
        f"{mode}_step_median_ms": statistics.median(step_ms),
        f"{mode}_step_p90_ms": step_ms[int(0.9 * len(step_ms)) - 1],
    }


def bench_memory(n: int = 8) -> dict[str, float]:
    """Memory per episode in flight with ``n`` episodes of ``n`` different generated sites open."""
    source = GenTaskSource("WebGen-v0")
    tasks, sites = [], set()
    i = 0
    while len(tasks) < n:
        task = source.task(i, "train")
        i += 1
        if task.meta["site"] not in sites:
            sites.add(task.meta["site"])
            tasks.append(task)

    async def second_page(e: Any) -> None:
        view = PageView.parse(await e.observe(None))
        await e.step(f"click({[x for x in view.elements if x.role == 'link'][1].id})")

    return memory_in_flight(get_runtime(), tasks, second_page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resets", type=int, default=12)
    parser.add_argument("--steps", type=int, default=36)
    add_browsergym_figures(parser)
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    figures: dict[str, float] = {}
    get_runtime()
    try:
        for mode in ("text", "screenshot", "both"):
            figures.update(bench_mode(mode, args.resets, args.steps))
        figures.update(bench_memory())
    finally:
        shutdown_runtime()
    figures["load_average_1m"] = psutil.getloadavg()[0]
    figures["cpus"] = psutil.cpu_count() or 0

    table = Table(title="WebGen-v0, generated websites (system Chromium, this machine)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("target / peer", justify="right")
    for mode in ("text", "screenshot", "both"):
        step, reset = figures[f"{mode}_step_median_ms"], figures[f"{mode}_reset_median_ms"]
        table.add_row(f"{mode}: step, median (p90)", f"{step:.0f} ms ({figures[f'{mode}_step_p90_ms']:.0f})",
                      f"< 300 ms; BrowserGym {args.browsergym_step_s:.1f} s → "
                      f"{args.browsergym_step_s * 1000 / step:.1f}x faster")
        table.add_row(f"{mode}: reset, median (p90)", f"{reset:.0f} ms ({figures[f'{mode}_reset_p90_ms']:.0f})",
                      f"< 1 s; BrowserGym {args.browsergym_reset_s:.1f} s → "
                      f"{args.browsergym_reset_s * 1000 / reset:.1f}x faster")
    table.add_row("memory per episode in flight", f"{figures['memory_per_episode_mb']:.0f} MB", "< 100 MB")
    table.add_row("load average (1 min) / CPUs", f"{figures['load_average_1m']:.1f} / {figures['cpus']:.0f}", "")
    Console().print(table)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(figures, fh, indent=2)
    from publish import save_results

    peer = "BrowserGym {:.1f} s (defaults, measured earlier on this machine)"
    step, reset = figures["text_step_median_ms"], figures["text_reset_median_ms"]
    save_results("websites", figures, [
        {"what": "WebGen step: click + observation, text (median)", "rollgym": f"{step:.0f} ms",
         "peer": peer.format(args.browsergym_step_s), "ratio": f"{args.browsergym_step_s * 1000 / step:.1f}x"},
        {"what": "WebGen reset (median)", "rollgym": f"{reset:.0f} ms",
         "peer": peer.format(args.browsergym_reset_s), "ratio": f"{args.browsergym_reset_s * 1000 / reset:.1f}x"},
    ], command="python bench/bench_websites.py")


if __name__ == "__main__":
    main()

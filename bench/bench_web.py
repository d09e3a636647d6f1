"""Benchmark of the web envs: step latency, reset time, memory per episode, and parallel throughput.

Run: ``python bench/bench_web.py [--steps 40] [--episodes 16] [--think-ms 1000] [--json out.json]``

Measures, on this machine, with the system Chromium:

* step latency: ``env.step("click(id)")`` wall time, i.e. the click, waiting for the
  page to settle and the new observation (median and 90th percentile);
* reset time: ``env.reset()`` wall time (fresh context, fresh database, home page, observation),
  with three steps between resets as in training;
* memory per episode in flight: the growth of unique memory (USS) of this process plus
  every Chromium process when 8 episodes are open, divided by 8;
* throughput: episodes per minute of the reference policy with 8 episodes in flight
  versus one at a time, without agent latency and with a simulated agent latency
  (``--think-ms``, standing in for a model call) per action.

The peer is BrowserGym. With ``--browsergym-python PY`` (a Python that has
``browsergym-core`` installed, e.g. a separate venv, since it pins its own Playwright)
the bench runs it in the same session on the same site and Chromium: a
``BrowserEnv`` whose task opens the shop's catalogue, clicking links by bid,
with BrowserGym's defaults and with ``slow_mo=0, pre_observation_delay=0``.
Without it, the figures measured on this machine in
shared/research/anchors_web_tools.md (3.5 s per step, 5.8 s per reset) are used.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import gymnasium as gym
import psutil
from measure import add_browsergym_figures, memory_in_flight

import rollgym  # noqa: F401
from rollgym.envs.web.browser import get_runtime, shutdown_runtime
from rollgym.envs.web.observation import PageView
from rollgym.envs.web.reference import reference_policy
from rollgym.envs.web.tasks import WebTaskSource
from rollgym.rollout.web import collect_web_episodes

PEER_SCRIPT = r"""
import json, statistics, sys, time
import playwright.sync_api
import browsergym.core.env as bg_env
from browsergym.core.task import AbstractBrowserTask

URL, CHROMIUM, SLOW_MO, DELAY, STEPS = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
_launch = playwright.sync_api.BrowserType.launch
def launch(self, *args, **kwargs):  # BrowserGym's chat window ignores pw_chromium_kwargs
    kwargs.setdefault("executable_path", CHROMIUM)
    kwargs["args"] = list(kwargs.get("args") or []) + ["--no-sandbox", "--disable-gpu"]
    return _launch(self, *args, **kwargs)
playwright.sync_api.BrowserType.launch = launch

class Shop(AbstractBrowserTask):
    @classmethod
    def get_task_id(cls):
        return "rollgym-shop"
    def setup(self, page):
        page.goto(URL + "/search")
        return "Browse the catalogue.", {}
    def validate(self, page, chat_messages):
        return 0.0, False, "", {}

env = bg_env.BrowserEnv(task_entrypoint=Shop, headless=True, slow_mo=SLOW_MO, pre_observation_delay=DELAY)
resets = []
for seed in range(3):
    t0 = time.perf_counter()
    obs, info = env.reset(seed=seed)
    resets.append(time.perf_counter() - t0)
steps = []
for i in range(STEPS):
    bids = env.unwrapped.page.eval_on_selector_all("a[bid]", "els => els.map(e => e.getAttribute('bid'))")
    bid = bids[(i * 7) % len(bids)]
    t0 = time.perf_counter()
    obs, reward, term, trunc, info = env.step(f"click('{bid}')")
    steps.append(time.perf_counter() - t0)
env.close()
print(json.dumps({"reset_s": statistics.median(resets), "step_s": statistics.median(steps)}))
"""


def bench_peer(python: str, steps: int) -> dict[str, float]:
    """BrowserGym on the same shop and Chromium, in a subprocess of ``python``."""
    import subprocess

    from rollgym.envs.web.browser import find_chromium
    from rollgym.envs.web.server import WebServer

    server = WebServer(open_site="shop").start()
    out: dict[str, float] = {}
    try:
        for label, slow_mo, delay in (("defaults", 1000, 0.5), ("fast", 0, 0.0)):
            proc = subprocess.run(
                [python, "-c", PEER_SCRIPT, server.base_url, find_chromium(), str(slow_mo), str(delay), str(steps)],
                capture_output=True,
                text=True,
                timeout=900,
            )
            if proc.returncode != 0:
                raise SystemExit(f"BrowserGym run failed: {proc.stderr.strip().splitlines()[-1:]}")
            figures = json.loads(proc.stdout.strip().splitlines()[-1])
            out[f"browsergym_{label}_step_s"] = figures["step_s"]
            out[f"browsergym_{label}_reset_s"] = figures["reset_s"]
    finally:
        server.stop()
    return out


def bench_steps(n_steps: int) -> dict[str, float]:
    env = gym.make("WebShop-v2", max_steps=10_000).unwrapped
    obs, _ = env.reset(seed=0)
    times = []
    for i in range(n_steps + 3):
        view = PageView.parse(obs)
        links = [e for e in view.elements if e.role == "link" and e.name not in {"Sign in", "Northwind Market"}]
        target = links[(i * 7) % len(links)] if "/product/" not in view.url else view.find("link", "Catalogue")
        t0 = time.perf_counter()
        obs, _, _, _, info = env.step(f"click({target.id})")
        elapsed = (time.perf_counter() - t0) * 1000
        assert info["action_error"] is None, info["action_error"]
        if i >= 3:  # the first clicks warm caches
            times.append(elapsed)
    resets = []
    for seed in range(10):
        t0 = time.perf_counter()
        obs, _ = env.reset(seed=seed)
        resets.append((time.perf_counter() - t0) * 1000)
        for _ in range(3):  # an episode runs between resets, as in training
            link = next(e for e in PageView.parse(obs).elements if e.role == "link" and e.name == "Catalogue")
            obs = env.step(f"click({link.id})")[0]
    env.close()
    times.sort()
    return {
        "step_median_ms": statistics.median(times),
        "step_p90_ms": times[int(0.9 * len(times)) - 1],
        "reset_median_ms": statistics.median(resets),
    }


def bench_memory(n: int = 8) -> dict[str, float]:
    source = WebTaskSource(("shop", "forum", "travel"), "WebGym-v2")

    async def second_page(e: Any) -> None:
        await e.step('goto("/search")' if e.template.site != "travel" else 'goto("/hotels")')

    return memory_in_flight(get_runtime(), [source.task(i) for i in range(n)], second_page)


def bench_throughput(n_episodes: int, think_ms: float) -> dict[str, float]:
    source = WebTaskSource(("shop", "forum", "travel"), "WebGym-v2")
    tasks = [source.task(i, "test") for i in range(n_episodes)]

    async def thinking_agent(observation: str, info: dict[str, Any]) -> str:
        await asyncio.sleep(think_ms / 1000)
        return reference_policy(observation, info)

    out: dict[str, float] = {}
    for label, agent in (("no_think", reference_policy), ("think", thinking_agent)):
        if label == "think" and think_ms <= 0:
            continue
        for concurrency in (1, 8):
            t0 = time.perf_counter()
            results = collect_web_episodes(agent, tasks, concurrency=concurrency)
            minutes = (time.perf_counter() - t0) / 60
            out[f"{label}_success_c{concurrency}"] = sum(r.success for r in results) / len(results)
            out[f"{label}_eps_per_min_c{concurrency}"] = len(tasks) / minutes
        out[f"{label}_speedup"] = out[f"{label}_eps_per_min_c8"] / out[f"{label}_eps_per_min_c1"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--think-ms", type=float, default=1000.0)
    add_browsergym_figures(parser)
    parser.add_argument("--browsergym-python", help="a Python with browsergym-core, to measure the peer in this run")
    parser.add_argument("--peer-steps", type=int, default=15)
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    figures: dict[str, float] = {}
    load_before = psutil.getloadavg()[0]
    get_runtime()
    figures.update(bench_steps(args.steps))
    # the two sides run minutes apart, so the load around each is kept beside the figures
    figures["load_1min_after_steps"] = psutil.getloadavg()[0]
    figures.update(bench_memory())
    figures.update(bench_throughput(args.episodes, args.think_ms))
    if args.browsergym_python:
        figures["load_1min_before_peer"] = psutil.getloadavg()[0]
        figures.update(bench_peer(args.browsergym_python, args.peer_steps))
        args.browsergym_step_s = figures["browsergym_defaults_step_s"]
        args.browsergym_reset_s = figures["browsergym_defaults_reset_s"]
    figures["load_average_1m"] = psutil.getloadavg()[0]
    figures["cpus"] = psutil.cpu_count() or 0
    shutdown_runtime()

    table = Table(title="rollgym web envs (system Chromium, this machine)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("target / peer", justify="right")
    table.add_row(
        "step latency, median (click + observation)",
        f"{figures['step_median_ms']:.0f} ms",
        f"< 300 ms; BrowserGym {args.browsergym_step_s:.1f} s → "
        f"{args.browsergym_step_s * 1000 / figures['step_median_ms']:.1f}x faster",
    )
    table.add_row("step latency, p90", f"{figures['step_p90_ms']:.0f} ms", "")
    if "browsergym_fast_step_s" in figures:
        table.add_row(
            "BrowserGym step (slow_mo=0, no delay), median",
            f"{figures['browsergym_fast_step_s'] * 1000:.0f} ms",
            f"rollgym {figures['browsergym_fast_step_s'] * 1000 / figures['step_median_ms']:.1f}x faster",
        )
        table.add_row(
            "BrowserGym reset (slow_mo=0), median",
            f"{figures['browsergym_fast_reset_s'] * 1000:.0f} ms",
            f"rollgym {figures['browsergym_fast_reset_s'] * 1000 / figures['reset_median_ms']:.1f}x faster",
        )
    table.add_row(
        "reset time, median",
        f"{figures['reset_median_ms']:.0f} ms",
        f"< 1 s; BrowserGym {args.browsergym_reset_s:.1f} s → "
        f"{args.browsergym_reset_s * 1000 / figures['reset_median_ms']:.1f}x faster",
    )
    table.add_row("memory per episode in flight", f"{figures['memory_per_episode_mb']:.0f} MB", "< 100 MB")
    for label, name in (("no_think", "no agent latency"), ("think", f"{args.think_ms:.0f} ms agent latency")):
        if f"{label}_speedup" in figures:
            table.add_row(
                f"episodes/min, 1 in flight ({name})",
                f"{figures[f'{label}_eps_per_min_c1']:.1f}",
                f"reference success {figures[f'{label}_success_c1']:.0%}",
            )
            table.add_row(
                f"episodes/min, 8 in flight ({name})",
                f"{figures[f'{label}_eps_per_min_c8']:.1f}",
                f"{figures[f'{label}_speedup']:.1f}x (target ≥ 3x); success {figures[f'{label}_success_c8']:.0%}",
            )
    table.add_row("load average (1 min) / CPUs", f"{figures['load_average_1m']:.1f} / {figures['cpus']:.0f}", "")
    Console().print(table)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(figures, fh, indent=2)
    if args.browsergym_python:  # the README row needs the peer measured in the same run
        from publish import save_results

        peer_s = figures["browsergym_defaults_step_s"]
        save_results("web", figures, [
            {"what": "Web step: click + observation (median)", "rollgym": f"{figures['step_median_ms']:.0f} ms",
             "peer": f"BrowserGym {peer_s:.1f} s", "ratio": f"{peer_s * 1000 / figures['step_median_ms']:.1f}x"},
        ], command="python bench/bench_web.py --browsergym-python PATH", load_before=load_before)


if __name__ == "__main__":
    main()

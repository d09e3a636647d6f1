"""collect_ray against the in-process bare loop, side by side in one run: what Ray's workers cost.

An instant agent (it replays actions recorded once from the oracle, or random legal moves for
Connect Four; its own cost is a dict lookup) plays the same tasks and seeds three ways: a bare
``env.reset``/``env.step`` loop in this process, ``collect_ray`` with 2 workers on a one-node
Ray instance (``num_cpus=2``), and a later run of a ``RayWorkers`` whose 2 workers are already
started (a trainer's rollout step after its first), for Countdown (one turn), ToolWorld-v1 (tools, several turns) and
ConnectFour-v0 (a bot opponent). Printed per env: episodes/s of each, the ratio to the bare loop
over the whole call (actor start-up included) and in steady state (the episodes after the
first remote call's batch, from its arrival to the last episode's). Goal: >= 0.6x. Returns are
checked equal to the bare loop's.

Run: ``.venv/bin/python bench/bench_ray.py`` (a few minutes on 2 cores; ``--quick`` for a smoke
run that saves nothing). A full run writes ``bench/results/ray.json``.
"""

from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path
from typing import Any

from bench_collector import GROUP, ReplayAgent, bare_loop, record_scripts, returns_of, timed

ENVS = (("Countdown-v0", 1000, "oracle"), ("ToolWorld-v1", 100, "oracle"), ("ConnectFour-v0", 200, "random"))


def run_ray(factory: Any, env_id: str, n_tasks: int) -> tuple[float, float, list[Any]]:
    """Wall seconds of one ``collect_ray`` call, its steady rate, its groups.

    The steady rate counts the episodes that arrive after the first remote call's batch, over the time
    from that batch's arrival to the last episode's: starting the actors (about a second here) and
    the first batch's play are left out. A batch's episodes are recorded back to back, so the first
    batch ends at the first gap between two recorded episodes of over 2 ms.
    """
    from rollgym.rollout.distributed import collect_ray

    stamps: list[tuple[int, float]] = []
    start = time.perf_counter()
    groups = collect_ray(factory, env_id, n_tasks, GROUP, seed=0, num_workers=2,
                         progress=lambda done, total: stamps.append((done, time.perf_counter())))
    wall = time.perf_counter() - start
    arrivals = [t for done, t in stamps if done > 0]  # the first call (done 0) comes before any actor starts
    first_end = next((k for k in range(1, len(arrivals)) if arrivals[k] - arrivals[k - 1] > 0.002), len(arrivals))
    after = len(arrivals) - first_end
    steady = after / (arrivals[-1] - arrivals[first_end - 1]) if after > 1 else 0.0
    return wall, steady, groups


def measure(quick: bool) -> dict[str, Any]:
    import ray

    from rollgym.rollout.distributed import RayWorkers

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    figures: dict[str, Any] = {}
    try:
        for env_id, n_tasks, policy in ENVS:
            n_tasks = max(4, n_tasks // 10) if quick else n_tasks
            factory = functools.partial(ReplayAgent, record_scripts(env_id, n_tasks, policy))
            run_ray(factory, env_id, 2)  # warm up: the first workers pay for imports
            bare, ray_walls, steadies, kept_walls = [], [], [], []
            turns, expected = 0, []
            with RayWorkers(factory, env_id, num_workers=2) as kept:
                kept.collect(2, GROUP)  # the kept workers start here, once
                for _ in range(1 if quick else 2):
                    wall, _, (turns, expected) = timed(functools.partial(bare_loop, env_id, n_tasks, GROUP, factory()))
                    bare.append(wall)
                    wall, steady, groups = run_ray(factory, env_id, n_tasks)
                    if returns_of(groups) != expected:
                        raise AssertionError(f"collect_ray played different episodes than the bare loop on {env_id}")
                    ray_walls.append(wall)
                    steadies.append(steady)
                    wall, _, groups = timed(functools.partial(kept.collect, n_tasks, GROUP))
                    if returns_of(groups) != expected:
                        raise AssertionError(f"RayWorkers played different episodes than the bare loop on {env_id}")
                    kept_walls.append(wall)
            episodes = n_tasks * GROUP
            base = min(bare)
            figures[env_id] = {
                "episodes": episodes, "turns": turns,
                "bare": {"best_s": base, "episodes_per_s": episodes / base},
                "collect_ray (2 workers)": {
                    "best_s": min(ray_walls), "episodes_per_s": episodes / min(ray_walls),
                    "ratio": base / min(ray_walls), "steady_episodes_per_s": max(steadies),
                    "steady_ratio": max(steadies) * base / episodes,
                },
                "RayWorkers (2 kept workers)": {
                    "best_s": min(kept_walls), "episodes_per_s": episodes / min(kept_walls),
                    "ratio": base / min(kept_walls),
                },
            }
            row = figures[env_id]
            print(f"{env_id:16s} bare {row['bare']['episodes_per_s']:8,.0f} ep/s   collect_ray "
                  f"{row['collect_ray (2 workers)']['episodes_per_s']:8,.0f} ep/s "
                  f"({row['collect_ray (2 workers)']['ratio']:.2f}x whole call, "
                  f"{row['collect_ray (2 workers)']['steady_ratio']:.2f}x steady)   kept workers "
                  f"{row['RayWorkers (2 kept workers)']['episodes_per_s']:8,.0f} ep/s "
                  f"({row['RayWorkers (2 kept workers)']['ratio']:.2f}x whole call)", flush=True)
    finally:
        ray.shutdown()
    return figures


def readme_rows(figures: dict[str, Any]) -> list[dict[str, str]]:
    """The README rows these figures stand behind."""
    rows = []
    envs = " / ".join(figures)
    name = "collect_ray (2 workers)"
    rows.append({"what": f"Instant agent through {name}, batched, vs the bare loop in one process, {envs} "
                         "(episodes/s, whole call with the actors' start-up)",
                 "rollgym": " / ".join(f"{row[name]['episodes_per_s']:,.0f}" for row in figures.values()),
                 "peer": " / ".join(f"{row['bare']['episodes_per_s']:,.0f}" for row in figures.values()),
                 "ratio": " / ".join(f"{row[name]['ratio']:.2f}x" for row in figures.values())})
    name = "RayWorkers (2 kept workers)"
    if all(name in row for row in figures.values()):
        rows.append({"what": f"Instant agent through {name}: a later run on started actors, as a trainer's "
                             f"rollout step, vs the bare loop in one process, {envs} (episodes/s, whole call)",
                     "rollgym": " / ".join(f"{row[name]['episodes_per_s']:,.0f}" for row in figures.values()),
                     "peer": " / ".join(f"{row['bare']['episodes_per_s']:,.0f}" for row in figures.values()),
                     "ratio": " / ".join(f"{row[name]['ratio']:.2f}x" for row in figures.values())})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, nothing saved")
    args = parser.parse_args()
    figures = measure(args.quick)
    if not args.quick:
        from publish import save_results

        path = save_results("ray", figures, readme_rows(figures), command="python bench/bench_ray.py")
        print(f"saved {path.relative_to(Path(__file__).resolve().parent.parent)}")


if __name__ == "__main__":
    main()

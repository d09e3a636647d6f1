"""collect_ray's scaling curve: episodes/s with a 50 ms-latency agent over 1, 2, 4 and 8 workers on 3 nodes.

A 3-node Ray cluster on this machine (``ray.cluster_utils.Cluster``: a head and two nodes, separate
raylets and object stores, as separate hosts) offers a ``lane`` resource on every node; each
worker needs one, so ``collect_ray`` spreads the workers over the three nodes. The agent waits
50 ms per action (``time.sleep``, standing in for a model server's latency) and then replays the
oracle's answer, recorded once beforehand (so its own CPU cost is a dict lookup); Countdown
episodes are one action long. The agent's ``act`` blocks (it has no ``aact``), so a worker plays
one episode at a time: the actor's ``max_concurrency=2`` only lets the driver hand it its next
batch while it plays, and one worker plays at most 20 episodes/s (the latency bound).

Per worker count: episodes/s in steady state (over the middle half of the episodes, in arrival
order, so actor start-up and the last stragglers are left out; batches are capped at 8 episodes so
that arrivals are fine-grained) and over the whole call;
efficiency against the ideal, which is ``workers x`` the one-worker rate (linear scaling); and
the nodes that played. Goal: >= 80% at 8.
Returns are checked equal to a plain ``collect`` of the same seeds.

Run: ``nice -n 10 .venv/bin/python bench/bench_ray_scaling.py`` (minutes; ``--quick`` for a
smoke run that saves nothing). Writes ``bench/results/ray_scaling.json``. Ray under a lower
priority than ``nice -n 10`` times out on a busy machine.
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from pathlib import Path
from typing import Any

from rollgym.agents import OracleAgent

LATENCY_S = 0.05
WORKERS = (1, 2, 4, 8)
#: Episodes per remote call here (collect_ray's own cap is 256): small batches arrive often enough to time.
BATCH = 8
ENV_ID = "Countdown-v0"


class LatencyAgent:
    """Replays recorded answers, 50 ms late on every action (a model server's latency, without its CPU)."""

    name = "latency-replay"

    def __init__(self, scripts: dict[str, list[str]]) -> None:
        self.scripts = scripts
        self.turn = 0

    def reset(self, seed: int | None = None) -> None:
        self.turn = 0

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        time.sleep(LATENCY_S)
        self.turn += 1
        return self.scripts[info["task_id"]][self.turn - 1]


def oracle_run(n_tasks: int) -> tuple[dict[str, list[str]], list[Any]]:
    """The oracle's answers by task id, and its rewards, for ``n_tasks`` tasks of the bench's seeds."""
    from rollgym.rollout import collect

    trajectories = [t for g in collect(OracleAgent(), ENV_ID, n_tasks, 1, seed=0) for t in g.trajectories]
    scripts = {str(t.task_id): [m["content"] for m in t.messages if m["role"] == "assistant"] for t in trajectories}
    return scripts, [t.reward for t in trajectories]


def run_point(workers: int, seconds: float) -> dict[str, Any]:
    """One ``collect_ray`` call with ``workers`` workers, sized to last about ``seconds`` at the ideal rate."""
    from rollgym.rollout import distributed
    from rollgym.rollout.distributed import collect_ray
    from rollgym.rollout.placement import Needs

    distributed.MAX_BATCH = BATCH
    n_tasks = max(8, int(2 * workers * seconds / LATENCY_S))
    scripts, expected = oracle_run(n_tasks)
    stamps: list[float] = []

    def progress(done: int, total: int) -> None:
        if done:  # the call at the start (nothing done yet) is no finished episode
            stamps.append(time.perf_counter())

    start = time.perf_counter()
    groups = collect_ray(functools.partial(LatencyAgent, scripts), ENV_ID, n_tasks, 1, seed=0,
                         needs=Needs(0, {"lane": 1}), num_workers=workers, progress=progress)
    wall = time.perf_counter() - start
    # the middle half of the run: worker start-up before it, the last stragglers after it
    low, high = len(stamps) // 4, (3 * len(stamps)) // 4
    steady = (high - low) / (stamps[high] - stamps[low]) if high > low and stamps[high] > stamps[low] else 0.0
    trajectories = [t for g in groups for t in g.trajectories]
    return {"workers": workers, "episodes": len(trajectories), "wall_s": wall, "whole_eps": len(trajectories) / wall,
            "steady_eps": steady, "nodes": len({t.metrics["node"] for t in trajectories}),
            "worker_ids": len({t.metrics["worker"] for t in trajectories}),
            "rewards_match": [t.reward for t in trajectories] == expected, "n_tasks": n_tasks}


def measure(quick: bool) -> dict[str, Any]:
    import ray
    from ray.cluster_utils import Cluster

    small = {"object_store_memory": 80 * 1024**2}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"lane": 3},
                                                             "include_dashboard": False, **small})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, resources={"lane": 3}, **small)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        run_point(2, 0.5)  # warm up: the first workers pay for imports
        seconds = 1.0 if quick else 4.0
        points = []
        for workers in WORKERS:
            point = run_point(workers, seconds)
            if not point.pop("rewards_match"):
                raise AssertionError(f"collect_ray with {workers} workers played different episodes than collect")
            points.append(point)
            print(f"{workers} workers: {point['steady_eps']:.1f} episodes/s steady, {point['whole_eps']:.1f} whole "
                  f"call, {point['nodes']} nodes, {point['episodes']} episodes", flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()
    base = points[0]["steady_eps"]
    for point in points:
        point["ideal_eps"] = base * point["workers"]
        point["efficiency"] = point["steady_eps"] / point["ideal_eps"] if point["ideal_eps"] else 0.0
        point["latency_bound_eps"] = point["workers"] / LATENCY_S  # a blocking act: one episode at a time
    return {"env": ENV_ID, "latency_s": LATENCY_S, "nodes": 3, "points": points, "cpus": os.cpu_count(),
            "load_1min": os.getloadavg()[0]}


def readme_rows(figures: dict[str, Any]) -> list[dict[str, str]]:
    points = figures["points"]
    last = points[-1]
    return [{
        "what": f"collect_ray scaling, {figures['latency_s'] * 1000:.0f} ms agent, "
                f"{' / '.join(str(p['workers']) for p in points)} workers on 3 nodes (episodes/s, steady)",
        "rollgym": " / ".join(f"{p['steady_eps']:.0f}" for p in points),
        "peer": "linear from 1 worker " + " / ".join(f"{p['ideal_eps']:.0f}" for p in points)
                + "; latency bound " + " / ".join(f"{p['latency_bound_eps']:.0f}" for p in points),
        "ratio": f"{100 * last['efficiency']:.0f}% of linear, "
                 f"{100 * last['steady_eps'] / last['latency_bound_eps']:.0f}% of the bound at {last['workers']}",
    }]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short points, nothing saved")
    args = parser.parse_args()
    figures = measure(args.quick)
    print(f"\n{ENV_ID}, {figures['latency_s'] * 1000:.0f} ms agent, 3-node local cluster, {figures['cpus']} CPUs "
          f"(1-minute load {figures['load_1min']:.1f})\n")
    print("workers  episodes/s (steady)  ideal  efficiency  latency bound  of bound  whole call  nodes")
    for p in figures["points"]:
        print(f"{p['workers']:>7}  {p['steady_eps']:>19.1f}  {p['ideal_eps']:>5.1f}  {100 * p['efficiency']:>9.0f}%"
              f"  {p['latency_bound_eps']:>13.0f}  {100 * p['steady_eps'] / p['latency_bound_eps']:>7.0f}%"
              f"  {p['whole_eps']:>10.1f}  {p['nodes']:>5}")
    if not args.quick:
        from publish import save_results

        path = save_results("ray_scaling", figures, readme_rows(figures),
                            command="python bench/bench_ray_scaling.py")
        print(f"saved {path.relative_to(Path(__file__).resolve().parent.parent)}")


if __name__ == "__main__":
    main()

"""A soak of collect_ray on a 3-node local Ray cluster: runs go on while nodes leave (graceful, SIGKILL) and join.

A 3-node Ray cluster on this machine (``ray.cluster_utils.Cluster``: a head and two nodes, separate
raylets and object stores, as separate hosts) offers a ``lane`` resource on every node; each
worker needs one. Round after round until the time is up, ``collect_ray`` plays a run of
Sudoku4x4-v0 episodes (a seeded random agent that waits a few milliseconds per action, so that
episodes overlap the faults; at most 4 actions an episode) into a results file, and during the
run:

- a quarter of the way in, a fresh node joins (``lane``, 1 CPU);
- half-way, the oldest worker node that has already finished an episode of the run leaves:
  gracefully in even rounds, by SIGKILL of its raylet in odd ones (``remove_node(allow_graceful=False)``).

So the cluster stays at three nodes, and every node is eventually removed while it plays. Each
round checks that no finished rollout was lost (every episode in the results file when the node
left is in the final results, unchanged), that the results file holds every episode exactly
once, and that the run's results equal those of a fault-free run (a plain in-process ``collect``
of the same seeds: same tasks, actions, rewards, statuses). It also reports whether the node that
joined got work (``collect_ray`` looks for new nodes about once a second, so in a short round it
may not).

Run: ``nice -n 10 .venv/bin/python bench/bench_ray_soak.py`` (5 minutes; ``--seconds 30`` for a
short soak). Writes ``bench/results/ray_soak.json`` (``--results DIR`` elsewhere, ``--no-save``
nothing). Exits 1 when a round loses a rollout or changes a result.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from rollgym.agents import RandomAgent

ENV_ID = "Sudoku4x4-v0"
MAX_STEPS = 4
N_TASKS, GROUP_SIZE = 24, 4
SMALL = {"object_store_memory": 80 * 1024**2}  # Ray's minimum is 75 MiB


class SlowRandomAgent(RandomAgent):
    """The seeded random agent, a few milliseconds late on every action (a model's latency, without its CPU)."""

    latency_s = 0.01

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        time.sleep(self.latency_s)
        return super().act(observation, info)


def key(trajectory: Any) -> tuple[str, ...]:
    """An episode's group index and sample index (its id without the run's prefix, which names the agent class)."""
    return tuple(trajectory.traj_id.rsplit("-", 2)[1:])


def outcome(record: Any) -> tuple[Any, ...]:
    """What a deterministic agent's episode must reproduce, wherever and however often it was played."""
    t = record if hasattr(record, "traj_id") else record.trajectory
    return (key(t), t.task_id, t.status, t.reward, tuple(t.step_rewards),
            tuple(m["content"] for m in t.messages))


def run_round(cluster: Any, order: list[Any], index: int, workdir: Path, latency_s: float) -> dict[str, Any]:
    """One collect_ray run with a node joining and one leaving; the round's checks and figures.

    ``order`` holds the worker nodes, oldest first; the round appends the one that joins and takes out the one
    that leaves.
    """
    from rollgym.rollout import collect, load_results
    from rollgym.rollout.distributed import collect_ray
    from rollgym.rollout.placement import Needs

    graceful = index % 2 == 0
    seed = 1000 + index
    out = workdir / f"round-{index}.jsonl"
    total = N_TASKS * GROUP_SIZE
    joined: list[Any] = []
    left: dict[str, Any] = {}

    def recorded() -> dict[str, tuple[Any, ...]]:
        return {key(r.trajectory): outcome(r) for r in load_results(out).episodes} if out.exists() else {}

    def nodes_done() -> set[str]:
        lines = out.read_text().splitlines()[1:] if out.exists() else []
        return {json.loads(line)["trajectory"]["metrics"]["node"] for line in lines if line.strip()}

    def faults(done: int, workers: list[Any]) -> None:
        if not joined and done >= total // 4:
            joined.append(cluster.add_node(num_cpus=1, resources={"lane": 2}, **SMALL))
            cluster.wait_for_nodes()
            order.append(joined[0])
        if not left and done >= total // 2:
            played = nodes_done()
            victims = [n for n in order if n.node_id in played and n not in joined]
            if victims:
                victim = victims[0]
                left.update(node=victim.node_id, finished=recorded())
                order.remove(victim)
                cluster.remove_node(victim, allow_graceful=graceful)

    agent = type("RoundAgent", (SlowRandomAgent,), {"latency_s": latency_s})
    started = time.perf_counter()
    groups = collect_ray(agent, ENV_ID, N_TASKS, GROUP_SIZE, seed=seed, out=str(out), needs=Needs(0, {"lane": 1}),
                         num_workers=3, max_steps=MAX_STEPS, on_result=faults)
    wall = time.perf_counter() - started
    reference = {key(t): outcome(t) for g in collect(RandomAgent(), ENV_ID, N_TASKS, GROUP_SIZE, seed=seed,
                                                          max_steps=MAX_STEPS) for t in g.trajectories}
    played = {key(t): outcome(t) for g in groups for t in g.trajectories}
    on_file = [key(r.trajectory) for r in load_results(out).episodes]
    final = recorded()
    finished_before = left.get("finished", {})
    lost = [k for k, v in finished_before.items() if final.get(k) != v]
    trajectories = [t for g in groups for t in g.trajectories]
    nodes = {t.metrics["node"] for t in trajectories}
    return {
        "round": index, "seed": seed, "removal": "graceful" if graceful else "sigkill", "episodes": len(played),
        "wall_s": round(wall, 2), "node_left": bool(left), "finished_when_it_left": len(finished_before),
        "lost": len(lost), "equal_to_fault_free": played == reference and final == reference,
        "each_once_on_file": sorted(on_file) == sorted(reference),
        "left_node_kept_its_episodes": bool(left) and left["node"] in nodes,
        "joined_node_played": bool(joined) and joined[0].node_id in nodes, "nodes_played": len(nodes),
        "failed": sum(1 for t in trajectories if t.status == "failed"),
    }


def soak(seconds: float, latency_s: float, workdir: Path) -> dict[str, Any]:
    """Rounds until ``seconds`` have passed (at least two, one of each removal)."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"lane": 2},
                                                             "include_dashboard": False, **SMALL})
    rounds: list[dict[str, Any]] = []
    started = time.perf_counter()
    try:
        order = [cluster.add_node(num_cpus=1, resources={"lane": 2}, **SMALL) for _ in range(2)]
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        while len(rounds) < 2 or time.perf_counter() - started < seconds:
            result = run_round(cluster, order, len(rounds), workdir, latency_s)
            rounds.append(result)
            print(f"round {result['round']:>3} ({result['removal']:>8}): {result['episodes']} episodes in "
                  f"{result['wall_s']:.1f} s, {result['finished_when_it_left']} finished when a node left, "
                  f"lost {result['lost']}, equal to fault-free {result['equal_to_fault_free']}, "
                  f"joined node played {result['joined_node_played']}", flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()
    return {
        "env": ENV_ID, "n_tasks": N_TASKS, "group_size": GROUP_SIZE, "max_steps": MAX_STEPS, "latency_s": latency_s,
        "seconds": round(time.perf_counter() - started, 1), "rounds": rounds, "cpus": os.cpu_count(),
        "load_1min": os.getloadavg()[0],
        "ok": all(r["node_left"] and r["lost"] == 0 and r["equal_to_fault_free"] and r["each_once_on_file"]
                  and r["left_node_kept_its_episodes"] for r in rounds),
    }


def readme_rows(figures: dict[str, Any]) -> list[dict[str, str]]:
    rounds = figures["rounds"]
    removals = {kind: sum(1 for r in rounds if r["removal"] == kind) for kind in ("graceful", "sigkill")}
    episodes = sum(r["episodes"] for r in rounds)
    return [{
        "what": f"collect_ray soak, {figures['seconds'] / 60:.1f} min on 3 nodes: {len(rounds)} runs, a node joining "
                f"and one leaving in each ({removals['graceful']} graceful, {removals['sigkill']} SIGKILL)",
        "rollgym": f"{sum(r['lost'] for r in rounds)} finished rollouts lost of {episodes}; "
                   f"{sum(r['equal_to_fault_free'] for r in rounds)}/{len(rounds)} runs equal to fault-free",
        "peer": "a fault-free run of the same seeds",
        "ratio": "equal" if figures["ok"] else "NOT equal",
    }]


def main() -> None:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="how long to soak (default 300)")
    parser.add_argument("--latency", type=float, default=0.01, help="the agent's wait per action, in seconds")
    parser.add_argument("--results", type=Path, default=None, help="folder for ray_soak.json (default bench/results)")
    parser.add_argument("--no-save", action="store_true", help="save nothing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rollgym-soak-") as workdir:
        figures = soak(args.seconds, args.latency, Path(workdir))
    rounds = figures["rounds"]
    print(f"\n{len(rounds)} rounds in {figures['seconds']:.0f} s on a 3-node local cluster, {figures['cpus']} CPUs "
          f"(1-minute load {figures['load_1min']:.1f}): lost {sum(r['lost'] for r in rounds)} finished rollouts, "
          f"{sum(r['equal_to_fault_free'] for r in rounds)}/{len(rounds)} runs equal to fault-free, joined nodes "
          f"played in {sum(r['joined_node_played'] for r in rounds)}/{len(rounds)}")
    if not args.no_save:
        from publish import RESULTS_DIR, save_results

        path = save_results("ray_soak", figures, readme_rows(figures), command="python bench/bench_ray_soak.py",
                            directory=args.results or RESULTS_DIR)
        print(f"saved {path}")
    raise SystemExit(0 if figures["ok"] else 1)


if __name__ == "__main__":
    main()

"""ToolWorld: reset time, memory per live episode and tool-call throughput, next to two other ways to reset.

Run: ``.venv/bin/python bench/bench_tools.py`` (about a minute; ``--quick`` for a smoke run).

Three ways to give every episode a fresh world, measured in the same run on the same worlds:

1. **rollgym**: copy the cached base SQLite databases into fresh in-memory ones (``sqlite3`` online backup),
   the way ``ToolWorld-v1`` resets; grading diffs only the tables a write statement reached.
2. **rebuild**: generate the world from its seed again for every episode.
3. **JSON reload + hash** (τ-bench's approach, implemented here): keep the world as one JSON file, ``json.load``
   it at every reset, and grade by hashing the whole state (τ-bench hashes the agent's end state and the state
   after replaying the gold actions: two hashes per episode).

It also reports the memory one live episode adds (RSS growth over many live envs, divided by their number) and
tool calls per second, both straight through ``call_tool`` and through ``env.step`` (parsing and rendering
included). Nothing here asserts: the figures go into docs/tools.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import psutil
from measure import percentiles, print_latencies, print_state_costs, report_figures, state_hash, tables_as_json, timed

import rollgym  # noqa: F401  (registers ToolWorld-v1)
from rollgym.envs.tools.api import Session, call_tool
from rollgym.envs.tools.checker import diff_world
from rollgym.envs.tools.tasks.source import N_WORLDS, world_seed
from rollgym.envs.tools.world import base_world, build_world


def world_as_json(seed: int) -> dict[str, Any]:
    """Every table of a world as lists of row dicts (the τ-bench-style data file)."""
    return {app: tables_as_json(conn) for app, conn in base_world(seed).dbs.items()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, for a smoke run")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    n = 60 if args.quick else 500
    for i in range(N_WORLDS):  # build every base world once, as a long-running process would
        base_world(world_seed(i))
    env = gym.make("ToolWorld-v1").unwrapped
    env.reset(seed=0)
    report: dict[str, Any] = {}

    report["reset_env"] = percentiles(timed(lambda i: env.reset(options={"task_index": i}), n))
    world = base_world(world_seed(0))
    report["reset_copy_only"] = percentiles(timed(lambda i: world.copy(), n))
    report["rebuild_from_seed"] = percentiles(timed(lambda i: build_world(world_seed(i % N_WORLDS)), max(5, n // 25)))

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "world.json"
        path.write_text(json.dumps(world_as_json(world_seed(0))))
        report["json_reload"] = percentiles(timed(lambda i: json.loads(path.read_text()), n))
        data = json.loads(path.read_text())
        report["json_hash_once"] = percentiles(timed(lambda i: state_hash(data), n))
        report["json_file_kb"] = path.stat().st_size / 1024

    session = Session(world.me.email, world.now, world.copy())
    call_tool(session, "payments_send", {"to": world.people[3].email, "amount": 5.0, "note": "bench"})
    report["grade_diff"] = percentiles(timed(lambda i: diff_world(world, session.dbs, session.touched), n))

    # memory per live episode: many envs, each holding its own episode's databases
    gc.collect()
    proc = psutil.Process()
    live = []
    rss0 = proc.memory_info().rss
    count = 50 if args.quick else 300
    for i in range(count):
        e = gym.make("ToolWorld-v1").unwrapped
        e.reset(options={"task_index": i})
        live.append(e)
    gc.collect()
    report["memory_per_episode_mb"] = (proc.memory_info().rss - rss0) / count / 2**20
    for e in live:
        e.close()

    reads = [("email_search", {"query": "report"}), ("calendar_search", {"attendee": "a"}),
             ("payments_transfers", {}), ("contacts_search", {"query": "a"}), ("shop_search", {"sort": "price"})]
    calls = n * 4
    start = time.perf_counter()
    for i in range(calls):
        name, arguments = reads[i % len(reads)]
        call_tool(session, name, arguments)
    report["calls_per_s_direct"] = calls / (time.perf_counter() - start)
    env.reset(seed=1)
    action = "".join(f'<tool_call>{json.dumps({"name": n_, "arguments": a})}</tool_call>' for n_, a in reads)
    steps = max(10, n // 5)
    start = time.perf_counter()
    for _ in range(steps):
        env.step(action)
        if env.turn >= env.max_turns - 1:
            env.reset(seed=1)
    report["calls_per_s_env_step"] = steps * len(reads) / (time.perf_counter() - start)

    p50 = report["reset_env"]["p50_ms"]
    print_latencies(report, ("reset_env", "reset_copy_only", "rebuild_from_seed", "json_reload", "json_hash_once",
                             "grade_diff"))
    print(f"rebuild / rollgym reset (p50):               {report['rebuild_from_seed']['p50_ms'] / p50:8.1f}x")
    print_state_costs(report)
    print(f"JSON state file: {report['json_file_kb']:.0f} KiB")
    print(f"memory per live episode: {report['memory_per_episode_mb']:.2f} MiB")
    print(f"tool calls/s: {report['calls_per_s_direct']:.0f} direct, {report['calls_per_s_env_step']:.0f} via env.step")
    rebuild = report["rebuild_from_seed"]["p50_ms"]
    report_figures(args, "tools", report, [
        {"what": "ToolWorld reset (p50)", "rollgym": f"{p50:.1f} ms",
         "peer": f"world rebuilt from scratch {rebuild:.0f} ms", "ratio": f"{rebuild / p50:.0f}x"},
    ], command="python bench/bench_tools.py")
    return report


if __name__ == "__main__":
    main(sys.argv[1:])

"""ToolGen: reset and step latency, memory per live episode and build costs of the generated apps, next to
ToolWorld-v1 (the hand-written apps) and two other ways to give every episode a fresh world.

Run: ``.venv/bin/python bench/bench_toolgen.py`` (a minute or two; ``--quick`` for a smoke run; ``--sweep`` also
runs check_env on every one of the 256 apps and every template's reference solution, several minutes).

Measured in one process, wall-clock milliseconds:

1. **rollgym**: ``env.reset`` of ``ToolGen-v0`` (task draw, then a ``sqlite3`` backup of each app of the world
   into memory) and of ``ToolWorld-v1`` in the same run, as a ratio;
2. **rebuild**: building the world's apps from their schemas again for every episode;
3. **JSON reload + hash** (τ-bench's approach, implemented here): keep the world as one JSON file, ``json.load``
   it at every reset and hash the whole state to grade (τ-bench hashes twice per episode).

Also: ``env.step`` with one read call and with one write call, grading, tool calls per second, memory per live
episode (RSS growth over many live envs, divided by their number), and the one-off costs of the pool and of
building an app. Nothing here asserts: the figures go into docs/tools.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import psutil
from measure import percentiles, print_latencies, print_state_costs, report_figures, state_hash, tables_as_json, timed

import rollgym  # noqa: F401  (registers the ids)


def world_json(world: list[str]) -> dict[str, Any]:
    """Every table of every app of a world as lists of row dicts (the τ-bench-style data file)."""
    from rollgym.envs.tools.generated import catalog

    return {app_id: tables_as_json(catalog.app(app_id).db) for app_id in world}


def sweep() -> dict[str, Any]:
    """check_env on every generated app, and every template's reference solution graded."""
    from gymnasium.utils.env_checker import check_env

    from rollgym.envs.tools.generated import catalog
    from rollgym.envs.tools.generated.policies import solve_every_template

    start = time.perf_counter()
    checked, failed = 0, []
    for split in ("train", "test_unseen"):
        for app_id in catalog.app_ids(split):
            env = gym.make("ToolGen-v0", split=split, apps=[app_id], distractors=0)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                check_env(env.unwrapped)
            if [w for w in caught if issubclass(w.category, UserWarning)]:
                failed.append(app_id)
            checked += 1
            env.close()
    check_s = time.perf_counter() - start
    start = time.perf_counter()
    solved, failures = solve_every_template(catalog.app_ids())
    return {"check_env_apps": checked, "check_env_failed": failed, "check_env_s": check_s,
            "templates_solved": sum(solved.values()), "templates_failed": failures[:20],
            "templates_counted": catalog.stats()["templates"],
            "sweep_s": time.perf_counter() - start}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, for a smoke run")
    parser.add_argument("--sweep", action="store_true", help="also check_env every app and solve every template")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    n = 60 if args.quick else 400
    report: dict[str, Any] = {}

    from rollgym.envs.tools.generated import catalog
    from rollgym.envs.tools.generated.env import new_session, world_tools
    from rollgym.envs.tools.generated.grading import diff_apps
    from rollgym.envs.tools.generated.store import build_app
    from rollgym.envs.tools.generated.tools import build_tools, call

    start = time.perf_counter()
    catalog.pool()
    report["pool_build_s"] = time.perf_counter() - start
    ids = catalog.app_ids()
    report["app_build"] = percentiles(timed(lambda i: build_app(catalog.schema(ids[i % len(ids)])), max(20, n // 4)))
    report["tools_build"] = percentiles(timed(lambda i: build_tools(catalog.schema(ids[i % len(ids)])),
                                              max(20, n // 4)))
    start = time.perf_counter()
    for app_id in ids:  # a long-running trainer touches every app once
        catalog.app(app_id)
        catalog.tools(app_id)
    report["all_apps_build_s"] = time.perf_counter() - start

    env = gym.make("ToolGen-v0").unwrapped
    env.reset(seed=0)
    for i in range(n):  # warm the task draws' caches as a long run would
        env.reset(options={"task_index": i})
    report["reset_env"] = percentiles(timed(lambda i: env.reset(options={"task_index": i}), n))
    report["reset_env_test"] = percentiles(timed(lambda i: env.reset(options={"task_index": i, "split": "test"}),
                                                 n))
    report["reset_env_unseen"] = percentiles(timed(lambda i: env.reset(options={"task_index": i,
                                                                               "split": "test_unseen"}), n))
    # ToolGen-v1: 1,024 apps, built lazily; the first reset of a process pays for the pool and the world's apps
    start = time.perf_counter()
    wide = gym.make("ToolGen-v1").unwrapped
    wide.reset(seed=0)
    report["v1_first_reset_s"] = time.perf_counter() - start
    for i in range(n):  # warm as a long run would: each task builds its world's apps once
        wide.reset(options={"task_index": i})
    report["reset_env_v1"] = percentiles(timed(lambda i: wide.reset(options={"task_index": i}), n))
    report["reset_env_v1_unseen"] = percentiles(timed(lambda i: wide.reset(options={"task_index": i,
                                                                                   "split": "test_unseen"}), n))
    report["v1_apps_built"] = catalog.app.cache_info().currsize
    tool_world = gym.make("ToolWorld-v1").unwrapped
    tool_world.reset(seed=0)
    report["reset_toolworld_v1"] = percentiles(timed(lambda i: tool_world.reset(options={"task_index": i}), n))
    env.reset(options={"task_index": 3})
    task = env.task
    world = task.meta["world"]
    report["world_apps"] = len(world)
    report["reset_copy_only"] = percentiles(timed(lambda i: new_session(task), n))
    report["rebuild_from_schema"] = percentiles(timed(lambda i: [build_app(catalog.schema(a)) for a in world],
                                                      max(10, n // 10)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "world.json"
        path.write_text(json.dumps(world_json(world)))
        report["json_reload"] = percentiles(timed(lambda i: json.loads(path.read_text()), n))
        data = json.loads(path.read_text())
        report["json_hash_once"] = percentiles(timed(lambda i: state_hash(data), n))
        report["json_file_kb"] = path.stat().st_size / 1024

    schema = catalog.schema(task.meta["apps"][0])
    read = f'<tool_call>{{"name": "{schema.app_id}_{schema.record.name}_search", "arguments": {{"page_size": 10}}}}'
    read += "</tool_call>"
    rows = catalog.app(schema.app_id).table(schema.party)
    write = (f'<tool_call>{{"name": "{schema.app_id}_{schema.party.name}_update", "arguments": '
             f'{{"{schema.party.name}_id": {rows[0]["id"]}, "name": "Bench Name"}}}}</tool_call>')

    def step(action: str) -> Any:
        def run(i: int) -> None:
            if env.turn >= env.max_turns - 1:
                env.reset(options={"task_index": 3})
            env.step(action)
        return run

    env.reset(options={"task_index": 3})
    report["step_read"] = percentiles(timed(step(read), n))
    env.reset(options={"task_index": 3})
    report["step_write"] = percentiles(timed(step(write), n))
    session = new_session(task)
    tools = world_tools(task)
    call(session, tools, f"{schema.app_id}_{schema.party.name}_update",
         {f"{schema.party.name}_id": rows[0]["id"], "name": "Bench Name"})
    report["grade_diff"] = percentiles(timed(lambda i: diff_apps(world, session.dbs, session.touched), n))
    calls = n * 5
    start = time.perf_counter()
    for i in range(calls):
        call(session, tools, f"{schema.app_id}_{schema.record.name}_search", {"page_size": 10, "page": 1 + i % 3})
    report["calls_per_s_direct"] = calls / (time.perf_counter() - start)

    gc.collect()
    proc = psutil.Process()
    rss0 = proc.memory_info().rss
    count = 50 if args.quick else 300
    live = []
    for i in range(count):
        e = gym.make("ToolGen-v0").unwrapped
        e.reset(options={"task_index": 1000 + i})
        live.append(e)
    gc.collect()
    report["memory_per_episode_mb"] = (proc.memory_info().rss - rss0) / count / 2**20
    for e in live:
        e.close()
    report["process_rss_mb"] = proc.memory_info().rss / 2**20
    if args.sweep:
        report["sweep"] = sweep()

    print_latencies(report, ("reset_env", "reset_env_test", "reset_env_unseen", "reset_env_v1", "reset_env_v1_unseen",
                             "reset_toolworld_v1", "reset_copy_only", "rebuild_from_schema", "json_reload",
                             "json_hash_once", "step_read", "step_write", "grade_diff", "app_build", "tools_build"))
    p50 = report["reset_env"]["p50_ms"]
    print(f"ToolGen reset / ToolWorld-v1 reset (p50):    {p50 / report['reset_toolworld_v1']['p50_ms']:8.2f}x")
    print(f"rebuild / copy (p50):                        "
          f"{report['rebuild_from_schema']['p50_ms'] / report['reset_copy_only']['p50_ms']:8.1f}x")
    print_state_costs(report)
    print(f"world of {report['world_apps']} apps; JSON state {report['json_file_kb']:.0f} KiB")
    print(f"memory per live episode: {report['memory_per_episode_mb']:.2f} MiB (process {report['process_rss_mb']:.0f} "
          f"MiB with all 256 apps built)")
    print(f"tool calls/s: {report['calls_per_s_direct']:.0f}; pool {report['pool_build_s'] * 1000:.0f} ms; "
          f"all 256 apps and tools built in {report['all_apps_build_s']:.2f} s")
    print(f"ToolGen-v1 (1,024 apps): first reset of a process {report['v1_first_reset_s']:.2f} s; "
          f"{report['v1_apps_built']} apps built in all after the warm-up")
    if args.sweep:
        print(f"sweep: {json.dumps(report['sweep'])}")
    rebuild = report["rebuild_from_schema"]["p50_ms"]
    wide_p50 = report["reset_env_v1"]["p50_ms"]
    report_figures(args, "toolgen", report, [
        {"what": f"ToolGen reset (p50, {report['world_apps']}-app world)", "rollgym": f"{p50:.1f} ms",
         "peer": f"apps rebuilt from their schemas {rebuild:.1f} ms", "ratio": f"{rebuild / p50:.0f}x"},
        {"what": "ToolGen-v1 reset (p50, 1,024 apps, built lazily)", "rollgym": f"{wide_p50:.1f} ms",
         "peer": f"ToolGen-v0 reset (256 apps) {p50:.1f} ms", "ratio": f"{wide_p50 / p50:.2f}x"},
    ], command="python bench/bench_toolgen.py")
    return report


if __name__ == "__main__":
    main(sys.argv[1:])

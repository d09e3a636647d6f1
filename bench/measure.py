"""Measuring helpers that several benchmarks share: latency percentiles, process memory, state files.

Benchmarks run as ``python bench/bench_x.py``, so this folder is on ``sys.path`` and they
``from measure import ...``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sqlite3
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import psutil


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds."""
    ordered = sorted(samples)
    return {"p50_ms": 1000 * statistics.median(ordered), "p95_ms": 1000 * ordered[int(0.95 * (len(ordered) - 1))]}


def timed(fn: Any, n: int) -> list[float]:
    """Wall time of ``n`` calls of ``fn(i)``."""
    out = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - start)
    return out


def uss_mb() -> float:
    """Unique memory of this process and all its children (Playwright driver, Chromium), in MB."""
    me = psutil.Process()
    total = 0
    for proc in [me, *me.children(recursive=True)]:
        try:
            total += proc.memory_full_info().uss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total / 2**20


def memory_in_flight(runtime: Any, tasks: list[Any], second_page: Callable[[Any], Awaitable[Any]]) -> dict[str, float]:
    """Memory per web episode with one episode per task open at once, each on a second page
    (``second_page(episode)``) so that each browser context holds a history."""
    from rollgym.envs.web.episode import WebEpisode

    before = uss_mb()
    episodes = [WebEpisode(runtime, task) for task in tasks]

    async def start_all() -> None:
        await asyncio.gather(*(e.start() for e in episodes))
        for e in episodes:
            await second_page(e)

    runtime.call(start_all())
    time.sleep(0.5)
    during = uss_mb()

    async def close_all() -> None:
        await asyncio.gather(*(e.close() for e in episodes))

    runtime.call(close_all())
    return {"memory_per_episode_mb": (during - before) / len(tasks), "memory_total_mb": during}


def tables_as_json(conn: sqlite3.Connection) -> dict[str, list[dict[str, Any]]]:
    """Every table of a database as lists of row dicts (the τ-bench-style data file)."""
    data: dict[str, list[dict[str, Any]]] = {}
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        cur = conn.execute(f'SELECT * FROM "{table}"')
        names = [d[0] for d in cur.description]
        data[table] = [dict(zip(names, row)) for row in cur.fetchall()]
    return data


def state_hash(data: dict[str, Any]) -> str:
    """τ-bench-style hash of a whole state."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def print_latencies(report: dict[str, Any], keys: tuple[str, ...]) -> None:
    """A table of the p50 and p95 milliseconds of each ``report[key]`` (as :func:`percentiles` gives them)."""
    print(f"{'measure':44s} {'p50 ms':>10s} {'p95 ms':>10s}")
    for key in keys:
        print(f"{key:44s} {report[key]['p50_ms']:10.3f} {report[key]['p95_ms']:10.3f}")


def print_state_costs(report: dict[str, Any]) -> None:
    """The peer's reset and grading (reload the JSON state, hash it before and after) against a copy and a diff."""
    tau = report["json_reload"]["p50_ms"] + 2 * report["json_hash_once"]["p50_ms"]
    ours = report["reset_copy_only"]["p50_ms"] + report["grade_diff"]["p50_ms"]
    print(f"JSON reload + 2 hashes vs copy + diff (p50): {tau:8.3f} ms vs {ours:.3f} ms ({tau / ours:.1f}x)")


def add_browsergym_figures(parser: argparse.ArgumentParser) -> None:
    """The peer's step and reset latency (BrowserGym's defaults, measured by ``bench/bench_web.py``)."""
    parser.add_argument("--browsergym-step-s", type=float, default=3.5, help="BrowserGym's step latency, s")
    parser.add_argument("--browsergym-reset-s", type=float, default=5.8, help="BrowserGym's reset latency, s")


def report_figures(args: argparse.Namespace, name: str, report: dict[str, Any], rows: list[dict[str, str]],
                   command: str) -> None:
    """Write the figures to ``--json`` when given; save them for the README unless ``--quick``."""
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    if not args.quick:
        from publish import save_results

        save_results(name, report, rows, command=command)

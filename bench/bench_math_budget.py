"""MATH verifier under a slow response: the per-response budget and the shared pool's fairness.

Run: ``.venv/bin/python bench/bench_math_budget.py`` (about a minute).

The attack from issue #16: one response with 8 distinct boxed ``(n!)!``; each
passes the size guards and makes sympy run until the per-answer timeout (5 s).
Measured side by side in one run:

* ``unbounded``: no response budget and one call may hold every worker (how
  the verifier worked before the budget: 8 x 5 s timeouts, 26-31 s measured).
* ``default``: ``budget_s=10`` per response and ``per_call = workers - 1``.

While the slow response is being verified in one thread, another thread
verifies a normal answer that needs the symbolic pool (``\\sqrt{2}`` vs
``2^{1/2}``) every 0.5 s; printed: the slow call's wall time and verdict, and
the normal calls' latencies. Nothing here asserts; figures go into docs/math.md.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

from rollgym.verifiers import math as rollgym_math
from rollgym.verifiers import math_pool
from rollgym.verifiers.math import MathVerifyConfig, verify_math

SLOW_RESPONSE = " ".join(rf"\boxed{{({n}!)!}}" for n in range(10, 18))


def run(mode: str, workers: int) -> dict[str, Any]:
    """Verify the slow response while a second thread verifies normal answers; return the timings."""
    math_pool.shutdown_pool()
    rollgym_math._CACHE.clear()
    per_call = workers if mode == "unbounded" else None
    pool = math_pool.SymbolicPool(workers=workers, per_call=per_call)
    pool.run([("equal", ("1", "1"))], timeout_s=120)
    while pool._idle.qsize() < workers:  # every worker started and idle before timing
        time.sleep(0.1)
    math_pool._POOL = pool
    config = MathVerifyConfig(budget_s=3600 if mode == "unbounded" else 10.0)
    latencies: list[float] = []
    done = threading.Event()

    def normal_requests() -> None:
        k = 0
        while not done.is_set():
            k += 1
            rollgym_math._CACHE.clear()
            start = time.perf_counter()
            score = verify_math(rf"\sqrt{{{k + 1}}}", rf"\boxed{{{k + 1}^{{1/2}}}}")
            latencies.append(time.perf_counter() - start)
            assert score.correct, score
            done.wait(0.5)

    other = threading.Thread(target=normal_requests)
    start = time.perf_counter()
    other.start()
    score = verify_math("5", SLOW_RESPONSE, config)
    slow_s = time.perf_counter() - start
    done.set()
    other.join()
    math_pool.shutdown_pool()
    return {"slow_s": slow_s, "error": score.error, "latencies": latencies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=math_pool.default_workers())
    args = parser.parse_args()
    print(f"workers: {args.workers}; slow response: {SLOW_RESPONSE}")
    for mode in ("unbounded", "default"):
        r = run(mode, args.workers)
        lat = r["latencies"]
        print(
            f"{mode:9}  slow response {r['slow_s']:6.1f} s ({r['error']});  normal answers meanwhile: "
            f"{len(lat)}, median {statistics.median(lat):.2f} s, max {max(lat):.2f} s"
        )


if __name__ == "__main__":
    main()

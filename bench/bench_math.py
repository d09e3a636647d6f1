"""MATH verifier and Python sandbox: rollgym vs math-verify alone, measured in the same run.

Run: ``ROLLGYM_DATA_DIR=../shared/data .venv/bin/python bench/bench_math.py``
(a few minutes on a busy 2-core machine; ``--pairs 2000`` for a quicker run).

1. Verifier throughput and agreement on the same pairs: every MATH500 gold
   answer checked against the gold answers of 20 other problems (10,000 pairs,
   seed 0), plus the 500 (gold, solution box) pairs. rollgym: in-process fast
   path plus the shared worker pool (``ROLLGYM_MATH_WORKERS``, default ``min(4, CPUs) + 1``).
   Peer: math-verify's own ``parse`` + ``verify`` per pair in one process, as its
   README shows. Printed: pairs/s for each and the ratio, the accepted
   (different-string) pairs of each side, and every disagreement.
2. Sandbox overhead per call: ``Sandbox.run_python("print(1)")`` (cold) against a bare
   ``python -I -c "print(1)"`` subprocess (the least any fresh-process sandbox costs).

Nothing here asserts; the figures go into docs/math.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rollgym.core.extraction import extract_boxed
from rollgym.sandbox import Limits, Sandbox
from rollgym.verifiers import math as rollgym_math
from rollgym.verifiers.math import answers_equal_many
from rollgym.verifiers.math_pool import get_pool, shutdown_pool


def load_math500(data_dir: Path) -> list[dict[str, Any]]:
    path = data_dir / "math500.jsonl"
    if not path.exists():
        sys.exit(f"{path} not found; set ROLLGYM_DATA_DIR to the folder with math500.jsonl.")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def negative_pairs(rows: list[dict[str, Any]], per_gold: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    n = len(rows)
    pairs = []
    for i in range(n):
        for j in rng.sample([k for k in range(n) if k != i], per_gold):
            pairs.append((rows[i]["answer"], rows[j]["answer"]))
    return pairs


def run_rollgym(pairs: list[tuple[str, str]]) -> tuple[list[bool], float, float]:
    shutdown_pool()
    rollgym_math._CACHE.clear()
    start = time.perf_counter()
    get_pool().run([("equal", ("1", "1"))] * get_pool().size, timeout_s=60)  # start every worker
    startup = time.perf_counter() - start
    start = time.perf_counter()
    verdicts = [v.correct for v in answers_equal_many(pairs)]
    return verdicts, time.perf_counter() - start, startup


def run_math_verify(pairs: list[tuple[str, str]]) -> tuple[list[bool], float]:
    import logging

    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    start = time.perf_counter()
    verdicts = []
    for gold, pred in pairs:
        try:
            verdicts.append(bool(verify(parse(f"${gold}$"), parse(f"${pred}$"))))
        except Exception:
            verdicts.append(False)
    return verdicts, time.perf_counter() - start


def sandbox_overhead(calls: int) -> dict[str, float]:
    box = Sandbox(Limits(wall_s=30))
    box.run_python("print(1)")  # warm the page cache
    ours = []
    for _ in range(calls):
        start = time.perf_counter()
        result = box.run_python("print(1)")
        ours.append(time.perf_counter() - start)
        assert result.stdout == "1\n", result
    bare = []
    for _ in range(calls):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "print(1)"], capture_output=True, check=True)
        bare.append(time.perf_counter() - start)
    layers = dict(box.isolation.walls)
    box.close()
    return {
        "sandbox_ms_median": 1000 * statistics.median(ours),
        "bare_python_ms_median": 1000 * statistics.median(bare),
        "layers": layers,  # type: ignore[dict-item]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10_000, help="negative pairs (multiple of 500)")
    parser.add_argument("--sandbox-calls", type=int, default=20)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    rows = load_math500(Path(os.environ.get("ROLLGYM_DATA_DIR", "../shared/data")))
    negatives = negative_pairs(rows, max(1, args.pairs // len(rows)))
    positives = [(row["answer"], extract_boxed(row["solution"]) or "") for row in rows]
    pairs = negatives + positives

    ours, our_time, startup = run_rollgym(pairs)
    peer, peer_time = run_math_verify(pairs)
    n_neg = len(negatives)

    def accepted(verdicts: list[bool]) -> list[tuple[str, str]]:
        return [(g, p) for (g, p), v in zip(negatives, verdicts[:n_neg]) if v and g != p]

    disagreements = [(g, p, o, m) for (g, p), o, m in zip(pairs, ours, peer) if o != m]
    figures: dict[str, Any] = {
        "pairs": len(pairs),
        "workers": get_pool().size,
        "rollgym_pairs_per_s": len(pairs) / our_time,
        "rollgym_pool_startup_s": startup,
        "math_verify_pairs_per_s": len(pairs) / peer_time,
        "speed_ratio": peer_time / our_time,
        "agreement": 1 - len(disagreements) / len(pairs),
        "rollgym_recall_on_solution_boxes": sum(ours[n_neg:]) / len(positives),
        "math_verify_recall_on_solution_boxes": sum(peer[n_neg:]) / len(positives),
        "rollgym_accepted_different_strings": accepted(ours),
        "math_verify_accepted_different_strings": accepted(peer),
        "disagreements": [{"gold": g, "pred": p, "rollgym": o, "math_verify": m} for g, p, o, m in disagreements],
    }
    figures.update(sandbox_overhead(args.sandbox_calls))
    print(f"pairs: {len(pairs)} ({n_neg} different-problem pairs + {len(positives)} gold vs solution box)")
    print(f"rollgym      {figures['rollgym_pairs_per_s']:8.1f} pairs/s  ({figures['workers']} workers, "
          f"pool start {startup:.1f}s not counted)")
    print(f"math-verify  {figures['math_verify_pairs_per_s']:8.1f} pairs/s  (one process)")
    print(f"speed ratio  {figures['speed_ratio']:.2f}x   agreement {100 * figures['agreement']:.2f}%")
    print(f"recall on solution boxes: rollgym {figures['rollgym_recall_on_solution_boxes']:.3f}, "
          f"math-verify {figures['math_verify_recall_on_solution_boxes']:.3f}")
    print("accepted different-string pairs, rollgym:", figures["rollgym_accepted_different_strings"])
    print("accepted different-string pairs, math-verify:", figures["math_verify_accepted_different_strings"])
    for d in figures["disagreements"]:
        print(f"  disagree: gold={d['gold']!r} pred={d['pred']!r} "
              f"rollgym={d['rollgym']} math-verify={d['math_verify']}")
    print(f"sandbox per call: {figures['sandbox_ms_median']:.0f} ms median; bare `python -I -c` "
          f"{figures['bare_python_ms_median']:.0f} ms; layers {figures['layers']}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    shutdown_pool()
    if args.pairs == parser.get_default("pairs"):
        from publish import save_results

        save_results("math", figures, [
            {"what": f"MATH verification on {len(pairs):,} answer pairs (pairs/s)",
             "rollgym": f"{figures['rollgym_pairs_per_s']:,.0f} ({figures['workers']} workers)",
             "peer": f"math-verify alone {figures['math_verify_pairs_per_s']:,.0f}",
             "ratio": f"{figures['speed_ratio']:.1f}x"},
        ], command="python bench/bench_math.py")


if __name__ == "__main__":
    main()

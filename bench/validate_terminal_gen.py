"""Validate every ``TerminalGen-v0`` task: its oracle solution passes, its wrong solution and doing nothing fail.

Run: ``.venv/bin/python bench/validate_terminal_gen.py`` (all 4,260 tasks; ``--limit 20`` for 20 per
split). Each worker process keeps one sandbox session, emptied before each solution
(:class:`rollgym.envs.code.terminal_gen.validate.Validator`). Writes
``bench/results/validation/terminal_gen.json`` (not a README row):
tasks validated, per split and kind, distinct
task contents, the failures with their reasons, and the wall time. Nothing here asserts;
``tests/envs/code/test_terminal_gen.py`` validates a sample of every kind in CI.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rollgym.envs.code.terminal.env import SESSION_LIMITS
from rollgym.envs.code.terminal_gen.source import SPLIT_SIZES, TerminalGenSource, _key
from rollgym.envs.code.terminal_gen.validate import Validator
from rollgym.sandbox import Sandbox

RESULTS = Path(__file__).resolve().parent / "results" / "validation" / "terminal_gen.json"


def _work(items: list[tuple[str, int]]) -> list[dict[str, Any]]:
    source, validator = TerminalGenSource(), Validator(Sandbox(SESSION_LIMITS))
    rows = []
    for split, index in items:
        spec = source.spec(index, split)
        outcome = validator.validate(spec)
        rows.append({"split": split, "index": index, "kind": spec["kind"], "level": spec["level"],
                     "valid": outcome.valid, "key": _key(spec),
                     "why": None if outcome.valid else {"oracle": outcome.oracle.details,
                                                        "wrong_passed": outcome.wrong.correct,
                                                        "empty_passed": outcome.empty.correct}})
    validator.close()
    return rows


def main() -> None:
    """Validate the catalogue (or ``--limit`` tasks per split) and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="tasks per split (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    items = [(split, i) for split, size in SPLIT_SIZES.items() for i in range(min(size, args.limit or size))]
    chunks = [items[i:i + 20] for i in range(0, len(items), 20)]
    start, rows = time.perf_counter(), []
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        for part in pool.imap_unordered(_work, chunks):
            rows += part
            print(f"{len(rows)}/{len(items)} tasks, {sum(not r['valid'] for r in rows)} invalid, "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
            report = _report(rows, len(items), time.perf_counter() - start, args.workers)
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(report, indent=2, default=str) + "\n")  # so far, if cut short
    print(json.dumps({k: v for k, v in report.items() if k != "failures"}, indent=2))


def _report(rows: list[dict[str, Any]], planned: int, seconds: float, workers: int) -> dict[str, Any]:
    valid = [r for r in rows if r["valid"]]
    return {
        "planned": planned, "tasks": len(rows), "validated": len(valid),
        "distinct_contents": len({r["key"] for r in rows}), "seconds": round(seconds, 1), "workers": workers,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "per_split": dict(Counter(r["split"] for r in valid)), "per_kind": dict(Counter(r["kind"] for r in valid)),
        "failures": [{k: r[k] for k in ("split", "index", "kind", "level", "why")} for r in rows if not r["valid"]],
    }

if __name__ == "__main__":
    main()

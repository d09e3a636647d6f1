"""Sudoku: rollgym vs reasoning-gym (``sudoku`` 9x9, ``mini_sudoku`` 4x4), measured in the same run.

Run: ``.venv/bin/python bench/bench_sudoku.py`` (a few minutes, most of it
reasoning-gym at 58 and 60 blanks; ``--quick`` for a smoke run).

Both generators are asked for the same number of blank cells
(reasoning-gym: ``min_empty == max_empty``). The script prints:

1. generation: per-puzzle CPU time p50/p99 (insensitive to other processes on
   a shared machine), wall p99, puzzles per second, the blanks each side really
   produced and whether its metadata says so, and the ratio of mean times;
2. verification throughput (verdicts/s) on one shared set of responses to
   reasoning-gym's own puzzles, each side extracting the ``<answer>`` tag itself;
3. the responses where the verifiers disagree, grouped by kind, with why;
4. the memory one ``Sudoku-v0`` instance adds beyond shared module data.

Nothing here asserts: the figures go into docs/sudoku.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from rich.console import Console
from rich.table import Table

import rollgym  # noqa: F401  (registers the Sudoku ids)
from rollgym.agents.base import OracleAgent
from rollgym.core.task import Task
from rollgym.envs.sudoku import SudokuConfig, SudokuGenerator
from rollgym.verifiers.sudoku import verify_sudoku

console = Console(width=230)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def time_items(make: Callable[[int], Any], count: int) -> tuple[list[float], list[float], list[Any], float]:
    """Per-item CPU and wall seconds of ``make(i)`` for ``i < count``, the items, and the total wall time."""
    cpu, wall, items = [], [], []
    gc.collect()
    start = time.perf_counter()
    for i in range(count):
        c0, w0 = time.process_time(), time.perf_counter()
        items.append(make(i))
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return cpu, wall, items, time.perf_counter() - start


def rg_dataset(name: str, blanks: int, count: int) -> Any:
    import reasoning_gym

    return reasoning_gym.create_dataset(name, min_empty=blanks, max_empty=blanks, size=max(count, 1), seed=42)


def generation_rows(size: int, levels: list[tuple[int, int, int]]) -> list[list[str]]:
    """One table row per (blanks, rollgym count, reasoning-gym count) and side."""
    box = (3, 3) if size == 9 else (2, 2)
    rg_name = "sudoku" if size == 9 else "mini_sudoku"
    rows = []
    for blanks, ours_count, rg_count in levels:
        means = {}
        for side, count in (("rollgym", ours_count), ("reasoning-gym", rg_count)):
            if count == 0:
                rows.append([f"{size}x{size}", str(blanks), side, "n/a (above max)", "", "", "", "", "", ""])
                continue
            if side == "rollgym":
                gen = SudokuGenerator(SudokuConfig(*box, blanks=blanks))
                gen.task(10**6, "train")  # warm shared tables
                cpu, wall, tasks, total = time_items(lambda i, g=gen: g.task(i, "train"), count)
                actual = ["".join(t.meta["puzzle"]).count(".") for t in tasks]
                claimed = [t.meta["blanks"] for t in tasks]
            else:
                ds = rg_dataset(rg_name, blanks, count)
                cpu, wall, entries, total = time_items(lambda i, d=ds: d[i], count)
                actual = [sum(v == 0 for row in e["metadata"]["puzzle"] for v in row) for e in entries]
                claimed = [e["metadata"]["num_empty"] for e in entries]
            means[side] = statistics.mean(cpu)
            honest = sum(a == c for a, c in zip(actual, claimed))
            rows.append(
                [
                    f"{size}x{size}",
                    str(blanks),
                    side,
                    f"{statistics.mean(actual):.1f} [{min(actual)}-{max(actual)}]",
                    f"{honest}/{len(actual)}",
                    f"{percentile(cpu, 50) * 1e3:.2f}",
                    f"{percentile(cpu, 99) * 1e3:.2f}",
                    f"{percentile(wall, 99) * 1e3:.2f}",
                    f"{count / total:.0f}",
                    "",
                ]
            )
        if len(means) == 2:
            rows[-2][-1] = f"{means['reasoning-gym'] / means['rollgym']:.1f}x faster"
    return rows


# -- verification ------------------------------------------------------------------------


def spaced(rows: list[str]) -> str:
    return "\n".join(" ".join(row) for row in rows)


def boxed(rows: list[str], box: int) -> str:
    size = len(rows)
    lines = []
    for r, row in enumerate(rows):
        if r and r % box == 0:
            lines.append("+".join(["-" * (2 * box + 1)] * (size // box)))
        lines.append(" | ".join(" ".join(row[c : c + box]) for c in range(0, size, box)))
    return "\n".join(lines)


def relabel(rows: list[str], a: str, b: str) -> list[str]:
    table = str.maketrans({a: b, b: a})
    return [row.translate(table) for row in rows]


RESPONSE_KINDS: dict[str, str] = {
    "correct, spaced rows": "both accept the prompt's own format",
    "correct, unspaced rows": "reasoning-gym docks 10% for any format but its own",
    "correct, box lines": "reasoning-gym: 10% format penalty, then a length penalty for the separators",
    "correct, markdown table": "reasoning-gym: format and length penalties",
    "correct, JSON list of lists": "reasoning-gym only reads digits line by line; a one-line grid scores 0",
    "correct, label line first": "reasoning-gym: format and length penalties for 'Solution:'",
    "all ones in the blanks": "reasoning-gym's per-cell credit counts the givens",
    "givens unchanged": "reasoning-gym skips rows with blanks but credits complete given rows",
    "random digits in the blanks": "reasoning-gym credits givens plus lucky blanks",
    "valid grid, givens changed": "reasoning-gym credits every cell that happens to match",
    "solution of another puzzle": "reasoning-gym credits cells that happen to match",
    "two grids in one answer": "reasoning-gym reads the first grid, then a length penalty",
    "extra row": "reasoning-gym ignores the extra row, then a length penalty",
    "empty answer": "both 0",
}


def responses_for(rows: list[str], other: list[str], puzzle: list[str], box: int, rng: np.random.Generator) -> dict:
    size = len(rows)
    random_fill = ["".join(ch if ch != "." else str(rng.integers(1, size + 1)) for ch in row) for row in puzzle]
    table = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * size] + ["| " + " | ".join(r) + " |" for r in rows[1:]]
    texts = {
        "correct, spaced rows": spaced(rows),
        "correct, unspaced rows": "\n".join(rows),
        "correct, box lines": boxed(rows, box),
        "correct, markdown table": "\n".join(table),
        "correct, JSON list of lists": json.dumps([[int(d) for d in row] for row in rows]),
        "correct, label line first": "Solution:\n" + spaced(rows),
        "all ones in the blanks": spaced([row.replace(".", "1") for row in puzzle]),
        "givens unchanged": spaced([row.replace(".", "_") for row in puzzle]),
        "random digits in the blanks": spaced(random_fill),
        "valid grid, givens changed": spaced(relabel(rows, rows[0][0], rows[0][1])),
        "solution of another puzzle": spaced(other),
        "two grids in one answer": spaced(rows) + "\n\n" + spaced(rows),
        "extra row": spaced(rows) + "\n" + " ".join(rows[0]),
        "empty answer": "",
    }
    return {kind: f"Reasoning...\n<answer>\n{text}\n</answer>" for kind, text in texts.items()}


def verification(size: int, count: int, reps: int) -> tuple[list[list[str]], list[list[str]]]:
    from reasoning_gym.utils import extract_answer

    box = 3 if size == 9 else 2
    # the default difficulty of rollgym's ids: 45 blanks for 9x9, 10 for 4x4
    ds = rg_dataset("sudoku" if size == 9 else "mini_sudoku", 45 if size == 9 else 10, count + 1)
    entries = [ds[i] for i in range(count + 1)]

    def as_rows(grid: list[list[int]]) -> list[str]:
        return ["".join(str(v) if v else "." for v in row) for row in grid]

    tasks = [
        Task(
            id=f"rg:{i}",
            env_id="Sudoku-v0" if size == 9 else "Sudoku4x4-v0",
            prompt=e["question"],
            answer=as_rows(e["metadata"]["solution"]),
            meta={"size": size, "box": [box, box], "puzzle": as_rows(e["metadata"]["puzzle"])},
        )
        for i, e in enumerate(entries)
    ]
    rng = np.random.default_rng(0)
    cases = []  # (kind, task, entry, response)
    for i in range(count):
        # another puzzle's solution; 4x4 has only 288 grids, so skip puzzles that share this one's
        other = next((t.answer for t in tasks[i + 1 :] + tasks[:i] if t.answer != tasks[i].answer), tasks[i].answer)
        responses = responses_for(tasks[i].answer, other, tasks[i].meta["puzzle"], box, rng)
        cases += [(kind, tasks[i], entries[i], text) for kind, text in responses.items()]

    def ours() -> list[float]:
        return [verify_sudoku(task, text).reward for _, task, _, text in cases]

    def theirs() -> list[float]:
        return [ds.score_answer(extract_answer(text), entry) for _, _, entry, text in cases]

    speed = []
    results = {}
    for side, run in (("rollgym", ours), ("reasoning-gym", theirs)):
        best = 0.0
        for _ in range(reps):
            gc.collect()
            start = time.perf_counter()
            results[side] = run()
            best = max(best, len(cases) / (time.perf_counter() - start))
        speed.append([f"{size}x{size}", side, str(len(cases)), f"{best:,.0f}"])
    speed[0].append(f"{float(speed[0][3].replace(',', '')) / float(speed[1][3].replace(',', '')):.1f}x")
    speed[1].append("")

    disagreements = []
    for kind, why in RESPONSE_KINDS.items():
        index = [j for j, case in enumerate(cases) if case[0] == kind]
        ours_r = [results["rollgym"][j] for j in index]
        theirs_r = [results["reasoning-gym"][j] for j in index]
        differ = sum(abs(a - b) > 1e-9 for a, b in zip(ours_r, theirs_r))
        disagreements.append(
            [
                f"{size}x{size}",
                kind,
                f"{statistics.mean(ours_r):.3f}",
                f"{statistics.mean(theirs_r):.3f}",
                f"{differ}/{len(index)}",
                why if differ else "",
            ]
        )
    return speed, disagreements


# -- memory ----------------------------------------------------------------------------------


def instance_memory() -> tuple[int, int]:
    """Peak and retained bytes allocated by making one Sudoku-v0, resetting it and stepping an oracle answer."""
    warm = gym.make("Sudoku-v0")  # module data: geometry tables, registrations
    obs, info = warm.reset(seed=1)
    warm.step(OracleAgent().act(obs, info))
    gc.collect()
    tracemalloc.start()
    env = gym.make("Sudoku-v0")
    obs, info = env.reset(seed=0)
    env.step(OracleAgent().act(obs, info))
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, current


def print_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few items per level, for a smoke run")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    q = args.quick
    # (blanks, rollgym puzzles, reasoning-gym puzzles); reasoning-gym takes seconds per puzzle near 60
    nine = [(30, 300, 100), (50, 300, 60), (58, 100, 15), (60, 0, 8)]
    four = [(8, 500, 300), (10, 500, 300), (12, 500, 300)]
    if q:
        nine = [(b, max(n // 30, 3) if n else 0, max(r // 20, 2)) for b, n, r in nine]
        four = [(b, 20, 20) for b, _, _ in four]

    columns = [
        "grid",
        "blanks asked",
        "library",
        "blanks made (mean [range])",
        "meta honest",
        "CPU p50 ms",
        "CPU p99 ms",
        "wall p99 ms (shared box)",
        "puzzles/s",
        "mean-time ratio",
    ]
    generated = generation_rows(9, nine) + generation_rows(4, four)
    print_table("Generation (one puzzle with its uniqueness proof)", columns, generated)

    speed9, disagree9 = verification(9, 10 if q else 100, 1 if q else 3)
    speed4, disagree4 = verification(4, 10 if q else 100, 1 if q else 3)
    print_table(
        "Verification throughput (shared responses)",
        ["grid", "library", "responses", "verdicts/s", "ratio"],
        speed9 + speed4,
    )
    print_table(
        "Where the verifiers disagree",
        ["grid", "response", "rollgym", "reasoning-gym", "differ", "why"],
        disagree9 + disagree4,
    )

    peak, current = instance_memory()
    console.print(
        f"One Sudoku-v0 instance (make + reset + step): peak {peak / 1024:.0f} KiB, "
        f"retained {current / 1024:.0f} KiB beyond shared module data."
    )
    if not q:
        from publish import save_results

        ours = next(r for r in generated if r[:3] == ["9x9", "50", "rollgym"])
        save_results("sudoku", {"generation": [dict(zip(columns, r)) for r in generated],
                                "verification": speed9 + speed4, "memory_peak_kib": peak / 1024}, [
            {"what": "9x9 Sudoku generation with uniqueness proof, 50 blanks",
             "rollgym": f"p50 {float(ours[5]):.1f} ms, p99 {float(ours[6]):.1f} ms", "peer": "reasoning-gym",
             "ratio": ours[-1].replace(" faster", "")},
        ], command="python bench/bench_sudoku.py", load_before=load_before)


if __name__ == "__main__":
    main()

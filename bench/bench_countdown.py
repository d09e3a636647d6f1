"""Countdown: rollgym vs reasoning-gym, measured in the same run.

Run: ``.venv/bin/python bench/bench_countdown.py`` (about a minute; ``--quick`` for a smoke run).

Both generators use the same settings: 4 numbers from 1 to 100, targets from
100 to 999, operators + - * /, every number used exactly once (reasoning-gym's
scorer always requires every number, even under its "at most once" prompt).
The script prints:

1. generation throughput (tasks/s) and the ratio;
2. verification throughput (verdicts/s) on one shared set of responses
   (correct, wrong and reward-hack answers to reasoning-gym's own tasks), each
   side extracting the ``<answer>`` tag itself;
3. the responses where the two verifiers disagree, grouped by kind, with why;
4. the memory one ``Countdown-v0`` instance adds beyond shared module data.

Nothing here asserts: the figures go into docs/countdown.md.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

import rollgym  # noqa: F401  (registers Countdown-v0)
from rollgym.core.task import Task
from rollgym.envs.countdown import CountdownConfig, CountdownGenerator, countdown_oracle, countdown_task
from rollgym.verifiers.countdown import verify_countdown

SETTINGS = {"min_value": 1, "max_value": 100, "min_target": 100, "max_target": 999}
MARKER = "rollgym_bench_marker"  # a harmless side effect that shows whether a verifier ran model text as code


def best_rate(run: Callable[[int], int], reps: int) -> float:
    """Items per CPU second of ``run(pass_index)`` (which returns how many items it handled), best of ``reps``.

    Each pass works on fresh items (``pass_index`` selects them), so neither side
    is timed on inputs its caches have already seen. CPU time rather than wall
    time, because the benchmark machine is shared.
    """
    rates = []
    for k in range(reps):
        gc.collect()
        start = time.process_time()
        count = run(k)
        rates.append(count / max(time.process_time() - start, 1e-9))
    return max(rates)


def answer(text: str) -> str:
    return f"<answer>{text}</answer>"


def make_wrong(expression: str) -> str:
    """A well-formed answer over the same numbers with another value (first operator changed)."""
    swaps = {"+": "-", "-": "+", "*": "+", "/": "*"}
    for i, ch in enumerate(expression):
        if ch in swaps and i > 0:
            return expression[:i] + swaps[ch] + expression[i + 1 :]
    return expression


def responses_for(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, response) pairs for one reasoning-gym task: correct, wrong and reward hacks."""
    numbers, target, reference = entry["metadata"]["numbers"], entry["metadata"]["target"], entry["answer"]
    a, b = numbers[0], numbers[1]
    return [
        ("correct (reference)", answer(reference)),
        ("correct, with '= target'", answer(f"{reference} = {target}")),
        ("wrong value", answer(make_wrong(reference))),
        ("empty answer", answer("")),
        ("no answer tags", reference),
        ("target alone", answer(str(target))),
        ("number reused", answer(f"{reference} + {a} - {a}")),
        ("number not offered", answer(f"{reference} + 1000 - 1000")),
        ("number missing", answer(f"{a} + {b}")),
        ("code execution", answer(f"__import__('sys').modules.setdefault('{MARKER}', {target})")),
        ("several answers", answer(f"{a} + {b}, {reference}")),
    ]


def crafted_cases() -> list[tuple[str, dict[str, Any], str]]:
    """Hand-made tasks that show each known difference: (kind, reasoning-gym entry, response)."""

    def entry(numbers: list[int], target: int) -> dict[str, Any]:
        return {"answer": "", "metadata": {"numbers": numbers, "target": target}}

    return [
        ("exponent (** hack)", entry([2, 3, 4, 5], 17), answer("2**3 + 4 + 5")),
        ("factorial (! hack)", entry([2, 3, 4, 5], 17), answer("3! + 2 + 4 + 5")),
        ("decimal 2.5 counted as 2 and 5", entry([2, 5, 4, 1], 10), answer("2.5 * 4 * 1")),
        ("unary minus", entry([2, 3, 10, 15], 20), answer("-(2 - 10) + 15 - 3")),
        ("fraction intermediate", entry([1, 3, 4, 6], 24), answer("6 / (1 - 3 / 4)")),
    ]


def rollgym_task(entry: dict[str, Any]) -> Task:
    meta = entry["metadata"]
    return countdown_task(meta["numbers"], meta["target"])


def measure_memory() -> tuple[int, int]:
    """(peak, retained) bytes traced while one Countdown-v0 env is made, reset and stepped."""
    warm = gym.make("Countdown-v0")  # load every module and lazy table first: they are shared
    obs, info = warm.reset(seed=1)
    warm.step(countdown_oracle(obs, info))
    gc.collect()
    tracemalloc.start()
    env = gym.make("Countdown-v0")
    obs, info = env.reset(seed=0)
    env.step(countdown_oracle(obs, info))
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del env
    return peak, current


def measure_rg_memory(create_dataset: Callable[..., Any]) -> tuple[int, int]:
    """The same for one reasoning-gym countdown dataset object and one item."""
    create_dataset("countdown", size=10, seed=1, **SETTINGS)[0]
    gc.collect()
    tracemalloc.start()
    dataset = create_dataset("countdown", size=10, seed=0, min_numbers=4, max_numbers=4, **SETTINGS)
    dataset[0]
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del dataset
    return peak, current


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer items; for a smoke run")
    args = parser.parse_args(argv)
    rg_items, ours_items, reps = (20, 1000, 1) if args.quick else (100, 10_000, 3)

    try:
        import reasoning_gym
        from reasoning_gym.utils import extract_answer
    except ImportError:
        sys.exit("reasoning-gym is not installed; run `.venv/bin/pip install reasoning-gym` to compare with it.")

    # --- generation: pass k makes items k*N .. (k+1)*N - 1 ------------------------------------------
    generator = CountdownGenerator(CountdownConfig(num_numbers=4, **SETTINGS))
    generator.task(0, "validation")

    def ours_generate(split: str, count: int) -> Callable[[int], int]:
        return lambda k: len([generator.task(i, split) for i in range(k * count, (k + 1) * count)])

    rg_config = {"min_numbers": 4, "max_numbers": 4, **SETTINGS}
    rg_dataset = reasoning_gym.create_dataset("countdown", size=(reps + 1) * rg_items, seed=0, **rg_config)
    rg_dataset[reps * rg_items]  # import sympy and warm up outside the timing
    entries: list[dict[str, Any]] = []

    def rg_generate(k: int) -> int:
        made = [rg_dataset[i] for i in range(k * rg_items, (k + 1) * rg_items)]
        entries.extend(made)
        return len(made)

    gen_ours = best_rate(ours_generate("train", ours_items), reps)
    gen_ours_test = best_rate(ours_generate("test", ours_items // 5), reps)
    gen_rg = best_rate(rg_generate, reps)

    # --- verification: the same responses for both; pass k scores the responses to pass k's tasks ----
    shared = [(kind, entry, response) for entry in entries for kind, response in responses_for(entry)]
    shared += [(kind, entry, response) for kind, entry, response in crafted_cases()]
    tasks = [rollgym_task(entry) for _, entry, _ in shared]
    per_pass = len(responses_for(entries[0])) * rg_items
    rg_score = rg_dataset.score_answer
    ours_rewards: dict[int, float] = {}
    rg_rewards: dict[int, float] = {}

    def pass_range(k: int) -> range:
        return range(k * per_pass, len(shared) if k == reps - 1 else (k + 1) * per_pass)

    def ours_verify(k: int) -> int:
        for i in pass_range(k):
            ours_rewards[i] = verify_countdown(tasks[i], shared[i][2]).reward
        return len(pass_range(k))

    sys.modules.pop(MARKER, None)

    def rg_verify(k: int) -> int:
        for i in pass_range(k):
            rg_rewards[i] = float(rg_score(extract_answer(shared[i][2]), shared[i][1]))
        return len(pass_range(k))

    ver_rg = best_rate(rg_verify, reps)
    ran_code = MARKER in sys.modules
    sys.modules.pop(MARKER, None)
    ver_ours = best_rate(ours_verify, reps)

    rows = [
        ["generation, train split (tasks/s)", f"{gen_ours:,.0f}", f"{gen_rg:,.1f}", f"{gen_ours / gen_rg:,.0f}x"],
        [
            "generation, test split (tasks/s)",
            f"{gen_ours_test:,.0f}",
            f"{gen_rg:,.1f}",
            f"{gen_ours_test / gen_rg:,.0f}x",
        ],
        ["verification (verdicts/s)", f"{ver_ours:,.0f}", f"{ver_rg:,.1f}", f"{ver_ours / ver_rg:,.0f}x"],
    ]
    print_table(
        "Throughput (4 numbers in 1..100, target 100..999, + - * /; CPU time, best of "
        f"{reps} passes over fresh items; per pass: rollgym {ours_items} tasks, reasoning-gym {rg_items} tasks, "
        f"{per_pass} verdicts each)",
        ["measure", "rollgym", "reasoning-gym", "ratio (target >= 20x)"],
        rows,
    )

    # --- agreement (the verdicts recorded while timing) -----------------------------------------------
    by_kind: dict[str, list[tuple[float, float]]] = {}
    for i, (kind, _, _) in enumerate(shared):
        by_kind.setdefault(kind, []).append((ours_rewards[i], rg_rewards[i]))
    why = {
        "correct, with '= target'": "rg gives 0.01 to any answer with '='; rollgym accepts '= <target>'",
        "wrong value": "rg's shaping floor: 0.05 for a wrong answer",
        "empty answer": "rg's floor: 0.01 for an empty answer",
        "no answer tags": "rg's floor: 0.01 when no <answer> is found",
        "target alone": "rg's floor 0.05 (numbers mismatch)",
        "number reused": "rg's floor 0.05",
        "number not offered": "rg's floor 0.05",
        "number missing": "rg's floor 0.05",
        "several answers": "rg's floor 0.01 (parse error)",
        "code execution": "rg runs the text through sympy's parse_expr (eval); rollgym never evaluates text"
        + (" - the marker module WAS created" if ran_code else ""),
        "exponent (** hack)": "rg accepts ** (sympy Pow); rollgym allows only + - * /",
        "factorial (! hack)": "rg accepts 3! (sympy factorial notation)",
        "decimal 2.5 counted as 2 and 5": "rg reads the integers with a regex, so 2.5 uses 2 and 5",
        "unary minus": "rg allows unary minus; rollgym rejects it (documented rule)",
        "fraction intermediate": "both exact",
    }
    agreement_rows = []
    disagreements = 0
    for kind, pairs in by_kind.items():
        rg_rewards = sorted({r for _, r in pairs})
        our_rewards = sorted({o for o, _ in pairs})
        differ = sum(1 for o, r in pairs if o != r)
        flips = sum(1 for o, r in pairs if (o == 1.0) != (r == 1.0))
        disagreements += differ
        note = "" if differ == 0 else why.get(kind, "")
        agreement_rows.append(
            [
                kind,
                str(len(pairs)),
                "/".join(f"{x:g}" for x in our_rewards),
                "/".join(f"{x:g}" for x in rg_rewards),
                f"{differ}",
                f"{flips}",
                note,
            ]
        )
    print_table(
        f"Verdicts on {len(shared)} shared responses ({disagreements} reward differences)",
        ["kind", "n", "rollgym", "reasoning-gym", "differ", "pass/fail flips", "why"],
        agreement_rows,
    )
    print(f"\nreasoning-gym executed model text as code: {ran_code}")

    # --- memory ------------------------------------------------------------------------------------
    peak, retained = measure_memory()
    rg_peak, rg_retained = measure_rg_memory(reasoning_gym.create_dataset)
    print_table(
        "Memory of one instance beyond shared module data (tracemalloc; target well under 1 MB)",
        ["measure", "rollgym Countdown-v0 (make+reset+step)", "reasoning-gym dataset (+1 item)"],
        [
            ["peak (KiB)", f"{peak / 1024:.1f}", f"{rg_peak / 1024:.1f}"],
            ["retained (KiB)", f"{retained / 1024:.1f}", f"{rg_retained / 1024:.1f}"],
        ],
    )
    mean_len = statistics.mean(len(r) for _, _, r in shared)
    print(f"\n(mean response length {mean_len:.0f} chars; Python {sys.version.split()[0]})")
    if not args.quick:
        from publish import save_results

        figures = {"generation_train_per_s": gen_ours, "generation_test_per_s": gen_ours_test,
                   "reasoning_gym_generation_per_s": gen_rg, "verification_per_s": ver_ours,
                   "reasoning_gym_verification_per_s": ver_rg, "reward_differences": disagreements,
                   "reasoning_gym_ran_code": ran_code, "memory_peak_kib": peak / 1024,
                   "memory_retained_kib": retained / 1024}
        save_results("countdown", figures, [
            {"what": "Countdown generation (tasks/s)", "rollgym": f"{gen_ours:,.0f}",
             "peer": f"reasoning-gym {gen_rg:,.0f}", "ratio": f"{gen_ours / gen_rg:,.0f}x"},
            {"what": "Countdown verification (verdicts/s)", "rollgym": f"{ver_ours:,.0f}",
             "peer": f"reasoning-gym {ver_rg:,.0f}", "ratio": f"{ver_ours / ver_rg:,.0f}x"},
        ], command="python bench/bench_countdown.py")


if __name__ == "__main__":
    main()

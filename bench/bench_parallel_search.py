"""Parallel tool calls in a round (HyperEyes: search wider, not longer) on ``SearchParallel-v0``.

Run: ``python bench/bench_parallel_search.py`` (well under a minute; ``--tasks 20 --quick`` for a smoke run
that saves nothing).

Two reference policies play the same test tasks: the parallel oracle opens the next page of every article
still missing its year in one action; the sequential oracle makes the same calls one per action. Measured per
episode: tool rounds, tool calls, correctness, and the reward with the round-efficiency term on
(``efficiency_weight=0.5``, budget = the task's ``reference_rounds``). Means come with 95% percentile-bootstrap
intervals over tasks (accuracy with the Wilson-covering ``unit_interval``); the rounds ratio is the mean of
per-task ratios (paired: both policies play every task). Also per difficulty level (2, 3, 5 and 8 entities),
and a guess that looks nothing up (the first entity listed), which measures the floor a guess earns.
Nothing here asserts: the figures go into docs/search.md and the README table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from typing import Any

import rollgym
from rollgym.benchmarks.metrics import bootstrap_interval, unit_interval
from rollgym.envs.search.parallel_policies import parallel_oracle, sequential_oracle

ENV_ID = "SearchParallel-v0"
WEIGHT = 0.5


def first_listed_guess(observation: str, info: dict[str, Any]) -> str:
    """No look-up: answer the first entity the question lists (the guessing floor, about 1/k)."""
    return f"<answer>{info['task_meta']['plan']['entities'][0]}</answer>"


POLICIES = {"parallel": parallel_oracle, "sequential": sequential_oracle, "guess": first_listed_guess}


def play(env: Any, policy: Any, index: int, options: dict[str, Any]) -> dict[str, Any]:
    """One episode on test task ``index``: rounds, tool calls, correct and reward."""
    observation, info = env.reset(seed=index, options={"task_index": index, "split": "test", **options})
    reward = 0.0
    for _ in range(100):
        observation, reward, terminated, truncated, info = env.step(policy(observation, info))
        if terminated or truncated:
            break
    return {"task_id": info["task_id"], "rounds": info["rounds"], "tool_calls": info["tool_calls"],
            "correct": bool(info.get("correct")), "reward": float(reward),
            "reference_rounds": info["task_meta"]["reference_rounds"]}


def summarise(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Means with 95% intervals of rounds, calls, accuracy and reward."""
    out: dict[str, Any] = {"episodes": len(episodes)}
    for key in ("rounds", "tool_calls", "reward"):
        values = [float(e[key]) for e in episodes]
        low, high = bootstrap_interval(values)
        out[key] = {"mean": round(statistics.fmean(values), 4), "ci95": [round(low, 4), round(high, 4)]}
    correct = [float(e["correct"]) for e in episodes]
    low, high = unit_interval(correct)
    out["accuracy"] = {"mean": round(statistics.fmean(correct), 4), "ci95": [round(low, 4), round(high, 4)]}
    return out


def run(tasks: int, options: dict[str, Any]) -> dict[str, Any]:
    """Both policies over the first ``tasks`` test tasks (of a level, with ``options``), with the paired ratio."""
    env = rollgym.make(ENV_ID, efficiency_weight=WEIGHT)
    try:
        runs = {name: [play(env, policy, i, options) for i in range(tasks)] for name, policy in POLICIES.items()}
    finally:
        env.close()
    result: dict[str, Any] = {name: summarise(episodes) for name, episodes in runs.items()}
    pairs = list(zip(runs["parallel"], runs["sequential"]))
    assert all(p["task_id"] == s["task_id"] for p, s in pairs)
    ratios = [s["rounds"] / p["rounds"] for p, s in pairs]
    low, high = bootstrap_interval(ratios)
    result["rounds_ratio"] = {"mean": round(statistics.fmean(ratios), 4), "ci95": [round(low, 4), round(high, 4)]}
    result["same_calls"] = all(p["tool_calls"] == s["tool_calls"] for p, s in pairs)
    result["same_correct"] = all(p["correct"] == s["correct"] for p, s in pairs)
    result["parallel_at_reference"] = all(p["rounds"] == p["reference_rounds"] for p, _ in pairs)
    return result


def _fmt(figure: dict[str, Any], digits: int = 2) -> str:
    low, high = figure["ci95"]
    return f"{figure['mean']:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200, help="test tasks of the default mix (3 to 5 entities)")
    parser.add_argument("--level-tasks", type=int, default=50, help="test tasks per difficulty level")
    parser.add_argument("--quick", action="store_true", help="print only; save nothing")
    args = parser.parse_args()
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    mix = run(args.tasks, {})
    levels = {level: run(args.level_tasks, {"difficulty": level}) for level in ("two", "three", "five", "eight")}
    figures = {"env_id": ENV_ID, "efficiency_weight": WEIGHT, "tasks": args.tasks, "level_tasks": args.level_tasks,
               "mix": mix, "levels": levels}
    print(json.dumps(figures, indent=1))
    if args.quick:
        return
    from publish import save_results

    par, seq = mix["parallel"], mix["sequential"]
    rows = [
        {"what": f"`{ENV_ID}` ({args.tasks} test tasks, 3-5 entities): tool rounds per episode, parallel oracle "
                 "(every pending look-up in one action) vs the same calls one per action; accuracy "
                 f"{par['accuracy']['mean']:.2f} / {seq['accuracy']['mean']:.2f}, calls "
                 f"{par['tool_calls']['mean']:.2f} both",
         "rollgym": f"{_fmt(par['rounds'])} rounds, reward {_fmt(par['reward'])} (efficiency weight {WEIGHT})",
         "peer": f"sequential {_fmt(seq['rounds'])} rounds, reward {_fmt(seq['reward'])}",
         "ratio": f"{_fmt(mix['rounds_ratio'])}x fewer rounds"},
    ]
    save_results("parallel_search", figures, rows, command="python bench/bench_parallel_search.py",
                 load_before=load_before)


if __name__ == "__main__":
    main()

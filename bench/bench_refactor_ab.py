"""What a refactor costs: the same workloads on the code before it (A) and after it (B), interleaved in one run.

Made for issue 44 (one collection core: the episode engine, run specs and drivers, from commit 7f008fe on):
its judge asks every bench to stay within 10% of its committed figure, and a loaded machine moves the
absolute figures by more than that. So each workload runs old and new alternately, each run in a fresh
process whose ``PYTHONPATH`` is one tree's root (the other tree never loads), and the figure is the ratio
new / old within each adjacent pair; the load of the moment divides out. The order within a pair alternates
(AB, BA, AB, ...), so a drift in load over a pair does not favour one side.

Workloads (each the rollgym side of a committed bench, the code path the refactor touched, in a quick form;
nothing else is measured):

* ``collector``: ``bench_collector.py`` section b: an instant replay agent through ``collect`` (threads
  driver) and ``collect_async`` on Countdown-v0, ToolWorld-v1 and ConnectFour-v0.
* ``stream``: ``bench_collector.py`` section d: 1,000 Countdown episodes streamed to a results file, and the
  resume from the finished file.
* ``selfplay``: ``bench_selfplay.py``: ``play_seated`` and ``run_episode`` on Connect Four and Kuhn poker.
* ``toolgen``: ``bench_toolgen.py``: ToolGen-v0 reset, a read step and a write step.
* ``tools``: ``bench_tools.py``: ToolWorld-v1 reset and ``env.step`` with five tool calls.
* ``search``: ``bench_search.py`` section 3: Search-v1 reset and a ``search`` tool step.
* ``webgen``: WebGen task generation (``GenTaskSource.task``, the generated sites' mechanisms; no browser).
* ``eval``: ``rollgym bench run quick --agent oracle`` through ``run_suite`` (4 tasks per entry).

Every workload also returns a digest of what it played (returns, task ids); the two trees must agree on it,
or the ratio would compare different work. Per workload the report gives the median of the paired ratios
with a distribution-free 95% interval (order statistics of the pairs, from the sign test), and the
geometric mean with a paired-t 95% interval on the log ratios. The judged figure is the worker's CPU time
(as bench_games.py and bench_selfplay.py judge theirs: on the 2-core machine at a load of 12-29 where the
committed figures were taken, the wall ratio of two adjacent runs ranged 0.18-2.8, the CPU ratio 0.69-1.68);
wall time is printed beside it.

Run: ``python bench/bench_refactor_ab.py --old /tmp/bench-old`` (``--new`` defaults to this tree; 21
minutes at 6 pairs at a load of 12-25 on 2 cores, about 9 minutes a pair at 25-50; ``--pairs``,
``--only collector,tools``, ``--quick`` for a smoke run that saves nothing; ``--from-json FILE...``
pools earlier runs' ``--json`` files and recomputes and saves the summaries). A full run writes
``bench/results/refactor_ab.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LIMIT = 1.10  # the judge's bound: new within 10% of old
JUDGED = "the worker's own cost, which other work on a shared machine moves far less than wall time"

#: Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (beyond: the normal's 1.96).
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)


# -- arithmetic over the pairs (pure; tests/test_bench_refactor_ab.py checks it) --------------------------------------
def paired_ratios(new: list[float], old: list[float]) -> list[float]:
    """``new[i] / old[i]`` for each pair; the two lists must be as long and every time positive."""
    if len(new) != len(old) or not new:
        raise ValueError(f"Need as many new as old timings, at least one each; got {len(new)} and {len(old)}.")
    if min(new + old) <= 0:
        raise ValueError("Every timing must be positive.")
    return [n / o for n, o in zip(new, old)]


def median_interval(ratios: list[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """The median ratio and a distribution-free interval for it: the order statistics ``r(k)`` and
    ``r(n+1-k)`` with the largest ``k`` whose coverage (from the binomial(n, 1/2) sign test) is at least
    ``confidence``; with too few pairs for that, the whole range (its coverage is then printed by
    :func:`median_coverage`).

    Example:
        >>> median_interval([1.0, 1.1, 0.9, 1.05, 0.95, 1.02])
        (1.01, 0.9, 1.1)
    """
    ordered = sorted(ratios)
    k = _order_k(len(ordered), confidence)
    return statistics.median(ordered), ordered[k - 1], ordered[len(ordered) - k]


def median_coverage(n: int, confidence: float = 0.95) -> float:
    """The exact coverage of :func:`median_interval`'s interval for ``n`` pairs."""
    k = _order_k(n, confidence)
    return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2**n


def _order_k(n: int, confidence: float) -> int:
    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n >= confidence:
        k += 1
    return k


def geometric_interval(ratios: list[float]) -> tuple[float, float, float]:
    """The geometric mean ratio and its paired-t 95% interval (t over the log ratios); one pair gives no interval.

    Example:
        >>> [round(x, 4) for x in geometric_interval([1.0, 1.0, 1.0])]
        [1.0, 1.0, 1.0]
    """
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), math.nan, math.nan
    half = (T975[len(logs) - 2] if len(logs) - 1 <= len(T975) else 1.96) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def verdict(low: float, high: float, limit: float = LIMIT) -> str:
    """``within`` when the interval's top is at most ``limit``, ``slower`` when its bottom is above it, else
    ``undecided`` (the pairs cannot tell)."""
    if high <= limit:
        return "within"
    return "slower" if low > limit else "undecided"


def summarize(new: list[float], old: list[float]) -> dict[str, Any]:
    """Everything the report says about one workload's paired timings."""
    ratios = paired_ratios(new, old)
    median, low, high = median_interval(ratios)
    geo, geo_low, geo_high = geometric_interval(ratios)
    return {"pairs": len(ratios), "new_s": new, "old_s": old, "ratios": ratios, "median_ratio": median,
            "median_low": low, "median_high": high,
            "median_coverage": median_coverage(len(ratios)), "geomean_ratio": geo, "geomean_low": geo_low,
            "geomean_high": geo_high, "new_median_s": statistics.median(new), "old_median_s": statistics.median(old),
            # below 6 pairs even the whole range covers the median less than 95% of the time
            "verdict": verdict(low, high) if median_coverage(len(ratios)) >= 0.95 else "too few pairs"}


# -- workloads (run in the worker process, against whichever rollgym PYTHONPATH names) --------------------------------
def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


class Timer:
    """Wall and CPU seconds of the named parts of one workload; only what runs inside ``part`` counts."""

    def __init__(self) -> None:
        self.parts: dict[str, list[float]] = {}

    def part(self, name: str, fn: Callable[[], Any]) -> Any:
        import gc

        gc.collect()
        wall, cpu = _clock()
        result = fn()
        wall2, cpu2 = _clock()
        total = self.parts.setdefault(name, [0.0, 0.0])
        total[0] += wall2 - wall
        total[1] += cpu2 - cpu
        return result


def work_collector(timer: Timer, quick: bool) -> Any:
    from bench_collector import GROUP, ReplayAgent, record_scripts, returns_of

    from rollgym.rollout import collect, collect_async

    digest = []
    for env_id, n_tasks, policy in (("Countdown-v0", 50, "oracle"), ("ToolWorld-v1", 8, "oracle"),
                                    ("ConnectFour-v0", 12, "random")):
        n_tasks = max(2, n_tasks // 4) if quick else n_tasks
        agent = ReplayAgent(record_scripts(env_id, n_tasks, policy))
        collect(agent, env_id, 2, GROUP, seed=0)  # warm up imports and caches on both paths
        collect_async(agent, env_id, 2, GROUP, seed=0)
        # one timed pass per runner: the pairs are the repeats
        for runner in (collect, collect_async):
            groups = timer.part(runner.__name__, functools.partial(runner, agent, env_id, n_tasks, GROUP, seed=0))
            digest.append(returns_of(groups))
    return digest


def work_stream(timer: Timer, quick: bool) -> Any:
    from bench_collector import GROUP, ConstantAgent

    from rollgym.rollout import collect_async, load_results, stream

    n_tasks = 50 if quick else 250
    out = Path(tempfile.mkdtemp(prefix="rollgym-ab-")) / "run.jsonl"

    async def run() -> int:
        count = 0
        async for _group in stream(ConstantAgent(), "Countdown-v0", n_tasks, GROUP, out=str(out)):
            count += 1
        return count

    collect_async(ConstantAgent(), "Countdown-v0", 2, 1)  # warm up imports
    count = timer.part("stream", lambda: asyncio.run(run()))
    groups = timer.part("resume", lambda: collect_async(ConstantAgent(), "Countdown-v0", n_tasks, GROUP, out=str(out)))
    return [count, len(load_results(out).episodes), [t.reward for g in groups for t in g.trajectories]]


def work_selfplay(timer: Timer, quick: bool) -> Any:
    import rollgym
    from rollgym.agents import RandomAgent
    from rollgym.agents.game_bots import BotAgent
    from rollgym.envs.games.board_seats import BoardSeats
    from rollgym.envs.games.kuhn import KuhnPoker, NashKuhnBot
    from rollgym.rollout.episode import run_episode
    from rollgym.rollout.selfplay import play_seated

    c4_game = BoardSeats(rollgym.make("ConnectFour-v0"))
    c4_env = rollgym.make("ConnectFour-v0", opponent="random")
    kuhn_game = KuhnPoker()
    kuhn_env = rollgym.make("KuhnPoker-v0", opponent="nash")
    n_c4, n_kuhn = (10, 30) if quick else (60, 250)
    digest: list[Any] = []

    def seated(game: Any, seats: list[Any], n: int) -> list[Any]:
        return [[t.reward for t in play_seated(game, seats, seed=i)] for i in range(n)]

    def single(env: Any, agent: Any, n: int) -> list[Any]:
        return [run_episode(env, agent, seed=i)[0].reward for i in range(n)]

    seated(c4_game, [BotAgent("random", seed=0), BotAgent("random", seed=1)], 2)  # warm up
    single(c4_env, RandomAgent(seed=0), 2)
    digest.append(timer.part("selfplay_c4", lambda: seated(c4_game, [BotAgent("random", seed=0),
                                                                     BotAgent("random", seed=1)], n_c4)))
    digest.append(timer.part("vs_bot_c4", lambda: single(c4_env, RandomAgent(seed=0), n_c4)))
    digest.append(timer.part("selfplay_kuhn", lambda: seated(kuhn_game, [NashKuhnBot(seed=0), NashKuhnBot(seed=1)],
                                                             n_kuhn)))
    digest.append(timer.part("vs_bot_kuhn", lambda: single(kuhn_env, NashKuhnBot(seed=2), n_kuhn)))
    return digest


def work_toolgen(timer: Timer, quick: bool) -> Any:
    import gymnasium as gym

    import rollgym  # noqa: F401  (registers the ids)
    from rollgym.envs.tools.generated import catalog

    n = 20 if quick else 120
    env = gym.make("ToolGen-v0").unwrapped
    env.reset(seed=0)
    for i in range(n):  # warm the task draws' caches as a long run would (and as bench_toolgen.py does)
        env.reset(options={"task_index": i})
    ids = timer.part("reset", lambda: [env.reset(options={"task_index": i})[1]["task_id"] for i in range(n)])
    env.reset(options={"task_index": 3})
    schema = catalog.schema(env.task.meta["apps"][0])
    read = (f'<tool_call>{{"name": "{schema.app_id}_{schema.record.name}_search", "arguments": {{"page_size": 10}}}}'
            "</tool_call>")
    rows = catalog.app(schema.app_id).table(schema.party)
    write = (f'<tool_call>{{"name": "{schema.app_id}_{schema.party.name}_update", "arguments": '
             f'{{"{schema.party.name}_id": {rows[0]["id"]}, "name": "Bench Name"}}}}</tool_call>')

    def steps(action: str) -> list[float]:
        env.reset(options={"task_index": 3})
        rewards = []
        for _ in range(n):
            if env.turn >= env.max_turns - 1:
                env.reset(options={"task_index": 3})
            rewards.append(env.step(action)[1])
        return rewards

    return [ids, timer.part("step_read", lambda: steps(read)), timer.part("step_write", lambda: steps(write))]


def work_tools(timer: Timer, quick: bool) -> Any:
    import gymnasium as gym

    import rollgym  # noqa: F401  (registers the ids)

    n = 30 if quick else 150
    env = gym.make("ToolWorld-v1").unwrapped
    env.reset(seed=0)
    for i in range(n):  # every base world built once, as a long-running process would
        env.reset(options={"task_index": i})
    ids = timer.part("reset", lambda: [env.reset(options={"task_index": i})[1]["task_id"] for i in range(n)])
    reads = [("email_search", {"query": "report"}), ("calendar_search", {"attendee": "a"}),
             ("payments_transfers", {}), ("contacts_search", {"query": "a"}), ("shop_search", {"sort": "price"})]
    action = "".join(f'<tool_call>{json.dumps({"name": name, "arguments": a})}</tool_call>' for name, a in reads)

    def steps() -> list[float]:
        env.reset(seed=1)
        rewards = []
        for _ in range(n // 3):
            rewards.append(env.step(action)[1])
            if env.turn >= env.max_turns - 1:
                env.reset(seed=1)
        return rewards

    return [ids, timer.part("step", steps)]


def work_search(timer: Timer, quick: bool) -> Any:
    import gymnasium as gym

    import rollgym  # noqa: F401  (registers the ids)

    n = 10 if quick else 100
    env = gym.make("Search-v1", max_turns=20)
    env.reset(seed=0)  # builds the env's world and index, once (not timed)
    ids = timer.part("reset", lambda: [env.reset(seed=i)[1]["task_id"] for i in range(n)])
    queries = ["who founded the company", "river in the north", "born in the capital", "the largest city",
               "album released by the band", "the university where she studied"]

    def steps() -> list[Any]:
        out = []
        for i in range(n * 3):
            if i % 19 == 0:
                env.reset(seed=i)
            call = "<tool_call>" + json.dumps({"name": "search", "arguments": {"query": queries[i % len(queries)],
                                                                               "k": 5}}) + "</tool_call>"
            out.append(len(env.step(call)[0]))
        return out

    return [ids, timer.part("step", steps)]


def work_webgen(timer: Timer, quick: bool) -> Any:
    from rollgym.envs.web.gen.tasks import GenTaskSource

    source = GenTaskSource("WebGen-v0")
    source.task(0, "train")  # warm up the site specs
    n = 30 if quick else 150
    out = []
    for split in ("train", "test", "test_unseen"):
        out += timer.part(split, lambda split=split: [source.task(i, split).id for i in range(n)])
    return out


def work_eval(timer: Timer, quick: bool) -> Any:
    from rollgym.benchmarks.runner import AgentSpec, run_suite
    from rollgym.benchmarks.suite import load_suite

    suite = load_suite("quick")
    limit = 2 if quick else 4
    run_suite(suite, AgentSpec(agent="oracle"), tempfile.mkdtemp(prefix="rollgym-ab-"), limit=1)  # warm up
    summary = timer.part("run_suite", lambda: run_suite(suite, AgentSpec(agent="oracle"),
                                                        tempfile.mkdtemp(prefix="rollgym-ab-"), limit=limit))
    return {name: entry.get("accuracy", {}).get("value") for name, entry in sorted(summary["entries"].items())}


WORKLOADS: dict[str, Callable[[Timer, bool], Any]] = {
    "collector": work_collector, "stream": work_stream, "selfplay": work_selfplay, "toolgen": work_toolgen,
    "tools": work_tools, "search": work_search, "webgen": work_webgen, "eval": work_eval,
}
#: The committed bench each workload stands for.
BENCH_OF = {"collector": "bench_collector.py b (instant agent)", "stream": "bench_collector.py d (results file)",
            "selfplay": "bench_selfplay.py", "toolgen": "bench_toolgen.py (reset, steps)",
            "tools": "bench_tools.py (reset, steps)", "search": "bench_search.py 3 (reset, step)",
            "webgen": "WebGen task generation", "eval": "rollgym bench run quick (oracle)"}


def worker(name: str, quick: bool) -> None:
    """Run one workload in this process and print one JSON line: its parts' times, digest and rollgym's path."""
    import hashlib

    import rollgym

    timer = Timer()
    with tempfile.TemporaryDirectory(prefix="rollgym-ab-") as folder:  # the workloads' files go with it
        tempfile.tempdir = folder
        digest = WORKLOADS[name](timer, quick)
    tempfile.tempdir = None
    text = json.dumps(digest, sort_keys=True, default=repr)
    print(json.dumps({"rollgym": str(Path(rollgym.__file__).resolve().parent.parent), "parts": timer.parts,
                      "wall_s": sum(p[0] for p in timer.parts.values()),
                      "cpu_s": sum(p[1] for p in timer.parts.values()),
                      "digest": hashlib.sha256(text.encode()).hexdigest()[:16]}))


# -- the driver -------------------------------------------------------------------------------------------------------
def run_once(name: str, tree: Path, quick: bool, timeout: float) -> dict[str, Any]:
    """One workload in a fresh process whose rollgym is ``tree``'s."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", name] + (["--quick"] if quick else [])
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout,
                              cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{name} on {tree} ran past {timeout:.0f} s.") from None
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"{name} failed on {tree} (exit {done.returncode}).")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(result["rollgym"]) != tree.resolve():
        raise SystemExit(f"{name}: the worker loaded rollgym from {result['rollgym']}, not {tree}.")
    return result


def git_commit(tree: Path) -> str:
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def measure(names: list[str], old: Path, new: Path, pairs: int, quick: bool, timeout: float) -> dict[str, Any]:
    """``pairs`` rounds; in each, every workload once on each tree, adjacent, the order alternating by round."""
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {n: {"old": [], "new": []} for n in names}
    for k in range(pairs):
        for name in names:
            order = ("old", "new") if k % 2 == 0 else ("new", "old")
            for side in order:
                runs[name][side].append(run_once(name, old if side == "old" else new, quick, timeout))
            o, n = runs[name]["old"][-1], runs[name]["new"][-1]
            print(f"pair {k + 1}/{pairs} {name:<10} CPU old {o['cpu_s']:7.3f} s new {n['cpu_s']:7.3f} s ratio "
                  f"{n['cpu_s'] / o['cpu_s']:5.3f}; wall ratio {n['wall_s'] / o['wall_s']:5.3f} "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    figures: dict[str, Any] = {}
    for name in names:
        olds, news = runs[name]["old"], runs[name]["new"]
        digests = {r["digest"] for r in olds + news}
        if len(digests) != 1:
            raise SystemExit(f"{name}: old and new played different work (digests {sorted(digests)}).")
        parts = {part: statistics.median(paired_ratios([r["parts"][part][0] for r in news],
                                                       [r["parts"][part][0] for r in olds]))
                 for part in olds[0]["parts"]}
        figures[name] = {"bench": BENCH_OF[name],
                         "wall": summarize([r["wall_s"] for r in news], [r["wall_s"] for r in olds]),
                         "cpu": summarize([r["cpu_s"] for r in news], [r["cpu_s"] for r in olds]),
                         "part_median_ratios_wall": parts, "digest": digests.pop()}
    return figures


def print_report(figures: dict[str, Any]) -> None:
    print(f"\n{'workload':<10} {'old CPU s':>9} {'new CPU s':>9} {'CPU new/old [95%]':>25}  {'verdict':<9} "
          f"{'wall new/old [95%]':>25}  {'verdict':<9} {'CPU geomean [95% t]':>26}")
    for name, f in figures.items():
        w, c = f["wall"], f["cpu"]
        print(f"{name:<10} {c['old_median_s']:9.3f} {c['new_median_s']:9.3f} "
              f"{c['median_ratio']:7.3f} [{c['median_low']:.3f}, {c['median_high']:.3f}]  {c['verdict']:<9} "
              f"{w['median_ratio']:7.3f} [{w['median_low']:.3f}, {w['median_high']:.3f}]  {w['verdict']:<9} "
              f"{c['geomean_ratio']:8.3f} [{c['geomean_low']:.3f}, {c['geomean_high']:.3f}]")
    first = next(iter(figures.values()))["cpu"]
    print(f"(medians of the paired ratios; their interval is the pairs' order statistics, exact coverage "
          f"{first['median_coverage']:.3f} for {first['pairs']} pairs; within = its top at most {LIMIT:.2f}. "
          f"The verdict reads CPU time, {JUDGED}; wall time is the cross-check.)")


def readme_rows(figures: dict[str, Any], old_commit: str) -> list[dict[str, str]]:
    """One README row per workload: new and old median CPU seconds, the paired CPU and wall ratios with intervals."""
    rows = []
    for f in figures.values():
        c, w = f["cpu"], f["wall"]
        rows.append({"what": f"Issue-44 refactor, new/old: {f['bench']} ({c['pairs']} interleaved pairs; CPU s)",
                     "rollgym": f"{c['new_median_s']:.2f} s",
                     "peer": f"before ({old_commit}) {c['old_median_s']:.2f} s",
                     "ratio": f"{c['median_ratio']:.2f}x [{c['median_low']:.2f}, {c['median_high']:.2f}] "
                              f"(wall {w['median_ratio']:.2f}x [{w['median_low']:.2f}, {w['median_high']:.2f}])"})
    return rows


def resummarize(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``--json`` reports of earlier runs (same trees, same workloads) as one: their pairs pooled and every
    summary recomputed from the raw paired timings."""
    merged = json.loads(json.dumps(reports[0]))
    for other in reports[1:]:
        if other["old"]["commit"] != merged["old"]["commit"] or set(other["workloads"]) != set(merged["workloads"]):
            raise SystemExit("The reports to pool must compare the same old commit on the same workloads.")
        for name, figures in other["workloads"].items():
            for clock in ("wall", "cpu"):
                for side in ("new_s", "old_s"):
                    merged["workloads"][name][clock][side] += figures[clock][side]
    for figures in merged["workloads"].values():
        for clock in ("wall", "cpu"):
            figures[clock] = summarize(figures[clock]["new_s"], figures[clock]["old_s"])
    merged["pairs"] = sum(r["pairs"] for r in reports)
    for key in ("measured_at", "load_after"):  # the last run's
        if key in reports[-1]:
            merged[key] = reports[-1][key]
    merged["runs_pooled"] = len(reports)
    return {**merged, "judged": "cpu"}


def save(report: dict[str, Any], command: str, load_before: float | None) -> None:
    from publish import save_results

    path = save_results("refactor_ab", report, readme_rows(report["workloads"], report["old"]["commit"]),
                        command=command, load_before=load_before)
    if "measured_at" in report:  # pooled or recomputed later: the file says when the timings were taken
        saved = json.loads(path.read_text(encoding="utf-8"))
        saved["measured_at"] = report["measured_at"]
        saved["machine"]["load_1min"] = report["load_after"]
        path.write_text(json.dumps(saved, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nsaved {path.relative_to(HERE.parent)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="the tree before the refactor (a worktree of 7f008fe)")
    parser.add_argument("--new", type=Path, default=HERE.parent, help="the tree after it (default: this one)")
    parser.add_argument("--pairs", type=int, default=6, help="old/new pairs per workload (default 6)")
    parser.add_argument("--only", help=f"comma-separated workloads (default: all of {', '.join(WORKLOADS)})")
    parser.add_argument("--quick", action="store_true", help="small workloads, 2 pairs, nothing saved")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one run may take")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--from-json", type=Path, nargs="+", help="pool earlier runs' --json files, recompute "
                        "the summaries from their raw timings, print and save them (nothing is run)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # run one workload here and print JSON
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.quick)
        return 0
    if args.from_json:
        report = resummarize([json.loads(path.read_text(encoding="utf-8")) for path in args.from_json])
        print_report(report["workloads"])
        if set(report["workloads"]) == set(WORKLOADS) and report["pairs"] >= 5:
            runs = f" ({report['runs_pooled']} runs pooled)" if report["runs_pooled"] > 1 else ""
            save(report, f"python bench/bench_refactor_ab.py --old {report['old']['tree']} --pairs "
                         f"{report['pairs'] // report['runs_pooled']}{runs}", report.get("load_before"))
        return 0
    if args.old is None:  # `make bench` runs every bench bare; this one needs the tree before the refactor
        print("bench_refactor_ab.py needs --old, a worktree of the code before the refactor "
              "(git worktree add /tmp/bench-old 7f008fe); skipped. bench/results/refactor_ab.json keeps the last run.")
        return 0
    names = [n.strip() for n in args.only.split(",")] if args.only else list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {', '.join(WORKLOADS)}")
    for tree in (args.old, args.new):
        if not (tree / "rollgym" / "__init__.py").exists():
            parser.error(f"{tree} holds no rollgym package")
    pairs = 2 if args.quick else args.pairs
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    figures = measure(names, args.old, args.new, pairs, args.quick, args.timeout)
    print_report(figures)
    old_commit, new_commit = git_commit(args.old), git_commit(args.new)
    report = {"old": {"tree": str(args.old), "commit": old_commit}, "new": {"tree": str(args.new),
                                                                          "commit": new_commit},
              "pairs": pairs, "limit": LIMIT, "judged": "cpu", "load_before": round(load_before, 2),
              "load_after": round(os.getloadavg()[0], 2),
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "run_s": time.perf_counter() - start, "workloads": figures}
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    if not args.quick and set(names) == set(WORKLOADS):
        save(report, f"python bench/bench_refactor_ab.py --old {args.old} --pairs {pairs}", load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``rollgym bench``: run benchmark suites into result bundles and compare bundles.

Examples::

    rollgym bench list
    rollgym bench show quick
    rollgym bench show quick@v2            # an older version, kept so its bundles still verify
    rollgym bench run quick --agent oracle --out runs/oracle [--limit 5] [--tar]
    rollgym bench run papers --model http://127.0.0.1:8000/v1 --label my-model --out runs/my-model
    rollgym bench compare runs/oracle runs/random
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from rollgym.commands.options import parse_pairs, positive_int


def register(subparsers: Any) -> None:
    """Add the ``bench`` sub-command and its actions."""
    parser = subparsers.add_parser("bench", help="run benchmark suites into result bundles; compare bundles",
                                   description="Benchmark suites: list, show, run, compare.")
    actions = parser.add_subparsers(dest="bench_action", metavar="ACTION")
    parser.set_defaults(func=lambda args: _usage(parser))

    p = actions.add_parser("list", help="the built-in suites")
    p.set_defaults(func=cmd_list)

    p = actions.add_parser("show", help="a suite's entries, which run here, and its task hash")
    p.add_argument("suite", help="a built-in suite name (NAME@vN for an older version) or a suite YAML file")
    p.add_argument("--limit", type=int, help="at most this many tasks per entry")
    p.set_defaults(func=cmd_show)

    p = actions.add_parser("run", help="run a suite with an agent or a model into a bundle folder")
    p.add_argument("suite", help="a built-in suite name (quick, papers, puzzles, ...; quick@v2 for an older "
                   "version) or a suite YAML file")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--agent", help="a reference agent: oracle or random")
    who.add_argument("--model", help="a model folder, hub id, vllm:PATH or an OpenAI-compatible http(s) URL")
    p.add_argument("--out", required=True, help="the bundle folder (resumed when it holds the same run)")
    p.add_argument("--label", help="the name shown on the leaderboard")
    p.add_argument("--model-size", type=float, help="the model's parameters in billions (for plots)")
    p.add_argument("--sampling", action="append", default=[], metavar="KEY=VALUE",
                   help="override a sampling setting of every entry, e.g. temperature=0 (repeatable)")
    p.add_argument("--seed", type=int, help="replace every entry's seed (a leaderboard's issued seed)")
    p.add_argument("--limit", type=int, help="at most this many tasks per entry (a smaller task set)")
    p.add_argument("--only", help="comma-separated entry names to run (a partial run)")
    p.add_argument("--driver", choices=["threads", "async"], default="threads",
                   help="how an entry's episodes run at once: threads (default) or async (one event loop, model "
                        "calls batched); results do not depend on it")
    p.add_argument("--parallel", "--workers", dest="parallel", type=positive_int, default=None, metavar="N",
                   help="episodes at once per entry (default: 1 with threads, 32 with async); --workers is its "
                        "older name")
    p.add_argument("--tar", action="store_true", help="also pack the bundle into OUT.tar.gz")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_run)

    p = actions.add_parser("compare", help="compare two bundles entry by entry, with significance")
    p.add_argument("a", help="bundle A (folder or .tar.gz)")
    p.add_argument("b", help="bundle B (folder or .tar.gz)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=cmd_compare)

    p = actions.add_parser("pack", help="pack a bundle folder into a .tar.gz")
    p.add_argument("folder")
    p.add_argument("--out", help="the archive path (default FOLDER.tar.gz)")
    p.set_defaults(func=cmd_pack)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False, width=None if sys.stdout.isatty() else 160)


def cmd_list(args: argparse.Namespace) -> int:
    """Print the built-in suites with their descriptions."""
    from rich.table import Table

    from rollgym.benchmarks.suite import builtin_suites, load_suite, suite_versions

    table = Table(title="Benchmark suites (the name alone runs the newest version)")
    for column in ("suite", "entries", "description", "older versions"):
        table.add_column(column)
    for name in builtin_suites():
        suite = load_suite(name)
        older = ", ".join(f"{name}@v{v}" for v in suite_versions(name) if v != suite.version)
        table.add_row(suite.label, str(len(suite.entries)), suite.description, older or "-")
    _console().print(table)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """Print a suite's entries, which of them run here, and the task hash."""
    from rich.table import Table

    from rollgym.benchmarks.runner import prepare_suite
    from rollgym.benchmarks.suite import load_suite

    suite = prepare_suite(load_suite(args.suite), None, args.limit)
    runnable, skipped = suite.partition()
    table = Table(title=f"{suite.label}: {suite.description}")
    for column in ("entry", "env", "tasks", "samples", "seed", "metrics", "status"):
        table.add_column(column)
    notes = {s.name: s.reason for s in skipped}
    for e in suite.entries:
        table.add_row(e.name, e.env_id, str(e.n_tasks), str(e.group_size), str(e.seed), ", ".join(e.metrics),
                      notes.get(e.name, "runs here"))
    console = _console()
    console.print(table)
    console.print(f"task hash (entries that run here): {suite.task_hash(runnable)}")
    return 0


def _fmt(estimate: dict[str, Any] | None, percent: bool = True) -> str:
    if not estimate or estimate.get("value") is None or (isinstance(estimate["value"], float)
                                                         and math.isnan(estimate["value"])):
        return "n/a"
    value, low, high = estimate["value"], estimate.get("low"), estimate.get("high")
    if percent:
        return f"{100 * value:.1f}% [{100 * (low or 0):.1f}, {100 * (high or 0):.1f}]"
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def print_summary(summary: dict[str, Any], console: Any = None) -> None:
    """Print a bundle summary as tables: per entry, per difficulty, ratings."""
    from rich.table import Table

    console = console or _console()
    table = Table(title=f"{summary['suite']}: per env (95% intervals)")
    for column in ("entry", "env", "episodes", "accuracy", "mean reward", "pass@k (max k)", "best-of-k", "pass^k",
                   "failures"):
        table.add_column(column, justify="left" if column in ("entry", "env") else "right")
    for name, s in summary["entries"].items():
        kmax = max(s["pass_at_k"], key=int) if s["pass_at_k"] else None
        table.add_row(
            name, s["env_id"], str(s["episodes"]), _fmt(s["accuracy"]), _fmt(s["mean_reward"], percent=False),
            f"@{kmax} {_fmt(s['pass_at_k'][kmax])}" if kmax else "n/a",
            f"@{kmax} {_fmt(s['best_of_k'].get(kmax), percent=False)}" if kmax else "n/a",
            f"^{kmax} {_fmt(s['pass_hat_k'].get(kmax))}" if kmax else "n/a",
            str(s["failures"]),
        )
    console.print(table)
    diff = Table(title="per difficulty")
    for column in ("entry", "difficulty", "tasks", "accuracy", "mean reward"):
        diff.add_column(column)
    for name, s in summary["entries"].items():
        for bucket, row in s["by_difficulty"].items():
            label = f"{s['difficulty_key']}={bucket}" if s.get("difficulty_key") else bucket
            diff.add_row(name, label, str(row["tasks"]), _fmt(row["accuracy"]), _fmt(row["mean_reward"], False))
    console.print(diff)
    if summary.get("ratings"):
        ratings = Table(title="ratings against the bot ladder (Elo relative to the anchors)")
        for column in ("game", "Elo", "95% interval", "games", "score"):
            ratings.add_column(column)
        for ladder, r in summary["ratings"].items():
            ratings.add_row(ladder, f"{r['elo']:.0f}", f"{r['low']:.0f} to {r['high']:.0f}", str(r["games"]),
                            f"{100 * r['points'] / max(r['games'], 1):.0f}%")
        console.print(ratings)
    score = summary.get("score")
    console.print(f"headline score (mean accuracy over entries): {'n/a' if score is None else f'{100 * score:.1f}%'}")


def cmd_run(args: argparse.Namespace) -> int:
    """Run a suite into a bundle folder with a progress bar, then print the tables."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from rollgym.benchmarks.runner import AgentSpec, prepare_suite, run_suite
    from rollgym.benchmarks.suite import load_suite
    from rollgym.bundles.format import pack_bundle

    suite = load_suite(args.suite)
    agent = AgentSpec(agent=args.agent, model=args.model, sampling=parse_pairs(args.sampling, "--sampling"),
                      label=args.label, model_size_b=args.model_size)
    console = _console()
    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    if not args.json:
        for skipped in prepare_suite(suite, args.seed, args.limit, only).partition()[1]:
            console.print(f"[yellow]note:[/] entry {skipped.name}: {skipped.reason}")
    bars: dict[str, Any] = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, disable=args.json or not sys.stdout.isatty()) as progress:

        def on_progress(entry: str, done: int, total: int) -> None:
            if entry not in bars:
                bars[entry] = progress.add_task(entry, total=total)
            progress.update(bars[entry], completed=done, total=total)

        summary = run_suite(suite, agent, args.out, seed=args.seed, limit=args.limit, only=only, workers=args.parallel,
                            driver=args.driver, progress=on_progress)
    if args.tar:
        archive = pack_bundle(args.out)
        if not args.json:
            console.print(f"packed {archive}")
    if args.json:
        from rollgym.bundles.format import clean_json

        print(json.dumps(clean_json(summary)))
    else:
        print_summary(summary, console)
        console.print(f"bundle: {args.out} (verify with `rollgym leaderboard verify {args.out}`)")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Print A versus B per entry with the difference, its interval and p-value."""
    from rich.table import Table

    from rollgym.benchmarks.compare import compare_bundles

    rows = compare_bundles(args.a, args.b)
    if args.json:
        print(json.dumps([{**r.__dict__, "significant": r.significant} for r in rows]))
        return 0
    table = Table(title=f"A = {args.a}   B = {args.b}   (accuracy; 95% interval of A - B)")
    for column in ("entry", "A", "B", "A - B", "95% interval", "p", "test", "significant"):
        table.add_column(column)
    for r in rows:
        table.add_row(r.entry, f"{100 * r.accuracy_a:.1f}%", f"{100 * r.accuracy_b:.1f}%",
                      f"{100 * r.difference:+.1f}", f"[{100 * r.low:+.1f}, {100 * r.high:+.1f}]",
                      f"{r.p_value:.3g}", r.test, "yes" if r.significant else "no")
    _console().print(table)
    if not rows:
        print("The bundles share no entries.", file=sys.stderr)
        return 1
    return 0


def cmd_pack(args: argparse.Namespace) -> int:
    """Pack a bundle folder into a .tar.gz."""
    from rollgym.bundles.format import pack_bundle

    print(pack_bundle(args.folder, args.out))
    return 0

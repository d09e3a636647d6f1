"""``rollgym demo``: reference agents on Countdown and Sudoku, then the quick suite into a static leaderboard."""

from __future__ import annotations

import argparse
import time
from typing import Any

from rich.markup import escape
from rich.table import Table

from rollgym.commands.console import progress_bar, stderr, stdout
from rollgym.commands.options import positive_int, seed_int
from rollgym.core.errors import ConfigError, UnknownEnvError

DEMO_ENVS: tuple[str, ...] = ("Countdown-v0", "Sudoku4x4-v0", "Sudoku-v0")
DEMO_AGENTS: tuple[str, ...] = ("oracle", "random")


def register(subparsers: Any) -> None:
    """Add the ``demo`` sub-command."""
    p = subparsers.add_parser(
        "demo", help="reference agents on the quick suite, verified bundles, a static leaderboard"
    )
    p.add_argument("--n", type=positive_int, default=25, help="tasks per env and agent (default: 25)")
    p.add_argument("--group-size", type=positive_int, default=4, help="rollouts per task (default: 4)")
    p.add_argument("--seed", type=seed_int, default=0, help="run seed (default: 0)")
    p.add_argument("--out", default="demo-output", help="folder for the suite bundles and the leaderboard")
    p.add_argument("--no-leaderboard", dest="leaderboard", action="store_false",
                   help="only print the table; skip the quick suite, verification and the static leaderboard")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Oracle and random agents on Countdown-v0, Sudoku4x4-v0 and Sudoku-v0, in one results table."""
    from rollgym.agents import make_agent
    from rollgym.benchmarks.metrics import summarize
    from rollgym.core.registration import env_info
    from rollgym.rollout import collect

    available = []
    for env_id in DEMO_ENVS:
        try:
            env_info(env_id)
            available.append(env_id)
        except UnknownEnvError:
            stderr.print(f"Skipping {env_id}: it is not registered in this installation yet.")
    heading = (
        f"rollgym demo: {args.n} tasks × {args.group_size} rollouts per env and agent, split test, seed {args.seed}"
    )
    table = Table()
    for name, justify in (
        ("Env", "left"),
        ("Agent", "left"),
        ("Episodes", "right"),
        ("Accuracy [95% CI]", "right"),
        ("Mean reward [95% CI]", "right"),
        (f"pass@{args.group_size} [95% CI]", "right"),
        ("Failures", "right"),
        ("Time", "right"),
    ):
        table.add_column(name, justify=justify, no_wrap=name in {"Env", "Agent"})  # type: ignore[arg-type]
    runs = [(env_id, agent) for env_id in available for agent in DEMO_AGENTS]
    total = len(runs) * args.n * args.group_size
    with progress_bar() as progress:
        bar = progress.add_task("demo", total=total)
        for position, (env_id, agent_name) in enumerate(runs):
            offset = position * args.n * args.group_size
            progress.update(bar, description=f"{env_id} · {agent_name}")

            def report(done: int, _total: int, offset: int = offset) -> None:
                progress.update(bar, completed=offset + done)

            started = time.perf_counter()
            try:
                groups = collect(
                    make_agent(agent_name),
                    env_id,
                    n_tasks=args.n,
                    group_size=args.group_size,
                    split="test",
                    seed=args.seed,
                    progress=report,
                )
            except ConfigError as exc:
                table.add_row(env_id, agent_name, "-", escape(f"skipped: {exc}"), "", "", "", "")
                continue
            elapsed = time.perf_counter() - started
            s = summarize(groups, seed=args.seed)
            top = s.pass_at_k.get(args.group_size)
            table.add_row(
                env_id,
                agent_name,
                str(s.episodes),
                escape(s.accuracy.format(percent=True)),
                escape(s.mean_reward.format()),
                escape(top.format(percent=True)) if top else "n/a",
                str(s.failures),
                f"{elapsed:.1f}s",
            )
    if not runs:
        stderr.print("No demo env is registered; nothing to run.")
        return 1
    stdout.print(heading, markup=False)
    stdout.print(table)
    if args.leaderboard:
        from rollgym.leaderboard.demo import run_demo

        stdout.print(f"\nThe whole loop: the 'quick' suite, verified bundles and a static leaderboard in {args.out}/")
        result = run_demo(args.out, log=lambda line: stdout.print(line, markup=False))
        verdict = "verified" if all(result.verified.values()) else "REJECTED"
        stdout.print(f"Bundles {verdict}. Open {result.site} in a browser to see the leaderboard.", markup=False)
        return 0 if all(result.verified.values()) else 1
    return 0

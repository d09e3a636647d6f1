"""``rollgym export harbor`` and ``rollgym import harbor``: Harbor's task-directory format, both ways (``import``,
its inverse, is registered here too: a module cannot be named after it).

Examples::

    rollgym export harbor TerminalGen-v0 --split test_unseen --out tasks/ --limit 50
    rollgym import harbor tasks/                 # play every task with its solve.sh (the oracle)
    rollgym import harbor tasks/ --agent empty   # ... or with an agent that does nothing
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.markup import escape
from rich.table import Table

from rollgym.commands.console import stdout


def register(subparsers: Any) -> None:
    """Add the ``export`` and ``import`` sub-commands (each with the format ``harbor``)."""
    export = subparsers.add_parser("export", help="write an env's tasks in another format (harbor)")
    formats = export.add_subparsers(dest="format", required=True)
    harbor = formats.add_parser("harbor", help="Harbor task directories (instruction, environment, tests, solution)")
    harbor.add_argument("env_id", help="TerminalGen-v0, Terminal-v0, RepoRepair-v0, RepoRepairReal-v0 or -v1")
    harbor.add_argument("--split", default="test")
    harbor.add_argument("--out", required=True, help="a new or empty folder")
    harbor.add_argument("--limit", type=int, default=None, help="the first N tasks of the split")
    harbor.set_defaults(func=run_export)
    imported = subparsers.add_parser("import", help="play tasks of another format in rollgym's sandbox (harbor)")
    formats = imported.add_subparsers(dest="format", required=True)
    harbor = formats.add_parser("harbor", help="Harbor task directories that need no container image")
    harbor.add_argument("path", help="a Harbor task directory, or a folder of them")
    harbor.add_argument("--agent", choices=("oracle", "empty"), default="oracle",
                        help="oracle: run solution/solve.sh; empty: do nothing (default: oracle)")
    harbor.add_argument("--limit", type=int, default=None, help="play the first N tasks")
    harbor.set_defaults(func=run_import)


def run_export(args: argparse.Namespace) -> int:
    """Write the tasks and say where."""
    from rollgym.envs.code.harbor.export import export_harbor

    written = export_harbor(args.env_id, args.split, args.out, args.limit)
    stdout.print(f"Wrote {len(written)} Harbor task directories to {escape(args.out)}.")
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Play every task with the chosen agent; a table of rewards. Exit status 1 if the oracle fails one."""
    from rollgym.envs.code.harbor.env import HarborEnv, harbor_oracle

    env = HarborEnv(path=args.path)
    total = env.source.size("test") or 0
    count = total if args.limit is None else min(args.limit, total)
    table = Table(title=f"Harbor tasks in {escape(args.path)} ({args.agent})")
    for column in ("Task", "Reward", "Error"):
        table.add_column(column)
    rewards = []
    for index in range(count):
        observation, info = env.reset(options={"task_index": index})
        for _ in range(env.max_turns):
            action = harbor_oracle(observation, info) if args.agent == "oracle" else "Done."
            observation, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        rewards.append(reward)
        table.add_row(escape(info["task_meta"]["name"]), f"{reward:g}", escape(str(info.get("error") or "")))
    env.close()
    stdout.print(table)
    stdout.print(f"{sum(r >= 1.0 for r in rewards)} of {len(rewards)} tasks passed.")
    return 1 if args.agent == "oracle" and not all(r >= 1.0 for r in rewards) else 0

"""``rollgym list``: every registered env id with its one-line description, by family."""

from __future__ import annotations

import argparse
from typing import Any

from rich.markup import escape
from rich.table import Table

from rollgym.commands.console import stdout
from rollgym.core.registration import list_envs


def register(subparsers: Any) -> None:
    """Add the ``list`` sub-command."""
    parser = subparsers.add_parser("list", help="list every env id with its description")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print every registered env id with its one-line description, grouped by family."""
    envs = list_envs()
    if not envs:
        stdout.print("No envs are registered.")
        return 0
    table = Table(title=f"rollgym envs ({len(envs)})", show_lines=False)
    table.add_column("Family", style="bold")
    table.add_column("Env id", style="cyan", no_wrap=True)
    table.add_column("Description")
    family = None
    for info in envs:
        if family is not None and info.family != family:
            table.add_section()
        table.add_row(escape(info.family) if info.family != family else "", escape(info.id), escape(info.description))
        family = info.family
    stdout.print(table)
    return 0

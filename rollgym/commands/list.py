"""``rollgym list``: every registered env id with its one-line description, by family."""

from __future__ import annotations

import argparse
from typing import Any

from rich.markup import escape
from rich.table import Table

from rollgym.commands.console import stdout
from rollgym.core.registration import RETIRED_IN, list_envs

#: What follows a superseded id in the table (docs/ids.md has the policy).
SUPERSEDED_MARK = " (superseded)"


def register(subparsers: Any) -> None:
    """Add the ``list`` sub-command."""
    parser = subparsers.add_parser("list", help="list every env id with its description")
    parser.add_argument("--stats", action="store_true",
                        help="also count the generated worlds (apps, tools, task templates, sites)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print every registered env id with its one-line description, grouped by family; superseded ids are marked."""
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
        name = escape(info.id) if info.superseded_by is None else f"[dim]{escape(info.id)}{SUPERSEDED_MARK}[/dim]"
        table.add_row(escape(info.family) if info.family != family else "", name, escape(info.description))
        family = info.family
    stdout.print(table)
    if any(info.superseded_by for info in envs):
        stdout.print(f"{SUPERSEDED_MARK.strip()}: a later version replaces the id; making it warns, and it leaves "
                     f"rollgym in {RETIRED_IN} (docs/ids.md).")
    if args.stats:
        stdout.print(stats_table())
    return 0


# Each family with generated worlds counts them without building them: "module:function" -> dict of counts.
STATS_PROVIDERS: dict[str, str] = {
    "tools": "rollgym.envs.tools.generated:stats",
    "web": "rollgym.envs.web.gen.stats:web_stats",
    "code": "rollgym.envs.code.terminal_gen.source:catalogue",
    "code-real": "rollgym.envs.code.repo_real.source:catalogue",
}


def stats_table() -> Table:
    """Counts of the generated worlds (apps, tools, templates, sites), one row per count."""
    import importlib

    table = Table(title="generated worlds")
    for column in ("Family", "Count", "Value"):
        table.add_column(column)
    for family, entry in STATS_PROVIDERS.items():
        module, _, name = entry.partition(":")
        counts = getattr(importlib.import_module(module), name)()
        for key, value in counts.items():
            if isinstance(value, (int, list)):
                table.add_row(family, key, ", ".join(map(str, value)) if isinstance(value, list) else f"{value:,}")
    return table

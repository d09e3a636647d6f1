"""``rollgym data build NAME``: fetch and verify data rollgym does not ship (RepoRepairReal's real projects)."""

from __future__ import annotations

import argparse
from typing import Any

from rollgym.commands.console import stderr, stdout

TARGETS = ("repo-real",)


def register(subparsers: Any) -> None:
    """Add the ``data`` sub-command."""
    parser = subparsers.add_parser("data", help="build data sets that are fetched, not shipped")
    actions = parser.add_subparsers(dest="action", required=True)
    build = actions.add_parser("build", help="download and verify a data set into the cache")
    build.add_argument("name", choices=TARGETS, help="repo-real: the sdists of RepoRepairReal-v0's projects")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build the named data set; one sentence and exit code 1 when it cannot."""
    from rollgym.core.errors import RollgymError
    from rollgym.envs.code.repo_real.projects import build, cache_root

    try:
        folders = build()
    except RollgymError as exc:
        stderr.print(str(exc))
        return 1
    stdout.print(f"{len(folders)} projects verified in {cache_root()}")
    return 0

"""``rollgym list --stats``: how big the worlds are: env ids per family, sites, apps, tools, templates.

Each family that has worlds to count names a ``stats() -> dict[str, int]`` function in
:data:`PROVIDERS`; a provider that cannot load here is reported in one line, not hidden.
"""

from __future__ import annotations

import argparse
import importlib
import json
from collections import Counter
from typing import Any

import rollgym

PROVIDERS: dict[str, str] = {
    "web": "rollgym.envs.web.gen.stats:web_stats",
    "tools": "rollgym.commands.stats:tool_stats",
}
"""Family -> ``module:function`` returning its counts."""


def tool_stats() -> dict[str, int]:
    """Apps, tools and task templates of the ToolWorld envs."""
    import rollgym.envs.tools.apps  # noqa: F401  (registers every tool)
    from rollgym.envs.tools.api import REGISTRY
    from rollgym.envs.tools.tasks import TEMPLATES

    apps = {spec.app for spec in REGISTRY.values() if spec.app != "supervisor"}
    return {"apps": len(apps), "tools": sum(spec.app != "supervisor" for spec in REGISTRY.values()),
            "templates": len(TEMPLATES)}


def collect_stats() -> dict[str, dict[str, Any]]:
    """Every family's counts: ``env_ids`` from the registry, the rest from :data:`PROVIDERS`."""
    ids = Counter(info.family for info in rollgym.list_envs() if info.entry_point.startswith("rollgym.envs."))
    out: dict[str, dict[str, Any]] = {family: {"env_ids": n} for family, n in sorted(ids.items())}
    for family, target in PROVIDERS.items():
        module, _, name = target.partition(":")
        try:
            counts = getattr(importlib.import_module(module), name)()
        except Exception as exc:  # a family that cannot load here is reported, not hidden
            counts = {"unavailable": f"{type(exc).__name__}: {exc}"}
        out.setdefault(family, {}).update(counts)
    return out


def cmd_stats(args: argparse.Namespace) -> int:
    """Print the counts as a table (or JSON with ``--json``)."""
    stats = collect_stats()
    if getattr(args, "json", False):
        print(json.dumps(stats, indent=2, sort_keys=True))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="rollgym worlds")
    table.add_column("Family", style="bold")
    table.add_column("What")
    table.add_column("Count", justify="right")
    for family, counts in stats.items():
        for i, (what, value) in enumerate(counts.items()):
            table.add_row(family if i == 0 else "", what.replace("_", " "), str(value))
        table.add_section()
    Console(highlight=False, width=None).print(table)
    return 0

"""The whole loop in minutes: run the ``quick`` suite with the reference agents, verify, publish.

:func:`run_demo` is what ``rollgym demo`` (and ``make demo``) call::

    from rollgym.leaderboard.demo import run_demo
    result = run_demo("demo-out")
    print(result.site)        # demo-out/site/index.html, the static leaderboard
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEMO_AGENTS: tuple[str, ...] = ("oracle", "random")


@dataclass
class DemoResult:
    """What the demo produced: one bundle per agent, its verification, and the static site."""

    bundles: dict[str, Path] = field(default_factory=dict)
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    verified: dict[str, bool] = field(default_factory=dict)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    site: Path | None = None


def run_demo(
    out_dir: str | os.PathLike[str],
    *,
    suite: str = "quick",
    agents: tuple[str, ...] = DEMO_AGENTS,
    limit: int | None = None,
    log: Callable[[str], None] | None = print,
    progress: Callable[[str, int, int], None] | None = None,
) -> DemoResult:
    """Run ``suite`` with each reference agent, verify every bundle, and build the static leaderboard.

    Args:
        out_dir: Folder for ``runs/<agent>`` bundles (resumed when rerun), ``leaderboard.db``,
            ``leaderboard-data/`` and ``site/`` (all three replaced when rerun).
        suite: The suite to run.
        agents: Reference agents to run.
        limit: At most this many tasks per entry (quicker; a smaller task set).
        log: Called with one line per stage (``None`` for silence).
        progress: Called as ``progress(label, done, total)`` after every episode.

    Returns:
        The bundles, summaries, verification verdicts and the site's index page.
    """
    from rollgym.benchmarks.runner import AgentSpec, run_suite
    from rollgym.benchmarks.suite import load_suite
    from rollgym.bundles.format import pack_bundle
    from rollgym.leaderboard.db import Store
    from rollgym.leaderboard.ingest import add_local
    from rollgym.leaderboard.site import export_site
    from rollgym.leaderboard.verify import verify_bundle

    say = log or (lambda _line: None)
    root = Path(out_dir)
    result = DemoResult()
    loaded = load_suite(suite)
    steps = 2 * len(agents) + 1  # run and verify each agent, then publish
    step = 0

    def numbered(line: str) -> None:
        nonlocal step
        step += 1
        say(f"[{step}/{steps}] {line}")

    for agent in agents:
        folder = root / "runs" / agent
        numbered(f"running {loaded.label} with the {agent} agent -> {folder}")
        callback = None
        if progress is not None:

            def callback(entry: str, done: int, total: int, agent: str = agent) -> None:
                progress(f"{agent}/{entry}", done, total)

        result.summaries[agent] = run_suite(loaded, AgentSpec(agent=agent), folder, limit=limit, progress=callback)
        result.bundles[agent] = pack_bundle(folder)
        report = verify_bundle(result.bundles[agent])
        result.verified[agent] = report.ok
        result.reasons[agent] = report.reasons
        verdict = "OK" if report.ok else "REJECTED " + "; ".join(report.reasons)
        numbered(f"verified {result.bundles[agent].name}: {verdict}")
    db = root / "leaderboard.db"
    # The demo's leaderboard holds exactly this run's bundles: a rerun replaces the database, the stored
    # bundles and the site (whose entry pages are named after submission ids) instead of adding to them.
    for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        stale.unlink(missing_ok=True)
    for folder in (root / "leaderboard-data", root / "site"):
        shutil.rmtree(folder, ignore_errors=True)
    for agent, bundle in result.bundles.items():
        add_local(str(bundle), f"sqlite:///{db}", str(root / "leaderboard-data"), submitter="demo", label=agent)
    result.site = export_site(Store(f"sqlite:///{db}"), root / "site")
    numbered(f"static leaderboard: {result.site}")
    return result

"""A ToolWorld world's side of grading: the base snapshots of its apps and an episode's diff against them.

The grading itself (:class:`~rollgym.verifiers.tools.Expectation`, the allow-list, the rubric and
:func:`~rollgym.verifiers.tools.grade`) is a pure verifier in :mod:`rollgym.verifiers.tools`; this module
reads the databases it grades: :func:`world_snapshots` caches a world's base ("before") state, which no
tool can reach, and :func:`diff_world` diffs every table of every app against it.
"""

from __future__ import annotations

import sqlite3

from rollgym.core.deprecation import moved_to
from rollgym.envs.tools.api import base_snapshot
from rollgym.envs.tools.world import World
from rollgym.verifiers.statediff import Snapshot, StateDiff
from rollgym.verifiers.tools import diff_bases


def world_snapshots(world: World) -> dict[str, Snapshot]:
    """Snapshots of the base world's databases, read once per world (the base never changes)."""
    if not world.snapshots:
        for app, conn in world.dbs.items():
            world.snapshots[app] = base_snapshot(conn)
    return world.snapshots


def diff_world(world: World, after: dict[str, sqlite3.Connection],
               touched: set[tuple[str, str]] | None = None) -> StateDiff:
    """The diff of every app of ``world`` against an episode's databases (see
    :func:`~rollgym.verifiers.tools.diff_bases`)."""
    return diff_bases(world_snapshots(world), after, touched)


__all__ = ["diff_world", "world_snapshots"]

# the pure grading moved to rollgym.verifiers.tools (0.2.0); the old path warns and goes in 0.3.0
__getattr__ = moved_to(__name__, {name: "rollgym.verifiers.tools" for name in (
    "AnswerKind",
    "CONSTANT_ANSWERS",
    "Expectation",
    "GATE",
    "Key",
    "Row",
    "answer_criterion",
    "check_answer",
    "contains",
    "diff_bases",
    "expectation_rubric",
    "expectation_rules",
    "grade",
    "is_degenerate",
    "json_set",
    "legacy_verdict",
    "required_rules",
    "rubric",
)})

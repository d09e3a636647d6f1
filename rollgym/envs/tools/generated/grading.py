"""Grading of generated tasks with the shared state-diff grader and the whole-world gate.

A generated task states its required end state as a ToolWorld
:class:`~rollgym.verifiers.tools.Expectation` (rows to update with their new values,
rows to delete, rows to insert, the answer). :func:`grade` turns it into an allow-list
and grades the episode with :mod:`rollgym.verifiers.statediff` and
:mod:`rollgym.verifiers.rubric` over **every table of every app of the episode's world**
(the task's apps and the distractor apps beside them). Nothing is tolerated beyond the
required changes: the generated apps have no side effects that the expectation does not
spell out (an action's status, date stamp and stock change are all required values). The
reward is 1.0 when every required change happened, a question's answer is exactly right
and the gate ``apps_unchanged_beyond_task`` holds; else 0.0. The rubric and the grade are the generated-world
core's (:mod:`rollgym.envs.genworld.diff`), which WebGen grades with too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from rollgym.core.task import Score
from rollgym.envs.genworld.diff import ExpectedState, grade_world, world_rubric
from rollgym.envs.tools.generated.catalog import app
from rollgym.verifiers.rubric import Rubric
from rollgym.verifiers.statediff import Rule, StateDiff
from rollgym.verifiers.tools import GATE, Expectation, answer_criterion, diff_bases, required_rules

__all__ = ["GATE", "diff_apps", "grade", "rubric", "rules"]


def rules(expectation: Expectation) -> list[Rule]:
    """The allow-list of a task: exactly its required changes."""
    return required_rules(expectation)


def rubric(expectation: Expectation) -> Rubric:
    """The criteria: ``required_changes``, ``answer`` for questions, and the gate ``apps_unchanged_beyond_task``."""
    expected = ExpectedState(required=rules(expectation), answer=answer_criterion(expectation))
    return world_rubric(expected, goal="required_changes", gate=GATE, partial_credit=False,
                        gate_description="no row of any app of the world changed beyond what the task asks")


def diff_apps(world: Iterable[str], dbs: dict[str, sqlite3.Connection],
              touched: set[tuple[str, str]] | None = None) -> StateDiff:
    """Every row added, changed or deleted in any table of the world's apps (tables named ``<app>.<table>``).

    ``touched`` (the session's record of tables a write statement reached) skips tables that cannot have
    changed; ``None`` reads every table. Both give the same diff.
    """
    return diff_bases({app_id: app(app_id).snapshot() for app_id in world}, dbs, touched)


def grade(expectation: Expectation, diff: StateDiff, answer: str | None) -> Score:
    """Grade one episode: the required changes, the answer and the whole-world gate."""
    return grade_world(rubric(expectation), diff, answer)

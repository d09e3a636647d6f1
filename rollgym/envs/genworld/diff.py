"""State-diff grading of a generated world: the expected state of a task, its rubric and one episode's grade.

A generated task states what it expects of the world's end state as an :class:`ExpectedState`: the changes it
*requires* (:class:`~rollgym.verifiers.statediff.Rule` s with ``required=True``), the changes it *tolerates*
besides (a sign-in, stock moving with an order), and for a question the ``answer`` criterion. The episode is
graded over the diff of the **whole world** against its base state (every table of every database: the
task's apps and the distractors beside them in ToolGen, every table of the site in WebGen) by
:func:`rollgym.verifiers.rubric.state_rubric`: the required changes (criterion ``goal``), the answer, and a
gate that zeroes the reward when any row changed beyond what the rules allow.

What differs by family is only named here: the gate (``apps_unchanged_beyond_task``,
``site_unchanged_beyond_task``), the goal's name and whether a partly met goal earns partial credit.

Example:
    >>> from rollgym.verifiers.statediff import added
    >>> expected = ExpectedState(required=(added("records", {"item_id": 3}, required=True),))
    >>> rubric = world_rubric(expected, goal="goal_reached", gate="site_unchanged_beyond_task")
    >>> grade_world(rubric, StateDiff(), "done").reward
    0.0
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rollgym.core.task import Score
from rollgym.verifiers.rubric import Criterion, GradeContext, Rubric, state_rubric
from rollgym.verifiers.statediff import Query, Rule, Snapshot, StateDiff, diff_snapshots, snapshot


@dataclass(frozen=True)
class ExpectedState:
    """What a task expects of the world's end state.

    Attributes:
        required: Changes that must happen (the goal).
        tolerated: Changes allowed besides (side effects of the permitted work).
        answer: A question's answer criterion, or ``None`` when the task asks nothing.
    """

    required: Sequence[Rule] = ()
    tolerated: Sequence[Rule] = ()
    answer: Criterion | None = None

    @property
    def rules(self) -> list[Rule]:
        """The allow-list: the required changes, then the tolerated ones."""
        return [*self.required, *self.tolerated]


def world_rubric(expected: ExpectedState, *, goal: str | None, gate: str, gate_description: str = "",
                 partial_credit: bool = True) -> Rubric:
    """The rubric of a generated task: ``goal`` (every required change happened; left out when ``None``, as
    for a question), the answer when it asks one, and the whole-world ``gate``."""
    return state_rubric(expected.rules, goal=goal, gate=gate, gate_description=gate_description,
                        answer=expected.answer, partial_credit=partial_credit)


def grade_world(rubric: Rubric, diff: StateDiff, answer: str | None, *, db: Query | None = None,
                base: Query | None = None) -> Score:
    """Grade one episode from its world ``diff`` and final ``answer`` (``db`` and ``base`` query a
    single-database world now and at reset, for criteria that read it)."""
    queries = {name: q for name, q in (("db", db), ("base", base)) if q is not None}
    return rubric.grade(GradeContext(answer=answer, diff=diff, **queries))


def diff_world(base: Snapshot, db: Query) -> StateDiff:
    """Every row added, changed or deleted in any table of one database (a WebGen site), queried through
    ``db``, against its base snapshot. A world of several databases (a ToolGen world's apps) is diffed by
    :func:`rollgym.verifiers.tools.diff_bases`, which ToolWorld shares, into the same :class:`StateDiff`."""
    return diff_snapshots(base, snapshot(db, base.schema))


__all__ = ["ExpectedState", "diff_world", "grade_world", "world_rubric"]

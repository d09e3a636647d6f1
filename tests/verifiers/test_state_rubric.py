"""state_rubric: the state-diff rubric of ToolWorld, ToolGen and WebGen tasks (allow-list, answer, gate)."""

from __future__ import annotations

from rollgym.verifiers.rubric import Criterion, GradeContext, state_rubric
from rollgym.verifiers.statediff import StateDiff, changed

ANSWER = Criterion("answer", 1.0, lambda ctx: ctx.answer == "42")


def test_the_answer_comes_right_after_the_goal_or_first() -> None:
    with_goal = state_rubric([], goal="required_changes", gate="gate", answer=ANSWER)
    without = state_rubric([], goal=None, gate="gate", answer=ANSWER)
    assert [c.name for c in with_goal.criteria] == ["required_changes", "answer", "gate"]
    assert [c.name for c in without.criteria] == ["answer", "gate"]


def test_a_missing_answer_is_the_error_only_when_the_task_asks_one() -> None:
    asks = state_rubric([], goal=None, gate="gate", answer=ANSWER)
    change = state_rubric([changed("t", {"id": 1}, to={"x": 2}, required=True)], goal="goal", gate="gate")
    assert asks.grade(GradeContext(answer=None, diff=StateDiff())).error == "no_answer"
    assert change.grade(GradeContext(answer=None, diff=StateDiff())).error == "wrong"
    assert asks.grade(GradeContext(answer="42", diff=StateDiff())).correct


def test_binary_or_partial_credit() -> None:
    rules = [changed("t", {"id": 1}, to={"x": 2}, required=True)]
    binary = state_rubric(rules, goal="goal", gate="gate", answer=ANSWER, partial_credit=False)
    partial = state_rubric(rules, goal="goal", gate="gate", answer=ANSWER)
    ctx = GradeContext(answer="42", diff=StateDiff())  # the answer is right, the change is missing
    assert binary.grade(ctx).reward == 0.0
    assert partial.grade(ctx).reward == 0.5

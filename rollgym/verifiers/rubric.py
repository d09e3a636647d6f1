"""Rubrics: named, weighted criteria and gates over an episode's answer and state diff, scored as a Score.

The second half of the shared state-diff grader (with :mod:`rollgym.verifiers.statediff`),
used by the ToolWorld apps and the practice websites alike. A :class:`Criterion`
is a named check with a weight; a :class:`Rubric` runs them on a
:class:`GradeContext` (the answer, the databases, the diff of every table) and
returns a :class:`~rollgym.core.task.Score` whose ``details`` say which criterion
failed and why. A criterion marked ``gate`` zeroes the reward when it fails (the
weighted share is still reported as ``details["partial_reward"]``), so that a side
effect is never worth anything; :func:`collateral_gate` builds the whole-world gate
from an allow-list of :class:`~rollgym.verifiers.statediff.Rule` s.

Example:
    >>> from rollgym.verifiers.statediff import StateDiff
    >>> rubric = Rubric([Criterion("says_done", 1.0, lambda ctx: ctx.answer == "done"),
    ...                  collateral_gate("nothing_else", [])])
    >>> rubric.grade(GradeContext(answer="done", diff=StateDiff())).reward
    1.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rollgym.core.task import Score
from rollgym.verifiers.statediff import Explanation, Query, Rule, StateDiff, explain


@dataclass(frozen=True)
class GradeContext:
    """What a criterion may read.

    Attributes:
        answer: The agent's final answer text, or ``None`` when it gave none.
        db: ``db(sql, params)`` queries the episode's database as it is now (for single-database worlds).
        base: ``base(sql, params)`` queries the state at reset.
        diff: Every change of the episode (see :class:`StateDiff`).
    """

    answer: str | None
    db: Query = field(default=lambda *a: [])
    base: Query = field(default=lambda *a: [])
    diff: StateDiff = field(default_factory=StateDiff)


Outcome = bool | tuple[bool, Sequence[str]]
"""A check's result: pass or fail, optionally with the reasons in words."""


@dataclass(frozen=True)
class Criterion:
    """One named check with a weight; a failed ``gate`` zeroes the reward.

    ``check`` returns whether it passes, or ``(passed, reasons)``.
    """

    name: str
    weight: float
    check: Callable[[GradeContext], Outcome]
    description: str = ""
    gate: bool = False


@dataclass(frozen=True)
class Rubric:
    """Criteria and how they make a reward.

    With ``partial_credit`` the reward is the weighted share of the criteria that pass; without it the
    reward is 1.0 when all pass, else 0.0. Either way a failed gate makes it 0.0 (with ``gates``).
    ``asks_answer`` says whether a missing answer is the reason to report (``error="no_answer"``).

    Example:
        >>> rubric = Rubric([Criterion("says_hello", 1.0, lambda ctx: ctx.answer == "hello")])
        >>> rubric.grade(GradeContext(answer="hello")).reward
        1.0
    """

    criteria: Sequence[Criterion]
    partial_credit: bool = True
    asks_answer: bool = True

    def grade(self, ctx: GradeContext, *, gates: bool = True) -> Score:
        """Run every criterion (one that raises counts as failed and is reported) and return the score.

        ``details`` holds ``criteria`` (name: passed), ``weights``, ``gates``, ``partial_reward`` (the
        weighted share), ``reasons`` of failed criteria, ``failed_gates`` and ``diff`` (changed rows per table).
        """
        results: dict[str, bool] = {}
        reasons: dict[str, list[str]] = {}
        errors: dict[str, str] = {}
        for c in self.criteria:
            try:
                outcome = c.check(ctx)
                passed, why = (outcome[0], list(outcome[1])) if isinstance(outcome, tuple) else (outcome, [])
                results[c.name] = bool(passed)
                if not passed and why:
                    reasons[c.name] = [str(w) for w in why[:20]]
            except Exception as exc:  # a criterion bug must not crash a training run
                results[c.name] = False
                errors[c.name] = f"{type(exc).__name__}: {exc}"
        total = sum(c.weight for c in self.criteria) or 1.0
        share = round(sum(c.weight for c in self.criteria if results[c.name]) / total, 6)
        correct = all(results.values())
        failed_gates = [c.name for c in self.criteria if c.gate and not results[c.name]]
        reward = share if self.partial_credit else float(correct)
        details: dict[str, Any] = {
            "criteria": results,
            "weights": {c.name: c.weight for c in self.criteria},
            "gates": [c.name for c in self.criteria if c.gate],
            "partial_reward": share,
            "diff": ctx.diff.summary(),
        }
        if reasons:
            details["reasons"] = reasons
        if gates and failed_gates:
            details["failed_gates"] = failed_gates
            reward = 0.0
        if errors:
            details["criterion_errors"] = errors
        if correct:
            error = None
        elif gates and failed_gates:
            error = "side_effects"
        elif ctx.answer is None and self.asks_answer:
            error = "no_answer"
        else:
            error = "wrong"
        return Score(reward=round(reward, 6), correct=correct, parsed=ctx.answer, error=error, details=details)


def _explained(ctx: GradeContext, rules: Sequence[Rule], memo: dict[int, tuple[StateDiff, Explanation]]
               ) -> Explanation:
    cached = memo.get(id(ctx.diff))
    if cached is None or cached[0] is not ctx.diff:
        memo.clear()
        cached = (ctx.diff, explain(ctx.diff, rules))
        memo[id(ctx.diff)] = cached
    return cached[1]


def state_criteria(rules: Sequence[Rule], *, goal: str | None, gate: str, goal_weight: float = 1.0,
                   gate_description: str = "") -> list[Criterion]:
    """Criteria from one allow-list: ``goal`` (every required change happened; left out when ``None``) and
    the gate ``gate`` (no change anywhere that the rules do not allow), sharing one :func:`explain`."""
    memo: dict[int, tuple[StateDiff, Explanation]] = {}
    out = []
    if goal is not None:
        out.append(Criterion(goal, goal_weight, lambda ctx: (not (e := _explained(ctx, rules, memo)).missing,
                                                              e.missing), "every required change happened"))
    out.append(Criterion(gate, 0.0, lambda ctx: (not (e := _explained(ctx, rules, memo)).unexplained,
                                                 e.unexplained),
                         gate_description or "nothing changed beyond what the task allows", gate=True))
    return out


def state_rubric(rules: Sequence[Rule], *, goal: str | None, gate: str, gate_description: str = "",
                 answer: Criterion | None = None, partial_credit: bool = True) -> Rubric:
    """The rubric of a task graded by the state-diff grader: :func:`state_criteria` over ``rules`` and, for a
    question, its ``answer`` criterion right after the goal (first when there is no goal). A missing answer is
    the error to report only when there is an ``answer`` criterion.

    Example:
        >>> says_done = Criterion("answer", 1.0, lambda ctx: ctx.answer == "done")
        >>> rubric = state_rubric([], goal=None, gate="nothing_else", answer=says_done)
        >>> [c.name for c in rubric.criteria], rubric.grade(GradeContext(answer="done")).reward
        (['answer', 'nothing_else'], 1.0)
    """
    criteria = state_criteria(rules, goal=goal, gate=gate, gate_description=gate_description)
    if answer is not None:
        criteria.insert(0 if goal is None else 1, answer)
    return Rubric(criteria, partial_credit=partial_credit, asks_answer=answer is not None)


def collateral_gate(name: str, rules: Sequence[Rule], description: str = "") -> Criterion:
    """A zero-weight gate that fails when any table changed in a way ``rules`` do not allow."""
    return state_criteria(rules, goal=None, gate=name, gate_description=description)[0]




__all__ = ["Criterion", "GradeContext", "Outcome", "Rubric", "collateral_gate", "state_criteria", "state_rubric"]

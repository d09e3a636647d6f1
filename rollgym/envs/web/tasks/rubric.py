"""Rubrics: named, weighted criteria, each a program over the backend state and the final answer.

A criterion never looks at the page: it reads the episode's database on the
server (what the site really recorded) and the text of the agent's
``answer(...)``. The reward is the weighted share of criteria that pass;
success means every criterion passes. Criteria are written so that doing
nothing fails each of them (a collateral-damage check such as "nothing else
changed" also demands that the target change happened).

A criterion marked ``gate`` (the collateral-damage checks) zeroes the reward
when it fails, so that acting on every candidate (cancelling all orders to be
sure of cancelling the right one) is worth nothing; the weighted share is still
reported as ``details["partial_reward"]``. ``grade(ctx, gates=False)`` is the
older, ungated scoring of the ``-v0`` web ids.

Example:
    >>> rubric = Rubric([Criterion("says_hello", 1.0, lambda ctx: ctx.answer == "hello")])
    >>> ctx = GradeContext(answer="hello", db=lambda *a: [], base=lambda *a: [])
    >>> rubric.grade(ctx).reward
    1.0
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rollgym.core.task import Score

Query = Callable[..., list[sqlite3.Row]]


@dataclass(frozen=True)
class GradeContext:
    """What a criterion may read.

    Attributes:
        answer: The text of the agent's ``answer(...)``, or ``None`` when it never answered.
        db: ``db(sql, params)`` queries the episode's database as it is now.
        base: ``base(sql, params)`` queries the site's seeded database (the state at reset).
    """

    answer: str | None
    db: Query
    base: Query


@dataclass(frozen=True)
class Criterion:
    """One named check with a weight; ``check`` returns whether it passes; a failed ``gate`` zeroes the reward."""

    name: str
    weight: float
    check: Callable[[GradeContext], bool]
    description: str = ""
    gate: bool = False


@dataclass(frozen=True)
class Rubric:
    """A list of criteria; :meth:`grade` turns them into a :class:`~rollgym.core.task.Score`."""

    criteria: Sequence[Criterion]

    def grade(self, ctx: GradeContext, *, gates: bool = True) -> Score:
        """Run every criterion; a criterion that raises counts as failed and is reported.

        With ``gates`` (the default), a failed gate criterion makes the reward 0.
        """
        results: dict[str, bool] = {}
        errors: dict[str, str] = {}
        for c in self.criteria:
            try:
                results[c.name] = bool(c.check(ctx))
            except Exception as exc:  # a criterion bug must not crash a training run
                results[c.name] = False
                errors[c.name] = f"{type(exc).__name__}: {exc}"
        total = sum(c.weight for c in self.criteria) or 1.0
        reward = sum(c.weight for c in self.criteria if results[c.name]) / total
        correct = all(results.values())
        details: dict[str, Any] = {"criteria": results, "weights": {c.name: c.weight for c in self.criteria}}
        failed_gates = [c.name for c in self.criteria if c.gate and not results[c.name]]
        if gates and failed_gates:
            details["partial_reward"] = round(reward, 6)
            details["failed_gates"] = failed_gates
            reward = 0.0
        if errors:
            details["criterion_errors"] = errors
        error = None if correct else ("no_answer" if ctx.answer is None else "wrong")
        return Score(reward=round(reward, 6), correct=correct, parsed=ctx.answer, error=error, details=details)


def normalize_text(text: str | None) -> str:
    """Case-fold, collapse whitespace, drop surrounding quotes and a final full stop.

    Example:
        >>> normalize_text('  "Acme  Pro Kettle". ')
        'acme pro kettle'
    """
    if text is None:
        return ""
    out = re.sub(r"\s+", " ", text)
    previous = None
    while out != previous:
        previous = out
        out = out.strip().strip("\"'`“”‘’").rstrip(".")
    return out.casefold()


def answer_equals(expected: str) -> Callable[[GradeContext], bool]:
    """A check that the whole answer is ``expected`` (after :func:`normalize_text`), never a substring."""
    target = normalize_text(expected)
    return lambda ctx: ctx.answer is not None and normalize_text(ctx.answer) == target


_MONEY_RE = re.compile(r"\$?\s*(\d{1,3}(?:,\d{3})*|\d+)(?:\.(\d{1,2}))?")


def parse_money(text: str | None) -> int | None:
    """Cents of an answer that is exactly one amount such as ``"$1,234.50"`` or ``"88"``; else ``None``."""
    if text is None:
        return None
    cleaned = normalize_text(text).removesuffix(" usd").removesuffix(" dollars")
    m = _MONEY_RE.fullmatch(cleaned)
    if m is None:
        return None
    cents = (m[2] or "0").ljust(2, "0")
    return int(m[1].replace(",", "")) * 100 + int(cents)


def new_rows(ctx: GradeContext, table: str, key: str = "id") -> list[sqlite3.Row]:
    """Rows of ``table`` in the episode whose ``key`` did not exist at reset."""
    old = {r[0] for r in ctx.base(f"SELECT {key} FROM {table}")}
    return [r for r in ctx.db(f"SELECT * FROM {table}") if r[key] not in old]


def changed_ids(ctx: GradeContext, table: str, column: str, key: str = "id") -> set[Any]:
    """Keys of pre-existing rows of ``table`` whose ``column`` differs from the seeded value."""
    before = {r[0]: r[1] for r in ctx.base(f"SELECT {key}, {column} FROM {table}")}
    return {r[0] for r in ctx.db(f"SELECT {key}, {column} FROM {table}") if r[0] in before and before[r[0]] != r[1]}

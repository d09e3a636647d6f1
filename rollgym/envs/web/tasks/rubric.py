"""Rubric helpers for the web tasks: answer normalisers and queries over the episode's database.

The criteria, rubrics and grading context are the shared state-diff grader's
(:mod:`rollgym.verifiers.rubric`, :mod:`rollgym.verifiers.statediff`), re-exported here: a criterion never looks
at the page; it reads the episode's database on the server (what the site
really recorded), the seeded database (the state at reset), the diff of every
table between the two, and the text of the agent's ``answer(...)``. The reward
is the weighted share of criteria that pass; success means every criterion
passes. Criteria are written so that doing nothing fails the weighted ones.

A criterion marked ``gate`` zeroes the reward when it fails, so that acting on
every candidate (cancelling all orders to be sure of cancelling the right one)
or any side effect elsewhere on the site is worth nothing; the weighted share is
still reported as ``details["partial_reward"]``. ``grade(ctx, gates=False)`` is
the older, ungated scoring of the ``-v0`` web ids.

Example:
    >>> rubric = Rubric([Criterion("says_hello", 1.0, lambda ctx: ctx.answer == "hello")])
    >>> ctx = GradeContext(answer="hello", db=lambda *a: [], base=lambda *a: [])
    >>> rubric.grade(ctx).reward
    1.0
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import Any

from rollgym.verifiers.rubric import Criterion, GradeContext, Rubric
from rollgym.verifiers.statediff import Query


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


__all__ = [
    "Criterion",
    "GradeContext",
    "Query",
    "Rubric",
    "answer_equals",
    "changed_ids",
    "new_rows",
    "normalize_text",
    "parse_money",
]

"""Grading helpers of the web tasks: answer normalisers and readers, and queries over the episode's database.

A web criterion never looks at the page; it reads the episode's database on the server (what
the site really recorded), the seeded database (the state at reset), the diff of every table
between the two, and the text of the agent's ``answer(...)`` (:class:`~rollgym.verifiers.rubric.GradeContext`).
Everything here is a pure function of those.

* :func:`normalize_text`, :func:`answer_equals` and :func:`parse_money` read the answers of the
  hand-written sites (:mod:`rollgym.envs.web.tasks`); :func:`new_rows` and :func:`changed_ids` query
  the episode's database against the seeded one.
* :func:`matches` reads an answer to a question about a generated site (:mod:`rollgym.envs.web.gen`):
  themes write values differently (``$1,234.50`` or ``1,234.50 USD``; ``2026-03-14``, ``14 Mar 2026``
  or ``March 14, 2026``; ``3,442 words``), so an answer is read as one value of the expected type in
  any of those forms and compared with the truth. The whole answer must be that one value: ``"12 or
  13"``, a list of candidates, or a number with other words around it does not match.

Example:
    >>> normalize_text('  "Acme  Pro Kettle". ')
    'acme pro kettle'
    >>> matches("money", 123450, "1,234.50 USD"), matches("money", 123450, "$1234.5")
    (True, True)
    >>> matches("date", "2026-03-14", "March 14, 2026"), matches("date", "2026-03-14", "14 Mar 2026 or 15 Mar")
    (True, False)
    >>> matches("int", 3442, "3,442 words", unit="words"), matches("int", 3442, "3442 pages", unit="words")
    (True, False)
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from rollgym.verifiers.rubric import GradeContext


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


# -- answers about generated sites ----------------------------------------------------------------------
CONSTANT_ANSWERS = ("", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "0.00", "yes", "no", "none", "done",
                    "ok", "[]", "{}", "true", "false", "null", "n/a", "nothing", "unknown", "all", "everything")
"""Answers an agent could give without looking at anything; no generated task has one of them as its answer."""

_MONEY = re.compile(r"(?:usd\s*)?\$?\s*(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?(?:\s*(?:usd|dollars))?")
_INT = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+)(?:\s+([^\d\s].*))?")
_DATE_FORMATS = ("%Y-%m-%d", "%d %b %Y", "%d %B %Y", "%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%b %d %Y")


def read_money(text: str | None) -> int | None:
    """Cents of an answer that is exactly one amount (``$1,234.50``, ``1234.5 USD``, ``88``); else ``None``."""
    m = _MONEY.fullmatch(normalize_text(text))
    if m is None:
        return None
    return int(m[1].replace(",", "")) * 100 + int((m[2] or "0").ljust(2, "0"))


def read_int(text: str | None, unit: str = "") -> int | None:
    """An answer that is exactly one whole number, optionally followed by ``unit``; else ``None``."""
    m = _INT.fullmatch(normalize_text(text))
    if m is None or (m[2] is not None and m[2] != unit.casefold()):
        return None
    return int(m[1].replace(",", ""))


def read_date(text: str | None) -> date | None:
    """An answer that is exactly one date in ISO, ``14 Mar 2026`` or ``March 14, 2026`` form; else ``None``."""
    cleaned = " ".join(normalize_text(text).split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).date()
        except ValueError:
            continue
    return None


def matches(kind: str, expected: Any, answer: str | None, unit: str = "") -> bool:
    """Whether ``answer`` is exactly ``expected``: ``kind`` is ``name`` (text), ``money`` (cents), ``int`` or
    ``date`` (ISO)."""
    if answer is None:
        return False
    if kind == "money":
        return read_money(answer) == expected
    if kind == "int":
        return read_int(answer, unit) == expected
    if kind == "date":
        found = read_date(answer)
        return found is not None and found.isoformat() == expected
    return normalize_text(answer) == normalize_text(str(expected))


def guessable(kind: str, expected: Any, unit: str = "") -> bool:
    """Whether one of :data:`CONSTANT_ANSWERS` would be accepted (such tasks are drawn again)."""
    return any(matches(kind, expected, c, unit) for c in CONSTANT_ANSWERS)


__all__ = ["CONSTANT_ANSWERS", "answer_equals", "changed_ids", "guessable", "matches", "new_rows", "normalize_text",
           "parse_money", "read_date", "read_int", "read_money"]

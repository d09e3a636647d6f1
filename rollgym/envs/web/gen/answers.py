"""Reading an agent's answer to a question about a generated site: a name, an amount, a number or a date.

Themes write values differently (``$1,234.50`` or ``1,234.50 USD``; ``2026-03-14``,
``14 Mar 2026`` or ``March 14, 2026``; ``3,442 words``), so an answer is read as one
value of the expected type in any of those forms, and compared with the truth. The
whole answer must be that one value: ``"12 or 13"``, a list of candidates, or a
number with other words around it does not match.

Example:
    >>> matches("money", 123450, "1,234.50 USD"), matches("money", 123450, "$1234.5")
    (True, True)
    >>> matches("date", "2026-03-14", "March 14, 2026"), matches("date", "2026-03-14", "14 Mar 2026 or 15 Mar")
    (True, False)
    >>> matches("int", 3442, "3,442 words", unit="words"), matches("int", 3442, "3442 pages", unit="words")
    (True, False)
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

from rollgym.envs.web.tasks.rubric import normalize_text

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

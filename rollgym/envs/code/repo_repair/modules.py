"""The modules a RepoRepair repository is made of: correct source, input generators and bug variants.

Each :class:`Function` has its correct source, a generator of arguments, and, per
bug kind, a replacement (old text, new text) that injects that bug into the source.
A module groups functions that a small project would keep together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Rng = np.random.Generator


@dataclass(frozen=True)
class Function:
    """One function of a module."""

    name: str
    source: str
    draw_args: Callable[[Rng], tuple[Any, ...]]
    bugs: dict[str, tuple[str, str]] = field(default_factory=dict)
    summary: str = ""


@dataclass(frozen=True)
class Module:
    """One module: its file name, docstring and functions."""

    name: str
    doc: str
    functions: tuple[Function, ...]

    def source(self, broken: tuple[str, str, str] | None = None) -> str:
        """The module's text; ``broken = (function, old, new)`` injects a bug into one function."""
        parts = [f'"""{self.doc}"""\n']
        for fn in self.functions:
            text = fn.source
            if broken is not None and broken[0] == fn.name:
                assert broken[1] in text, (fn.name, broken[1])
                text = text.replace(broken[1], broken[2], 1)
            parts.append(text)
        return "\n\n".join(parts)


def _ints(rng: Rng, low: int, high: int, n: int) -> list[int]:
    return [int(v) for v in rng.integers(low, high + 1, size=n)]


_WORDS = ("alpha", "beta", "gamma", "delta", "kayak", "level", "noon", "rotor", "stats", "echo")

MODULES: tuple[Module, ...] = (
    Module("stats", "Small statistics over lists of integers.", (
        Function("total_above", "def total_above(xs, limit):\n"
                 "    \"\"\"Sum of the numbers strictly greater than limit.\"\"\"\n"
                 "    total = 0\n    for x in xs:\n        if x > limit:\n            total += x\n    return total\n",
                 lambda r: (_ints(r, -20, 20, int(r.integers(0, 9))), int(r.integers(-5, 6))),
                 {"wrong_comparison": ("if x > limit", "if x >= limit"), "wrong_operator": ("total += x", "total -= x"),
                  "wrong_constant": ("total = 0\n", "total = 1\n")},
                 "sum of the numbers strictly greater than a limit"),
        Function("spread", "def spread(xs):\n    \"\"\"Largest minus smallest number; 0 for an empty list.\"\"\"\n"
                 "    if not xs:\n        return 0\n    return max(xs) - min(xs)\n",
                 lambda r: (_ints(r, -30, 30, int(r.integers(0, 8))),),
                 {"missing_case": ("    if not xs:\n        return 0\n", ""),
                  "wrong_operator": ("max(xs) - min(xs)", "max(xs) + min(xs)")},
                 "largest minus smallest number"),
        Function("window_sums", "def window_sums(xs, k):\n"
                 "    \"\"\"Sums of every run of k consecutive numbers, in order.\"\"\"\n"
                 "    return [sum(xs[i:i + k]) for i in range(len(xs) - k + 1)]\n",
                 lambda r: (_ints(r, -9, 9, int(r.integers(1, 9))), int(r.integers(1, 4))),
                 {"off_by_one": ("range(len(xs) - k + 1)", "range(len(xs) - k)")},
                 "sums of every run of k consecutive numbers"),
    )),
    Module("text", "Helpers for words and sentences.", (
        Function("count_words", "def count_words(sentence):\n    \"\"\"Number of words separated by spaces.\"\"\"\n"
                 "    return len([w for w in sentence.split(' ') if w])\n",
                 lambda r: (" ".join(str(r.choice(_WORDS)) for _ in range(int(r.integers(0, 6))))
                            + " " * int(r.integers(0, 2)),),
                 {"missing_case": (" if w]", "]")},
                 "number of words"),
        Function("shout", "def shout(sentence, times):\n"
                 "    \"\"\"The sentence in upper case followed by times exclamation marks.\"\"\"\n"
                 "    return sentence.upper() + '!' * times\n",
                 lambda r: (str(r.choice(_WORDS)), int(r.integers(0, 5))),
                 {"off_by_one": ("'!' * times", "'!' * (times + 1)"), "wrong_constant": ("'!'", "'?'")},
                 "the sentence in upper case with exclamation marks"),
        Function("palindromes", "def palindromes(words):\n"
                 "    \"\"\"The words that read the same backwards, in order.\"\"\"\n"
                 "    return [w for w in words if w == w[::-1]]\n",
                 lambda r: ([str(r.choice(_WORDS)) for _ in range(int(r.integers(0, 7)))],),
                 {"wrong_comparison": ("w == w[::-1]", "w != w[::-1]"), "off_by_one": ("w[::-1]", "w[-2::-1]")},
                 "the palindromes among the words"),
    )),
    Module("inventory", "Stock keeping for a small shop; an item is [name, quantity, unit price].", (
        Function("stock_value", "def stock_value(items):\n    \"\"\"Total of quantity times unit price.\"\"\"\n"
                 "    return sum(quantity * price for _, quantity, price in items)\n",
                 lambda r: ([[str(r.choice(_WORDS)), int(r.integers(0, 10)), int(r.integers(1, 20))]
                             for _ in range(int(r.integers(0, 5)))],),
                 {"wrong_operator": ("quantity * price", "quantity + price")},
                 "total value of the stock"),
        Function("to_restock", "def to_restock(items, minimum):\n"
                 "    \"\"\"Names of the items with fewer than minimum in stock.\"\"\"\n"
                 "    return [name for name, quantity, _ in items if quantity < minimum]\n",
                 lambda r: ([[str(r.choice(_WORDS)), int(r.integers(0, 10)), 1] for _ in range(int(r.integers(0, 6)))],
                            int(r.integers(1, 8))),
                 {"wrong_comparison": ("quantity < minimum", "quantity <= minimum")},
                 "names of the items to restock"),
    )),
    Module("dates", "Calendar arithmetic.", (
        Function("is_leap", "def is_leap(year):\n"
                 "    \"\"\"Whether year is a leap year in the Gregorian calendar.\"\"\"\n"
                 "    if year % 400 == 0:\n        return True\n    if year % 100 == 0:\n        return False\n"
                 "    return year % 4 == 0\n",
                 lambda r: (int(r.choice([1900, 2000, 2024, 2023, 2100, 1996, 2400, 1999])),),
                 {"missing_case": ("    if year % 400 == 0:\n        return True\n", ""),
                  "wrong_constant": ("year % 4 == 0", "year % 5 == 0")},
                 "whether a year is a leap year"),
        Function("days_in_month", "def days_in_month(year, month):\n"
                 "    \"\"\"Number of days of month (1-12) in year.\"\"\"\n"
                 "    if month == 2:\n        return 29 if is_leap(year) else 28\n"
                 "    return 30 if month in (4, 6, 9, 11) else 31\n",
                 lambda r: (int(r.choice([2000, 2023, 2024, 1900])), int(r.integers(1, 13))),
                 {"wrong_constant": ("29 if is_leap(year) else 28", "28 if is_leap(year) else 29"),
                  "off_by_one": ("(4, 6, 9, 11)", "(4, 6, 9, 12)")},
                 "number of days in a month"),
    )),
    Module("grades", "Marks and grades of a class.", (
        Function("letter", "def letter(score):\n    \"\"\"A for 90 and up, B for 80-89, C for 70-79, F below.\"\"\"\n"
                 "    if score >= 90:\n        return 'A'\n    if score >= 80:\n        return 'B'\n"
                 "    if score >= 70:\n        return 'C'\n    return 'F'\n",
                 lambda r: (int(r.choice([69, 70, 79, 80, 89, 90, 100, 0, 55, 85])),),
                 {"wrong_comparison": ("score >= 80", "score > 80"), "off_by_one": ("score >= 70", "score >= 71")},
                 "the letter grade of a score"),
        Function("pass_count", "def pass_count(scores, cutoff):\n    \"\"\"How many scores are at least cutoff.\"\"\"\n"
                 "    return sum(1 for s in scores if s >= cutoff)\n",
                 lambda r: (_ints(r, 40, 100, int(r.integers(0, 8))), int(r.choice([50, 60, 70]))),
                 {"wrong_comparison": ("s >= cutoff", "s > cutoff")},
                 "how many scores pass"),
    )),
    Module("sequences", "Transformations of integer sequences.", (
        Function("running_max", "def running_max(xs):\n"
                 "    \"\"\"The largest value seen so far, at every position.\"\"\"\n"
                 "    out = []\n    for x in xs:\n"
                 "        out.append(x if not out else max(out[-1], x))\n    return out\n",
                 lambda r: (_ints(r, -9, 9, int(r.integers(0, 8))),),
                 {"wrong_operator": ("max(out[-1], x)", "min(out[-1], x)")},
                 "the running maximum"),
        Function("differences", "def differences(xs):\n"
                 "    \"\"\"Each number minus the one before it (one fewer than the input).\"\"\"\n"
                 "    return [xs[i] - xs[i - 1] for i in range(1, len(xs))]\n",
                 lambda r: (_ints(r, -9, 9, int(r.integers(0, 8))),),
                 {"off_by_one": ("range(1, len(xs))", "range(2, len(xs))"),
                  "wrong_operator": ("xs[i] - xs[i - 1]", "xs[i - 1] - xs[i]")},
                 "differences of neighbours"),
    )),
)

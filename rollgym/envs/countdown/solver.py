"""An exact Countdown solver and the two reference policies built on it.

:func:`solve_countdown` searches depth-first over pairs of the remaining
values, combining each pair with every allowed operator, and remembers the
multisets of values that led nowhere. It first searches positive integers only
(fast, and complete for every generated task, whose reference solution keeps
intermediates positive integers), then falls back to exact fractions and
negative values, which the verifier also accepts, under a state budget.

This module does not define what a task is or how it scores, so it is not part
of ``Countdown-v0``'s content hash.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.envs.countdown.config import normalise_operators, normalise_usage
from rollgym.envs.countdown.generator import ATOM, Node, join_expression, node_text
from rollgym.verifiers.countdown import OPERATORS

# A search item is (value, node); a node is an offered number or (op, left node, right node).
# Text is written only for the solution, which keeps the search loop cheap.
_Item = tuple[Any, Node]
DEFAULT_MAX_STATES = 250_000  # covers every 6-number fractional search (about 200,000 states)


class _OutOfBudget(Exception):
    pass


class _Search:
    """One depth-first search for ``target``; ``integers`` restricts intermediates to positive integers."""

    def __init__(self, target: int, operators: Sequence[str], exactly: bool, integers: bool, max_states: int) -> None:
        self.target = target
        self.operators = operators
        self.exactly = exactly
        self.integers = integers
        self.max_states = max_states
        self.states = 0
        self.dead: set[tuple[Any, ...]] = set()

    def run(self, pool: list[_Item]) -> Node | None:
        key = tuple(sorted(item[0] for item in pool))
        if key in self.dead:
            return None
        self.states += 1
        if self.states > self.max_states:
            raise _OutOfBudget
        tried: set[tuple[Any, Any]] = set()
        for i in range(len(pool)):
            for j in range(i + 1, len(pool)):
                a, b = pool[i], pool[j]
                pair = (a[0], b[0]) if a[0] <= b[0] else (b[0], a[0])
                if pair in tried:
                    continue
                tried.add(pair)
                rest = pool[:i] + pool[i + 1 : j] + pool[j + 1 :]
                for item in self._combine(a, b):
                    if item[0] == self.target and not (self.exactly and rest):
                        return item[1]
                    if rest:
                        found = self.run([*rest, item])
                        if found is not None:
                            return found
        self.dead.add(key)
        return None

    def _combine(self, a: _Item, b: _Item) -> Iterator[_Item]:
        (x, p), (y, q) = (a, b) if a[0] >= b[0] else (b, a)  # x >= y
        for op in self.operators:
            if op == "+":
                yield x + y, ("+", p, q)
            elif op == "*":
                yield x * y, ("*", p, q)
            elif op == "-":
                if x != y or not self.integers:
                    yield x - y, ("-", p, q)
                if x != y and not self.integers:
                    yield y - x, ("-", q, p)
            elif self.integers:
                if x % y == 0 and (y != 1 or "*" not in self.operators):  # x / 1 repeats x * 1
                    yield x // y, ("/", p, q)
            else:
                if y != 0:
                    yield x / y, ("/", p, q)
                if x != 0 and x != y:
                    yield y / x, ("/", q, p)


def solve_countdown(
    numbers: Sequence[int],
    target: int,
    operators: Sequence[str] | str = OPERATORS,
    usage: str = "exactly",
    *,
    max_states: int = DEFAULT_MAX_STATES,
) -> str | None:
    """An expression over ``numbers`` that equals ``target`` under the usage rule, or ``None``.

    ``None`` means no solution exists, or the fractional search ran out of
    ``max_states`` states first (with 6 numbers and no solution, about 10 s).

    Example:
        >>> solve_countdown([1, 3, 4, 6], 24, "+-/")
        '6 / (1 - 3 / 4)'
    """
    ops = normalise_operators(operators)
    exactly = normalise_usage(usage) == "exactly"
    values = [int(n) for n in numbers]
    if not values:
        return None
    if (not exactly or len(values) == 1) and target in values:
        return str(target)
    for integers in (True, False):
        pool: list[_Item] = [(n if integers else Fraction(n), n) for n in values]
        try:
            # the integer search is finite and complete for generated tasks, so only the fractional one is capped
            budget = sys.maxsize if integers else max_states
            found = _Search(target, ops, exactly, integers, budget).run(pool)
        except _OutOfBudget:
            found = None
        if found is not None:
            return node_text(found)[0]
    return None


def search_states(numbers: Sequence[int], target: int, operators: Sequence[str] | str = OPERATORS) -> int:
    """How many states the positive-integer search for an exact-usage solution visits (no budget).

    A task's cost to the solver: the difficulty levels are checked to cost more level by level.

    Example:
        >>> search_states([3, 8, 8], 24, "+*")
        5
    """
    search = _Search(target, normalise_operators(operators), True, True, sys.maxsize)
    search.run([(int(n), int(n)) for n in numbers])
    return search.states


def _meta_of(info: dict[str, Any]) -> dict[str, Any]:
    meta = info.get("task_meta")
    if not isinstance(meta, dict) or "numbers" not in meta or "target" not in meta:
        raise ConfigError("The Countdown policies need info['task_meta'] from reset(); pass the env's info dict.")
    return meta


def countdown_oracle(observation: str, info: dict[str, Any]) -> str:
    """Reference policy: solve the task from its public ``info["task_meta"]`` and answer in tags.

    Returns an empty ``<answer></answer>`` for a given task that has no solution.
    """
    meta = _meta_of(info)
    found = solve_countdown(
        meta["numbers"], meta["target"], meta.get("operators", OPERATORS), meta.get("usage", "exactly")
    )
    return f"<answer>{found or ''}</answer>"


def countdown_random_policy(observation: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    """A random well-formed answer: the offered numbers (a random subset under ``at_most``) in a random tree."""
    meta = _meta_of(info)
    numbers = [int(n) for n in meta["numbers"]]
    operators = list(meta.get("operators", OPERATORS))
    order = rng.permutation(len(numbers))
    keep = len(numbers) if meta.get("usage", "exactly") == "exactly" else int(rng.integers(1, len(numbers) + 1))
    pool = [(str(numbers[k]), ATOM) for k in order[:keep]]
    while len(pool) > 1:
        i, j = (int(k) for k in rng.choice(len(pool), size=2, replace=False))
        op = operators[int(rng.integers(len(operators)))]
        joined = join_expression(pool[i][0], pool[i][1], op, pool[j][0], pool[j][1])
        pool = [item for k, item in enumerate(pool) if k not in (i, j)] + [joined]
    return f"<answer>{pool[0][0]}</answer>"

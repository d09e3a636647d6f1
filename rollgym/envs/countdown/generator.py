"""``CountdownGenerator``: solvable Countdown tasks, drawn per (split, index) and disjoint across splits.

A task is built forwards, so it is solvable by construction: draw the numbers,
combine random pairs with random allowed operators until one expression is
left (every intermediate result a positive integer), and take its value as
the target. The last step chooses among the operators whose result lies in
the target range and is not itself one of the numbers; a build with none is
retried. The expression is kept as the reference solution in ``task.answer``.

Randomness comes only from :func:`rollgym.core.seeding.draw_in_split`, whose
content key (sorted numbers, target, operators, usage rule) puts every
distinct puzzle in exactly one split. Builds whose key belongs to another
split are skipped inside one stream, which keeps the small splits cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, draw_in_split, split_of_key
from rollgym.core.sources import GeneratedSource
from rollgym.core.task import Task
from rollgym.envs.countdown.config import CountdownConfig, normalise_operators, normalise_usage
from rollgym.verifiers.countdown import OPERATORS, CountdownRules

FAMILY = "countdown"
DEFAULT_ENV_ID = "Countdown-v0"
MAX_TRIES = 2048  # forward builds per candidate before the config is declared unreachable
_BATCH = 16

ATOM = 3
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def join_expression(left: str, left_prec: int, op: str, right: str, right_prec: int) -> tuple[str, int]:
    """Write ``left op right`` with the fewest parentheses that keep its exact value.

    Returns the text and its precedence (``ATOM`` for a bare number).

    Example:
        >>> join_expression("8", ATOM, "-", "3 + 1", 1)
        ('8 - (3 + 1)', 1)
    """
    prec = _PRECEDENCE[op]
    if left_prec < prec:
        left = f"({left})"
    if right_prec < prec or (right_prec == prec and op in "-/"):
        right = f"({right})"
    return f"{left} {op} {right}", prec


Node = Any  # an offered number, or (op, left node, right node)


def node_text(node: Node) -> tuple[str, int]:
    """Text and precedence of an expression tree, written with :func:`join_expression`.

    Example:
        >>> node_text(("*", ("+", 6, 4), 3))
        ('(6 + 4) * 3', 2)
    """
    if isinstance(node, int):
        return str(node), ATOM
    op, left, right = node
    return join_expression(*node_text(left), op, *node_text(right))


def format_prompt(numbers: Sequence[int], target: int, operators: Sequence[str], usage: str) -> str:
    """The prompt of a Countdown task: the numbers, the target, the exact rules and the answer format."""
    listed = ", ".join(str(n) for n in numbers)
    if usage == "exactly":
        rule = "Use every number exactly once; a number listed twice must be used twice."
    else:
        rule = "Use each number at most once; a number listed twice may be used up to twice. You need not use them all."
    ops = " ".join(op for op in OPERATORS if op in operators)
    return (
        f"Countdown: combine the numbers {listed} to make {target}.\n\n"
        "Rules:\n"
        f"- {rule}\n"
        f"- Allowed operations: {ops} and parentheses. Nothing else: no unary minus, no exponents, "
        "no decimals, and no joining digits into new numbers.\n"
        "- Arithmetic is exact: intermediate results may be fractions or negative; "
        "only the final value must equal the target.\n\n"
        "Answer format: give one expression inside <answer></answer>, for example <answer>(6 + 4) * 3</answer> "
        f"(format only). You may end it with '= {target}'. Only the last <answer> block is read."
    )


def countdown_task(
    numbers: Sequence[int],
    target: int,
    *,
    operators: Sequence[str] | str = OPERATORS,
    usage: str = "exactly",
    task_id: str | None = None,
    env_id: str = DEFAULT_ENV_ID,
    answer: str | None = None,
) -> Task:
    """Build a Countdown :class:`Task` from given numbers and target (for external datasets).

    The task plays in ``Countdown-v0`` through ``reset(options={"task": task})`` and
    scores with :func:`~rollgym.verifiers.countdown.verify_countdown`.

    Example:
        >>> countdown_task([3, 8, 8], 24, operators="+*").meta["operators"]
        ['+', '*']
    """
    ops, rule = normalise_operators(operators), normalise_usage(usage)
    meta = _meta(list(numbers), target, ops, rule, {"num_numbers": len(numbers)})
    CountdownRules.from_meta(meta)  # a clear ConfigError for numbers or a target that are not positive integers
    digest = content_digest(content_key(numbers, target, ops, rule))
    return Task(
        id=task_id or f"{env_id}:given:{digest}",
        env_id=env_id,
        prompt=format_prompt(numbers, target, ops, rule),
        answer=answer,
        meta=meta,
    )


def content_key(numbers: Sequence[int], target: int, operators: Sequence[str], usage: str) -> str:
    """What makes two Countdown tasks the same puzzle: sorted numbers, target, operators and usage rule.

    Its hash decides a task's split (:func:`rollgym.core.seeding.split_of_key`).
    """
    return f"{sorted(numbers)}|{target}|ops={''.join(operators)};usage={usage}"


def _meta(
    numbers: Sequence[int], target: int, operators: Sequence[str], usage: str, difficulty: dict[str, object]
) -> dict[str, object]:
    return {
        "numbers": list(numbers),
        "target": target,
        "operators": list(operators),
        "usage": usage,
        "difficulty": difficulty,
    }


@dataclass(frozen=True)
class _Draw:
    numbers: tuple[int, ...]
    target: int
    solution: str


class CountdownGenerator(GeneratedSource[CountdownConfig]):
    """The task source of ``Countdown-v0``: ``task(index, split)`` is deterministic and never repeats across splits.

    Example:
        >>> gen = CountdownGenerator(CountdownConfig(num_numbers=3, max_target=200))
        >>> gen.task(0).id == gen.task(0).id
        True
    """

    family = FAMILY
    config_type = CountdownConfig
    default_env_id = DEFAULT_ENV_ID

    def task(self, index: int, split: str = "train") -> Task:
        """Task ``index`` of ``split``: the same on every call, run and machine."""
        draw, _ = draw_in_split(FAMILY, split, index, lambda rng: self._draw(rng, split), key=self._key)
        key = self._key(draw)
        return Task(
            id=f"{self.env_id}:{split}:{index}:{content_digest(key)}",
            env_id=self.env_id,
            prompt=format_prompt(draw.numbers, draw.target, self.config.operators, self.config.usage),
            answer=draw.solution,
            meta=_meta(draw.numbers, draw.target, self.config.operators, self.config.usage, self._difficulty()),
        )

    def _difficulty(self) -> dict[str, object]:
        cfg = self.config
        return {
            "num_numbers": cfg.num_numbers,
            "value_range": [cfg.min_value, cfg.max_value],
            "target_range": [cfg.min_target, cfg.max_target],
        }

    def _key(self, draw: _Draw) -> str:
        return content_key(draw.numbers, draw.target, self.config.operators, self.config.usage)

    def _draw(self, rng: np.random.Generator, split: str) -> _Draw:
        """Build until a target lands in range and the puzzle's content key belongs to ``split``.

        Filtering by split here, in one stream, saves :func:`draw_in_split` a fresh
        generator per rejected candidate (nine in ten for the test split); it
        still checks the key, so splits stay disjoint by content.
        """
        cfg = self.config
        n = cfg.num_numbers
        span = cfg.max_value - cfg.min_value + 1
        in_range = 0
        for batch in range(MAX_TRIES * 20 // _BATCH):
            if batch == MAX_TRIES // _BATCH and in_range == 0:
                raise ConfigError(
                    f"No target in [{cfg.min_target}, {cfg.max_target}] came out of {n} numbers in "
                    f"[{cfg.min_value}, {cfg.max_value}] with operators {' '.join(cfg.operators)} in {MAX_TRIES} "
                    "tries; widen the target or number range, or allow more operators."
                )
            # one numpy call per batch of tries: per-call overhead dominates at this size
            for row in rng.random((_BATCH, 4 * n + 1)).tolist():
                numbers = [cfg.min_value + int(x * span) for x in row[:n]]
                target = self._target(numbers, row[n:])
                if target is None:
                    continue
                in_range += 1
                if split_of_key(content_key(numbers, target, cfg.operators, cfg.usage)) == split:
                    built = self._build(numbers, row[n:])  # the same draws again, now with the expression
                    assert built is not None and built[0] == target
                    return _Draw(tuple(numbers), target, node_text(built[1])[0])
        raise ConfigError(
            f"Too few distinct puzzles for the {split} split with this configuration; widen the number or target range."
        )

    def _target(self, numbers: list[int], choices: list[float]) -> int | None:
        """The target :meth:`_build` reaches from the same draws, without building the expression.

        Most candidates are rejected (a target out of range, or a puzzle of another split),
        so candidates are screened by value alone; it must follow :meth:`_build` draw for draw.
        """
        cfg = self.config
        u = iter(choices)
        pool = list(numbers)
        if cfg.usage == "at_most":
            keep = 2 + int(next(u) * (len(pool) - 1))
            while len(pool) > keep:
                pool.pop(int(next(u) * len(pool)))
        low, high = cfg.min_target, cfg.max_target
        operators = cfg.operators
        while len(pool) > 1:
            size = len(pool)
            i = int(next(u) * size)
            j = int(next(u) * (size - 1))
            j += j >= i
            a, b = pool[i], pool[j]
            del pool[max(i, j)], pool[min(i, j)]
            x, y = (a, b) if a >= b else (b, a)
            results = []
            for op in operators:
                if op == "+":
                    results.append(x + y)
                elif op == "*":
                    results.append(x * y)
                elif op == "-" and x > y:
                    results.append(x - y)
                elif op == "/" and x % y == 0:
                    results.append(x // y)
            if not pool:
                results = [r for r in results if low <= r <= high and r not in numbers]
            if not results:
                return None
            pool.append(results[int(next(u) * len(results))])
        return pool[0]

    def _build(self, numbers: list[int], choices: list[float]) -> tuple[int, Node] | None:
        """Combine random pairs into one expression; ``choices`` are uniform draws in [0, 1)."""
        cfg = self.config
        u = iter(choices)
        pool: list[tuple[int, Node]] = [(v, v) for v in numbers]
        if cfg.usage == "at_most":
            keep = 2 + int(next(u) * (len(pool) - 1))
            while len(pool) > keep:
                pool.pop(int(next(u) * len(pool)))
        low, high = cfg.min_target, cfg.max_target
        while len(pool) > 1:
            i = int(next(u) * len(pool))
            j = int(next(u) * (len(pool) - 1))
            j += j >= i
            a, b = pool[i], pool[j]
            del pool[max(i, j)], pool[min(i, j)]
            (x, p), (y, q) = (a, b) if a[0] >= b[0] else (b, a)
            results = []
            for op in cfg.operators:
                if op == "+":
                    results.append((x + y, ("+", a[1], b[1])))
                elif op == "*":
                    results.append((x * y, ("*", a[1], b[1])))
                elif op == "-" and x > y:
                    results.append((x - y, ("-", p, q)))
                elif op == "/" and x % y == 0:
                    results.append((x // y, ("/", p, q)))
            if not pool:  # the last step picks among the results that make a valid target
                results = [r for r in results if low <= r[0] <= high and r[0] not in numbers]
            if not results:
                return None
            pool.append(results[int(next(u) * len(results))])
        return pool[0]

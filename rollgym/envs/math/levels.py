"""MATH difficulty: the data set's own ``level`` labels (1-5 in MATH500) as rollgym difficulty levels.

A set whose rows carry a ``level`` (MATH500; a user's MATH-style file) gets one
difficulty level per label, easiest first, and ``reset(options={"difficulty": k})``
draws from the rows of that label only, with their usual task ids. Sets without
labels (AIME24, AMC23) have one fixed difficulty.
"""

from __future__ import annotations

import re
from typing import Any

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.core.task import Task
from rollgym.envs.math.datasets import MathDataset

_LEVEL_TEXT = re.compile(r"^\s*(?:level\s*)?(\d+)\s*$", re.IGNORECASE)


def level_number(value: Any) -> int | None:
    """A row's level label as an int (``3`` and ``"Level 3"`` both give 3), or ``None`` when it has none."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        match = _LEVEL_TEXT.match(value)
        if match:
            return int(match.group(1))
    return None


def rows_by_level(dataset: MathDataset, split: str) -> dict[int, list[int]]:
    """The row indices of each level label in ``split``, labels ascending (empty for an unlabelled set)."""
    found: dict[int, list[int]] = {}
    for index in range(dataset.size(split)):
        number = level_number(dataset.task(index, split).meta.get("level"))
        if number is not None:
            found.setdefault(number, []).append(index)
    return dict(sorted(found.items()))


def math_difficulty(dataset: MathDataset, split: str) -> Difficulty | None:
    """One level per label of the set (``None`` for a set without labels); the default mixes them all."""
    labels = rows_by_level(dataset, split)
    if not labels:
        return None
    levels = tuple(Level(f"level-{n}", {"level": n}, f"the {len(rows)} problems labelled level {n}")
                   for n, rows in labels.items())
    return Difficulty(levels, default=None, grows="the data set's own level label (MATH: 1 to 5)")


class LevelSubset:
    """The rows of one level label of a :class:`MathDataset`, as a task source (same tasks, same ids).

    Example:
        >>> subset = LevelSubset(MathDataset(MATH500), "test", 5)  # doctest: +SKIP
        >>> subset.size("test"), subset.task(0).meta["level"]  # doctest: +SKIP
        (134, 5)
    """

    family = "math"

    def __init__(self, dataset: MathDataset, split: str, level: int) -> None:
        self.dataset = dataset
        self.level = level
        self.split = split
        self.indices = rows_by_level(dataset, split).get(level, [])
        if not self.indices:
            raise ConfigError(f"{dataset.spec.name} has no problem labelled level {level}.")

    def size(self, split: str) -> int:
        """The number of rows of this level (the set's only split)."""
        self.dataset.size(split)  # the set's own error for a split it does not have
        return len(self.indices)

    def task(self, index: int, split: str = "test") -> Task:
        """The ``index``-th row of this level."""
        self.dataset.size(split)
        if not 0 <= index < len(self.indices):
            raise ConfigError(f"task_index must be below {len(self.indices)}, got {index}.")
        return self.dataset.task(self.indices[index], split)

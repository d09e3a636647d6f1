"""Drawing one generated task: seeded attempts until an instance fits the split.

A generated task is a template's instance drawn with a fresh generator per attempt. An attempt
that finds no fitting instance (``None``: the world offers none, or a constant answer would solve
it) is drawn again, and so is one whose content belongs to another split: ``train``,
``validation`` and ``test`` share the worlds and are disjoint by a hash of the instance's content
(:func:`rollgym.core.seeding.split_of_key`); held-out worlds (``test_unseen``) pass ``key=None``.

Example:
    >>> from rollgym.core.seeding import task_rng
    >>> value = draw_instance(lambda attempt: task_rng("Doc", "test", 0, attempt), lambda rng: int(rng.integers(1000)),
    ...                       split="test", key=str, max_attempts=100, failure="none found")
    >>> value == draw_instance(lambda attempt: task_rng("Doc", "test", 0, attempt),
    ...                        lambda rng: int(rng.integers(1000)), split="test", key=str, max_attempts=100,
    ...                        failure="none found")
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.core.seeding import split_of_key

T = TypeVar("T")


def draw_instance(rng_of: Callable[[int], np.random.Generator], candidate: Callable[[np.random.Generator], T | None],
                  *, split: str, key: Callable[[T], str] | None, max_attempts: int, failure: str) -> T:
    """The first attempt's instance that exists and falls in ``split``.

    Args:
        rng_of: The generator of attempt ``i`` (each family seeds its own stream).
        candidate: Draws an instance from a generator, or ``None`` when there is none to draw.
        split: The split the task belongs to.
        key: The instance's content key, whose hash decides its split; ``None`` accepts any instance
            (a held-out world's split).
        max_attempts: Attempts before giving up.
        failure: The one-sentence error raised (a :class:`~rollgym.core.errors.ConfigError`) when no attempt fits.
    """
    for attempt in range(max_attempts):
        value = candidate(rng_of(attempt))
        if value is None:
            continue
        if key is not None and split_of_key(key(value)) != split:
            continue
        return value
    raise ConfigError(failure)


__all__ = ["draw_instance"]

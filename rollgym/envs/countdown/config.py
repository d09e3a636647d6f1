"""``CountdownConfig``: the options of a Countdown task generator, validated on construction."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rollgym.core.config import check_int
from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.verifiers.countdown import OPERATORS, USAGES

MIN_NUMBERS = 2
MAX_NUMBERS = 8
MAX_VALUE = 1_000_000
MAX_TARGET = 10**9
_USAGE_ALIASES = {"exactly": "exactly", "at_most": "at_most", "at most": "at_most", "at-most": "at_most"}


@dataclass(frozen=True)
class CountdownConfig:
    """How Countdown tasks are drawn.

    Attributes:
        num_numbers: How many numbers are offered (2 to 8; 4 by default).
        min_value: Smallest number that may be offered (at least 1).
        max_value: Largest number that may be offered.
        min_target: Smallest target (at least 1).
        max_target: Largest target.
        operators: The allowed subset of ``+ - * /``, as a tuple or a string such as ``"+-*"``.
        usage: ``"exactly"`` (each number used exactly once; default) or ``"at_most"``
            (each number used at most once; ``"at most"`` is accepted too).

    Raises:
        ConfigError: naming the field and its allowed values when one is invalid.

    Example:
        >>> CountdownConfig(num_numbers=5, operators="+*", usage="at most").operators
        ('+', '*')
    """

    num_numbers: int = 4
    min_value: int = 1
    max_value: int = 100
    min_target: int = 100
    max_target: int = 999
    operators: tuple[str, ...] = OPERATORS
    usage: str = "exactly"

    def __post_init__(self) -> None:
        check_int("num_numbers", self.num_numbers, MIN_NUMBERS, MAX_NUMBERS)
        check_int("min_value", self.min_value, 1, MAX_VALUE)
        check_int("max_value", self.max_value, self.min_value, MAX_VALUE, low_name="min_value")
        check_int("min_target", self.min_target, 1, MAX_TARGET)
        check_int("max_target", self.max_target, self.min_target, MAX_TARGET, low_name="min_target")
        object.__setattr__(self, "operators", normalise_operators(self.operators))
        object.__setattr__(self, "usage", normalise_usage(self.usage))


def normalise_usage(usage: Any) -> str:
    """``"exactly"`` or ``"at_most"`` from any accepted spelling; :class:`ConfigError` otherwise."""
    canonical = _USAGE_ALIASES.get(usage) if isinstance(usage, str) else None
    if canonical is None:
        raise ConfigError(f"usage must be one of {', '.join(repr(u) for u in USAGES)}, got {usage!r}.")
    return canonical


def normalise_operators(operators: Any) -> tuple[str, ...]:
    """The chosen operators in the order ``+ - * /``, from a string or an iterable; :class:`ConfigError` otherwise."""
    if isinstance(operators, str):
        operators = [ch for ch in operators if ch not in " ,"]
    if not isinstance(operators, Iterable):
        raise ConfigError(f"operators must be a subset of + - * /, such as '+-*' or ('+', '*'), got {operators!r}.")
    chosen = list(operators)
    unknown = [op for op in chosen if op not in OPERATORS]
    if unknown or not chosen:
        raise ConfigError(f"operators must be a non-empty subset of + - * /, got {operators!r}.")
    return tuple(op for op in OPERATORS if op in chosen)


def _level(name: str, n: int, values: tuple[int, int], targets: tuple[int, int]) -> Level:
    knobs = {"num_numbers": n, "min_value": values[0], "max_value": values[1],
             "min_target": targets[0], "max_target": targets[1]}
    summary = f"{n} numbers from {values[0]}-{values[1]}, target {targets[0]}-{targets[1]}"
    return Level(name, knobs, summary)


#: Countdown's difficulty levels, easiest first: one more number (each used exactly once) per level, then a
#: four-digit target. Level 2 is ``Countdown-v0``'s default configuration.
LEVELS: tuple[Level, ...] = (
    _level("n2", 2, (1, 20), (10, 99)),
    _level("n3", 3, (1, 25), (10, 250)),
    _level("n4", 4, (1, 100), (100, 999)),
    _level("n5", 5, (1, 100), (100, 999)),
    _level("n6", 6, (1, 100), (100, 999)),
    _level("n6-big", 6, (1, 100), (1000, 9999)),
)


def countdown_difficulty(config: CountdownConfig) -> Difficulty:
    """Countdown's ladder; ``default`` is the level whose knobs equal ``config``'s (level 2 for ``Countdown-v0``)."""
    default = next((i for i, level in enumerate(LEVELS)
                    if all(getattr(config, k) == v for k, v in level.knobs.items())), None)
    return Difficulty(LEVELS, default=default,
                      grows="the exact solver's search states to the first solution (more numbers, wider ranges)")

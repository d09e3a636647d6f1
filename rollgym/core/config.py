"""One style for env options: frozen config dataclasses that check themselves with these validators.

Every env with options keeps them in a frozen dataclass (``CountdownConfig`` is
the model) whose ``__post_init__`` calls the ``check_*`` functions below, so a
bad value fails at construction with one :class:`~rollgym.core.errors.ConfigError`
sentence that names the field, the bound or the valid choices, and the value
given. :func:`check_known` does the same for unknown keyword arguments, with a
"did you mean" from :mod:`difflib`.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class BoardConfig:
    ...     size: int = 11
    ...     rule: str = "classic"
    ...     def __post_init__(self) -> None:
    ...         check_int("size", self.size, 5, 19)
    ...         check_choice("rule", self.rule, ("classic", "swap"))
    >>> BoardConfig(size=4)
    Traceback (most recent call last):
    ...
    rollgym.core.errors.ConfigError: size must be between 5 and 19, got 4.
    >>> BoardConfig(rule="swp")
    Traceback (most recent call last):
    ...
    rollgym.core.errors.ConfigError: rule must be one of 'classic', 'swap', got 'swp'; did you mean 'swap'?
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from rollgym.core.errors import ConfigError

T = TypeVar("T")


def did_you_mean(value: object, options: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest option to ``value``, or ``""`` when none is close."""
    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, list(options), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def check_int(name: str, value: Any, low: int | None = None, high: int | None = None, *,
              low_name: str | None = None, high_name: str | None = None, allow_none: bool = False) -> Any:
    """``value`` if it is an integer (not a bool) within ``[low, high]``; else a :class:`ConfigError`.

    ``low_name``/``high_name`` name the field a bound comes from (``"min_value (1)"``).
    With ``allow_none``, ``None`` passes.
    """
    if value is None and allow_none:
        return value
    if not isinstance(value, int) or isinstance(value, bool):
        suffix = " or None" if allow_none else ""
        raise ConfigError(f"{name} must be an integer{suffix}, got {value!r}.")
    _check_bounds(name, value, low, high, low_name, high_name)
    return value


def check_number(name: str, value: Any, low: float | None = None, high: float | None = None, *,
                 low_name: str | None = None, high_name: str | None = None, allow_none: bool = False) -> Any:
    """``value`` as a float if it is a finite real number within ``[low, high]``; else a :class:`ConfigError`."""
    if value is None and allow_none:
        return value
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        suffix = " or None" if allow_none else ""
        raise ConfigError(f"{name} must be a finite number{suffix}, got {value!r}.")
    _check_bounds(name, value, low, high, low_name, high_name)
    return float(value)


def _check_bounds(name: str, value: float, low: float | None, high: float | None, low_name: str | None,
                  high_name: str | None) -> None:
    lower = f"{low_name} ({low})" if low_name else str(low)
    upper = f"{high_name} ({high})" if high_name else str(high)
    if low is not None and high is not None and not low <= value <= high:
        raise ConfigError(f"{name} must be between {lower} and {upper}, got {value}.")
    if low is not None and high is None and value < low:
        raise ConfigError(f"{name} must be at least {lower}, got {value}.")
    if high is not None and low is None and value > high:
        raise ConfigError(f"{name} must be at most {upper}, got {value}.")


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is ``True`` or ``False``; else a :class:`ConfigError` (``1`` and ``"yes"`` are refused)."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be True or False, got {value!r}.")
    return value


def check_choice(name: str, value: Any, choices: Collection[T], *, allow_none: bool = False) -> T:
    """``value`` if it is one of ``choices``; else a :class:`ConfigError` listing them (and the closest one)."""
    if value is None and allow_none:
        return value  # type: ignore[return-value]
    try:
        ok = value in choices
    except TypeError:  # an unhashable value against a set
        ok = False
    if not ok:
        listed = ", ".join(repr(c) for c in choices) + (" or None" if allow_none else "")
        hint = did_you_mean(value, [c for c in choices if isinstance(c, str)])
        raise ConfigError(f"{name} must be one of {listed}, got {value!r}{hint or '.'}")
    return value  # type: ignore[no-any-return]


def check_subset(name: str, values: Any, choices: Sequence[str], *, allow_empty: bool = False) -> tuple[str, ...]:
    """``values`` as a tuple if it is a list or tuple of distinct ``choices``; else a :class:`ConfigError`."""
    if isinstance(values, str) or not isinstance(values, (list, tuple)):
        raise ConfigError(f"{name} must be a list drawn from {', '.join(map(repr, choices))}, got {values!r}.")
    unknown = [v for v in values if v not in choices]
    if unknown:
        hint = did_you_mean(unknown[0], choices)
        raise ConfigError(f"{name} may only hold {', '.join(map(repr, choices))}, got {unknown[0]!r}{hint or '.'}")
    if len(set(values)) != len(values):
        raise ConfigError(f"{name} must not repeat an entry, got {list(values)!r}.")
    if not values and not allow_empty:
        raise ConfigError(f"{name} must name at least one of {', '.join(map(repr, choices))}.")
    return tuple(values)


def check_known(owner: str, given: Mapping[str, Any] | Iterable[str], valid: Iterable[str]) -> None:
    """Raise a :class:`ConfigError` for the first name in ``given`` that is not in ``valid``.

    Example (the message goes on to list the options):
        >>> check_known("Countdown-v0", {"num_number": 5}, ["num_numbers", "usage"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rollgym.core.errors.ConfigError: Countdown-v0 has no option 'num_number'; did you mean 'num_numbers'? ...
    """
    options = sorted(set(valid))
    for key in given:
        if key not in options:
            hint = did_you_mean(key, options) or "."
            listed = ", ".join(options) if options else "none"
            raise ConfigError(f"{owner} has no option {key!r}{hint} Its options are {listed}.")

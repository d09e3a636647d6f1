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

import dataclasses
import difflib
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from rollgym.core.errors import ConfigError

T = TypeVar("T")
C = TypeVar("C")


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
                 low_name: str | None = None, high_name: str | None = None, allow_none: bool = False,
                 above: float | None = None, below: float | None = None) -> Any:
    """``value`` as a float if it is a finite real number within ``[low, high]``; else a :class:`ConfigError`.

    ``above``/``below`` are exclusive bounds, used in place of ``low``/``high``: ``above=0`` for a
    positive number, ``low=0, below=1`` for ``[0, 1)``.

    Example:
        >>> check_number("rae_decay", 1.0, 0, below=1)
        Traceback (most recent call last):
        ...
        rollgym.core.errors.ConfigError: rae_decay must be in [0, 1), got 1.0.
        >>> check_number("temperature", 0, above=0)
        Traceback (most recent call last):
        ...
        rollgym.core.errors.ConfigError: temperature must be above 0, got 0.
    """
    if value is None and allow_none:
        return value
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        suffix = " or None" if allow_none else ""
        raise ConfigError(f"{name} must be a finite number{suffix}, got {value!r}.")
    if above is None and below is None:
        _check_bounds(name, value, low, high, low_name, high_name)
        return float(value)
    lower = above if above is not None else low
    upper = below if below is not None else high
    if ((above is not None and not value > above) or (low is not None and value < low)
            or (below is not None and not value < below) or (high is not None and value > high)):
        if lower is None:
            raise ConfigError(f"{name} must be below {upper}, got {value}.")
        if upper is None:
            raise ConfigError(f"{name} must be above {lower}, got {value}.")
        left, right = "(" if above is not None else "[", ")" if below is not None else "]"
        raise ConfigError(f"{name} must be in {left}{lower}, {upper}{right}, got {value}.")
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


def field_names(cls: type) -> frozenset[str]:
    """The names a config dataclass takes on construction (an env's ``config_options`` are built from them).

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class RunConfig:
        ...     steps: int = 1
        >>> sorted(field_names(RunConfig))
        ['steps']
    """
    return frozenset(f.name for f in dataclasses.fields(cls) if f.init)


def configure(owner: str, cls: type[C], config: C | None = None, overrides: Mapping[str, Any] | None = None) -> C:
    """``config`` (or a fresh ``cls``) with ``overrides`` put on its fields: how a callee takes a config object,
    keyword arguments, or both.

    An override that is not a field fails as :func:`check_known` does; a required field left out, or a
    ``config`` of another type, fails in one sentence; the values are checked by ``cls`` itself.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class RunConfig:
        ...     steps: int
        ...     seed: int = 0
        ...     def __post_init__(self) -> None:
        ...         check_int("steps", self.steps, 1)
        >>> configure("run", RunConfig, overrides={"steps": 2})
        RunConfig(steps=2, seed=0)
        >>> configure("run", RunConfig, RunConfig(steps=2), {"seed": 1})
        RunConfig(steps=2, seed=1)
        >>> configure("run", RunConfig, overrides={"seed": 1})
        Traceback (most recent call last):
        ...
        rollgym.core.errors.ConfigError: run needs steps.
    """
    overrides = dict(overrides or {})
    fields = [f for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
    check_known(owner, overrides, [f.name for f in fields])
    if config is None:
        missing = [f.name for f in fields if f.name not in overrides
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ConfigError(f"{owner} needs {', '.join(missing)}.")
        return cls(**overrides)
    if not isinstance(config, cls):
        raise ConfigError(f"{owner} takes a {cls.__name__} as its config, got {type(config).__name__}.")
    return dataclasses.replace(config, **overrides) if overrides else config  # type: ignore[type-var]

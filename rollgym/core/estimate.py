"""``Estimate``: one measured number with its interval, the one type every report uses.

An estimate is a point ``value`` with an interval ``[low, high]`` around it, the
number of values ``n`` it came from (when known) and the ``method`` that made the
interval: ``"t"`` (a Student's t interval of a mean, symmetric: ``value ± half_width``,
see :func:`rollgym.train.stats.estimate`), ``"wilson"`` (a binomial proportion),
``"bootstrap"`` (a percentile bootstrap of a mean) or ``"bootstrap+wilson"`` (both,
for per-task values in [0, 1]; see :mod:`rollgym.benchmarks.metrics`).

Each method keeps the JSON shape its results files have always had (see :meth:`Estimate.to_dict`):
a t interval writes ``mean``, ``half_width``, ``n``, ``low``, ``high``; the others write
``value``, ``low``, ``high``. ``mean`` and ``half_width`` read as attributes on every estimate.

Example:
    >>> e = Estimate.symmetric(0.5, 0.125, 8)
    >>> e.low, e.high, e.mean, e.half_width
    (0.375, 0.625, 0.5, 0.125)
    >>> Estimate(0.8, 0.49, 0.94, n=10, method="wilson").format(percent=True)
    '80.0% [49.0, 94.0]'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: The interval methods an :class:`Estimate` names.
METHODS = ("t", "wilson", "bootstrap", "bootstrap+wilson", "interval")


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its confidence interval.

    Attributes:
        value: The point estimate (a mean, a proportion).
        low: The interval's lower end.
        high: The interval's upper end.
        n: How many values it came from, when known.
        method: How the interval was made (one of :data:`METHODS`; ``"interval"``: not said).
        margin: For a symmetric interval (``"t"``), its exact half-width (``low`` and ``high`` are
            ``value -/+ margin``); ``None`` for the others. Build one with :meth:`symmetric`.
    """

    value: float
    low: float
    high: float
    n: int | None = None
    method: str = "interval"
    margin: float | None = None

    @classmethod
    def symmetric(cls, value: float, half_width: float, n: int, method: str = "t") -> Estimate:
        """``value ± half_width`` over ``n`` values (a t interval unless ``method`` says otherwise).

        Example:
            >>> Estimate.symmetric(2.0, 1.5, 3).format(signed=True)
            '+2.000 ± 1.500'
        """
        return cls(value, value - half_width, value + half_width, n, method, half_width)

    @property
    def mean(self) -> float:
        """The point value (the name the t-interval results files use)."""
        return self.value

    @property
    def half_width(self) -> float:
        """Half the interval's width: the exact margin of a symmetric interval, else ``(high - low) / 2``."""
        if self.margin is not None:
            return self.margin
        return (self.high - self.low) / 2

    def verdict(self, higher: str = "higher", lower: str = "lower") -> str:
        """For a difference: ``higher``/``lower`` when the interval excludes 0, else ``"no detectable difference"``.

        Example:
            >>> Estimate.symmetric(0.2, 0.1, 5).verdict()
            'higher'
        """
        if (self.n is not None and self.n < 2) or not math.isfinite(self.half_width):
            return "too few seeds"
        if self.low > 0:
            return higher
        if self.high < 0:
            return lower
        return "no detectable difference"

    def format(self, digits: int = 3, *, percent: bool = False, signed: bool = False) -> str:
        """``"+0.123 ± 0.045"`` for a symmetric interval, else ``"0.800 [0.490, 0.943]"`` (``percent``: in %)."""
        if self.margin is not None:
            sign = "+" if signed else ""
            return f"{self.value:{sign}.{digits}f} ± {self.margin:.{digits}f}"
        if math.isnan(self.value):
            return "n/a"
        if percent:
            return f"{100 * self.value:.1f}% [{100 * self.low:.1f}, {100 * self.high:.1f}]"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, in the shape each method's results files use.

        A symmetric interval: ``{"mean", "half_width", "n", "low", "high"}`` (an infinite or undefined
        half-width, and so its ends, become ``None``); any other: ``{"value", "low", "high"}``.

        Example:
            >>> Estimate(1.0, 0.5, 1.0, method="bootstrap").to_dict()
            {'value': 1.0, 'low': 0.5, 'high': 1.0}
        """
        if self.margin is None:
            return {"value": self.value, "low": self.low, "high": self.high}
        finite = math.isfinite(self.margin)
        return {"mean": self.value, "half_width": self.margin if finite else None, "n": self.n,
                "low": self.low if finite else None, "high": self.high if finite else None}

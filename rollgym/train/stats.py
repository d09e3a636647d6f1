"""Paired statistics for experiments: means, paired differences and their 95% t intervals.

With ``n`` paired seeds the interval of a mean difference is
``mean(d) +/- t_{0.975, n-1} * sd(d) / sqrt(n)`` (Student's t, two-sided 95%).
A difference is *detected* only when that interval excludes 0; otherwise the
honest reading is "no detectable difference" at this number of seeds.

The power statement of a paired comparison is its minimum detectable effect (MDE):
the true mean difference that a two-sided paired t test at alpha 0.05 detects with
80% probability, ``(t_{0.975, n-1} + t_{0.8, n-1}) * sd(d) / sqrt(n)``, with the
observed ``sd(d)`` of the paired differences standing in for the true one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rollgym.core.estimate import Estimate

# two-sided 95% quantiles of Student's t for 1..30 degrees of freedom
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


# one-sided 80% quantiles of Student's t for 1..30 degrees of freedom (the power term of the MDE)
_T80 = (1.376, 1.061, 0.978, 0.941, 0.920, 0.906, 0.896, 0.889, 0.883, 0.879, 0.876, 0.873, 0.870, 0.868, 0.866,
        0.865, 0.863, 0.862, 0.861, 0.860, 0.859, 0.858, 0.858, 0.857, 0.856, 0.856, 0.855, 0.855, 0.854, 0.854)


def _t_quantile(df: int, table: tuple[float, ...], z: float) -> float:
    """Student's t quantile: from ``table`` (1..30 degrees of freedom), beyond it the normal quantile ``z``
    with two terms of its series in 1/df; infinite below 1 degree of freedom."""
    if df < 1:
        return math.inf
    if df <= len(table):
        return table[df - 1]
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (table to 30, then a series to 1.96).

    Example:
        >>> t_quantile_975(4)
        2.776
    """
    return _t_quantile(df, _T975, 1.959964)


def t_quantile_80(df: int) -> float:
    """The 0.8 quantile of Student's t with ``df`` degrees of freedom (table to 30, then a series to 0.8416).

    Example:
        >>> t_quantile_80(4)
        0.941
    """
    return _t_quantile(df, _T80, 0.841621)


def minimum_detectable_effect(differences: Sequence[float]) -> float:
    """The paired difference detected with 80% power at two-sided alpha 0.05 over these paired seeds.

    ``(t_{0.975, n-1} + t_{0.8, n-1}) * sd(d) / sqrt(n)``; infinite below 2 seeds.

    Example:
        >>> round(minimum_detectable_effect([0.1, 0.3, 0.2, 0.4, 0.5]), 3)
        0.263
    """
    n = len(differences)
    if n < 2:
        return math.inf
    mean = sum(differences) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / (n - 1))
    return (t_quantile_975(n - 1) + t_quantile_80(n - 1)) * sd / math.sqrt(n)


def estimate(values: Sequence[float]) -> Estimate:
    """Mean and 95% t interval of ``values``, as a symmetric :class:`~rollgym.core.estimate.Estimate`.

    Example:
        >>> e = estimate([1.0, 2.0, 3.0])
        >>> round(e.mean, 3), round(e.half_width, 3)
        (2.0, 2.484)
    """
    n = len(values)
    if n == 0:
        return Estimate.symmetric(math.nan, math.nan, 0)
    mean = sum(values) / n
    if n < 2:
        return Estimate.symmetric(mean, math.inf, n)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return Estimate.symmetric(mean, t_quantile_975(n - 1) * sd / math.sqrt(n), n)


def paired(a: Sequence[float], b: Sequence[float]) -> Estimate:
    """The mean paired difference ``a - b`` and its 95% interval (``a`` and ``b`` aligned by seed)."""
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}.")
    return estimate([x - y for x, y in zip(a, b)])

"""Compare two result bundles entry by entry, with significance.

When both bundles played the same tasks (same task ids, in order) the difference in
accuracy is tested with a *paired* bootstrap over tasks (each task's fraction of
solved samples in A minus in B, resampled together), which is much more sensitive
than an unpaired test; otherwise with a two-proportion z-test on the episode counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from rollgym.bundles.format import Bundle, open_bundle
from rollgym.rollout import load_results

N_RESAMPLES = 10_000


@dataclass(frozen=True)
class EntryComparison:
    """One entry's accuracy in A and B, their difference with a 95% interval, and a two-sided p-value."""

    entry: str
    accuracy_a: float
    accuracy_b: float
    difference: float
    low: float
    high: float
    p_value: float
    test: str
    tasks: int

    @property
    def significant(self) -> bool:
        """Whether the difference is significant at the 5% level."""
        return self.p_value < 0.05


def two_proportion_test(correct_a: int, n_a: int, correct_b: int, n_b: int) -> tuple[float, float, float]:
    """Difference of two proportions with a 95% Wald interval and the pooled z-test's two-sided p-value.

    Example:
        >>> diff, p = two_proportion_test(90, 100, 50, 100)[0], two_proportion_test(90, 100, 50, 100)[2]
        >>> round(diff, 2), p < 0.001
        (0.4, True)
    """
    pa, pb = correct_a / n_a, correct_b / n_b
    diff = pa - pb
    se = math.sqrt(pa * (1 - pa) / n_a + pb * (1 - pb) / n_b)
    pooled = (correct_a + correct_b) / (n_a + n_b)
    se0 = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    p_value = 1.0 if se0 == 0 else 2 * (1 - NormalDist().cdf(abs(diff) / se0))
    return diff, 1.96 * se, p_value


def paired_bootstrap(
    per_task_a: list[float], per_task_b: list[float], seed: int = 0
) -> tuple[float, float, float, float]:
    """Mean paired difference, its 95% percentile interval, and a two-sided bootstrap p-value.

    The p-value is twice the smaller share of resampled mean differences on either side of 0.
    """
    diffs = np.asarray(per_task_a, dtype=float) - np.asarray(per_task_b, dtype=float)
    mean = float(diffs.mean())
    if np.all(diffs == 0):
        return 0.0, 0.0, 0.0, 1.0
    rng = np.random.default_rng(seed)
    means = diffs[rng.integers(0, diffs.size, size=(N_RESAMPLES, diffs.size))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    p_value = min(1.0, 2 * min(float(np.mean(means <= 0)), float(np.mean(means >= 0))))
    return mean, float(low), float(high), p_value


def _per_task(bundle: Bundle, entry: str) -> tuple[list[str], list[float], int, int]:
    groups = load_results(bundle.results_file(entry)).groups()
    ids = [g.task.id if g.task else "" for g in groups]
    fractions = [sum(t.correct for t in g.trajectories) / len(g.trajectories) for g in groups if g.trajectories]
    correct = sum(t.correct for g in groups for t in g.trajectories)
    total = sum(len(g.trajectories) for g in groups)
    return ids, fractions, correct, total


def compare_bundles(path_a: Any, path_b: Any) -> list[EntryComparison]:
    """Compare the entries two bundles share; see the module docstring for the tests used."""
    with open_bundle(path_a) as a, open_bundle(path_b) as b:
        names_a = [e["name"] for e in a.manifest.get("entries", [])]
        names_b = {e["name"] for e in b.manifest.get("entries", [])}
        rows = []
        for name in names_a:
            if name not in names_b:
                continue
            ids_a, frac_a, correct_a, n_a = _per_task(a, name)
            ids_b, frac_b, correct_b, n_b = _per_task(b, name)
            if not n_a or not n_b:
                continue
            acc_a, acc_b = correct_a / n_a, correct_b / n_b
            if ids_a == ids_b and len(frac_a) == len(frac_b):
                diff, low, high, p = paired_bootstrap(frac_a, frac_b)
                test = "paired bootstrap"
            else:
                diff, half, p = two_proportion_test(correct_a, n_a, correct_b, n_b)
                low, high = diff - half, diff + half
                test = "two-proportion z"
            rows.append(EntryComparison(name, acc_a, acc_b, acc_a - acc_b, low, high, p, test, len(frac_a)))
        return rows

"""Evaluation metrics: pass@k, pass^k, Wilson intervals, bootstrap intervals, and a run summary.

Intervals come back as :class:`~rollgym.core.estimate.Estimate` (re-exported here).

All functions are pure. Random resampling takes a seed and uses its own
:class:`numpy.random.Generator`, never global random state, so a summary is the
same on every run.

Conventions of :func:`summarize`: every rollout counts. A failed or aborted
rollout counts as *not solved* in accuracy and pass@k, and in the mean reward as
``abandoned_reward`` (0 by default; a benchmark entry passes its env's lowest
reward, e.g. -2 chips in Kuhn poker), and so does a rollout cut off by a step cap
before the env gave its verdict (see :func:`counted_reward`): abandoning a losing
episode never scores better than losing it. The ``failures`` and ``truncated``
counts report them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from statistics import NormalDist
from typing import Any

import numpy as np

from rollgym.core.estimate import Estimate


def _check_counts(n: int, c: int, k: int) -> None:
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (n, c, k)):
        raise ValueError(f"n, c and k must be integers, got n={n!r}, c={c!r}, k={k!r}.")
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"Need n >= 1 and 0 <= c <= n, got n={n}, c={c}.")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n={n}, got k={k}.")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: the chance that at least one of k samples (drawn without replacement from n,
    of which c are correct) is correct, ``1 - C(n-c, k) / C(n, k)``.

    Computed as ``1 - prod_{i=n-c+1}^{n} (1 - k/i)``, which never forms large
    binomials (Chen et al., 2021).

    Example:
        >>> pass_at_k(4, 1, 1)
        0.25
        >>> pass_at_k(4, 1, 4)
        1.0
        >>> round(pass_at_k(5, 2, 2), 4)  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        0.7
    """
    _check_counts(n, c, k)
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that all of k samples drawn without replacement are correct, ``C(c, k) / C(n, k)``.

    Computed as ``prod_{i=0}^{k-1} (c - i) / (n - i)``.

    Example:
        >>> pass_hat_k(4, 2, 2)  # C(2,2)/C(4,2) = 1/6
        0.16666666666666666
    """
    _check_counts(n, c, k)
    if c < k:
        return 0.0
    product = 1.0
    for i in range(k):
        product *= (c - i) / (n - i)
    return product


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}.")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion ``successes / n``.

    Unlike the normal approximation it stays inside [0, 1] and is sensible at 0 or n successes.
    With ``n == 0`` it returns ``(0.0, 1.0)``: nothing is known.

    Example:
        >>> low, high = wilson_interval(8, 10)
        >>> round(low, 4), round(high, 4)
        (0.4902, 0.9433)
    """
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"Need 0 <= successes <= n, got successes={successes}, n={n}.")
    if n == 0:
        return 0.0, 1.0
    return _wilson(successes / n, n, _z(confidence))


def _wilson(p: float, n: int, z: float) -> tuple[float, float]:
    """The Wilson score interval around the proportion ``p`` observed over ``n`` trials."""
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if p <= 0.0 else max(0.0, centre - half)
    high = 1.0 if p >= 1.0 else min(1.0, centre + half)
    return low, high


def bootstrap_interval(values: Sequence[float] | np.ndarray, confidence: float = 0.95, n_resamples: int = 10_000,
                       seed: int = 0) -> tuple[float, float]:
    """A percentile bootstrap interval for the mean of ``values``.

    Resamples with replacement using ``numpy.random.default_rng(seed)``, so the
    same inputs give the same interval. An empty input gives ``(nan, nan)``;
    a single value gives a zero-width interval at that value.

    Example:
        >>> bootstrap_interval([1.0, 1.0, 1.0])
        (1.0, 1.0)
    """
    data = np.asarray(values, dtype=float)
    _z(confidence)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}.")
    if data.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    chunk = max(1, 2_000_000 // data.size)  # bounds memory for large inputs
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        picks = rng.integers(0, data.size, size=(stop - start, data.size))
        means[start:stop] = data[picks].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    mean = float(data.mean())
    return min(float(low), mean), max(float(high), mean)


def unit_interval(values: Sequence[float] | np.ndarray, confidence: float = 0.95, n_resamples: int = 10_000,
                  seed: int = 0) -> tuple[float, float]:
    """An interval for the mean of per-task values in [0, 1] (pass@k, pass^k).

    The percentile bootstrap collapses to zero width when every task has the same
    value (all solved, or none), which would claim certainty from a finite sample.
    The interval returned covers both the bootstrap interval and the Wilson score
    interval of the mean over ``len(values)`` tasks.

    Example:
        >>> low, high = unit_interval([1.0] * 100)
        >>> round(low, 3), high
        (0.963, 1.0)
    """
    data = np.clip(np.asarray(values, dtype=float), 0.0, 1.0)
    low, high = bootstrap_interval(data, confidence, n_resamples, seed)
    if data.size == 0:
        return low, high
    wilson_low, wilson_high = _wilson(float(data.mean()), int(data.size), _z(confidence))
    return min(low, wilson_low), max(high, wilson_high)


def expected_best_of_k(rewards: Sequence[float], k: int) -> float:
    """The expected maximum reward of k samples drawn without replacement from ``rewards``.

    With rewards sorted ``r(1) <= ... <= r(n)`` this is
    ``sum_{i=k}^{n} C(i-1, k-1) / C(n, k) * r(i)``; for 0/1 rewards it equals pass@k.

    Example:
        >>> round(expected_best_of_k([0.0, 0.5, 1.0], 2), 4)  # pairs: max 0.5, 1, 1
        0.8333
    """
    ordered = sorted(float(r) for r in rewards)
    n = len(ordered)
    _check_counts(n, 0, k)
    total = 0.0
    weight = 1.0 / math.comb(n, k)
    for i in range(k, n + 1):
        total += math.comb(i - 1, k - 1) * weight * ordered[i - 1]
    return total


@dataclass(frozen=True)
class Summary:
    """What an evaluation run measured.

    Attributes:
        episodes: Rollouts counted (failed ones included).
        tasks: Groups counted.
        correct: Rollouts that solved their task.
        failures: Rollouts with status ``failed`` or ``aborted``.
        truncated: Rollouts cut off by a step or token cap.
        accuracy: Fraction correct with a Wilson interval.
        mean_reward: Mean reward over every rollout (an abandoned one counted as a loss, see
            :func:`counted_reward`) with a bootstrap interval.
        pass_at_k: ``{k: Estimate}`` for k = 1 .. the smallest group size, with a
            bootstrap interval over tasks.
    """

    episodes: int
    tasks: int
    correct: int
    failures: int
    truncated: int
    accuracy: Estimate
    mean_reward: Estimate
    pass_at_k: dict[int, Estimate]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict: the fields in order, each interval as :meth:`Estimate.to_dict` writes it."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out.update(accuracy=self.accuracy.to_dict(), mean_reward=self.mean_reward.to_dict(),
                   pass_at_k={str(k): e.to_dict() for k, e in self.pass_at_k.items()})
        return out


#: Statuses of rollouts that ended without a result (a crash, an abandoned episode).
ABANDONED_STATUSES = frozenset({"failed", "aborted"})


def counted_reward(trajectory: Any, abandoned_reward: float = 0.0) -> float:
    """The reward an aggregate counts for one rollout: its own when the env scored the episode, else
    ``abandoned_reward``.

    The env scored it when it ended ``completed``, or ``truncated`` by the env with its verdict in ``info``
    (the Score fields: e.g. a turn limit the env enforces). A failed or aborted rollout (no reward), and one
    cut off by the collector's step cap before any verdict, count as ``abandoned_reward`` (at most their own
    reward), so that leaving a losing episode unfinished never beats finishing it.

    Example:
        >>> from types import SimpleNamespace as T
        >>> counted_reward(T(reward=-1.0, status="completed", info={})), counted_reward(T(reward=None,
        ...     status="failed", info={}), -2.0), counted_reward(T(reward=0.0, status="truncated", info={}), -2.0)
        (-1.0, -2.0, -2.0)
    """
    reward = getattr(trajectory, "reward", None)
    status = getattr(trajectory, "status", "completed")
    if reward is None or status in ABANDONED_STATUSES:
        return float(abandoned_reward)
    info = getattr(trajectory, "info", None)
    if status == "truncated" and not (isinstance(info, dict) and "correct" in info):
        return min(float(reward), float(abandoned_reward))
    return float(reward)


def summarize(groups: Iterable[Any], confidence: float = 0.95, seed: int = 0, n_resamples: int = 10_000,
              abandoned_reward: float = 0.0) -> Summary:
    """Summarize rollout groups: accuracy, mean reward, pass@k, failures.

    ``groups`` are :class:`~rollgym.rollout.RolloutGroup` objects (anything with
    ``trajectories`` whose items have ``correct``, ``reward`` and ``status``). Every
    rollout counts in the mean reward (see :func:`counted_reward`); ``abandoned_reward``
    is what one without a result counts (the env's lowest reward for signed rewards).
    """
    groups = [g for g in groups if g.trajectories]
    trajectories = [t for g in groups for t in g.trajectories]
    correct = sum(1 for t in trajectories if t.correct)
    failures = sum(1 for t in trajectories if t.status in {"failed", "aborted"})
    truncated = sum(1 for t in trajectories if t.status == "truncated")
    n = len(trajectories)
    low, high = wilson_interval(correct, n, confidence)
    accuracy = Estimate(correct / n if n else math.nan, low, high, n, "wilson")
    rewards = [counted_reward(t, abandoned_reward) for t in trajectories]
    if rewards:
        mean_reward = Estimate(float(np.mean(rewards)), *bootstrap_interval(rewards, confidence, n_resamples, seed),
                               len(rewards), "bootstrap")
    else:
        mean_reward = Estimate(math.nan, math.nan, math.nan, 0, "bootstrap")
    pass_k: dict[int, Estimate] = {}
    if groups:
        smallest = min(len(g.trajectories) for g in groups)
        for k in range(1, smallest + 1):
            per_task = [pass_at_k(len(g.trajectories), sum(1 for t in g.trajectories if t.correct), k) for g in groups]
            pass_k[k] = Estimate(float(np.mean(per_task)), *unit_interval(per_task, confidence, n_resamples, seed),
                                 len(per_task), "bootstrap+wilson")
    return Summary(n, len(groups), correct, failures, truncated, accuracy, mean_reward, pass_k)

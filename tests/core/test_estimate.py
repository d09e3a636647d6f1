"""One ``Estimate`` for the training statistics and the benchmark metrics, with each one's JSON shape kept."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

from rollgym.benchmarks import metrics
from rollgym.core.estimate import Estimate
from rollgym.train import stats


def test_training_and_benchmark_estimates_are_one_type():
    assert stats.Estimate is metrics.Estimate is Estimate
    assert isinstance(stats.estimate([1.0, 2.0, 3.0]), Estimate)


def test_a_t_interval_writes_the_results_file_shape_it_always_had():
    e = stats.estimate([0.1, 0.3, 0.2, 0.4, 0.5])
    assert e.method == "t" and e.n == 5 and e.value == e.mean == 0.3
    assert list(e.to_dict()) == ["mean", "half_width", "n", "low", "high"]
    assert e.to_dict()["half_width"] == e.half_width == 2.776 * math.sqrt(0.025) / math.sqrt(5)
    assert (e.low, e.high) == (e.mean - e.half_width, e.mean + e.half_width)
    one = stats.estimate([0.7]).to_dict()
    assert one == {"mean": 0.7, "half_width": None, "n": 1, "low": None, "high": None}
    assert json.dumps(stats.estimate([]).to_dict())  # NaN mean, still JSON
    assert e.format(2) == "0.30 ± 0.20"


def test_a_summary_interval_writes_value_low_high_and_says_its_method():
    groups = [SimpleNamespace(trajectories=[SimpleNamespace(correct=c, reward=float(c), status="completed", info={})
                                            for c in (True, False)]) for _ in range(3)]
    summary = metrics.summarize(groups, n_resamples=200)
    assert summary.accuracy.method == "wilson" and summary.accuracy.n == 6
    assert summary.mean_reward.method == "bootstrap" and summary.pass_at_k[1].method == "bootstrap+wilson"
    written = summary.to_dict()
    assert list(written) == ["episodes", "tasks", "correct", "failures", "truncated", "accuracy", "mean_reward",
                             "pass_at_k"]
    assert (written["episodes"], written["correct"], list(written["pass_at_k"])) == (6, 3, ["1", "2"])
    assert list(written["accuracy"]) == ["value", "low", "high"]
    assert written["pass_at_k"]["2"] == summary.pass_at_k[2].to_dict()
    json.dumps(written)
    acc = summary.accuracy
    assert acc.half_width == (acc.high - acc.low) / 2 and acc.mean == acc.value == 0.5
    assert acc.format(percent=True).startswith("50.0% [")


def test_verdict_reads_a_difference_interval():
    assert stats.paired([1.0, 1.1, 1.2], [0.0, 0.1, 0.1]).verdict("up", "down") == "up"
    assert stats.paired([0.0, 0.1, 0.1], [1.0, 1.1, 1.2]).verdict("up", "down") == "down"
    assert stats.estimate([0.5]).verdict() == "too few seeds"

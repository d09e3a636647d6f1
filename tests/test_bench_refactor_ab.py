"""bench/bench_refactor_ab.py's arithmetic and pairing, from given timings (no clock is read here)."""

from __future__ import annotations

import importlib.util
import math
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def ab() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_refactor_ab", ROOT / "bench" / "bench_refactor_ab.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_refactor_ab", module)
    spec.loader.exec_module(module)
    return module


def test_paired_ratios_divide_each_new_time_by_its_own_old_time():
    assert ab().paired_ratios([2.0, 3.0, 1.0], [1.0, 3.0, 4.0]) == [2.0, 1.0, 0.25]


@pytest.mark.parametrize(("new", "old"), [([1.0], [1.0, 2.0]), ([], []), ([1.0, 0.0], [1.0, 1.0])])
def test_paired_ratios_refuse_unpaired_or_non_positive_timings(new: list[float], old: list[float]):
    with pytest.raises(ValueError):
        ab().paired_ratios(new, old)


def test_the_median_interval_of_six_pairs_is_their_range_with_its_exact_coverage():
    mod = ab()
    assert mod.median_interval([1.0, 1.1, 0.9, 1.05, 0.95, 1.02]) == (pytest.approx(1.01), 0.9, 1.1)
    # P(all 6 ratios on one side of the true median) = 2 / 2**6
    assert mod.median_coverage(6) == pytest.approx(1 - 2 / 64)


def test_the_median_interval_narrows_to_the_second_order_statistics_at_nine_pairs():
    mod = ab()
    ratios = [0.91, 0.97, 1.0, 1.01, 1.02, 1.03, 1.04, 1.08, 1.3]
    # k = 2 covers 1 - 2 (1 + 9) / 512 = 0.961 >= 0.95; k = 3 covers only 0.820
    assert mod.median_interval(ratios) == (1.02, 0.97, 1.08)
    assert mod.median_coverage(9) == pytest.approx(1 - 2 * 10 / 512)


def test_the_geometric_interval_is_a_paired_t_interval_on_the_log_ratios():
    ratios = [1.1, 1.2, 1.0]
    logs = [math.log(r) for r in ratios]
    mean, half = statistics.fmean(logs), 4.303 * statistics.stdev(logs) / math.sqrt(3)  # t(0.975, 2 df)
    geo, low, high = ab().geometric_interval(ratios)
    assert (geo, low, high) == pytest.approx((math.exp(mean), math.exp(mean - half), math.exp(mean + half)))
    assert low < geo < high


def test_one_pair_gives_a_ratio_but_no_interval():
    geo, low, high = ab().geometric_interval([1.25])
    assert geo == pytest.approx(1.25) and math.isnan(low) and math.isnan(high)


@pytest.mark.parametrize(("low", "high", "expected"), [(0.9, 1.1, "within"), (0.95, 1.2, "undecided"),
                                                       (1.11, 1.3, "slower")])
def test_the_verdict_reads_the_interval_against_ten_percent(low: float, high: float, expected: str):
    assert ab().verdict(low, high) == expected


def test_summarize_reports_medians_ratios_and_verdict_of_the_pairs():
    figures = ab().summarize([1.2, 2.2, 3.3, 1.0, 1.1, 2.0], [1.0, 2.0, 3.0, 1.0, 1.0, 2.0])
    assert figures["ratios"] == pytest.approx([1.2, 1.1, 1.1, 1.0, 1.1, 1.0])
    assert figures["median_ratio"] == pytest.approx(1.1)
    assert (figures["median_low"], figures["median_high"]) == pytest.approx((1.0, 1.2))
    assert figures["verdict"] == "undecided"
    assert figures["old_median_s"] == 1.5 and figures["new_median_s"] == pytest.approx(1.6)


def _fake_runs(monkeypatch: pytest.MonkeyPatch, mod: ModuleType, digests: dict[str, str]) -> list[str]:
    """Replace the subprocess with fixed timings: old takes 1 s, new 1.05 s; returns the order of the runs."""
    order: list[str] = []

    def run_once(name: str, tree: Path, quick: bool, timeout: float) -> dict[str, Any]:
        side = tree.name
        order.append(side)
        wall = 1.0 if side == "old" else 1.05
        return {"rollgym": str(tree), "parts": {"p": [wall, wall / 2]}, "wall_s": wall, "cpu_s": wall / 2,
                "digest": digests[side]}

    monkeypatch.setattr(mod, "run_once", run_once)
    return order


def test_measure_alternates_the_order_within_pairs_and_pairs_the_ratios(monkeypatch: pytest.MonkeyPatch):
    mod = ab()
    order = _fake_runs(monkeypatch, mod, {"old": "d", "new": "d"})
    figures = mod.measure(["tools"], Path("/x/old"), Path("/x/new"), 6, False, 1.0)
    assert order == ["old", "new", "new", "old"] * 3
    wall = figures["tools"]["wall"]
    assert wall["pairs"] == 6 and wall["median_ratio"] == pytest.approx(1.05) and wall["verdict"] == "within"
    assert figures["tools"]["part_median_ratios_wall"] == {"p": pytest.approx(1.05)}


def test_measure_refuses_to_compare_runs_that_played_different_work(monkeypatch: pytest.MonkeyPatch):
    mod = ab()
    _fake_runs(monkeypatch, mod, {"old": "a", "new": "b"})
    with pytest.raises(SystemExit, match="different work"):
        mod.measure(["tools"], Path("/x/old"), Path("/x/new"), 2, False, 1.0)


def test_resummarize_recomputes_every_summary_from_the_raw_timings_and_judges_cpu_time():
    mod = ab()
    stale = {"pairs": 6, "median_ratio": 9.9, "verdict": "slower"}
    report = {"old": {"tree": "/x/old", "commit": "7f008fe"}, "pairs": 6, "workloads": {
        "tools": {"bench": "bench_tools.py", "wall": {**stale, "new_s": [2.0] * 6, "old_s": [1.0] * 6},
                  "cpu": {**stale, "new_s": [1.02] * 6, "old_s": [1.0] * 6}}}}
    fresh = mod.resummarize([report])
    assert fresh["judged"] == "cpu"
    assert fresh["workloads"]["tools"]["cpu"]["median_ratio"] == pytest.approx(1.02)
    assert fresh["workloads"]["tools"]["cpu"]["verdict"] == "within"
    assert fresh["workloads"]["tools"]["wall"]["verdict"] == "slower"
    row = mod.readme_rows(fresh["workloads"], "7f008fe")[0]
    assert set(row) == {"what", "rollgym", "peer", "ratio"}
    assert row["ratio"].startswith("1.02x [1.02, 1.02]") and "wall 2.00x" in row["ratio"] and "7f008fe" in row["peer"]


def test_resummarize_pools_the_pairs_of_several_runs():
    mod = ab()

    def run(new: list[float]) -> dict[str, Any]:
        timings = {"new_s": new, "old_s": [1.0] * len(new)}
        return {"old": {"tree": "/x/old", "commit": "7f008fe"}, "pairs": len(new),
                "workloads": {"tools": {"bench": "b", "wall": dict(timings), "cpu": dict(timings)}}}

    pooled = mod.resummarize([run([1.0, 1.1, 1.2]), run([0.9, 1.3])])
    assert pooled["pairs"] == 5 and pooled["runs_pooled"] == 2
    assert pooled["workloads"]["tools"]["cpu"]["ratios"] == pytest.approx([1.0, 1.1, 1.2, 0.9, 1.3])
    assert pooled["workloads"]["tools"]["cpu"]["median_ratio"] == pytest.approx(1.1)
    other = run([1.0])
    other["old"]["commit"] = "abc1234"
    with pytest.raises(SystemExit, match="same old commit"):
        mod.resummarize([run([1.0]), other])


def test_without_the_old_tree_the_bench_says_so_and_exits_0_for_make_bench(capsys: pytest.CaptureFixture[str]):
    assert ab().main([]) == 0
    assert "needs --old" in capsys.readouterr().out


def test_fewer_than_six_pairs_give_no_verdict():
    mod = ab()
    assert mod.median_coverage(5) < 0.95 <= mod.median_coverage(6)
    assert mod.summarize([1.0] * 5, [1.0] * 5)["verdict"] == "too few pairs"
    assert mod.summarize([1.0] * 6, [1.0] * 6)["verdict"] == "within"

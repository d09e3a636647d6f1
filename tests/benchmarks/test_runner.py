"""The suite runner: reproducible results, resume after a kill, bundles, the CLI and compare."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rollgym.benchmarks.compare import compare_bundles, two_proportion_test
from rollgym.benchmarks.runner import AgentSpec, run_suite
from rollgym.benchmarks.suite import load_suite
from rollgym.core.errors import ConfigError
from rollgym.rollout import load_results

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "rollgym.cli"]


def _rewards(folder: Path) -> dict[str, list[tuple[int, int, float | None, str]]]:
    out = {}
    for path in sorted((folder / "transcripts").glob("*.jsonl")):
        records = load_results(path).episodes
        out[path.stem] = sorted(
            (r.task_index, r.trajectory.sample_idx, r.trajectory.reward, r.trajectory.task_id or "") for r in records
        )
    return out


def test_two_runs_give_the_same_tasks_and_results(tmp_path: Path, oracle_bundle: Path) -> None:
    suite = load_suite("quick")
    again = run_suite(suite, AgentSpec(agent="oracle"), tmp_path / "again", limit=2)
    first = json.loads((oracle_bundle / "summary.json").read_text())
    assert json.loads(json.dumps(again)) == first
    manifest_a = json.loads((oracle_bundle / "manifest.json").read_text())
    manifest_b = json.loads((tmp_path / "again" / "manifest.json").read_text())
    assert manifest_a["suite"]["task_hash"] == manifest_b["suite"]["task_hash"] == suite.limited(2).task_hash()
    assert _rewards(oracle_bundle) == _rewards(tmp_path / "again")
    assert first["entries"]["countdown"]["accuracy"]["value"] == 1.0
    assert set(first["entries"]) == {e.name for e in suite.entries}


def test_summary_has_intervals_per_difficulty_and_ratings(oracle_bundle: Path) -> None:
    summary = json.loads((oracle_bundle / "summary.json").read_text())
    countdown = summary["entries"]["countdown"]
    for key in ("accuracy", "mean_reward"):
        assert countdown[key]["low"] <= countdown[key]["value"] <= countdown[key]["high"]
    ks = {"1", "2", "3", "4"}
    assert set(countdown["pass_at_k"]) == set(countdown["best_of_k"]) == set(countdown["pass_hat_k"]) == ks
    assert countdown["by_difficulty"] and sum(d["tasks"] for d in countdown["by_difficulty"].values()) == 2
    rating = summary["ratings"]["connect-four"]
    assert rating["low"] < rating["elo"] < rating["high"] and rating["games"] == 2
    manifest = json.loads((oracle_bundle / "manifest.json").read_text())
    assert manifest["complete"] and manifest["agent"]["agent"] == "oracle"
    assert all(len(e["spec_hash"]) == 16 for e in manifest["entries"]) and manifest["machine"]["python"]


def test_a_run_killed_halfway_resumes_to_the_same_result(tmp_path: Path) -> None:
    args = ["bench", "run", "quick", "--agent", "random", "--limit", "3", "--json"]
    reference = subprocess.run([*CLI, *args, "--out", str(tmp_path / "whole")], capture_output=True, text=True,
                               cwd=REPO, timeout=300)
    assert reference.returncode == 0, reference.stderr
    out = tmp_path / "killed"
    process = subprocess.Popen([*CLI, *args, "--out", str(out)], cwd=REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    sudoku = out / "transcripts" / "sudoku4x4.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None:  # wait for the second entry to begin
        if sudoku.exists() and len(sudoku.read_bytes().splitlines()) >= 3:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run finished before it could be interrupted"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert not (out / "summary.json").exists()
    resumed = subprocess.run([*CLI, *args, "--out", str(out)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == json.loads(reference.stdout)
    assert _rewards(out) == _rewards(tmp_path / "whole")


def test_a_folder_of_another_run_is_refused(tmp_path: Path, oracle_bundle: Path) -> None:
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(oracle_bundle, folder)
    with pytest.raises(ConfigError, match="agent"):
        run_suite(load_suite("quick"), AgentSpec(agent="random"), folder, limit=2)


def test_agent_spec_needs_exactly_one_of_agent_and_model() -> None:
    with pytest.raises(ConfigError, match="exactly one"):
        AgentSpec()
    with pytest.raises(ConfigError, match="exactly one"):
        AgentSpec(agent="oracle", model="http://127.0.0.1:1/v1")
    with pytest.raises(ConfigError, match="Unknown agent 'human'"):
        AgentSpec(agent="human")


def test_compare_finds_the_oracle_better_than_random(tmp_path: Path, oracle_bundle: Path) -> None:
    run_suite(load_suite("quick"), AgentSpec(agent="random"), tmp_path / "r", limit=2, only=["countdown", "sudoku4x4"])
    rows = {r.entry: r for r in compare_bundles(oracle_bundle, tmp_path / "r")}
    assert set(rows) == {"countdown", "sudoku4x4"}
    assert rows["countdown"].difference == 1.0 and rows["countdown"].test == "paired bootstrap"
    same = {r.entry: r for r in compare_bundles(oracle_bundle, oracle_bundle)}
    assert same["countdown"].p_value == 1.0 and not same["countdown"].significant
    result = subprocess.run([*CLI, "bench", "compare", str(oracle_bundle), str(tmp_path / "r")], capture_output=True,
                            text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0 and "countdown" in result.stdout and "paired bootstrap" in result.stdout


def test_two_proportion_test_matches_a_hand_computation() -> None:
    diff, half, p = two_proportion_test(60, 100, 40, 100)
    assert diff == pytest.approx(0.2)
    assert half == pytest.approx(1.96 * ((0.6 * 0.4 + 0.4 * 0.6) / 100) ** 0.5)
    assert p == pytest.approx(0.00468, abs=2e-4)  # z = 0.2 / sqrt(0.25 * 0.02) = 2.828


def test_cli_bench_show_and_bad_suite(tmp_path: Path) -> None:
    shown = subprocess.run([*CLI, "bench", "show", "quick", "--limit", "2"], capture_output=True, text=True,
                           cwd=REPO, timeout=120)
    assert shown.returncode == 0 and "countdown" in shown.stdout and "task hash" in shown.stdout
    bad = subprocess.run([*CLI, "bench", "run", "nonesuch", "--agent", "oracle", "--out", str(tmp_path / "x")],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert bad.returncode == 2 and "Unknown suite" in bad.stderr


def test_a_run_begun_before_a_re_pin_resumes_only_through_the_lineage_and_verifies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refactor re-pins an id's hash without changing its tasks or scores: a run begun before it resumes
    when the old hash is in ``spec_lineage.json`` (its transcript keeps the hash it began with, the entry not
    yet begun is played under the new one) and the bundle verifies; without the lineage it is a different run."""
    from rollgym.benchmarks.suite import parse_suite
    from rollgym.core import registration
    from rollgym.leaderboard.verify import verify_bundle

    entries = [{"name": "begun", "env": "Countdown-v0", "n_tasks": 3, "group_size": 2},
               {"name": "not-begun", "env": "Countdown-v0", "n_tasks": 2, "seed": 5}]
    suite = parse_suite({"name": "re-pin", "version": 1, "entries": entries}, "test suite")
    reference = run_suite(suite, AgentSpec(agent="oracle"), tmp_path / "reference")
    folder = tmp_path / "run"
    run_suite(suite, AgentSpec(agent="oracle"), folder)
    # make it a run interrupted in its first entry: two episodes of "begun" unplayed, "not-begun" never started
    transcript = folder / "transcripts" / "begun.jsonl"
    transcript.write_text("".join(transcript.read_text().splitlines(keepends=True)[:-2]))
    (folder / "transcripts" / "not-begun.jsonl").unlink()
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "complete": False}))
    (folder / "summary.json").unlink()

    before = registration.env_info("Countdown-v0").content_hash
    original = registration.EnvInfo.__dict__["content_hash"].func
    monkeypatch.setattr(registration.EnvInfo, "content_hash", property(
        lambda info: "feedfacefeedface" if info.id == "Countdown-v0" else original(info)))
    monkeypatch.setattr(registration, "_LINEAGE", {})
    with pytest.raises(ConfigError, match="holds a different run"):
        run_suite(suite, AgentSpec(agent="oracle"), folder)
    assert len(transcript.read_text().splitlines()) == 1 + 3 * 2 - 2  # refused without touching the file

    monkeypatch.setattr(registration, "_LINEAGE", {"Countdown-v0": [before]})
    resumed = run_suite(suite, AgentSpec(agent="oracle"), folder)
    assert json.loads(json.dumps(resumed)) == json.loads(json.dumps(reference))
    hashes = {e["name"]: e["spec_hash"] for e in json.loads((folder / "manifest.json").read_text())["entries"]}
    assert hashes == {"begun": before, "not-begun": "feedfacefeedface"}
    assert json.loads(transcript.read_text().splitlines()[0])["spec_hash"] == before
    report = verify_bundle(folder, suite=suite)
    assert report.ok, report.reasons
    assert run_suite(suite, AgentSpec(agent="oracle"), folder) == resumed  # and it resumes again, finished
    monkeypatch.setattr(registration, "_LINEAGE", {})
    assert not verify_bundle(folder, suite=suite).ok

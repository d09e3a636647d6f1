"""Suite entries with a ``level``: every task from one difficulty level, the same in the runner, in
``entry_tasks`` (the task hash) and in verification; a bundle cannot pass for another level."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rollgym.agents import OracleAgent
from rollgym.benchmarks.runner import AgentSpec, run_suite
from rollgym.benchmarks.suite import LevelError, Suite, SuiteEntry, builtin_suite, entry_tasks, parse_suite
from rollgym.core.errors import ConfigError
from rollgym.leaderboard.verify import verify_bundle
from rollgym.rollout import collect
from rollgym.rollout.curriculum import FixedLevel


def _suite(level: object, env: str = "Countdown-v0") -> Suite:
    entries = [{"name": "leveled", "env": env, "n_tasks": 3, "group_size": 2, "level": level},
               {"name": "plain", "env": env, "n_tasks": 2}]
    return parse_suite({"name": "levels", "version": 1, "entries": entries}, "test suite")


def test_an_entry_level_draws_every_task_from_that_level() -> None:
    easiest, hardest = (entry_tasks(_suite(level).entry("leveled")) for level in ("n2", "n6-big"))
    assert [len(t.meta["numbers"]) for t in easiest] == [2, 2, 2]
    assert [len(t.meta["numbers"]) for t in hardest] == [6, 6, 6]
    # by index or by name, the same level
    assert [t.id for t in entry_tasks(_suite(0).entry("leveled"))] == [t.id for t in easiest]


def test_math_levels_come_from_the_data_sets_own_labels(shared_data: Path) -> None:
    for level in (1, 5):
        tasks = entry_tasks(_suite(f"level-{level}", "MATH500-v1").entry("leveled"))
        assert {t.meta["level"] for t in tasks} == {level}


def test_the_runner_plays_the_tasks_entry_tasks_names_and_the_bundle_verifies(tmp_path: Path) -> None:
    suite = _suite("n3")
    summary = run_suite(suite, AgentSpec(agent="oracle"), tmp_path / "b")
    assert summary["entries"]["leveled"]["accuracy"]["value"] == 1.0
    played = [json.loads(line) for line in (tmp_path / "b" / "transcripts" / "leveled.jsonl").read_text().splitlines()]
    played_ids = [r["trajectory"]["task_id"] for r in played if r.get("kind") == "episode"]
    expected = [t.id for t in entry_tasks(suite.entry("leveled"))]
    assert sorted(set(played_ids)) == sorted(expected) and len(played_ids) == 6
    report = verify_bundle(tmp_path / "b", suite=suite)
    assert report.ok, report.reasons


def test_a_bundle_played_at_another_level_is_rejected(tmp_path: Path) -> None:
    run_suite(_suite("n2"), AgentSpec(agent="oracle"), tmp_path / "b")
    folder = tmp_path / "claimed"
    shutil.copytree(tmp_path / "b", folder)
    report = verify_bundle(folder, suite=_suite("n4"))
    assert not report.ok
    assert any("the suite's seed gives" in reason or "task hash" in reason for reason in report.reasons), report.reasons


def test_an_entry_without_a_level_keeps_its_config_and_task_hash() -> None:
    """Adding the field must not move the hash of any suite made before it (their bundles verify)."""
    entry = SuiteEntry("x", "Countdown-v0", n_tasks=2)
    assert "level" not in entry.config()
    assert "level" in SuiteEntry("x", "Countdown-v0", n_tasks=2, level=0).config()
    quick = builtin_suite("quick")
    assert all("level" not in e.config() for e in quick.entries)


@pytest.mark.parametrize(("level", "phrase"), [("level-9", "or a level name"), (99, "level index from 0 to")])
def test_a_level_the_env_lacks_is_an_error_not_a_skip(level: object, phrase: str) -> None:
    suite = _suite(level, "Countdown-v0" if isinstance(level, int) else "Sudoku4x4-v0")
    with pytest.raises(LevelError, match=phrase):
        suite.partition()


def test_an_env_of_one_difficulty_takes_no_level(shared_data: Path) -> None:
    with pytest.raises(LevelError, match="one fixed difficulty"):
        _suite(0, "AIME24-v0").partition()


@pytest.mark.parametrize("level", [-1, True, 1.5, "", [1]])
def test_a_malformed_level_gets_one_sentence(level: object) -> None:
    with pytest.raises(ConfigError, match="level must be a difficulty level index >= 0 or a level name"):
        _suite(level)


def test_a_results_file_resumes_at_its_level_and_refuses_another(tmp_path: Path) -> None:
    out = str(tmp_path / "run.jsonl")
    first = collect(OracleAgent(), "Countdown-v0", n_tasks=2, group_size=1, out=out, task_chooser=FixedLevel("n2"))
    again = collect(OracleAgent(), "Countdown-v0", n_tasks=3, group_size=1, out=out, task_chooser=FixedLevel("n2"))
    assert [g.trajectories[0].traj_id for g in again[:2]] == [g.trajectories[0].traj_id for g in first]
    assert all(g.trajectories[0].info["difficulty"] == 0 for g in again)
    with pytest.raises(ConfigError):
        collect(OracleAgent(), "Countdown-v0", n_tasks=2, group_size=1, out=out, task_chooser=FixedLevel("n3"))
    with pytest.raises(ConfigError):
        collect(OracleAgent(), "Countdown-v0", n_tasks=2, group_size=1, out=out)

"""Suites: built-in YAML files parse, task sets are reproducible and hashed, unknown envs are skipped."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import rollgym
from rollgym.agents import OracleAgent
from rollgym.benchmarks.suite import builtin_suites, entry_tasks, load_suite
from rollgym.core.errors import ConfigError
from rollgym.rollout import collect

REPO = Path(__file__).resolve().parents[2]


def test_builtin_suites_parse_and_cover_every_family() -> None:
    names = builtin_suites()
    assert {"quick", "papers", "puzzles", "math", "games", "tools", "web", "search", "worldmodel"} <= set(names)
    covered = set()
    for name in names:
        suite = load_suite(name)
        assert suite.name == name and suite.version >= 1
        assert len({e.name for e in suite.entries}) == len(suite.entries)
        covered |= {rollgym.env_info(e.env_id).family for e in suite.entries}
    families = {info.family for info in rollgym.list_envs()
                if info.entry_point.startswith("rollgym.envs.") and info.family != "test"}  # not tests' own
    assert families <= covered, f"no suite covers {sorted(families - covered)}"
    quick = load_suite("quick")
    assert {e.env_id for e in quick.entries} >= {"Countdown-v0", "Sudoku4x4-v0"}


def test_papers_suite_follows_the_published_protocols() -> None:
    papers = load_suite("papers")
    sudoku = [e for e in papers.entries if e.env_id.startswith("Sudoku")]
    best_of_4 = [e for e in sudoku if "best_of_k" in e.metrics]
    greedy = [e for e in sudoku if e.sampling["temperature"] == 0.0]  # ERILS: deterministic single completion
    assert sorted(e.sampling["max_tokens"] for e in best_of_4) == [128, 256, 512]
    assert sorted(e.sampling["max_tokens"] for e in greedy) == [128, 256, 512]
    assert all(e.group_size == 4 and e.sampling["temperature"] == 1.0 for e in best_of_4)
    assert all(e.group_size == 1 and e.metrics == ("accuracy",) for e in greedy)
    assert len({(e.n_tasks, e.seed, e.split) for e in sudoku}) == 1  # the same puzzles at every length
    games = [e for e in papers.entries if e.env_id.split("-")[0] in {"Chess", "Chess960", "ConnectFour", "Hex"}]
    assert games and all(e.env_kwargs.get("show_legal_moves") is False for e in games)  # MAV: not shown
    search = [e for e in games if "tool_budget_per_move" in e.env_kwargs]
    assert search and all(e.env_kwargs["tools"] == ["simulate"] for e in search)
    envs = {e.env_id for e in papers.entries}
    assert {"Countdown-v0", "MATH500-v1", "Chess-v1", "Chess960-v1", "ConnectFour-v0", "Hex-v0"} <= envs
    assert any(e.rating for e in papers.entries)


def test_task_hash_is_the_same_in_another_process() -> None:
    suite = load_suite("quick").limited(3)
    here = suite.task_hash()
    code = "from rollgym.benchmarks.suite import load_suite; print(load_suite('quick').limited(3).task_hash())"
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                           check=True)
    assert there.stdout.strip() == here
    assert suite.with_seed(1).task_hash() != here
    assert load_suite("quick").limited(2).task_hash() != here


def test_entry_tasks_are_the_tasks_collect_plays() -> None:
    entry = dataclasses.replace(load_suite("quick").entry("sudoku4x4"), n_tasks=3)
    groups = collect(OracleAgent(), entry.env_id, n_tasks=3, group_size=1, split=entry.split, seed=entry.seed)
    assert [t.id for t in entry_tasks(entry)] == [g.task.id for g in groups if g.task is not None]


def test_unregistered_env_is_skipped_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "name: mine\nversion: 1\nentries:\n"
        "  - {name: cd, env: Countdown-v0, n_tasks: 2}\n"
        "  - {name: future, env: NotYetWritten-v0, n_tasks: 2}\n"
    )
    suite = load_suite(str(path))
    runnable, skipped = suite.partition()
    assert [e.name for e in runnable] == ["cd"]
    assert skipped[0].name == "future" and "not registered" in skipped[0].reason
    assert "NotYetWritten-v0" in rollgym.__name__ + skipped[0].reason


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\nversion: 1\nentries:\n  - {name: a, env: Countdown-v0, n_tasks: 0}\n", "n_tasks"),
        ("name: x\nversion: 1\nentries:\n  - {name: a, env: Countdown-v0, n_tasks: 1, colour: red}\n", "unknown key"),
        ("name: x\nversion: 1\nentries:\n  - {name: a, env: Countdown-v0, n_tasks: 1}\n"
         "  - {name: a, env: Countdown-v0, n_tasks: 1}\n", "duplicate"),
        ("name: x\nentries: []\n", "version"),
        ("name: [x\n", "not valid YAML"),
    ],
)
def test_bad_suite_files_get_one_clear_sentence(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_suite(str(path))


def test_unknown_suite_name_lists_the_suites() -> None:
    with pytest.raises(ConfigError, match="quick"):
        load_suite("nonesuch")

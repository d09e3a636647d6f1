"""The ``code`` suite through the benchmark runner: the oracle solves every entry, the random policy almost
nothing, and the bundle re-verifies (every episode replayed and graded again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import require_binary

pytestmark = pytest.mark.timeout(900)


def test_the_code_suite_runs_with_the_oracle_and_random_and_verifies(humaneval_tasks, tmp_path: Path) -> None:
    require_binary("bwrap")
    from rollgym.benchmarks.runner import AgentSpec, run_suite
    from rollgym.benchmarks.suite import load_suite
    from rollgym.leaderboard.verify import verify_bundle

    suite = load_suite("code")
    assert {e.env_id for e in suite.entries} == {"HumanEval-v0", "CodeGen-v0", "RepoRepair-v0", "Terminal-v0"}
    assert max(e.group_size for e in suite.entries) == 10  # pass@k up to k = 10 on HumanEval
    run_suite(suite, AgentSpec(agent="oracle"), tmp_path / "oracle", limit=2)
    summary = json.loads((tmp_path / "oracle" / "summary.json").read_text())
    entries = summary["entries"]
    assert set(entries) == {e.name for e in suite.entries}
    assert all(e["accuracy"]["value"] == 1.0 and e["failures"] == 0 for e in entries.values()), entries
    assert verify_bundle(tmp_path / "oracle").ok

    run_suite(suite, AgentSpec(agent="random"), tmp_path / "random", limit=2,
              only=["humaneval", "codegen-3", "reporepair", "terminal"])
    summary = json.loads((tmp_path / "random" / "summary.json").read_text())
    assert summary["entries"] and all(e["accuracy"]["value"] == 0.0 and e["failures"] == 0
                                      for e in summary["entries"].values()), summary

"""Shared bundles for the benchmark and leaderboard tests: the quick suite, two tasks per entry."""

from __future__ import annotations

from pathlib import Path

import pytest

LIMIT = 2


@pytest.fixture(scope="session")
def oracle_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A genuine bundle folder: the oracle on the quick suite, at most two tasks per entry."""
    from rollgym.benchmarks.runner import AgentSpec, run_suite
    from rollgym.benchmarks.suite import load_suite

    folder = tmp_path_factory.mktemp("bundles") / "oracle"
    run_suite(load_suite("quick"), AgentSpec(agent="oracle"), folder, limit=LIMIT)
    return folder

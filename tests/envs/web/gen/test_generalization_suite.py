"""The ``generalization`` suite's web entries: train, test and test_unseen side by side, oracle and random."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from rollgym.benchmarks.runner import AgentSpec, run_suite
from rollgym.benchmarks.suite import load_suite

pytestmark = pytest.mark.slow


def test_the_suite_plays_each_split_of_webgen() -> None:
    suite = load_suite("generalization")
    splits = {e.name: (e.env_id, e.split) for e in suite.entries if e.env_id == "WebGen-v0"}
    assert splits == {"web-train": ("WebGen-v0", "train"), "web-test": ("WebGen-v0", "test"),
                      "web-test_unseen": ("WebGen-v0", "test_unseen")}


def test_oracle_solves_every_split_and_random_play_none(web_runtime: Any, tmp_path: Path) -> None:
    suite = load_suite("generalization")
    suite = dataclasses.replace(suite, entries=tuple(e for e in suite.entries if e.env_id == "WebGen-v0"))
    oracle = run_suite(suite, AgentSpec(agent="oracle"), tmp_path / "oracle", limit=1)
    # random play through the runner, cut to 8 actions (test_gen_oracle.py plays it longer on more tasks)
    short = dataclasses.replace(suite, entries=tuple(dataclasses.replace(e, max_steps=8) for e in suite.entries))
    random = run_suite(short, AgentSpec(agent="random"), tmp_path / "random", limit=1)
    for name in ("web-train", "web-test", "web-test_unseen"):
        assert oracle["entries"][name]["accuracy"]["value"] == 1.0, oracle["entries"][name]
        assert random["entries"][name]["accuracy"]["value"] == 0.0, random["entries"][name]

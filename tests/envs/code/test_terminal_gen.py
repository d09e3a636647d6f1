"""TerminalGen-v0: every kind's oracle passes and its wrong and empty solutions fail (a sample of each split),
the catalogue's counts, held-out kinds, the difficulty ladder, and bad configurations."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import rollgym  # noqa: F401
from rollgym.core.errors import ConfigError
from rollgym.envs.code import policies
from rollgym.envs.code.terminal.env import SESSION_LIMITS
from rollgym.envs.code.terminal_gen.source import (
    ALL_KINDS,
    HELD_OUT_KINDS,
    SEEN_KINDS,
    SPLIT_SIZES,
    TerminalGenConfig,
    TerminalGenSource,
    _key,
)
from rollgym.envs.code.terminal_gen.validate import Validator
from tests.conftest import require_binary

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def validator():
    require_binary("bwrap")
    from rollgym.sandbox import Sandbox

    with Sandbox(SESSION_LIMITS) as sandbox:
        checker = Validator(sandbox)
        yield checker
        checker.close()


@pytest.mark.parametrize("split", ["train", "validation", "test", "test_unseen"])
def test_a_sample_of_every_kind_validates(validator, split):
    """One task of each kind the split draws, at a level that differs by kind: the oracle's commands pass, the
    wrong ones and doing nothing fail (bench/validate_terminal_gen.py runs the whole catalogue)."""
    source = TerminalGenSource()
    kinds = len(HELD_OUT_KINDS) if split == "test_unseen" else len(SEEN_KINDS)
    offset = {"train": 0, "validation": 1, "test": 2, "test_unseen": 3}[split]
    failures = []
    for k in range(kinds):
        spec = source.spec(k + kinds * ((k + offset) % 4), split)
        outcome = validator.validate(spec)
        if not outcome.valid:
            failures.append((spec["kind"], spec["level"], outcome.oracle.details, outcome.wrong.correct,
                             outcome.empty.correct))
    assert failures == []


def test_the_catalogue_holds_thousands_of_distinct_tasks_and_list_stats_counts_them():
    from rollgym.commands.list import stats_table
    from rollgym.envs.code.terminal_gen.source import catalogue

    assert sum(SPLIT_SIZES.values()) >= 3000 and SPLIT_SIZES["train"] >= 3000
    counts = catalogue()
    assert counts["terminal_gen_tasks"] == sum(SPLIT_SIZES.values()) and counts["terminal_gen_kinds"] == 21
    assert len(counts["terminal_gen_categories"]) == 7
    table = stats_table()
    rows = list(zip(*(c._cells for c in table.columns)))
    assert ("code", "terminal_gen_tasks", "4,260") in rows, rows
    source = TerminalGenSource()
    keys = [_key(source.spec(i, "train")) for i in range(200)] + [_key(source.spec(i, "test_unseen")) for i in
                                                                  range(60)]
    assert len(set(keys)) == len(keys)


def test_held_out_kinds_appear_only_in_test_unseen_and_splits_are_disjoint():
    source = TerminalGenSource()
    seen = {source.spec(i, s)["kind"] for s in ("train", "validation", "test") for i in range(len(SEEN_KINDS))}
    unseen = {source.spec(i, "test_unseen")["kind"] for i in range(len(HELD_OUT_KINDS))}
    assert seen == set(SEEN_KINDS) and unseen == set(HELD_OUT_KINDS) and not seen & unseen
    keys = {s: {_key(source.spec(i, s)) for i in range(28)} for s in ("train", "validation", "test")}
    assert not keys["train"] & keys["validation"] and not keys["train"] & keys["test"]
    assert not keys["validation"] & keys["test"]
    assert {c for c, _ in SEEN_KINDS.values()} == {c for c, _ in HELD_OUT_KINDS.values()}


def test_levels_grow_the_files_and_cases():
    """Per kind, the tasks of a level hold more (starting files and checks, in bytes, over six tasks) than the
    level below."""
    for kind in ALL_KINDS:
        split = "test_unseen" if kind in HELD_OUT_KINDS else "train"
        sizes = []
        for level in range(4):
            source = TerminalGenSource(TerminalGenConfig(kinds=kind, level=level))
            specs = [source.spec(i, split) for i in range(6)]
            sizes.append(sum(len(json.dumps(s["files"])) + len(json.dumps(s["checks"])) for s in specs))
        assert sizes == sorted(sizes) and sizes[0] < sizes[3], (kind, sizes)


def test_the_env_plays_the_oracle_at_a_difficulty_level_and_the_unseen_split():
    require_binary("bwrap")
    env = gym.make("TerminalGen-v0", kinds=["csv_sum", "top_ip"])
    for options in ({"task_index": 0, "difficulty": 3}, {"task_index": 1, "split": "test_unseen"}):
        obs, info = env.reset(options=options)
        _, reward, _, _, info = env.step(policies.terminal_gen_oracle(obs, info))
        assert reward == 0.0 and "tool_results" in info
        _, reward, terminated, _, info = env.step(policies.terminal_gen_oracle(obs, info))
        assert terminated and reward == 1.0, info
    assert env.unwrapped.task.meta["unseen"] is True and env.unwrapped.task.meta["kind"] == "top_ip"
    env.close()


@pytest.mark.parametrize("kwargs, message", [
    ({"kinds": "tar_extract"}, "kinds must be a non-empty subset"),
    ({"level": 4}, "level must be None or an integer from 0 to 3"),
    ({"kinds": "csv_sum", "split": "test_unseen"}, "draws held-out kinds"),
])
def test_bad_configurations_are_one_sentence(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        env = gym.make("TerminalGen-v0", **kwargs)
        env.reset(seed=0)

"""What env workers need from a cluster node (rollgym.rollout.placement): the table, capacities, bad needs."""

from __future__ import annotations

import pytest

from rollgym.core.errors import ConfigError, UnknownEnvError
from rollgym.rollout.placement import Needs, env_needs


@pytest.mark.parametrize(("env_id", "kwargs", "resources"), [
    ("WebShop-v2", {}, {"browser": 1.0}),
    ("HumanEval-v0", {}, {"sandbox": 1.0}),
    ("AIME24Tool-v1", {}, {"sandbox": 1.0}),
    ("AIME24-v1", {}, {}),
    ("Chess-v1", {"opponent": "stockfish-skill-3"}, {"stockfish": 1.0}),
    ("Chess-v1", {}, {}),
    ("Countdown-v0", {}, {}),
    ("ToolWorld-v1", {}, {}),
])
def test_families_declare_what_their_workers_need(env_id: str, kwargs: dict, resources: dict):
    needs = env_needs(env_id, kwargs)
    assert needs.resources == resources
    assert needs.cpus == (1 if resources else 0)
    assert needs.ray_options() == {"num_cpus": needs.cpus, "resources": resources}


def test_capacity_counts_the_workers_a_node_holds():
    browser = Needs(1, {"browser": 1})
    assert browser.capacity({"CPU": 4.0, "browser": 2.0}) == 2
    assert browser.capacity({"CPU": 1.0, "browser": 2.0}) == 1
    assert browser.capacity({"CPU": 8.0}) == 0  # no browser on that node: no worker there
    assert Needs().capacity({}) > 1000  # needing nothing, a worker fits anywhere
    assert browser.describe() == "1 CPU, browser: 1"


@pytest.mark.parametrize("bad", [{"browser": -1}, {"browser": "one"}, {"CPU": 2}])
def test_bad_needs_are_one_clear_error(bad: dict):
    with pytest.raises(ConfigError, match="non-negative"):
        Needs(0, bad)


def test_an_unknown_env_id_is_named():
    with pytest.raises(UnknownEnvError, match="Countdwn"):
        env_needs("Countdwn-v0")

"""Contracts every registered env id must keep, whatever its family."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import rollgym

HEAVY_MODULES = ["torch", "transformers", "playwright", "chess", "sympy", "math_verify", "vllm", "ray",
                 "open_spiel", "datasets", "pettingzoo", "rich", "docker", "skimage"]
# Families whose envs need a browser or other heavy machinery: their own tests run check_env.
SLOW_FAMILIES = {"web"}

ENV_IDS = [info.id for info in rollgym.list_envs() if info.family not in {"test"}]


def test_import_is_light():
    code = (
        "import sys, time; t = time.perf_counter(); import rollgym; "
        "import json; print(json.dumps({'heavy': [m for m in %r if m in sys.modules], "
        "'seconds': time.perf_counter() - t}))".replace("%r", repr(HEAVY_MODULES))
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report["heavy"] == [], f"import rollgym pulled in {report['heavy']}; import them lazily"


@pytest.mark.parametrize("env_id", [i for i in ENV_IDS if rollgym.env_info(i).family not in SLOW_FAMILIES])
def test_check_env_passes_without_warnings(env_id):
    env = gym.make(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    # the env checker reports through UserWarning; ResourceWarnings from other tests' garbage are not its findings
    assert not [w for w in caught if issubclass(w.category, UserWarning)], [str(w.message) for w in caught]
    env.close()


@pytest.mark.parametrize("env_id", [i for i in ENV_IDS if rollgym.env_info(i).family not in SLOW_FAMILIES])
def test_same_seed_gives_the_same_first_observation(env_id):
    a, b = gym.make(env_id), gym.make(env_id)
    obs_a, info_a = a.reset(seed=123)
    obs_b, info_b = b.reset(seed=123)
    assert info_a["task_id"] == info_b["task_id"]
    if isinstance(obs_a, str):
        assert obs_a == obs_b
    assert info_a["env_id"] == env_id and info_a["spec_hash"] == rollgym.env_info(env_id).content_hash
    a.close()
    b.close()

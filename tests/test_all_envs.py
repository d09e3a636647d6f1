"""Contracts every registered env id must keep, whatever its family."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import pytest

import rollgym
from tests.conftest import CHANCE_IDS, check_env_quietly

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


# The optional packages each family needs: without them its tests skip (and fail in CI).
NEEDS = {"math": ["sympy", "math_verify"], "search": ["bm25s"], "worldmodel": [], "games": [], "puzzles": []}


def _require_extras(env_id: str) -> None:
    from tests.conftest import require_module

    for module in NEEDS.get(rollgym.env_info(env_id).family, []):
        require_module(module)
    if env_id.startswith("Chess"):
        require_module("chess")
    if env_id.startswith("RepoRepairReal-"):
        from tests.conftest import require_repo_real

        require_repo_real()


@pytest.mark.parametrize("env_id", [i for i in ENV_IDS if rollgym.env_info(i).family not in SLOW_FAMILIES])
def test_check_env_passes_without_warnings(env_id):
    _require_extras(env_id)
    env = gym.make(env_id)
    check_env_quietly(env)
    env.close()


@pytest.mark.parametrize("env_id", [i for i in ENV_IDS if rollgym.env_info(i).family not in SLOW_FAMILIES])
def test_same_seed_gives_the_same_first_observation(env_id):
    _require_extras(env_id)
    a, b = gym.make(env_id), gym.make(env_id)
    obs_a, info_a = a.reset(seed=123)
    obs_b, info_b = b.reset(seed=123)
    assert info_a["task_id"] == info_b["task_id"]
    if isinstance(obs_a, str):
        assert obs_a == obs_b
    assert info_a["env_id"] == env_id and info_a["spec_hash"] == rollgym.env_info(env_id).content_hash
    a.close()
    b.close()


# -- the terminal contract ---------------------------------------------------------------------------------

# Small boards keep the oracle (MCTS-1000) quick; the contract does not depend on the size.
PLAY_KWARGS: dict[str, dict[str, object]] = {
    "ConnectFour-v0": {"rows": 5, "columns": 5, "x_in_row": 4},
    "Hex-v0": {"size": 5},
    "Chess-v1": {"max_plies": 120},
    "Chess960-v1": {"max_plies": 120},
}
CONTRACT_IDS = list(ENV_IDS)


def _play_to_the_end(env_id: str, agent_name: str, seed: int) -> tuple[float, dict]:
    from rollgym.agents import make_agent

    _require_extras(env_id)
    env = gym.make(env_id, **PLAY_KWARGS.get(env_id, {}))
    agent = make_agent(agent_name) if isinstance(env.action_space, rollgym.TextSpace) else None
    if agent is not None:
        agent.reset(seed)
    observation, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    for _ in range(400):
        action = agent.act(observation, info) if agent is not None else env.action_space.sample()
        observation, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            env.close()
            return float(reward), info
    env.close()
    raise AssertionError(f"{env_id} with the {agent_name} agent did not end in 400 steps")


def _assert_score_fields(env_id: str, reward: float, info: dict) -> None:
    missing = {"reward", "correct", "parsed", "error", "details"} - set(info)
    assert not missing, f"{env_id}: the terminal info lacks {sorted(missing)}"
    assert type(info["reward"]) is float and info["reward"] == reward, (env_id, info["reward"], reward)
    assert type(info["correct"]) is bool, (env_id, info["correct"])
    assert info["error"] is None or isinstance(info["error"], str), (env_id, info["error"])
    assert isinstance(info["details"], dict), (env_id, info["details"])
    json.dumps({k: info[k] for k in ("reward", "correct", "parsed", "error", "details")})  # JSON-ready


@pytest.mark.parametrize("env_id", CONTRACT_IDS)
def test_a_random_episode_ends_with_the_score_fields(env_id):
    reward, info = _play_to_the_end(env_id, "random", seed=7)
    _assert_score_fields(env_id, reward, info)




@pytest.mark.parametrize("env_id", [i for i in CONTRACT_IDS if rollgym.env_info(i).oracle is not None])
def test_an_oracle_episode_ends_with_the_score_fields_and_is_correct(env_id):
    if env_id in CHANCE_IDS:
        oracle = [_play_to_the_end(env_id, "oracle", seed=s)[0] for s in range(200)]
        random = [_play_to_the_end(env_id, "random", seed=s)[0] for s in range(200)]
        assert sum(oracle) > sum(random), (env_id, sum(oracle), sum(random))
        return
    reward, info = _play_to_the_end(env_id, "oracle", seed=7)
    _assert_score_fields(env_id, reward, info)
    assert info["correct"] is True, (env_id, info.get("details"))

"""Envs take their config object: the game, search and MATH envs accept one config (or its fields as keywords).

``gym.make("Id", field=value)`` keeps working; the same options as one object give the same env; a
keyword overrides the object's field; an unknown option is one sentence, whichever way the env is built.
"""

from __future__ import annotations

import inspect

import pytest

import rollgym
from rollgym.core.errors import ConfigError
from rollgym.core.registration import env_options
from rollgym.envs.games.config import PlayConfig
from rollgym.envs.games.hex import HexEnv
from rollgym.envs.games.text_env import TwoPlayerTextEnv
from rollgym.envs.search.config import SearchConfig
from rollgym.envs.search.env import SearchEnv, SearchQAEnv
from rollgym.envs.search.world import MIN_SIZE
from tests.conftest import require_module


def test_a_game_env_takes_a_play_config_or_its_fields():
    by_fields = rollgym.make("Hex-v0", reward_scheme="signed", max_retries=3).unwrapped
    by_object = rollgym.make("Hex-v0", play_config=PlayConfig(reward_scheme="signed", max_retries=3)).unwrapped
    assert by_fields.play_config == by_object.play_config == PlayConfig(reward_scheme="signed", max_retries=3)
    assert by_fields.reset(seed=4)[0] == by_object.reset(seed=4)[0]
    # benchmarks count an abandoned game as the lowest reward, read from either form
    assert HexEnv.lowest_reward({"play_config": PlayConfig(reward_scheme="signed")}) == -1.0
    assert HexEnv.lowest_reward({"play_config": PlayConfig(reward_scheme="signed"), "reward_scheme": "score"}) == 0.0
    overridden = HexEnv(play_config=PlayConfig(max_retries=3), max_retries=0)
    assert overridden.play_config.max_retries == 0
    # the base no longer re-lists PlayConfig's fields: they are its **options
    assert "agent_color" not in inspect.signature(TwoPlayerTextEnv.__init__).parameters
    assert {"agent_color", "play_config", "opponent", "size"} <= set(env_options("Hex-v0") or ())
    for env in (by_fields, by_object, overridden):
        env.close()


def test_a_game_env_names_an_unknown_option_in_one_sentence():
    with pytest.raises(ConfigError, match=r"^Hex-v0 has no option 'reward_schema'; did you mean 'reward_scheme'\?"):
        rollgym.make("Hex-v0", reward_schema="signed")
    with pytest.raises(ConfigError, match=r"^HexEnv has no option 'reward_schema'; did you mean 'reward_scheme'\?"):
        HexEnv(reward_schema="signed")
    with pytest.raises(ConfigError, match=r"^reward_scheme must be one of 'score', 'signed', got 'sign'"):
        rollgym.make("Hex-v0", reward_scheme="sign")


def test_a_search_env_takes_a_search_config_or_its_fields():
    require_module("bm25s")  # the search extra: the bare install's core tests skip this
    by_fields = SearchEnv(world_size=MIN_SIZE, max_turns=3, reward="f1")
    by_object = SearchEnv(config=SearchConfig(world_size=MIN_SIZE, max_turns=3, reward="f1"))
    assert by_fields.config == by_object.config and by_fields.max_turns == 3 and by_object.reward_mode == "f1"
    assert by_fields.reset(seed=1)[0] == by_object.reset(seed=1)[0]
    assert SearchEnv(config=by_object.config, max_turns=5).max_turns == 5
    assert "world_size" not in inspect.signature(SearchEnv.__init__).parameters
    with pytest.raises(ConfigError, match=r"^SearchEnv has no option 'max_turn'; did you mean 'max_turns'"):
        SearchEnv(world_size=MIN_SIZE, max_turn=3)


def test_searchqa_takes_no_question_options():
    require_module("bm25s")
    qa = SearchQAEnv(world_size=MIN_SIZE, max_turns=4)
    assert qa.config.max_turns == 4
    assert "difficulty" not in (env_options("SearchQA-v1") or ())
    with pytest.raises(ConfigError, match=r"^SearchQAEnv has no option 'difficulty'"):
        SearchQAEnv(world_size=MIN_SIZE, difficulty="hard")


def test_a_math_env_takes_its_data_and_verify_configs_or_their_fields():
    require_module("sympy")
    from rollgym.envs.math.config import MathDataConfig
    from rollgym.envs.math.env import MathEnv
    from rollgym.verifiers.math import MathVerifyConfig

    by_fields = MathEnv(box_policy="last", prompt_template="plain")
    by_object = MathEnv(verify=MathVerifyConfig(box_policy="last"), data=MathDataConfig(prompt_template="plain"))
    assert by_fields.verify_config == by_object.verify_config
    assert by_fields.data_config == by_object.data_config
    assert by_fields.reset(seed=0)[0] == by_object.reset(seed=0)[0]
    assert MathEnv(verify=MathVerifyConfig(box_policy="last"), box_policy="all").verify_config.box_policy == "all"
    assert {"data", "verify", "box_policy", "prompt_template", "ignore_code_blocks"} <= set(
        env_options("MATH500-v1") or ())
    with pytest.raises(ConfigError, match=r"^MathEnv has no option 'box_polcy'; did you mean 'box_policy'"):
        MathEnv(box_polcy="last")
    with pytest.raises(ConfigError, match=r"^MATH500-v1 has no option 'max_answers'"):  # a grader knob, not an option
        rollgym.make("MATH500-v1", max_answers=2)

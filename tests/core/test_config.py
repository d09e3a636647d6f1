"""One config style: shared validators, frozen config dataclasses per env, and one clear sentence per mistake."""

from __future__ import annotations

import dataclasses

import pytest

import rollgym
from rollgym.core.config import check_bool, check_choice, check_int, check_known, check_number, check_subset
from rollgym.core.errors import ConfigError
from tests.conftest import require_module


@pytest.mark.parametrize(("call", "needles"), [
    (lambda: check_int("size", 4, 5, 19), ["size", "between 5 and 19", "got 4"]),
    (lambda: check_int("size", True, 5, 19), ["size", "integer", "True"]),
    (lambda: check_int("max_value", 0, 1, 9, low_name="min_value"), ["max_value", "min_value (1)"]),
    (lambda: check_int("turns", 0, 1), ["turns", "at least 1", "got 0"]),
    (lambda: check_number("weight", 1.5, 0, 1), ["weight", "between 0 and 1", "1.5"]),
    (lambda: check_number("weight", float("nan")), ["weight", "finite number"]),
    (lambda: check_bool("tools", "false"), ["tools", "True or False", "'false'"]),
    (lambda: check_choice("mode", "autoregresive", ("autoregressive", "teacher_forced")),
     ["mode", "'autoregressive', 'teacher_forced'", "did you mean 'autoregressive'"]),
    (lambda: check_choice("mode", ["x"], ("a", "b")), ["mode", "'a', 'b'"]),
    (lambda: check_subset("views", ["left", "wirst"], ("left", "right", "wrist")), ["views", "did you mean 'wrist'"]),
    (lambda: check_subset("views", "left", ("left", "right")), ["views", "a list"]),
    (lambda: check_known("Hex-v0", {"sise": 5}, ["size", "swap"]), ["Hex-v0", "'sise'", "did you mean 'size'",
                                                                       "size, swap"]),
])
def test_validators_name_the_field_the_bound_and_the_choices(call, needles) -> None:
    with pytest.raises(ConfigError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, (needle, message)


def test_validators_return_what_they_accept() -> None:
    assert check_int("n", None, 1, allow_none=True) is None
    assert check_number("w", 1, 0, 2) == 1.0 and isinstance(check_number("w", 1, 0, 2), float)
    assert check_choice("c", "a", ("a", "b")) == "a"
    assert check_subset("v", ["b", "a"], ("a", "b")) == ("b", "a")


def _config_classes():
    from rollgym.envs.countdown.config import CountdownConfig
    from rollgym.envs.games.config import ChessConfig, ConnectFourConfig, HexConfig, PlayConfig
    from rollgym.envs.math.config import MathDataConfig, MathToolConfig
    from rollgym.envs.search.config import SearchConfig
    from rollgym.envs.sudoku.generator import SudokuConfig
    from rollgym.envs.worldmodel.config import WorldModelConfig

    return [CountdownConfig, SudokuConfig, PlayConfig, ConnectFourConfig, HexConfig, ChessConfig, MathDataConfig,
            MathToolConfig, SearchConfig, WorldModelConfig]


@pytest.mark.parametrize("cls", _config_classes(), ids=lambda c: c.__name__)
def test_every_env_config_is_a_frozen_dataclass_that_accepts_its_defaults(cls) -> None:
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    config = cls()
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(config, dataclasses.fields(cls)[0].name, None)


@pytest.mark.parametrize(("env_id", "kwargs", "needles"), [
    ("Countdown-v0", {"num_numbers": 9}, ["num_numbers", "between 2 and 8"]),
    ("Sudoku-v0", {"partial_credit": "yes"}, ["partial_credit", "True or False"]),
    ("ConnectFour-v0", {"reward_scheme": "sign"}, ["reward_scheme", "'score', 'signed'", "did you mean 'signed'"]),
    ("ConnectFour-v0", {"x_in_row": 9}, ["x_in_row", "between 2 and the longer side of the board (7)"]),
    ("Hex-v0", {"size": 30}, ["size", "between 5 and 19"]),
    ("Chess960-v1", {"start_position": 960}, ["start_position", "between 0 and 959"]),
    ("WorldModel-v0", {"mode": "teacher"}, ["mode", "'autoregressive', 'teacher_forced'"]),
    ("WorldModel-v0", {"views": ["left", "top"]}, ["views", "'left', 'right', 'wrist'", "'top'"]),
    ("Countdown-v0", {"num_number": 5}, ["Countdown-v0 has no option 'num_number'", "did you mean 'num_numbers'",
                                          "max_target"]),
    ("ConnectFour-v0", {"oponent": "greedy"}, ["did you mean 'opponent'", "x_in_row"]),
])
def test_a_bad_option_is_one_sentence_naming_it(env_id, kwargs, needles) -> None:
    if env_id.startswith("Chess"):
        require_module("chess")
    with pytest.raises(ConfigError) as caught:
        rollgym.make(env_id, **kwargs)
    for needle in needles:
        assert needle in str(caught.value), (needle, str(caught.value))

"""The board games as PettingZoo AEC envs: the official API test, text actions, illegal actions, two agents playing."""

from __future__ import annotations

import pytest

from tests.conftest import require_module

require_module("pettingzoo")
require_module("chess")

from pettingzoo.test import api_test  # noqa: E402

from rollgym.agents.game_bots import BotAgent  # noqa: E402
from rollgym.envs.games.pettingzoo_env import chess_aec, connect_four_aec, hex_aec, play_match  # noqa: E402

FACTORIES = {
    "connect_four": lambda: connect_four_aec(),
    "connect_four_5x6x3": lambda: connect_four_aec(5, 6, 3),
    "hex_7_swap": lambda: hex_aec(7, swap=True),
    "hex_11": lambda: hex_aec(11),
    "chess": lambda: chess_aec(max_plies=80),
    "chess960": lambda: chess_aec(chess960=True, start_position=300, max_plies=80),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_pettingzoo_api_test_passes(name: str) -> None:
    api_test(FACTORIES[name](), num_cycles=200)


def test_text_actions_and_labelled_illegal_actions() -> None:
    env = connect_four_aec()
    env.reset(seed=0)
    env.step("I drop it in the middle. Final Answer: 4")
    assert env.state.history == [3] and env.agent_selection == "player_1"
    env.step("Final Answer: e2e4")
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert env.infos["player_1"]["error"] == "invalid"
    env.reset()
    for _ in range(6):  # X and O alternate up column 4 until it is full
        env.step(3)
    assert env.agent_selection == "player_0" and env.infos["player_0"]["action_mask"][3] == 0
    env.step(3)
    assert env.infos["player_0"]["error"] == "illegal" and env.rewards["player_0"] == -1.0


def test_two_text_agents_play_each_other_in_every_game() -> None:
    for factory, strong in [(connect_four_aec, "mcts-200"), (lambda: hex_aec(5), "mcts-200"),
                            (lambda: chess_aec(max_plies=40), "greedy")]:
        env = factory()
        totals = play_match(env, {"player_0": BotAgent(strong, seed=1), "player_1": BotAgent("random", seed=2)}, seed=0)
        assert totals["player_0"] == -totals["player_1"]
        assert env.last_result is not None and env.last_result["rewards"] == totals
        if strong.startswith("mcts"):
            assert totals["player_0"] == 1.0

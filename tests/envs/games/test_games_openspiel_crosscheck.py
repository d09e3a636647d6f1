"""Connect Four and Hex rules against OpenSpiel (an independent C++ implementation), on thousands of random games.

Both engines play the same random actions in lockstep; at every ply the legal
actions, whether the game is over, and at the end the winner must agree.
"""

from __future__ import annotations

import numpy as np
import pytest

from rollgym.envs.games.connect_four import ConnectFourState
from rollgym.envs.games.hex import HexState
from tests.conftest import require_module


@pytest.fixture(scope="module")
def pyspiel():
    require_module("pyspiel")
    import pyspiel

    return pyspiel


def _lockstep(ours, theirs, rng: np.random.Generator) -> int | None:
    """Play random legal actions in both engines; return our winner after checking every ply."""
    plies = 0
    while True:
        assert ours.is_terminal() == theirs.is_terminal(), f"terminal disagreement after {ours.history}"
        if ours.is_terminal():
            break
        legal = sorted(ours.action_of(m) for m in ours.legal_moves())
        assert legal == sorted(theirs.legal_actions()), f"legal moves differ after {ours.history}"
        assert ours.current_player == theirs.current_player()
        action = legal[int(rng.integers(len(legal)))]
        ours.play(ours.move_of(action))
        theirs.apply_action(action)
        plies += 1
    returns = theirs.returns()
    winner = ours.winner()
    if winner is None:
        assert returns[0] == returns[1] == 0, f"we say draw, OpenSpiel says {returns} after {ours.history}"
    else:
        assert returns[winner] == 1 and returns[1 - winner] == -1, f"we say {winner} won, OpenSpiel {returns}"
    return winner


@pytest.mark.parametrize(
    ("rows", "columns", "x_in_row", "games"),
    [(6, 7, 4, 2000), (5, 6, 3, 300), (7, 9, 5, 300), (4, 4, 4, 300)],
)
def test_connect_four_agrees_with_openspiel(pyspiel, rows: int, columns: int, x_in_row: int, games: int) -> None:
    game = pyspiel.load_game("connect_four", {"rows": rows, "columns": columns, "x_in_row": x_in_row})
    rng = np.random.default_rng(rows * 100 + columns * 10 + x_in_row)
    outcomes = {0: 0, 1: 0, None: 0}
    for _ in range(games):
        outcomes[_lockstep(ConnectFourState(rows, columns, x_in_row), game.new_initial_state(), rng)] += 1
    assert outcomes[0] and outcomes[1]  # both sides won some games, so the check saw real wins


@pytest.mark.parametrize(("size", "swap", "games"), [(5, False, 800), (7, True, 500), (9, False, 300), (11, False, 300),
                                                      (11, True, 200)])
def test_hex_agrees_with_openspiel(pyspiel, size: int, swap: bool, games: int) -> None:
    game = pyspiel.load_game("hex", {"board_size": size, "swap": swap})
    rng = np.random.default_rng(size * 2 + swap)
    winners = [_lockstep(HexState(size, swap), game.new_initial_state(), rng) for _ in range(games)]
    assert None not in winners
    assert 0 < sum(winners) < games


@pytest.mark.parametrize(("size", "swap"), [(5, False), (11, False), (7, True)])
def test_hex_fast_playout_winner_agrees_with_openspiel(pyspiel, size: int, swap: bool) -> None:
    """The fill-then-flood-fill playout gives the winner OpenSpiel finds playing the same moves one by one."""
    game = pyspiel.load_game("hex", {"board_size": size, "swap": swap})
    rng = np.random.default_rng(size)
    for _ in range(300):
        ours = HexState(size, swap)
        for _ in range(int(rng.integers(0, 4))):  # start some playouts mid-game, after a swap or not
            if not ours.is_terminal():
                moves = ours.legal_moves()
                ours.play(moves[int(rng.integers(len(moves)))])
        winner = ours.random_playout(rng)
        theirs = game.new_initial_state()
        for move in ours.history:
            if theirs.is_terminal():
                break
            theirs.apply_action(int(move))
        assert theirs.is_terminal()
        assert theirs.returns()[winner] == 1


def test_connect_four_fast_playout_winner_agrees_with_openspiel(pyspiel) -> None:
    game = pyspiel.load_game("connect_four")
    rng = np.random.default_rng(7)
    for _ in range(1000):
        ours = ConnectFourState()
        winner = ours.random_playout(rng)
        theirs = game.new_initial_state()
        for move in ours.history:
            theirs.apply_action(int(move))
        assert theirs.is_terminal()
        expected = None if theirs.returns()[0] == 0 else (0 if theirs.returns()[0] > 0 else 1)
        assert winner == expected

"""Connect Four and Hex rules: wins in every direction, draws, parsing, swap, copies, action encodings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rollgym.core.errors import ConfigError
from rollgym.envs.games.base import MoveError
from rollgym.envs.games.connect_four import ConnectFourState
from rollgym.envs.games.hex import HexState
from rollgym.envs.games.replay import replay, state_from_config


def _brute_force_line(state: ConnectFourState, player: int) -> bool:
    """An independent k-in-a-row check by scanning every cell and direction."""
    k = state.x_in_row
    for row, col in itertools.product(range(state.rows), range(state.columns)):
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            cells = [(row + i * dr, col + i * dc) for i in range(k)]
            if all(0 <= r < state.rows and 0 <= c < state.columns and state.cell(r, c) == player for r, c in cells):
                return True
    return False


@pytest.mark.parametrize(("rows", "columns", "k"), [(6, 7, 4), (5, 5, 3), (8, 9, 5), (3, 12, 6), (6, 7, 2)])
def test_connect_four_winner_matches_brute_force_scan(rows: int, columns: int, k: int) -> None:
    rng = np.random.default_rng(rows + columns + k)
    for _ in range(30):
        state = ConnectFourState(rows, columns, k)
        while not state.is_terminal():
            moves = state.legal_moves()
            state.play(moves[int(rng.integers(len(moves)))])
            mover = 1 - state.current_player
            assert (state.winner() == mover) == _brute_force_line(state, mover)


def test_connect_four_lines_in_each_direction() -> None:
    for moves, winner in [
        ([0, 0, 1, 1, 2, 2, 3], 0),  # horizontal
        ([0, 1, 0, 1, 0, 1, 0], 0),  # vertical
        ([0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3], 0),  # rising diagonal
        ([6, 5, 5, 4, 4, 3, 4, 3, 3, 0, 3], 0),  # falling diagonal
        ([6, 0, 0, 1, 1, 2, 2, 3], 1),  # O wins along the bottom
    ]:
        state = ConnectFourState()
        for col in moves:
            assert not state.is_terminal()
            state.play(col)
        assert state.winner() == winner and state.legal_moves() == []


def test_connect_four_draw_on_full_board() -> None:
    state = ConnectFourState(rows=1, columns=4, x_in_row=3)
    for col in [0, 1, 2, 3]:  # X O X O: no three in a row
        state.play(col)
    assert state.is_terminal() and state.winner() is None and state.score(0) == 0.5


def test_connect_four_parse_and_errors() -> None:
    state = ConnectFourState()
    for text in ["4", "col 4", "Column 4", "[4]", "column: 4", "4."]:
        assert state.parse_move(text) == 3
    for col in [0] * 6:
        state.play(col)
    with pytest.raises(MoveError) as full:
        state.parse_move("1")
    assert full.value.label == "illegal"
    bad = [("8", "invalid"), ("0", "invalid"), ("e2e4", "invalid"), ("c3", "invalid"), ("four", "invalid")]
    for text, label in bad:
        with pytest.raises(MoveError) as err:
            state.parse_move(text)
        assert err.value.label == label, text


def test_connect_four_config_validation() -> None:
    with pytest.raises(ConfigError, match="x_in_row"):
        ConnectFourState(rows=3, columns=3, x_in_row=5)
    with pytest.raises(ConfigError, match="rows"):
        ConnectFourState(rows=0)


def test_hex_neighbours_and_edges() -> None:
    state = HexState(5)
    for cell in ["c1", "a1", "c2", "a2", "c3", "a3", "c4", "a4"]:
        state.play(state.parse_move(cell))
    assert not state.is_terminal()
    # c4 (row 4, column c) touches c5 and b5 below it, not d5
    assert sorted(state.winning_moves(0)) == sorted([state.parse_move("c5"), state.parse_move("b5")])
    assert state.winning_moves(1) == []  # White's a-column chain joins top and bottom, not left and right
    state.play(state.parse_move("d5"))
    assert not state.is_terminal()
    diag = HexState(2)
    for cell in ["b1", "a1", "a2"]:  # b1 (0,1) and a2 (1,0) are neighbours: Black joins top and bottom
        diag.play(diag.parse_move(cell))
    assert diag.winner() == 0
    other = HexState(2)
    for cell in ["a1", "b1", "b2"]:  # a1 (0,0) and b2 (1,1) are not neighbours
        other.play(other.parse_move(cell))
    assert not other.is_terminal()


def test_hex_swap_rule() -> None:
    state = HexState(5, swap=True)
    state.play(state.parse_move("d2"))
    assert state.swap_move in state.legal_moves()
    state.play(state.parse_move("swap"))
    assert state.cells.count(0) == 0 and state.cells[3 * 5 + 1] == 1  # d2 (r1, c3) becomes White at b4 (r3, c1)
    assert state.current_player == 0 and state.swap_move not in state.legal_moves()
    with pytest.raises(MoveError, match="second move"):
        state.parse_move("swap")
    plain = HexState(5)
    plain.play(0)
    with pytest.raises(MoveError, match="off"):
        plain.parse_move("swap")


@pytest.mark.parametrize(("text", "label"), [("z9", "invalid"), ("f1", "invalid"), ("a6", "invalid"), ("3", "invalid"),
                                             ("e2e4", "invalid"), ("a1", "illegal")])
def test_hex_parse_errors(text: str, label: str) -> None:
    state = HexState(5)
    state.play(0)
    with pytest.raises(MoveError) as err:
        state.parse_move(text)
    assert err.value.label == label


def test_copies_are_independent_and_configs_replay() -> None:
    rng = np.random.default_rng(0)
    for state in [ConnectFourState(), HexState(7, swap=True)]:
        for _ in range(5):
            moves = state.legal_moves()
            state.play(moves[int(rng.integers(len(moves)))])
        copy = state.copy()
        copy.random_playout(rng)
        assert len(state.history) == 5 and not state.is_terminal()
        again = replay(state.config(), state.move_history_text())
        assert again.ascii() == state.ascii() and again.current_player == state.current_player
        assert state_from_config(state.config()).history == []


def test_planes_and_masks() -> None:
    state = HexState(5, swap=True)
    state.play(7)
    mask = state.action_mask()
    assert mask.sum() == 25 and mask[7] == 0 and mask[25] == 1
    planes = state.planes(0)
    assert planes.shape == (5, 5, 3) and planes[1, 2, 0] == 1 and state.planes(1)[1, 2, 1] == 1
    assert planes[:, :, 2].max() == 0  # White to move
    c4 = ConnectFourState()
    c4.play(3)
    assert c4.planes(0)[5, 3, 0] == 1  # bottom row is the last row of the array


def test_fast_winning_moves_match_trying_every_move() -> None:
    from rollgym.envs.games.base import GameState

    rng = np.random.default_rng(11)
    checked = 0
    makers = (lambda: ConnectFourState(), lambda: ConnectFourState(5, 6, 3), lambda: HexState(5), lambda: HexState(7))
    for make in makers:
        for _ in range(40):
            state = make()
            while not state.is_terminal():
                player = state.current_player
                fast = sorted(state.winning_moves(player))
                assert fast == sorted(GameState.winning_moves(state, player)), state.ascii()
                checked += bool(fast)
                moves = state.legal_moves()
                state.play(moves[int(rng.integers(len(moves)))])
    assert checked > 50  # the positions included many real threats

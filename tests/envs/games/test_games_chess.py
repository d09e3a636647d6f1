"""Chess and Chess960 rules through rollgym's ChessState: perft, move parsing, draws, castling."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from rollgym.envs.games.base import MoveError
from rollgym.envs.games.chess_state import ChessState
from tests.conftest import require_binary, require_module

require_module("chess")

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
# Known perft values (chessprogramming.org "Perft Results"; the Chess960 line from the Chess960 perft list).
PERFT_CASES = [
    (None, False, [20, 400, 8902]),
    (KIWIPETE, False, [48, 2039, 97862]),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", False, [14, 191, 2812]),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", False, [6, 264, 9467]),
    ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", False, [44, 1486, 62379]),
    ("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", True, [21, 528, 12189]),
]


def perft(state: ChessState, depth: int) -> int:
    """Leaf count through the GameState interface (legal_moves, copy, play)."""
    moves = state.legal_moves()
    if depth == 1:
        return len(moves)
    total = 0
    for move in moves:
        child = state.copy()
        child.play(move)
        total += perft(child, depth - 1)
    return total


@pytest.mark.parametrize(("fen", "chess960", "expected"), PERFT_CASES)
def test_perft_matches_known_values(fen: str | None, chess960: bool, expected: list[int]) -> None:
    state = ChessState(chess960=chess960, fen=fen)
    for depth, nodes in enumerate(expected, start=1):
        assert perft(state, depth) == nodes, f"perft({depth}) of {fen or 'startpos'}"


def _stockfish_perft(binary: str, fen: str, depth: int) -> int:
    script = f"setoption name UCI_Chess960 value true\nposition fen {fen}\ngo perft {depth}\nquit\n"
    out = subprocess.run([binary], input=script, capture_output=True, text=True, timeout=60).stdout
    line = next(line for line in out.splitlines() if line.startswith("Nodes searched"))
    return int(line.split(":")[1])


def test_chess960_perft_matches_stockfish_on_random_start_positions() -> None:
    binary = require_binary("stockfish", "/usr/games/stockfish")
    rng = np.random.default_rng(960)
    for number in [0, 518, 959, *rng.integers(0, 960, size=2).tolist()]:
        state = ChessState(chess960=True, start_position=int(number))
        for _ in range(6):  # a few random plies so that castling rights and captures matter
            moves = state.legal_moves()
            state.play(moves[int(rng.integers(len(moves)))])
        assert perft(state, 2) == _stockfish_perft(binary, state.fen(), 2), f"start position {number}"


def test_chess960_start_positions_by_number() -> None:
    assert ChessState(chess960=True, start_position=518).fen().startswith("rnbqkbnr/pppppppp")
    assert ChessState(chess960=True, start_position=0).fen().startswith("bbqnnrkr/")
    fens = {ChessState(chess960=True, start_position=n).fen() for n in range(0, 960, 7)}
    assert len(fens) == len(range(0, 960, 7))


@pytest.mark.parametrize(
    ("text", "uci"),
    [("e4", "e2e4"), ("e2e4", "e2e4"), ("E2-E4", "e2e4"), ("1. e4", "e2e4"), ("Nf3", "g1f3"), ("nf3", "g1f3"),
     ("g1f3", "g1f3"), ("Nf3!?", "g1f3"), ("`e4`", "e2e4")],
)
def test_parse_move_accepts_san_and_uci(text: str, uci: str) -> None:
    state = ChessState()
    assert state.parse_move(text).uci() == uci


def test_parse_castling_check_and_promotion_notations() -> None:
    state = ChessState(fen="r3k2r/1P6/8/8/8/8/8/R3K2R w KQkq - 0 1")
    for text in ["O-O", "0-0", "e1g1", "O-O+", "o-o", "e1h1"]:
        assert state.parse_move(text).uci() == "e1g1", text
    assert state.parse_move("0-0-0").uci() == "e1c1"
    assert state.parse_move("bxa8=Q").uci() == "b7a8q"
    assert state.parse_move("b7a8q").uci() == "b7a8q"
    assert state.parse_move("bxa8=N+").uci() == "b7a8n"
    assert state.parse_move("b8=R").uci() == "b7b8r"


def test_chess960_castling_king_takes_rook_and_san() -> None:
    state = ChessState(chess960=True, fen="1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 w GBgb - 0 1")
    short = state.parse_move("O-O")
    assert state.move_uci(short) == "e1g1" and state.board.is_castling(short)
    state.play(short)
    assert state.board.piece_at(6).symbol() == "K" and state.board.piece_at(5).symbol() == "R"
    state2 = ChessState(chess960=True, fen="1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 w GBgb - 0 1")
    long_ = state2.parse_move("e1b1")
    assert state2.board.is_castling(long_)
    assert state2.move_to_text(long_) == "O-O-O"


@pytest.mark.parametrize(
    ("fen", "text", "label"),
    [
        (None, "e5", "illegal"),
        (None, "e2e5", "illegal"),
        (None, "Ke2", "illegal"),
        (None, "hello", "invalid"),
        (None, "4", "invalid"),
        (None, "c3 d4", "invalid"),
        ("4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1", "Nd2", "ambiguous"),
    ],
)
def test_parse_move_errors_are_labelled(fen: str | None, text: str, label: str) -> None:
    with pytest.raises(MoveError) as info:
        ChessState(fen=fen).parse_move(text)
    assert info.value.label == label


def test_draws_are_claimed_automatically_and_ply_cap_adjudicates() -> None:
    state = ChessState()
    for san in ["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1"]:
        state.play(state.parse_move(san))
    assert not state.is_terminal()
    state.play(state.parse_move("Ng8"))  # the start position stands for the third time
    assert state.is_terminal() and state.winner() is None and state.termination() == "threefold_repetition"
    bare = ChessState(fen="8/8/8/4k3/8/8/8/4K2N b - - 0 1")
    assert bare.is_terminal() and bare.termination() == "insufficient_material"
    fifty = ChessState(fen="8/8/8/4k3/8/8/3R4/4K3 w - - 99 80")
    assert not fifty.is_terminal()
    fifty.play(fifty.parse_move("Rd3"))
    assert fifty.termination() == "fifty_moves" and fifty.score(0) == 0.5
    capped = ChessState(max_plies=4)
    for san in ["e4", "e5", "Nf3", "Nc6"]:
        capped.play(capped.parse_move(san))
    assert capped.is_terminal() and capped.termination() == "ply_cap" and capped.score(1) == 0.5


def test_checkmate_winner_and_mate_in_one_detection() -> None:
    state = ChessState()
    for san in ["f3", "e5", "g4"]:
        state.play(state.parse_move(san))
    mates = state.winning_moves(1)
    assert [state.move_to_text(m) for m in mates] == ["Qh4#"]
    state.play(mates[0])
    assert state.winner() == 1 and state.termination() == "checkmate"


def test_action_encoding_round_trips_every_legal_move() -> None:
    rng = np.random.default_rng(3)
    for fen in [None, KIWIPETE, "r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R w KQkq - 0 1"]:
        state = ChessState(fen=fen)
        for _ in range(20):
            if state.is_terminal():
                break
            actions = [state.action_of(m) for m in state.legal_moves()]
            assert len(set(actions)) == len(actions)
            assert all(0 <= a < state.num_actions for a in actions)
            assert [state.move_of(a) for a in actions] == state.legal_moves()
            moves = state.legal_moves()
            state.play(moves[int(rng.integers(len(moves)))])

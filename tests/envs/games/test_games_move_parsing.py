"""Move parsing in every game: a legal move in any documented notation plays exactly that move; anything else, none.

The chess oracle below spells every legal move in every way the docs allow
(SAN, long algebraic, UCI; marks, case and disambiguation variants) and maps
each spelling to the moves it names. Hypothesis then checks both directions:
every documented spelling of every legal move parses to that move, and any
other text (grammar-shaped junk, null moves, drops, random strings) parses to
the one move it names, is ``ambiguous`` when it names several, or raises.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from typing import Any

import numpy as np
import pytest

from rollgym.envs.games.base import MOVE_ERROR_LABELS, MoveError
from rollgym.envs.games.connect_four import ConnectFourState
from rollgym.envs.games.hex import HexState
from tests.conftest import require_module

require_module("chess")
require_module("hypothesis")

import chess  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rollgym.envs.games.chess_state import ChessState  # noqa: E402

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))

#: Start positions with castling both ways, promotions, en passant and Chess960 castling corner cases.
SPECIAL_FENS = [
    (False, "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1"),
    (False, "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"),
    (False, "r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R w KQkq - 0 1"),
    (False, "r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R b KQkq - 0 1"),
    (False, "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"),
    (False, "4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1"),  # two knights reach d2
    (False, "1b2k3/P1P5/8/8/8/8/8/4K3 w - - 0 1"),  # two pawns capture-promote on b8
    (False, "4k3/8/8/8/2B5/8/1P6/4K3 w - - 0 1"),  # a bishop and a b-pawn both reach c3 / b-file tokens
    (True, "rk5r/8/8/8/8/8/8/RK5R w HAha - 0 1"),  # king b1: O-O-O lands on c1, a king step too
    (True, "r5kr/8/8/8/8/8/8/R5KR w HAha - 0 1"),  # king g1: O-O leaves the king where it is
    (True, "1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 w GBgb - 0 1"),  # king e1, rooks b1/g1
    (True, "r3kr2/pppppppp/8/8/8/8/PPPPPPPP/R3KR2 w FAfa - 0 1"),  # king e1, rook f1: O-O is e1f1, e1g1 is nothing
]


def _random_moves(state: Any, plies: int, rng: np.random.Generator) -> Any:
    """``state`` after up to ``plies`` uniformly random legal moves (fewer when the game ends)."""
    for _ in range(plies):
        moves = state.legal_moves()
        if not moves:
            break
        state.play(moves[int(rng.integers(len(moves)))])
    return state


@st.composite
def chess_states(draw: Any) -> ChessState:
    """A position: a special FEN or a (cleared) Chess960 start, then some random legal plies."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["special", "start", "chess960"]))
    if kind == "special":
        chess960, fen = draw(st.sampled_from(SPECIAL_FENS))
        state = ChessState(chess960=chess960, fen=fen)
    elif kind == "start":
        state = ChessState()
    else:
        board = chess.Board.from_chess960_pos(draw(st.integers(0, 959)), )
        if draw(st.booleans()):  # clear the minor pieces and queens off the back ranks so castling comes up
            for square in list(chess.SquareSet(chess.BB_RANK_1 | chess.BB_RANK_8)):
                if board.piece_type_at(square) in (chess.KNIGHT, chess.BISHOP, chess.QUEEN):
                    board.remove_piece_at(square)
        state = ChessState(chess960=True, fen=board.shredder_fen())
    return _random_moves(state, draw(st.integers(0, 30)), rng)


# -- the oracle: every accepted spelling of every legal move ---------------------------------------

_PAWN_SHAPE = re.compile(r"^(?:[a-h]x)?[a-h][1-8](?:=?[QRBNqrbn])?$")
_COORD_SHAPE = re.compile(r"^[a-h][1-8][-x]?[a-h][1-8](?:=?[qrbn])?$")


def _promotions(move: chess.Move) -> list[str]:
    if move.promotion is None:
        return [""]
    letter = chess.piece_symbol(move.promotion)
    return [letter.upper(), "=" + letter.upper(), letter, "=" + letter]


def _coordinate_spellings(origin: str, target: str, move: chess.Move) -> set[str]:
    """Lower-case spellings with both squares (UCI and long algebraic without a piece letter)."""
    promos = [""] if move.promotion is None else [p.lower() for p in _promotions(move)]
    return {origin + sep + target + promo for sep in ("", "-", "x") for promo in promos}


def spellings(state: ChessState) -> tuple[dict[str, set[chess.Move]], dict[str, set[chess.Move]]]:
    """``(exact, coordinates)``: which legal moves each case-sensitive / lower-cased text names."""
    board = state.board
    exact: dict[str, set[chess.Move]] = defaultdict(set)
    coords: dict[str, set[chess.Move]] = defaultdict(set)
    legal = state.legal_moves()  # none once the game is over (a claimed draw leaves python-chess moves)
    primary = {(m.from_square, m.to_square, m.promotion) for m in legal}
    for move in legal:
        origin, target = chess.square_name(move.from_square), chess.square_name(move.to_square)
        if board.is_castling(move):
            long = board.is_queenside_castling(move)
            for letters in itertools.product("Oo0", repeat=3 if long else 2):
                exact["-".join(letters)].add(move)
            uci = board.uci(move, chess960=state.chess960)
            coords[uci].add(move)  # king-takes-rook (Chess960) or the king's two squares (standard)
            alias = board.uci(move, chess960=not state.chess960)
            alias_key = (chess.parse_square(alias[:2]), chess.parse_square(alias[2:4]), None)
            if alias != uci and alias[:2] != alias[2:4] and alias_key not in primary:
                coords[alias].add(move)
            continue
        for text in _coordinate_spellings(origin, target, move):
            coords[text].add(move)
        piece = board.piece_type_at(move.from_square)
        if piece == chess.PAWN:
            straight = chess.square_file(move.from_square) == chess.square_file(move.to_square)
            stem = target if straight else f"{origin[0]}x{target}"
            for promo in _promotions(move):
                exact[stem + promo].add(move)
            continue
        letter = chess.piece_symbol(piece).upper()
        letters = [letter] + ([letter.lower()] if letter in "NRQKB" else [])
        for first, dis, sep in itertools.product(letters, ("", origin[0], origin[1], origin), ("", "x", "-")):
            text = first + dis + sep + target
            if first == "b" and (_PAWN_SHAPE.match(text) or _COORD_SHAPE.match(text)):
                continue  # a lower-case b that reads as a pawn move or as squares is not the bishop
            exact[text].add(move)
    return exact, coords


def named_moves(core: str, exact: dict[str, set[chess.Move]], coords: dict[str, set[chess.Move]]) -> set[chess.Move]:
    """The legal moves that ``core`` (a token without decorations) names."""
    if _COORD_SHAPE.match(core.lower()):
        return coords.get(core.lower(), set())
    return exact.get(core, set())


def canonical_spellings(state: ChessState, move: chess.Move) -> list[str]:
    """The documented ways to write ``move``: SAN and LAN with and without marks, UCI variants."""
    board = state.board
    san, lan = board.san(move), board.lan(move)
    uci = board.uci(move, chess960=state.chess960)
    texts = [san, san.rstrip("+#"), lan, lan.rstrip("+#"), uci, uci.upper(), f"{uci[:2]}-{uci[2:]}"]
    if move.promotion:
        texts.append(f"{uci[:4]}={uci[4].upper()}")
    if san[0] in "NRQK":
        texts.append(san[0].lower() + san[1:])
    decorated = [f"[{san}]", f"`{san}`", f"**{san}**", f"{san}!?", f"{san}?", f"1. {san}", f"12... {san}",
                 f"({uci})", f"'{lan}'", f"{san.rstrip('+#')}+"]
    return texts + decorated


def _parse(state: ChessState, text: str) -> chess.Move | MoveError:
    try:
        return state.parse_move(text)
    except MoveError as err:
        return err


# -- chess ------------------------------------------------------------------------------------------


@SETTINGS
@given(chess_states())
def test_every_legal_move_in_every_notation_plays_exactly_that_move(state: ChessState) -> None:
    exact, coords = spellings(state)
    before = state.board.fen()
    for move in state.legal_moves():
        for text in canonical_spellings(state, move):
            result = _parse(state, text)
            assert result == move, f"{text!r} in {before}: got {result!r}, expected {state.board.uci(move)}"
        core = state.board.san(move).rstrip("+#")
        assert named_moves(core, exact, coords) == {move}, f"the oracle disagrees about {core!r}"
    assert state.board.fen() == before  # parsing never touches the board


#: Tokens every position is tried with: null moves, drops, and near misses of real notation.
FIXED_JUNK = ["--", "Z0", "z0", "0000", "@@@@", "null", "pass", "P@e4", "N@f3", "@e4", "e2e4e5", "Kg1", "Ke1g1",
              "Ke1-g1", "Kc1", "ed5", "exe5", "e7e8", "e8", "e8=K", "e8=P", "O-O-O-O", "OO", "0-0-0-0", "bb3", "bb5",
              "bc3", "bxc3", "Bxc3", "b3", "Pe4", "E4", "e4", "Nf3", "nf3", "Nbd2", "N1d2", "b1a1", "b1c1", "g1h1",
              "e1g1", "e1h1", "e1c1", "e1a1", "g1g1", "a7a8", "a7a8k", "b7a8=Q", "b7xa8q", "b7-a8n"]
JUNK_CORES = st.one_of(
    st.from_regex(r"\A[KQRBNPkqrbnp]?[a-i]?[0-9]?[-x]?[a-i][0-9](?:=?[QRBNKPqrbnkp])?\Z", fullmatch=True),
    st.from_regex(r"\A[a-hA-H][1-8][-xX]?[a-hA-H][1-8]=?[qrbnkQRBNK]?\Z", fullmatch=True),
    st.from_regex(r"\A[oO0]-[oO0](?:-[oO0]){0,2}\Z", fullmatch=True),
    st.text(alphabet="abcdefghKQRBNPkqrnxoO0Z-=@18", min_size=1, max_size=7),
)
DECORATIONS = ["{}", "[{}]", "`{}`", "{}+", "{}#", "{}!!", "1. {}", "7...{}", " {} ", "{}."]
MUTATIONS = ["keep", "lower", "upper", "swapcase-first", "drop-first", "drop-last", "replace-first", "insert-second",
             "append", "drop-x", "drop-dash"]


def mutate(text: str, how: str, char: str) -> str:
    """A near miss of a real spelling (a changed piece letter, a lost capture mark, ...)."""
    changed = {
        "keep": text,
        "lower": text.lower(),
        "upper": text.upper(),
        "swapcase-first": text[:1].swapcase() + text[1:],
        "drop-first": text[1:],
        "drop-last": text[:-1],
        "replace-first": char + text[1:],
        "insert-second": text[:1] + char + text[1:],
        "append": text + char,
        "drop-x": text.replace("x", ""),
        "drop-dash": text.replace("-", ""),
    }[how]
    return changed or char


@SETTINGS
@given(chess_states(), st.data())
def test_any_other_text_plays_the_one_move_it_names_or_nothing(state: ChessState, data: st.DataObject) -> None:
    exact, coords = spellings(state)
    real = sorted(set(exact) | set(coords)) or ["e4"]
    near_misses = st.builds(mutate, st.sampled_from(real), st.sampled_from(MUTATIONS),
                            st.sampled_from("KQRBNPkqrbnpxX-=o018ah@"))
    drawn = data.draw(st.lists(st.tuples(st.one_of(JUNK_CORES, near_misses, near_misses),
                                         st.sampled_from(DECORATIONS)), min_size=20, max_size=40))
    for core, decoration in [(token, "{}") for token in FIXED_JUNK] + drawn:
        text = decoration.format(core)
        named = named_moves(core, exact, coords)
        result = _parse(state, text)
        if isinstance(result, MoveError):
            assert result.label in MOVE_ERROR_LABELS
            assert len(named) != 1, f"{text!r} names {named} but was refused: {result}"
            if len(named) > 1:
                assert result.label == "ambiguous", text
        else:
            assert named == {result}, f"{text!r} played {result.uci()}, but names {[m.uci() for m in named]}"
            assert state.is_legal(result) and bool(result) and result.drop is None


@pytest.mark.parametrize("token", ["--", "Z0", "z0", "0000", "@@@@", "null", "pass", "P@e4", "N@f3", "Q@h5",
                                   "@@", "(none)", "[--]", "1. --", "--+", "Final Answer"])
@pytest.mark.parametrize("chess960", [False, True])
def test_null_moves_and_drops_are_invalid(token: str, chess960: bool) -> None:
    state = ChessState(chess960=chess960, start_position=518 if not chess960 else 123)
    with pytest.raises(MoveError) as info:
        state.parse_move(token)
    assert info.value.label == "invalid"
    assert not state.is_legal(chess.Move.null()) and not state.is_legal(chess.Move.from_uci("P@e4"))


@SETTINGS
@given(chess_states(), st.text(max_size=40))
def test_arbitrary_text_never_raises_anything_but_a_labelled_move_error(state: ChessState, text: str) -> None:
    result = _parse(state, text)
    if isinstance(result, MoveError):
        assert result.label in MOVE_ERROR_LABELS and len(str(result)) < 300
    else:
        assert state.is_legal(result)


def test_the_rules_the_grammar_documents() -> None:
    state = ChessState(fen="4k3/8/8/8/2B5/8/1P6/4K3 w - - 0 1")
    assert state.parse_move("b3").uci() == "b2b3"  # a lower-case b reading as a pawn move is the pawn
    assert state.parse_move("Bb3").uci() == "c4b3"
    assert state.parse_move("bb5").uci() == "c4b5"  # ... and the bishop otherwise
    assert state.parse_move("bd5").uci() == "c4d5"
    with pytest.raises(MoveError, match="write B for a bishop") as info:
        state.parse_move("bxd5")
    assert info.value.label == "illegal"
    with pytest.raises(MoveError) as info:
        ChessState(fen="rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2").parse_move("ed5")
    assert info.value.label == "invalid"  # a pawn capture needs its x
    castle = ChessState(fen="r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1")
    for text in ["Kg1", "Ke1g1", "Ke1-g1"]:
        with pytest.raises(MoveError, match="castle with O-O") as info:
            castle.parse_move(text)
        assert info.value.label == "illegal"
    with pytest.raises(MoveError, match="e7e8q"):
        ChessState(fen="8/4P3/8/8/8/8/8/k3K3 w - - 0 1").parse_move("e7e8")
    # Chess960: the king on b1 steps to c1 with b1c1; only b1a1 or O-O-O castles long.
    c960 = ChessState(chess960=True, fen="rk5r/8/8/8/8/8/8/RK5R w HAha - 0 1")
    assert not c960.board.is_castling(c960.parse_move("b1c1"))
    assert c960.board.is_queenside_castling(c960.parse_move("b1a1"))
    with pytest.raises(MoveError):
        c960.parse_move("b1g1")  # the classical king-two-squares form castles only from e1
    e_file = ChessState(chess960=True, fen="r3kr2/pppppppp/8/8/8/8/PPPPPPPP/R3KR2 w FAfa - 0 1")
    assert e_file.board.is_kingside_castling(e_file.parse_move("e1f1"))
    with pytest.raises(MoveError):
        e_file.parse_move("e1g1")


# -- Connect Four and Hex ---------------------------------------------------------------------------


@st.composite
def connect_four_states(draw: Any) -> ConnectFourState:
    rows, columns = draw(st.integers(4, 8)), draw(st.integers(4, 9))
    state = ConnectFourState(rows, columns, draw(st.integers(3, 4)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return _random_moves(state, draw(st.integers(0, rows * columns)), rng)


_COLUMN_SHAPE = re.compile(r"(?:col(?:umn)?|drop in column|move)?\s*[:#]?\s*([0-9]{1,3})")


@SETTINGS
@given(connect_four_states(), st.lists(st.text(max_size=12) | st.from_regex(
    r"\A(?:col(?:umn)?|drop in column|move)? ?[:#]? ?-?[0-9]{1,3}[.!]?\Z", fullmatch=True), max_size=20))
def test_connect_four_plays_exactly_the_column_named(state: ConnectFourState, junk: list[str]) -> None:
    for col in state.legal_moves():
        for text in [str(col + 1), f"col {col + 1}", f"column {col + 1}", f"Column {col + 1}", f"[{col + 1}]",
                     f"{col + 1}.", f"drop in column {col + 1}"]:
            assert state.parse_move(text) == col, text
    legal = set(state.legal_moves())
    for text in junk:
        numbers = re.findall(r"\d+", text)
        documented = _COLUMN_SHAPE.fullmatch(text.strip().rstrip(".!").lower())
        try:
            move = state.parse_move(text)
        except MoveError as err:
            assert err.label in MOVE_ERROR_LABELS
            assert not (documented and int(documented.group(1)) - 1 in legal), f"{text!r} names a legal column"
        else:  # the text's one number is the column played
            assert move in legal and len(numbers) == 1 and int(numbers[0]) == move + 1, text


@st.composite
def hex_states(draw: Any) -> HexState:
    state = HexState(draw(st.integers(2, 13)), draw(st.booleans()))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return _random_moves(state, draw(st.integers(0, state.size * state.size)), rng)


@SETTINGS
@given(hex_states(), st.lists(st.text(max_size=8) | st.from_regex(r"\A(?:cell |play )?[a-zA-Z] ?[0-9]{1,3}\Z",
                                                                   fullmatch=True), max_size=20))
def test_hex_plays_exactly_the_cell_named(state: HexState, junk: list[str]) -> None:
    for move in state.legal_moves():
        name = state.move_to_text(move)
        texts = [name, name.upper(), f"[{name}]", f"cell {name}", f"play {name}"]
        if name != "swap":
            texts.append(f"{name[0]} {name[1:]}")
        else:
            texts.append("pie")
        for text in texts:
            assert state.parse_move(text) == move, text
    legal = set(state.legal_moves())
    for text in junk:
        try:
            move = state.parse_move(text)
        except MoveError as err:
            assert err.label in MOVE_ERROR_LABELS
            continue
        assert move in legal, text
        lowered = text.lower()
        if move == state.swap_move:
            assert "swap" in lowered or "pie" in lowered, text
        else:  # the text's one letter-and-number pair is the cell played
            name = state.move_to_text(move)
            numbers = re.findall(r"\d+", lowered)
            assert len(numbers) == 1 and int(numbers[0]) == int(name[1:]) and name[0] in lowered, text


# -- through the envs: the move played is the one named ---------------------------------------------


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["Chess-v1", "Chess960-v1"]), st.integers(0, 1000), st.data())
def test_the_chess_envs_play_exactly_the_move_named(env_id: str, seed: int, data: st.DataObject) -> None:
    import gymnasium as gym

    import rollgym  # noqa: F401

    env = gym.make(env_id, opponent="random", max_plies=40, max_retries=100)
    _, info = env.reset(seed=seed)
    for _ in range(20):
        state: ChessState = env.unwrapped.state
        played = len(info["moves"])
        if data.draw(st.booleans()):
            move = data.draw(st.sampled_from(state.legal_moves()))
            text = data.draw(st.sampled_from(canonical_spellings(state, move)))
            expected: chess.Move | None = move
        else:
            exact, coords = spellings(state)
            text = data.draw(st.one_of(JUNK_CORES, st.sampled_from(FIXED_JUNK)))
            named = named_moves(text, exact, coords)
            expected = next(iter(named)) if len(named) == 1 else None
        san = state.board.san(expected) if expected is not None else None
        _, _, terminated, truncated, info = env.step(f"Thinking...\nFinal Answer: {text}")
        if san is None:
            assert info["error"] in {"invalid", "illegal", "ambiguous", "no_move"} and len(info["moves"]) == played
        else:
            assert info["error"] is None and info["moves"][played] == san, (text, san)
        assert not truncated
        if terminated:
            break
    env.close()


@pytest.mark.parametrize("chess960", [False, True])
def test_the_aec_env_plays_exactly_the_move_named(chess960: bool) -> None:
    require_module("pettingzoo")
    from rollgym.envs.games.pettingzoo_env import chess_aec

    rng = np.random.default_rng(7)
    env = chess_aec(chess960=chess960, start_position=300 if chess960 else 518, max_plies=60)
    env.reset(seed=0)
    while not any(env.terminations.values()):
        state = env.state
        move = state.legal_moves()[int(rng.integers(len(state.legal_moves())))]
        texts = canonical_spellings(state, move)
        text = texts[int(rng.integers(len(texts)))]
        san = state.board.san(move)
        env.step(f"Final Answer: {text}")
        assert env.state.move_history_text()[-1] == san, (text, san)

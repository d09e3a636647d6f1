"""Chess and Chess960 text envs on python-chess (imported lazily), against random, greedy or Stockfish."""

from __future__ import annotations

from typing import Any

import numpy as np

from rollgym.core.difficulty import Level
from rollgym.envs.games.base import GameState
from rollgym.envs.games.bots import bot_name
from rollgym.envs.games.chess_state import STANDARD_START, ChessState
from rollgym.envs.games.config import ChessConfig
from rollgym.envs.games.text_env import TwoPlayerTextEnv


class ChessEnv(TwoPlayerTextEnv):
    """Chess against a built-in opponent, in text.

    ## Description
    The agent plays White or Black against a bot: ``random``, ``greedy`` (mate in
    one, else best one-ply material without allowing mate in one), or Stockfish
    (``stockfish``, ``stockfish-skill-<0..20>``, ``stockfish-elo-<E>``; needs
    ``apt-get install stockfish``). Draws by threefold repetition, the 50-move rule
    and insufficient material are claimed automatically; after ``max_plies``
    half-moves the game is adjudicated a draw.

    ## Action Space
    A string. The move is read from the last ``Final Answer: <move>`` line, else the
    last bracketed token (``[e2e4]``), else a reply that is only a move. It must be a
    legal move of the position, written in one of
    :data:`~rollgym.envs.games.chess_state.MOVE_NOTATIONS`: SAN (``Nf3``, ``Nbd2``,
    ``exd5``, ``O-O``, ``0-0-0``, ``e8=Q+``), long algebraic (``Ng1-f3``, ``e2-e4``) or
    UCI (``g1f3``, ``e7e8q``); check marks, annotation marks and move numbers are
    ignored. A null move (``--``, ``Z0``, ``0000``, ``@@@@``, ``pass``) or a drop
    (``P@e4``) is ``invalid``: there is no passing.

    ## Observation Space
    A string: the board (White at the bottom, upper case White, coordinates), the
    FEN, the move history in SAN, whose turn, the legal moves in SAN
    (``show_legal_moves``), what went wrong with the last answer, and how to answer.

    ## Starting State
    The classical start position, plus ``random_opening_plies`` random moves; when
    the agent plays Black the opponent moves first.

    ## Rewards
    0 on non-final steps; at the end 1 / 0.5 / 0 for win / draw / loss (or +1 / 0 / -1
    with ``reward_scheme="signed"``). A forfeit is a loss.

    ## Episode End
    Terminated at checkmate, stalemate, a claimed draw, the ply cap (a draw), or a forfeit.
    Truncated, with ``info["error"] == "opponent_failed"`` and the reason in
    ``info["failure"]``, when the opponent cannot go on (a Stockfish process that died):
    the game has no result, and the rollout collector records the episode as failed.

    ## Information
    As for :class:`~rollgym.envs.games.connect_four.ConnectFourEnv` (moves and
    legal moves in SAN), plus ``fen`` and ``legal_moves_uci``; at the end
    ``record`` and ``pgn``.

    ## Arguments
    ``max_plies=300``, ``opponent="random"``, ``opponent_kwargs`` (e.g.
    ``{"movetime": 0.1}`` or ``{"nodes": 20000}`` for Stockfish), plus those of
    :class:`~rollgym.envs.games.text_env.TwoPlayerTextEnv`.

    ## Version History
    * v1: only legal moves named in the documented notations are played. Under v0,
      python-chess read ``--``, ``Z0``, ``0000`` and ``@@@@`` as a null move, so an agent
      could pass every turn (0.33 a game against random over 6 games; against Stockfish
      the engine crashed and ``step`` raised); now they are ``invalid``. Moves are read by
      rollgym's own grammar: a pawn capture needs its ``x`` (``exd5``, not ``ed5``), a
      lower-case ``b`` that reads as a pawn move is the b-pawn, ``Kg1`` never castles. A
      crashed opponent truncates the episode as failed (``opponent_failed``). The terminal
      ``info`` carries the Score fields, with ``correct`` true only for a win. v0 is no
      longer registered.
    * v0: initial release.
    """

    default_env_id = "Chess-v1"
    levels = (
        Level("random", {"opponent": "random"}, "a random opponent"),
        Level("greedy", {"opponent": "greedy"},
              "a greedy opponent (mate in one, no mate-in-one blunders, else the best capture)"),
        *(Level(f"stockfish-nodes-{n}", {"opponent": f"stockfish-nodes-{n}"},
                f"Stockfish searching {n:,} nodes a move (one thread: reproducible)")
          for n in (32, 256, 2048, 16384)),
    )
    game_title = "chess"
    move_hint = "one move in SAN (Nf3, O-O, e8=Q) or UCI (g1f3)"
    move_example = "e4"
    chess960 = False

    def __init__(self, max_plies: int | None = 300, **kwargs: Any) -> None:
        self.config = self._chess_config(max_plies)
        self.max_plies = self.config.max_plies
        ChessState()  # fail now, with the install hint, if python-chess is missing
        super().__init__(**kwargs)

    def _chess_config(self, max_plies: int | None) -> ChessConfig:
        return ChessConfig(max_plies=max_plies)

    def new_state(self, task_meta: dict[str, Any]) -> ChessState:
        return ChessState(chess960=self.chess960, start_position=int(task_meta.get("start_position", STANDARD_START)),
                          max_plies=self.max_plies)

    def rules_text(self) -> str:
        cap = ""
        if self.max_plies:
            cap = f" A game still running after {self.max_plies} half-moves is adjudicated a draw."
        return (
            "Standard chess rules. Draws by threefold repetition, the fifty-move rule and insufficient material "
            f"are claimed automatically.{cap} White pieces are upper case, Black lower case."
        )

    def history_text(self, moves: list[str]) -> str:
        """Numbered SAN, e.g. ``1. e4 e5 2. Nf3`` (every start position here has White to move)."""
        if not moves:
            return "(none yet)"
        return " ".join(f"{i // 2 + 1}. {san}" if i % 2 == 0 else san for i, san in enumerate(moves))

    def extra_info(self, state: GameState) -> dict[str, Any]:
        assert isinstance(state, ChessState)
        return {"fen": state.fen(), "legal_moves_uci": [state.move_uci(m) for m in state.legal_moves()]}

    def _info(self, error: str | None = None, final: bool = False) -> dict[str, Any]:
        info = super()._info(error=error, final=final)
        if final:
            info["pgn"] = self.pgn()
        return info

    def pgn(self) -> str:
        """The game so far in PGN, with the agent and the opponent as players."""
        from rollgym.envs.games.records import chess_pgn

        assert self.state is not None
        names = ["agent", bot_name(self.opponent, "opponent")]
        if self.agent_player == 1:
            names.reverse()
        result = getattr(self, "_result", None)
        tag = None
        if result and result.get("termination") == "forfeit":
            tag = "0-1" if self.agent_player == 0 else "1-0"
        return chess_pgn(self.state, white=names[0], black=names[1], result=tag)

    def svg(self) -> str:
        """An SVG image of the current position."""
        from rollgym.envs.games.records import chess_svg

        assert self.state is not None
        return chess_svg(self.state)


class Chess960Env(ChessEnv):
    """Chess960 (Fischer random chess) against a built-in opponent, in text.

    ## Description
    As :class:`ChessEnv`, from one of the 960 Chess960 start positions, with
    Chess960 castling: the king and rook end on the same squares as in classical
    castling (g/f or c/d files) whatever their start squares.

    ## Action Space
    As :class:`ChessEnv`; castling is ``O-O`` / ``O-O-O`` in SAN, or king-takes-own-rook
    in UCI (``b1a1``, ``e1h1``). When the king starts on e1 or e8, the classical UCI
    castling (``e1g1``, ``e1c1``) is read as castling too; no other king move castles.

    ## Observation Space
    As :class:`ChessEnv`; the FEN uses Shredder-FEN castling letters (``HAha``).

    ## Starting State
    Start position ``start_position`` (0-959), or when ``None`` one drawn per task.

    ## Rewards
    As :class:`ChessEnv`.

    ## Episode End
    As :class:`ChessEnv`.

    ## Information
    As :class:`ChessEnv`, plus ``task_meta["start_position"]``.

    ## Arguments
    ``start_position=None`` (or 0-959), plus those of :class:`ChessEnv`.

    ## Version History
    * v1: as ``Chess-v1``: null moves and drops are ``invalid`` (under v0 an agent could
      pass its turn), rollgym's own move grammar, a crashed opponent fails the episode.
      v0 is no longer registered.
    * v0: initial release.
    """

    default_env_id = "Chess960-v1"
    game_title = "Chess960"
    chess960 = True

    def __init__(self, start_position: int | None = None, **kwargs: Any) -> None:
        self._start_position_arg = start_position
        super().__init__(**kwargs)

    def _chess_config(self, max_plies: int | None) -> ChessConfig:
        return ChessConfig(max_plies=max_plies, start_position=self._start_position_arg)

    @property
    def start_position(self) -> int | None:
        """The fixed start position (0-959), or ``None`` when each task draws one."""
        return self.config.start_position

    def draw_meta(self, rng: np.random.Generator, index: int) -> dict[str, Any]:
        meta = super().draw_meta(rng, index)
        number = self.start_position if self.start_position is not None else int(rng.integers(960))
        meta["start_position"] = number
        return meta

    def rules_text(self) -> str:
        return (
            "Chess960 (Fischer random chess): the pieces start on a shuffled back rank; otherwise standard chess "
            "rules apply. Castling puts the king on g1/g8 with the rook on f1/f8 (O-O) or the king on c1/c8 with "
            "the rook on d1/d8 (O-O-O), whatever their start squares. " + super().rules_text()
        )

"""Chess and Chess960 positions on python-chess, behind the :class:`GameState` contract.

python-chess (the ``chess`` package, in the ``games`` extra) is imported when a
state is built, never at ``import rollgym``. Draws by threefold repetition, the
50-move rule and insufficient material are claimed automatically; a ply cap
(``max_plies``) ends the game as an adjudicated draw.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from rollgym.core.errors import ConfigError, MissingDependencyError
from rollgym.envs.games.base import GameState, MoveError

if TYPE_CHECKING:
    import chess

STANDARD_START = 518  # the Chess960 number of the classical start position
_PIECE_VALUES = {1: 1.0, 2: 3.0, 3: 3.0, 4: 5.0, 5: 9.0, 6: 0.0}
_UCI_RE = re.compile(r"^[a-h][1-8][a-h][1-8][qrbn]?$")
_HOW = "give one move in SAN (Nf3) or UCI (g1f3)"
_PROMOTION_PIECES = "nbr"  # under-promotions get their own actions; a queen uses the plain from-to action


def import_chess() -> Any:
    """Import python-chess, or raise :class:`MissingDependencyError` saying how to install it."""
    try:
        import chess
    except ImportError as exc:  # pragma: no cover - the games extra installs it
        raise MissingDependencyError(
            "The chess envs need python-chess; install it with `pip install 'rollgym[games]'`."
        ) from exc
    return chess


class ChessState(GameState):
    """A chess position. Player 0 is White.

    ``chess960`` selects Chess960 castling rules; ``start_position`` is a Chess960
    start number 0-959 (518 is the classical setup). Moves are :class:`chess.Move`;
    as text they are SAN (:meth:`move_to_text`), and :meth:`parse_move` takes UCI
    or SAN (``e2e4``, ``e4``, ``Nf3+``, ``0-0``, ``O-O-O``, ``e8=Q``, ``e7e8q``;
    in Chess960 also king-takes-rook castling such as ``e1h1``).

    Example:
        >>> s = ChessState()
        >>> s.play(s.parse_move("e4")); s.play(s.parse_move("e7e5"))
        >>> s.fen()
        'rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2'
    """

    game_name = "chess"
    player_names = ("White", "Black")

    def __init__(
        self,
        chess960: bool = False,
        start_position: int = STANDARD_START,
        max_plies: int | None = None,
        fen: str | None = None,
    ) -> None:
        super().__init__()
        chess = import_chess()
        self._chess = chess
        if not isinstance(start_position, int) or not 0 <= start_position <= 959:
            raise ConfigError(f"Chess960 start_position must be an integer from 0 to 959, got {start_position!r}.")
        if max_plies is not None and (not isinstance(max_plies, int) or max_plies < 1):
            raise ConfigError(f"max_plies must be a positive integer or None, got {max_plies!r}.")
        self.chess960 = bool(chess960)
        self.start_position = start_position
        self.max_plies = max_plies
        self.start_fen = fen
        if fen is not None:
            try:
                self.board = chess.Board(fen, chess960=self.chess960)
            except ValueError as exc:
                raise ConfigError(f"Invalid FEN {fen!r}: {exc}.") from exc
        elif self.chess960 or start_position != STANDARD_START:
            self.board = chess.Board.from_chess960_pos(start_position)
            self.board.chess960 = self.chess960
        else:
            self.board = chess.Board()
        self._outcome: Any = None
        self._ended = False
        self._reason: str | None = None
        self._update_outcome()

    def _update_outcome(self) -> None:
        board = self.board
        outcome = board.outcome(claim_draw=False)  # mate, stalemate, insufficient material, 75 moves, fivefold
        reason = outcome.termination.name.lower() if outcome is not None else None
        if outcome is None:
            # Claimable draws, claimed as soon as they stand on the board (cheaper than python-chess's
            # claim_draw=True, which also tries every legal move for a repetition one move ahead).
            if board.is_repetition(3):
                reason = "threefold_repetition"
            elif board.halfmove_clock >= 100:
                reason = "fifty_moves"
            elif self.max_plies is not None and len(board.move_stack) >= self.max_plies:
                reason = "ply_cap"
        self._outcome = outcome
        self._reason = reason
        self._ended = reason is not None

    # -- rules ------------------------------------------------------------
    @property
    def current_player(self) -> int:
        return 0 if self.board.turn else 1

    def legal_moves(self) -> list[chess.Move]:
        if self._ended:
            return []
        return list(self.board.legal_moves)

    def play(self, move: chess.Move) -> None:
        self.board.push(move)
        self.history.append(move)
        self._update_outcome()

    def copy(self) -> ChessState:
        new = ChessState.__new__(ChessState)
        new._chess = self._chess
        new.history = self.history[:]
        new.chess960, new.start_position, new.max_plies = self.chess960, self.start_position, self.max_plies
        new.start_fen = self.start_fen
        new.board = self.board.copy()
        new._outcome, new._ended, new._reason = self._outcome, self._ended, self._reason
        return new

    def is_terminal(self) -> bool:
        return self._ended

    def winner(self) -> int | None:
        if self._outcome is None or self._outcome.winner is None:
            return None
        return 0 if self._outcome.winner else 1

    def termination(self) -> str | None:
        return self._reason

    def winning_moves(self, player: int) -> list[chess.Move]:
        """Mates in one for the player to move."""
        if player != self.current_player or self._ended:
            return []
        wins = []
        for move in self.board.legal_moves:
            if self.board.gives_check(move):
                self.board.push(move)
                if self.board.is_checkmate():
                    wins.append(move)
                self.board.pop()
        return wins

    def material(self, player: int) -> float:
        color = player == 0
        return sum(
            _PIECE_VALUES[piece.piece_type]
            for piece in self.board.piece_map().values()
            if piece.color == color
        )

    def fen(self) -> str:
        """The FEN of the position (Shredder-FEN castling in Chess960)."""
        return str(self.board.shredder_fen() if self.chess960 else self.board.fen())

    # -- text -------------------------------------------------------------
    def parse_move(self, text: str) -> chess.Move:
        chess = self._chess
        if self._ended:
            raise MoveError("illegal", "the game is over")
        token = text.strip().strip("[]()`*'\"").strip()
        token = re.sub(r"^(?:\d+\s*\.+\s*)", "", token)  # a move number such as "12." or "12..."
        token = re.sub(r"[!?]+$", "", token).strip().rstrip(".")
        if not token or " " in token:
            raise MoveError("invalid", f"{text.strip()!r} is not a chess move; {_HOW}")
        compact = token.replace("-", "").lower()
        if _UCI_RE.match(compact.rstrip("+#")) and len(compact.rstrip("+#")) >= 4:
            uci = compact.rstrip("+#")
            try:
                return self.board.parse_uci(uci)
            except chess.IllegalMoveError:
                move = self._castle_alias(uci)
                if move is not None:
                    return move
                raise MoveError("illegal", f"{uci} is not a legal move in this position") from None
            except chess.InvalidMoveError:
                pass
        castle = token.upper().replace("0", "O")
        san = castle if castle.startswith("O-O") else token
        candidates = [san]
        if san[:1] in "nbrqk" and len(san) > 2:
            candidates.append(san[0].upper() + san[1:])
        last_error: Exception | None = None
        for candidate in candidates:
            try:
                return self.board.parse_san(candidate)
            except chess.AmbiguousMoveError:
                message = f"{token} matches more than one legal move; say which piece moves (e.g. Nbd2)"
                raise MoveError("ambiguous", message) from None
            except chess.IllegalMoveError as exc:
                last_error = exc
            except chess.InvalidMoveError as exc:
                last_error = last_error or exc
        if isinstance(last_error, chess.IllegalMoveError):
            raise MoveError("illegal", f"{token} is not a legal move in this position")
        raise MoveError("invalid", f"{token!r} is not a chess move; {_HOW}")

    def _castle_alias(self, uci: str) -> chess.Move | None:
        """Accept king-two-squares castling in Chess960 and king-takes-rook in standard chess."""
        for move in self.board.legal_moves:
            if self.board.is_castling(move):
                if uci in {self.board.uci(move, chess960=True), self.board.uci(move, chess960=False)}:
                    return move
        return None

    def move_to_text(self, move: chess.Move) -> str:
        return str(self.board.san(move))

    def move_uci(self, move: chess.Move) -> str:
        """The UCI text of ``move``; king-takes-rook for Chess960 castling."""
        return str(self.board.uci(move, chess960=self.chess960))

    def ascii(self) -> str:
        rows = str(self.board).splitlines()
        lines = [f"{8 - i} {row}" for i, row in enumerate(rows)]
        lines.append("  a b c d e f g h")
        return "\n".join(lines)

    def initial(self) -> ChessState:
        return ChessState(self.chess960, self.start_position, self.max_plies, self.start_fen)

    def config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {
            "game": "chess",
            "chess960": self.chess960,
            "start_position": self.start_position,
            "max_plies": self.max_plies,
        }
        if self.start_fen is not None:
            cfg["fen"] = self.start_fen
        return cfg

    # -- arrays -----------------------------------------------------------
    # action = from * 64 + to for every move but under-promotions (queen promotions
    # included); under-promotions take 4096 + ((side * 8 + from_file) * 3 + file_step + 1) * 3 + piece.
    @property
    def num_actions(self) -> int:
        return 4096 + 2 * 8 * 3 * 3

    def action_of(self, move: chess.Move) -> int:
        promo = move.promotion
        if promo is None or promo == self._chess.QUEEN:
            return int(move.from_square * 64 + move.to_square)
        side = 0 if self._chess.square_rank(move.to_square) == 7 else 1
        from_file = self._chess.square_file(move.from_square)
        step = self._chess.square_file(move.to_square) - from_file
        piece = _PROMOTION_PIECES.index(self._chess.piece_symbol(promo))
        return 4096 + ((side * 8 + from_file) * 3 + step + 1) * 3 + piece

    def move_of(self, action: int) -> chess.Move:
        chess = self._chess
        action = int(action)
        if action < 4096:
            move = chess.Move(action // 64, action % 64)
            piece = self.board.piece_at(move.from_square)
            if piece is not None and piece.piece_type == chess.PAWN and chess.square_rank(move.to_square) in (0, 7):
                move.promotion = chess.QUEEN
            return move
        rest = action - 4096
        rest, piece = divmod(rest, 3)
        rest, step = divmod(rest, 3)
        side, from_file = divmod(rest, 8)
        from_rank, to_rank = (6, 7) if side == 0 else (1, 0)
        to_file = min(max(from_file + step - 1, 0), 7)
        promotion = chess.Piece.from_symbol(_PROMOTION_PIECES[piece]).piece_type
        return chess.Move(chess.square(from_file, from_rank), chess.square(to_file, to_rank), promotion)

    @property
    def planes_shape(self) -> tuple[int, ...]:
        return (8, 8, 13)

    def planes(self, player: int) -> np.ndarray:
        """Twelve piece planes (own pieces first) and a plane of ones when White is to move."""
        out = np.zeros(self.planes_shape, dtype=np.float32)
        own = player == 0
        for square, piece in self.board.piece_map().items():
            rank, file = divmod(square, 8)
            plane = piece.piece_type - 1 + (0 if piece.color == own else 6)
            out[7 - rank, file, plane] = 1.0
        if self.board.turn:
            out[:, :, 12] = 1.0
        return out

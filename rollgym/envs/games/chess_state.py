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
_HOW = "give one legal move in SAN (Nf3), long algebraic (Ng1-f3) or UCI (g1f3)"
#: Texts that python-chess and other tools read as a null move (a pass); never a move here.
_NULL_TOKENS = frozenset({"--", "z0", "0000", "@@@@", "null", "pass", "(none)", "none"})
_CASTLE_RE = re.compile(r"^[o0]-[o0](?:-[o0])?$")
# Squares only (UCI, or long algebraic without a piece letter); matched on the lower-cased token.
_COORD_RE = re.compile(r"^([a-h][1-8])[-x]?([a-h][1-8])(?:=?([qrbn]))?$")
# A piece move (SAN or long algebraic), or a pawn push or capture, on the token as written.
_PIECE_RE = re.compile(r"^([KQRBN])([a-h])?([1-8])?[-x]?([a-h][1-8])$")
_PAWN_RE = re.compile(r"^(?:([a-h])x)?([a-h][1-8])(?:=?([QRBNqrbn]))?$")
#: How moves may be written (every chess env documents this list).
MOVE_NOTATIONS = (
    "SAN: Nf3, Nbd2, R1e2, exd5, e8=Q, O-O, O-O-O (0-0 and o-o too); check and mate marks optional",
    "long algebraic: Ng1-f3, Ng1f3, Bf1xb5, e2-e4, e7-e8=Q",
    "UCI: g1f3, e7e8q (upper case and a dash are read too); Chess960 castling is king-takes-rook (e1h1)",
    "piece letters n, r, q and k may be lower case; a lower-case b reading as a pawn move is the b-pawn",
)
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
    as text they are SAN (:meth:`move_to_text`), and :meth:`parse_move` takes SAN,
    long algebraic or UCI (``e4``, ``Nf3+``, ``Ng1-f3``, ``0-0``, ``O-O-O``, ``e8=Q``,
    ``e2e4``, ``e7e8q``; in Chess960 castling in UCI is king-takes-rook, ``e1h1``), and
    nothing else: see :data:`MOVE_NOTATIONS`. Null moves and drops are never moves.

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
    def is_legal(self, move: Any) -> bool:
        """Whether ``move`` is a legal move now: never a null move, a drop, or a move after the game ended."""
        chess = self._chess
        return (not self._ended and isinstance(move, chess.Move) and bool(move) and move.drop is None
                and self.board.is_legal(move))

    def parse_move(self, text: str) -> chess.Move:
        """Read one move in SAN, long algebraic or UCI; see :data:`MOVE_NOTATIONS`.

        The result is always a legal move of this position that the text names; a null
        move (``--``, ``0000``, ``Z0``, ``@@@@``), a drop (``P@e4``) or any other text
        raises :class:`MoveError` (``invalid``, ``illegal`` or ``ambiguous``).
        """
        if self._ended:
            raise MoveError("illegal", "the game is over")
        token = _strip_move_decorations(text)
        shown = _shown(token or text.strip())
        if not token or any(ch.isspace() for ch in token):
            raise MoveError("invalid", f"{shown} is not a chess move; {_HOW}")
        if token.lower() in _NULL_TOKENS:
            raise MoveError("invalid", f"{shown} is a null move (a pass); chess has no passing, so {_HOW}")
        if "@" in token:
            raise MoveError("invalid", f"{shown} is a piece drop, which chess does not have; {_HOW}")
        if _CASTLE_RE.match(token.lower()):
            return self._parse_castling(token, long=token.count("-") == 2)
        coordinates = _COORD_RE.match(token.lower())
        if coordinates:
            return self._parse_coordinates(token, *coordinates.groups())
        fields = _san_fields(token)
        if fields is None:
            raise MoveError("invalid", f"{shown} is not a chess move; {_HOW}")
        return self._parse_san_fields(token, *fields)

    def _one(self, token: str, matches: list[chess.Move], hint: str = "") -> chess.Move:
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise MoveError("ambiguous", f"{token} matches more than one legal move; say which piece moves (e.g. Nbd2)")
        raise MoveError("illegal", f"{token} is not a legal move in this position{hint}")

    def _parse_castling(self, token: str, long: bool) -> chess.Move:
        board = self.board
        side = board.is_queenside_castling if long else board.is_kingside_castling
        return self._one(token, [m for m in board.legal_moves if side(m)])

    def _parse_coordinates(self, token: str, origin: str, target: str, promotion: str | None) -> chess.Move:
        """UCI or long algebraic with squares only (``g1f3``, ``e2-e4``, ``e7e8q``): any piece on ``origin``."""
        chess = self._chess
        board = self.board
        from_square, to_square = chess.parse_square(origin), chess.parse_square(target)
        promo = chess.Piece.from_symbol(promotion).piece_type if promotion else None
        legal = list(board.legal_moves)
        exact = [m for m in legal if (m.from_square, m.to_square, m.promotion) == (from_square, to_square, promo)]
        if exact:
            return self._one(token, exact)
        # Castling in the other mode's UCI: king-takes-rook in standard chess, e1g1 / e1c1 in
        # Chess960 when the king starts on e1 (python-chess converts only that case); never
        # when a legal move has this text as its own UCI.
        uci = f"{origin}{target}"
        alias = [m for m in legal if board.is_castling(m) and promotion is None
                 and board.uci(m, chess960=not self.chess960) == uci and uci[:2] != uci[2:]]
        if alias:
            return self._one(token, alias)
        hint = ""
        if promo is None and any((m.from_square, m.to_square) == (from_square, to_square) for m in legal):
            hint = f"; say which piece the pawn becomes ({origin}{target}q)"
        return self._one(token, [], hint)

    def _parse_san_fields(self, token: str, piece: str | None, file: str | None, rank: str | None,
                          target: str, promotion: str | None) -> chess.Move:
        """SAN or long algebraic with a piece letter (``Nf3``, ``Nbd2``, ``Ng1-f3``, ``exd5``, ``e8=Q``)."""
        chess = self._chess
        board = self.board
        to_square = chess.parse_square(target)
        piece_type = chess.Piece.from_symbol(piece).piece_type if piece else chess.PAWN
        promo = chess.Piece.from_symbol(promotion.upper()).piece_type if promotion else None
        matches = []
        movers = board.pieces_mask(piece_type, board.turn)
        for move in board.generate_legal_moves(movers, chess.BB_SQUARES[to_square]):
            if move.to_square != to_square or move.promotion != promo or board.is_castling(move):
                continue
            from_file, from_rank = chess.square_file(move.from_square), chess.square_rank(move.from_square)
            if file is not None and from_file != chess.FILE_NAMES.index(file):
                continue
            if rank is not None and from_rank != int(rank) - 1:
                continue
            if piece is None and (file is None) != (from_file == chess.square_file(to_square)):
                continue  # a pawn written without a file moves straight ahead; with one (exd5) it captures
            matches.append(move)
        hint = ""
        if not matches:
            if piece_type == chess.PAWN and promo is None and chess.square_rank(to_square) in (0, 7):
                hint = f"; say which piece the pawn becomes ({token}=Q)"
            elif piece is None and file == "b":
                hint = "; a lower-case b is the b-pawn, write B for a bishop"
            elif piece_type == chess.KING and any(board.is_castling(m) for m in board.legal_moves):
                hint = "; castle with O-O or O-O-O"
        return self._one(token, matches, hint)

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


def _strip_move_decorations(text: str) -> str:
    """The move token without markup, a move number, or check, mate and annotation marks."""
    token = text.strip().strip("[]()`*'\"").strip()
    token = re.sub(r"^\d+\s*\.+\s*", "", token)  # a move number such as "12." or "12..."
    token = token.rstrip(".")
    return re.sub(r"[+#!?]+$", "", token).strip()


def _shown(token: str) -> str:
    """The token quoted for an error message, cut short."""
    return repr(token if len(token) <= 24 else token[:24] + "...")


def _san_fields(token: str) -> tuple[str | None, str | None, str | None, str, str | None] | None:
    """``(piece, from_file, from_rank, to_square, promotion)`` of a SAN or long-algebraic piece or pawn move.

    A lower-case n, r, q or k is read as a piece letter; a lower-case b only when the
    token does not read as a pawn move (``bxc3`` is the b-pawn, ``bb5`` the bishop).
    """
    pawn = _PAWN_RE.match(token)
    if pawn:
        file, target, promotion = pawn.groups()
        return None, file, None, target, promotion
    for candidate in (token, token[:1].upper() + token[1:] if token[:1] in "nbrqk" else None):
        piece = _PIECE_RE.match(candidate) if candidate else None
        if piece:
            letter, file, rank, target = piece.groups()
            return letter, file, rank, target, None
    return None

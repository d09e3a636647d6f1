"""Game records: JSON move lists for every game, PGN for chess, SVG boards for chess and Hex."""

from __future__ import annotations

import math
from typing import Any

from rollgym.envs.games.base import GameState


def game_record(state: GameState, players: list[str] | None = None,
                result: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-ready record of a game: its config, players, moves (canonical text) and outcome.

    ``result`` (from the env) overrides the outcome read off the board, e.g. for a forfeit.

    Example:
        >>> from rollgym.envs.games.connect_four import ConnectFourState
        >>> s = ConnectFourState(); s.play(3)
        >>> game_record(s)["moves"]
        ['4']
    """
    winner = state.winner()
    record: dict[str, Any] = {
        "game": state.game_name,
        "config": state.config(),
        "players": list(players or ["player_0", "player_1"]),
        "colors": list(state.player_names),
        "moves": state.move_history_text(),
        "finished": state.is_terminal(),
        "winner": None if winner is None else state.player_names[winner],
        "termination": state.termination(),
        "scores": [state.score(0), state.score(1)] if state.is_terminal() else None,
    }
    if result is not None:
        record["agent_result"] = dict(result)
    fen = getattr(state, "fen", None)
    if callable(fen):
        record["final_fen"] = fen()
    return record


def chess_pgn(state: GameState, white: str = "?", black: str = "?", event: str = "rollgym game",
              result: str | None = None) -> str:
    """The PGN text of a chess game (Chess960 games get the ``Variant`` and ``FEN`` headers).

    ``result`` overrides the result tag (``"1-0"``, ``"0-1"``, ``"1/2-1/2"``), e.g. for a forfeit.
    """
    import chess.pgn

    board = state.board  # type: ignore[attr-defined]
    game = chess.pgn.Game.from_board(board)
    game.headers["Event"] = event
    game.headers["White"] = white
    game.headers["Black"] = black
    if state.is_terminal():
        winner = state.winner()
        game.headers["Result"] = "1/2-1/2" if winner is None else ("1-0" if winner == 0 else "0-1")
        # PGN's Termination tag has fixed words; the precise reason goes into a comment on the game.
        game.headers["Termination"] = "adjudication" if state.termination() == "ply_cap" else "normal"
        game.comment = f"ended by {state.termination()}"
    if result is not None:
        game.headers["Result"] = result
        game.headers["Termination"] = "rules infraction"
        game.comment = "forfeit: unplayable answers"
    return str(game)


def chess_svg(state: GameState, size: int = 400) -> str:
    """An SVG image of a chess position, with the last move highlighted."""
    import chess.svg

    board = state.board  # type: ignore[attr-defined]
    last = board.move_stack[-1] if board.move_stack else None
    return str(chess.svg.board(board, lastmove=last, size=size))


def hex_svg(state: GameState, cell_radius: float = 18.0) -> str:
    """An SVG image of a Hex board: black and white stones, coloured edges, coordinates.

    Black's edges (top and bottom) are drawn dark, White's (left and right) light grey.
    """
    size: int = state.size  # type: ignore[attr-defined]
    cells: list[int] = state.cells  # type: ignore[attr-defined]
    r = cell_radius
    w = math.sqrt(3) * r  # width of one hexagon
    margin = 2 * r

    def centre(row: int, col: int) -> tuple[float, float]:
        return margin + w * (col + row / 2) + w / 2, margin + 1.5 * r * row + r

    def hexagon(cx: float, cy: float, radius: float) -> str:
        points = [
            (cx + radius * math.cos(math.radians(60 * k - 30)), cy + radius * math.sin(math.radians(60 * k - 30)))
            for k in range(6)
        ]
        return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)

    width = margin * 2 + w * (size + (size - 1) / 2)
    height = margin * 2 + 1.5 * r * (size - 1) + 2 * r
    fills = {-1: "#f0d9b5", 0: "#222222", 1: "#f8f8f8"}
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
             f'viewBox="0 0 {width:.1f} {height:.1f}">',
             f'<rect width="{width:.1f}" height="{height:.1f}" fill="#ffffff"/>']
    for row in range(size):
        for col in range(size):
            cx, cy = centre(row, col)
            edge = ' stroke="#888888"'
            if row in (0, size - 1):
                edge = ' stroke="#000000" stroke-width="3"'
            elif col in (0, size - 1):
                edge = ' stroke="#999999" stroke-width="3"'
            parts.append(f'<polygon points="{hexagon(cx, cy, r)}" fill="#f0d9b5"{edge}/>')
            owner = cells[row * size + col]
            if owner >= 0:
                parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r * 0.6:.1f}" fill="{fills[owner]}" '
                             'stroke="#000000" stroke-width="1"/>')
    for col in range(size):
        cx, cy = centre(0, col)
        parts.append(f'<text x="{cx:.1f}" y="{cy - 1.4 * r:.1f}" font-size="{r * 0.7:.0f}" '
                     f'text-anchor="middle">{chr(ord("a") + col)}</text>')
    for row in range(size):
        cx, cy = centre(row, 0)
        parts.append(f'<text x="{cx - 1.2 * r:.1f}" y="{cy + r * 0.25:.1f}" font-size="{r * 0.7:.0f}" '
                     f'text-anchor="end">{row + 1}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def board_svg(state: GameState) -> str:
    """An SVG image of a chess or Hex position.

    Raises:
        ValueError: for games without an image (Connect Four's ASCII board is its record).
    """
    if state.game_name == "chess":
        return chess_svg(state)
    if state.game_name == "hex":
        return hex_svg(state)
    raise ValueError(f"No SVG board for {state.game_name}; use its ascii() text.")

"""Two agents at one board game (Chess, Chess960, Connect Four, Hex): :class:`BoardSeats`.

Example:
    >>> import rollgym
    >>> game = BoardSeats(rollgym.make("ConnectFour-v0"))
    >>> game.reset(seed=0)
    >>> game.to_move, game.roles
    (0, ('first', 'second'))
    >>> game.act(0, "Final Answer: 4")
    >>> game.to_move
    1
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.core.task import Task
from rollgym.envs.games.base import GameState, MoveError
from rollgym.envs.games.seats import SeatedGame
from rollgym.envs.games.text_env import TwoPlayerTextEnv, extract_move_text

__all__ = ["BoardSeats"]


class BoardSeats(SeatedGame):
    """Two agents at one board game: Chess, Chess960, Connect Four or Hex.

    The tasks (start position, random opening), rules text, move notation and
    reward scheme are those of ``env``, the game's single-agent env (its opponent
    bot is not used). Seat 0 moves first. Rewards per seat: ``"score"`` 1 / 0.5 / 0,
    ``"signed"`` +1 / 0 / -1; a forfeit loses.

    Args:
        env: A game env (``rollgym.make("Hex-v0", size=5)``); wrappers are looked through.
        max_retries, illegal_move_policy: As for :class:`SeatedGame`; default to the env's.
    """

    def __init__(self, env: Any, *, max_retries: int | None = None, illegal_move_policy: str | None = None) -> None:
        inner = getattr(env, "unwrapped", env)
        if not isinstance(inner, TwoPlayerTextEnv):
            raise ConfigError("BoardSeats needs a board-game env (Chess, Chess960, ConnectFour or Hex); "
                              f"got {type(inner).__name__}.")
        super().__init__(max_retries=inner.play_config.max_retries if max_retries is None else max_retries,
                         illegal_move_policy=illegal_move_policy or inner.play_config.illegal_move_policy)
        self.board_env = inner
        self.env_id = inner.env_id
        self.reward_scheme = inner.play_config.reward_scheme  # checked by PlayConfig
        self.state: GameState | None = None
        self._moves: list[str] = []

    @property
    def game_state(self) -> GameState:
        """The position (after :meth:`reset`)."""
        if self.state is None:
            raise RuntimeError("Call reset() before playing a seated game.")
        return self.state

    def draw_task(self, split: str, index: int) -> Task:
        return self.board_env.source.task(index, split)

    def start(self, task: Task) -> None:
        self.state = self.board_env.new_state(task.meta)
        self._moves = []
        for text in task.meta.get("opening", []):
            move = self.state.parse_move(text)
            self._moves.append(self.state.move_to_text(move))
            self.state.play(move)
        if task.meta.get("opening"):
            self._broadcast([f"The game opened with random moves: {' '.join(task.meta['opening'])}."] * 2)

    def current_seat(self) -> int | None:
        state = self.game_state
        return None if state.is_terminal() else state.current_player

    def parse(self, seat: int, action: str) -> Any:
        token = extract_move_text(action)
        if token is None:
            raise MoveError("no_move", f"no move found; end your reply with `Final Answer: <move>` "
                                       f"({self.board_env.move_hint})")
        move = self.game_state.parse_move(token)
        if not self.game_state.is_legal(move):  # the parser's promise, checked: only legal moves reach the board
            raise MoveError("illegal", f"{token[:24]!r} is not a legal move in this position")
        return move

    def play(self, seat: int, move: Any) -> list[str]:
        state = self.game_state
        text = state.move_to_text(move)
        state.play(move)
        self._moves.append(text)
        self._last_move[seat] = text
        return [f"You played {text}." if s == seat else f"Your opponent played {text}." for s in range(2)]

    def random_move(self, seat: int, rng: np.random.Generator) -> Any:
        moves = self.game_state.legal_moves()
        return moves[int(rng.integers(len(moves)))]

    def forfeit(self, seat: int) -> list[str]:
        return ["" if s == seat else "Your opponent forfeited (no playable move)." for s in range(2)]

    def _points(self, seat: int) -> float:
        if self._forfeited is not None:
            return 0.0 if seat == self._forfeited else 1.0
        return self.game_state.score(seat)

    def payoffs(self) -> list[float]:
        points = [self._points(s) for s in range(2)]
        return points if self.reward_scheme == "score" else [2.0 * p - 1.0 for p in points]

    def outcome(self, seat: int) -> tuple[str, bool, dict[str, Any]]:
        points = self._points(seat)
        result = {1.0: "win", 0.5: "draw", 0.0: "loss"}[points]
        termination = "forfeit" if self._forfeited is not None else (self.game_state.termination() or "end")
        return result, result == "win", {"points": points, "termination": termination,
                                         "reward_scheme": self.reward_scheme}

    def system_prompt(self, seat: int) -> str:
        env = self.board_env
        return (f"You are playing {env.game_title} against another player. {env.rules_text()} "
                f"On your turn, think if you like, then give your move on the last line as "
                f"`Final Answer: <move>`, where <move> is {env.move_hint} "
                f"(for example `Final Answer: {env.move_example}`).")

    def intro(self, seat: int) -> str:
        name = self.game_state.player_names[seat]
        return f"You play {name} ({self.roles[seat]}); your opponent is another player."

    def view(self, seat: int, *, final: bool) -> str:
        state = self.game_state
        parts = ["Board:\n" + state.ascii()]
        parts += [f"FEN: {v}" for k, v in self.board_env.extra_info(state).items() if k == "fen"]
        parts.append(f"Moves so far: {self.board_env.history_text(self._moves)}")
        if final:
            result = self.outcome(seat)[0]
            parts.append(f"Game over: you {'won' if result == 'win' else 'lost' if result == 'loss' else 'drew'}.")
            return "\n".join(parts)
        parts.append(f"You are {state.player_names[seat]}; it is your turn.")
        if self.board_env.play_config.show_legal_moves:
            parts.append("Legal moves: " + " ".join(state.move_to_text(m) for m in state.legal_moves()))
        parts.append(f"Answer with `Final Answer: <move>`, where <move> is {self.board_env.move_hint}.")
        return "\n".join(parts)

    def seat_info(self, seat: int) -> dict[str, Any]:
        state = self.game_state
        return {"game_config": state.config(), "moves": list(self._moves),
                "legal_moves": [] if state.is_terminal() else [state.move_to_text(m) for m in state.legal_moves()],
                "agent_player": seat}

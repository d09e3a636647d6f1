"""Board-game agents: :class:`BotAgent` (a bot as a text agent), the games' oracle and random policy.

The bots themselves (random, greedy, MCTS, Stockfish) are the game envs'
opponents and live in :mod:`rollgym.envs.games.bots`; their old import path here
still works until rollgym 0.3.0, with a ``DeprecationWarning``.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rollgym.core.closing import Closeable
from rollgym.core.deprecation import moved_to
from rollgym.core.errors import ConfigError, MissingDependencyError
from rollgym.envs.games import bots as _bots
from rollgym.envs.games.base import GameState
from rollgym.envs.games.replay import replay


@runtime_checkable
class ClosingBot(_bots.GameBot, Protocol):
    """A bot that holds a resource (Stockfish's engine process) until ``close()``; whoever started it closes it."""

    def close(self) -> None: ...


class BotAgent(Closeable):
    """A bot as a text agent: it rebuilds the position from ``info`` and answers ``Final Answer: <move>``.

    Example:
        >>> import gymnasium as gym, rollgym
        >>> env = gym.make("ConnectFour-v0")
        >>> obs, info = env.reset(seed=1)
        >>> BotAgent("greedy", seed=0).act(obs, info).startswith("Final Answer: ")
        True
    """

    def __init__(self, bot: Any = "mcts-400", seed: int | None = None) -> None:
        self._owns_bot = isinstance(bot, str)  # a bot made here from its name is closed here
        self.bot = _bots.make_bot(bot) if isinstance(bot, str) else bot
        if not isinstance(self.bot, _bots.GameBot):
            raise ConfigError("A BotAgent plays a bot: pass a bot name such as 'mcts-400' or an object with name and "
                              "choose().")
        self.name = str(self.bot.name)
        self.rng = np.random.default_rng(seed)

    def close(self) -> None:
        """Stop the bot's engine (Stockfish) when this agent made the bot from its name; safe to call twice."""
        if self._owns_bot and isinstance(self.bot, ClosingBot):
            self.bot.close()

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        state = state_from_info(info)
        return f"Final Answer: {state.move_to_text(self.bot.choose(state.copy(), self.rng))}"


def state_from_info(info: dict[str, Any]) -> GameState:
    """The current position of a game env, rebuilt from ``info["game_config"]`` and ``info["moves"]``."""
    if "game_config" not in info or "moves" not in info:
        raise ConfigError("info has no game_config/moves; pass the info dict of a rollgym game env.")
    return replay(info["game_config"], list(info["moves"]))


_ORACLE_IDLE: dict[str, list[Any]] = {}  # per game, the oracle bots no call is using
_ORACLE_LOCK = threading.Lock()


def _oracle_bot(game: str) -> Any:
    if game != "chess":
        return _bots.MCTSBot(1000)
    try:
        return _bots.StockfishBot(nodes=20_000, movetime=None, fresh_hash_every_move=True)
    except MissingDependencyError:
        return _bots.GreedyBot()


def game_oracle(observation: str, info: dict[str, Any]) -> str:
    """A strong move: Stockfish for chess (greedy when Stockfish is missing), MCTS-1000 for Connect Four and Hex.

    Safe from several threads at once: each call takes an idle bot (a bot, and its Stockfish process,
    serves one call at a time) and gives it back, so there are at most as many bots as calls at once.
    """
    state = state_from_info(info)
    game = state.game_name
    with _ORACLE_LOCK:
        idle = _ORACLE_IDLE.setdefault(game, [])
        bot = idle.pop() if idle else None
    if bot is None:
        bot = _oracle_bot(game)
    try:
        move = bot.choose(state.copy(), np.random.default_rng(len(state.history)))
    finally:
        with _ORACLE_LOCK:
            _ORACLE_IDLE[game].append(bot)
    return f"Final Answer: {state.move_to_text(move)}"


def random_legal_move(observation: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    """A uniformly random move from ``info["legal_moves"]``, as ``Final Answer: <move>``."""
    moves = list(info.get("legal_moves") or [])
    if not moves:
        return "Final Answer: none"
    return f"Final Answer: {moves[int(rng.integers(len(moves)))]}"


__getattr__ = moved_to(__name__, {
    name: "rollgym.envs.games.bots"
    for name in ("GameBot", "RandomBot", "GreedyBot", "MCTSBot", "StockfishBot", "find_stockfish", "make_bot",
                 "STOCKFISH_ENV_VAR")
})

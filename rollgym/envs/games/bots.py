"""Board-game bots: random, greedy, MCTS and Stockfish, the opponents of the game envs.

A bot has ``name`` and ``choose(state, rng) -> move`` over a
:class:`~rollgym.envs.games.base.GameState`. :func:`make_bot` builds bots from
names such as ``"mcts-400"`` or ``"stockfish-skill-5"``. The opponent is part of
a game env's MDP, so this module lives with the env (and is covered by the
env's spec hash); :class:`rollgym.agents.game_bots.BotAgent` turns a bot into a
text agent.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rollgym.core.agent import conforms
from rollgym.core.closing import Closeable
from rollgym.core.errors import ConfigError, MissingDependencyError
from rollgym.envs.games.base import GameState
from rollgym.envs.games.mcts import MCTS, Evaluator

STOCKFISH_ENV_VAR = "ROLLGYM_STOCKFISH"
_DEBIAN_GAMES_DIR = "/usr/games"


@runtime_checkable
class GameBot(Protocol):
    """A bot that picks a move in a game state."""

    name: str

    def choose(self, state: GameState, rng: np.random.Generator) -> Any: ...


@runtime_checkable
class ChoosesMoves(Protocol):
    """Anything with ``choose(state, rng)``: what an env accepts as its opponent (a name is optional)."""

    def choose(self, state: GameState, rng: np.random.Generator) -> Any: ...


@runtime_checkable
class NamedBot(Protocol):
    """A bot that says its name (game records and prompts use it)."""

    name: str


@runtime_checkable
class ClosingBot(Protocol):
    """A bot that holds a resource (Stockfish's engine process) until ``close()``."""

    def close(self) -> None: ...


def bot_name(bot: object, default: str) -> str:
    """``bot.name`` for a named bot, else ``default``."""
    return str(bot.name) if conforms(bot, NamedBot) else default


def close_bot(bot: object) -> None:
    """Close a bot that holds a resource; nothing for one that holds none."""
    if conforms(bot, ClosingBot):
        bot.close()


class RandomBot:
    """A uniformly random legal move."""

    name = "random"

    def choose(self, state: GameState, rng: np.random.Generator) -> Any:
        moves = state.legal_moves()
        return moves[int(rng.integers(len(moves)))]


class GreedyBot:
    """Win now if possible; else avoid moves that let the opponent win at once; else best one-ply material.

    Ties are broken at random. In Connect Four and Hex "avoid" means block the
    opponent's winning cell; in chess it means not allowing a mate in one.
    """

    name = "greedy"

    def choose(self, state: GameState, rng: np.random.Generator) -> Any:
        me = state.current_player
        wins = state.winning_moves(me)
        if wins:
            return wins[int(rng.integers(len(wins)))]
        moves = state.legal_moves()
        order = rng.permutation(len(moves))
        scored: list[tuple[float, int, Any]] = []
        for rank, i in enumerate(order):
            child = state.copy()
            child.play(moves[i])
            gain = child.material(me) - child.material(1 - me)
            scored.append((-gain, rank, child))
        scored.sort(key=lambda item: (item[0], item[1]))
        threatened = bool(state.winning_moves(1 - me)) or state.game_name == "chess"
        if threatened:
            for _, _, child in scored:
                if not child.winning_moves(child.current_player) or child.is_terminal():
                    return child.history[-1]
        return scored[0][2].history[-1]


class MCTSBot:
    """Monte Carlo tree search with ``simulations`` per move and a pluggable evaluator."""

    def __init__(self, simulations: int = 400, evaluator: Evaluator | None = None, uct_c: float = 1.4) -> None:
        self.search = MCTS(simulations, evaluator, uct_c)
        self.name = f"mcts-{simulations}"

    def choose(self, state: GameState, rng: np.random.Generator) -> Any:
        return self.search.search(state, rng).move


def find_stockfish(path: str | os.PathLike[str] | None = None) -> str:
    """The Stockfish binary: ``path``, else ``$ROLLGYM_STOCKFISH``, else ``stockfish`` on PATH, else /usr/games.

    Raises:
        MissingDependencyError: naming ``apt-get install stockfish`` when none is found.
    """
    if path is not None:
        if os.access(path, os.X_OK) and Path(path).is_file():
            return str(path)
        raise MissingDependencyError(
            f"Stockfish binary {str(path)!r} does not exist or is not executable; fix the path."
        )
    configured = os.environ.get(STOCKFISH_ENV_VAR)
    if configured:
        if os.access(configured, os.X_OK):
            return configured
        raise MissingDependencyError(
            f"{STOCKFISH_ENV_VAR}={configured!r} is not an executable file; point it at the stockfish binary."
        )
    found = shutil.which("stockfish") or shutil.which("stockfish", path=_DEBIAN_GAMES_DIR)
    if found:
        return found
    raise MissingDependencyError(
        "Stockfish is not installed: run `apt-get install stockfish` (Debian puts it in /usr/games), "
        f"or set {STOCKFISH_ENV_VAR} to the binary's path."
    )


class StockfishBot(Closeable):
    """Stockfish over UCI for chess and Chess960, at a given Skill Level or UCI_Elo.

    Args:
        skill_level: 0-20 (20 = full strength); ignored when ``elo`` is set.
        elo: play at this UCI_Elo (clamped to the engine's range) with UCI_LimitStrength.
        movetime: seconds per move; ``nodes`` or ``depth`` limit the search instead when given
            (a node limit with one thread makes games reproducible).
        path: the binary (see :func:`find_stockfish`).
        fresh_hash_every_move: announce every move as a new game (``ucinewgame``: a cleared hash), so
            that a move depends on its position's game only, however calls of several games interleave
            on this bot (the games' oracle serves ``collect``'s worker threads this way).

    The engine process starts on the first move and stops at :meth:`close`. Each new game
    (a position with fewer moves than the last one, or another start position) is announced
    with ``ucinewgame``, which clears the engine's hash, so with a node or depth limit and
    one thread a game depends only on its moves: the same moves get the same replies in any
    process, in any order of games, which is what a verified benchmark replay needs.
    """

    def __init__(self, skill_level: int = 20, elo: int | None = None, movetime: float | None = 0.05,
                 nodes: int | None = None, depth: int | None = None, path: str | None = None,
                 threads: int = 1, hash_mb: int = 16, fresh_hash_every_move: bool = False) -> None:
        if not 0 <= skill_level <= 20:
            raise ConfigError(f"Stockfish skill_level must be from 0 to 20, got {skill_level}.")
        self.path = find_stockfish(path)
        self.skill_level, self.elo = skill_level, elo
        self.movetime, self.nodes, self.depth = movetime, nodes, depth
        self.threads, self.hash_mb = threads, hash_mb
        self.fresh_hash_every_move = fresh_hash_every_move
        self.name = f"stockfish-elo-{elo}" if elo is not None else (
            "stockfish" if skill_level == 20 else f"stockfish-skill-{skill_level}")
        if nodes is not None and elo is None and skill_level == 20:
            self.name = f"stockfish-nodes-{nodes}"
        self._engine: Any = None
        self._owner_pid = -1  # the process that started the engine
        self._game: tuple[str, int] = ("", 0)
        self._plies = -1

    def _start(self) -> Any:
        import chess.engine

        engine = chess.engine.SimpleEngine.popen_uci(self.path, timeout=30)
        options: dict[str, Any] = {"Threads": self.threads, "Hash": self.hash_mb}
        if self.elo is not None:
            low, high = int(engine.options["UCI_Elo"].min or 0), int(engine.options["UCI_Elo"].max or 4000)
            options.update({"UCI_LimitStrength": True, "UCI_Elo": min(max(int(self.elo), low), high)})
        else:
            options["Skill Level"] = self.skill_level
        engine.configure(options)
        self._owner_pid = os.getpid()
        # python-chess talks to the engine from a non-daemon thread, which the interpreter joins at exit
        # *before* atexit handlers run: an engine left open (e.g. a cached oracle) would hang the exit.
        # threading._register_atexit runs before that join (concurrent.futures uses it the same way).
        register = getattr(threading, "_register_atexit", atexit.register)
        try:
            register(self.close)
        except RuntimeError:  # the interpreter is already shutting down
            atexit.register(self.close)
        return engine

    def choose(self, state: GameState, rng: np.random.Generator) -> Any:
        import chess.engine

        if state.game_name != "chess":
            raise ConfigError(f"Stockfish plays chess only, not {state.game_name}; use an MCTS bot.")
        if self._engine is None:
            self._engine = self._start()
        board = state.board  # type: ignore[attr-defined]
        root, plies = board.root().fen(), len(board.move_stack)
        new_game = self.fresh_hash_every_move or root != self._game[0] or plies <= self._plies
        if new_game:  # python-chess sends ucinewgame for a game key it has not seen
            self._game = (root, self._game[1] + 1)
        self._plies = plies
        limit = chess.engine.Limit(time=None if (self.nodes or self.depth) else self.movetime,
                                   nodes=self.nodes, depth=self.depth)
        result = self._engine.play(board, limit, game=self._game)
        if result.move is None:
            return RandomBot().choose(state, rng)
        return result.move

    def close(self) -> None:
        """Stop the engine process (safe to call twice; in a forked child it only drops the reference)."""
        if self._engine is not None:
            # A forked child (a vector env's worker, a pool) inherits the bot and its exit hook but not
            # python-chess's engine thread: quitting would wait forever for that thread's answer, and
            # the engine process is the parent's to stop.
            if getattr(self, "_owner_pid", None) == os.getpid():
                try:
                    self._engine.quit()
                except Exception:  # the process may already be gone at interpreter exit
                    pass
            self._engine = None


_BOT_RE = re.compile(r"^(random|greedy|mcts|stockfish)(?:-(skill|elo|nodes))?(?:-(\d+))?$")


def make_bot(name: str, **kwargs: Any) -> Any:
    """Build a bot from its name.

    Names: ``random``, ``greedy``, ``mcts`` / ``mcts-<simulations>``, ``stockfish``
    (full strength), ``stockfish-skill-<0..20>``, ``stockfish-elo-<elo>``, and
    ``stockfish-nodes-<N>`` (full strength, N nodes a move, one thread: reproducible).
    ``kwargs`` go to the bot's constructor.

    Example:
        >>> make_bot("mcts-100").name
        'mcts-100'
    """
    match = _BOT_RE.match(name.strip().lower()) if isinstance(name, str) else None
    if not match:
        raise ConfigError(
            f"Unknown bot {name!r}; use random, greedy, mcts-<N>, stockfish, "
            "stockfish-skill-<0-20>, stockfish-elo-<E> or stockfish-nodes-<N>."
        )
    kind, mode, number = match.groups()
    if kind == "random" and not mode and number is None:
        return RandomBot()
    if kind == "greedy" and not mode and number is None:
        return GreedyBot()
    if kind == "mcts" and not mode:
        if number is not None:
            kwargs.setdefault("simulations", int(number))
        return MCTSBot(**kwargs)
    if kind == "stockfish":
        if mode == "skill" and number is not None:
            kwargs.setdefault("skill_level", int(number))
        elif mode == "elo" and number is not None:
            kwargs.setdefault("elo", int(number))
        elif mode == "nodes" and number is not None and int(number) > 0:
            kwargs.setdefault("nodes", int(number))
            kwargs.setdefault("movetime", None)
            kwargs.setdefault("threads", 1)
        elif mode or number is not None:
            raise ConfigError(f"Unknown bot {name!r}; write stockfish-skill-<0-20>, stockfish-elo-<E> or "
                              "stockfish-nodes-<N>.")
        return StockfishBot(**kwargs)
    raise ConfigError(f"Unknown bot {name!r}; use random, greedy, mcts-<N> or stockfish.")

"""External search: a language model supplies the move priors and the value that guide MCTS, with no engine.

This is the external-search setting of model-guided board-game search: the
search itself is :class:`~rollgym.envs.games.mcts.MCTS` (PUCT over the game's
real rules), and the model sits in the evaluator's seat.

- **Priors**: after a position prompt ending in ``Best move:``, the raw
  log-probability of each legal move's text (``" e4\\n"``, the newline closing
  the move so that ``a1`` is not a prefix of ``a10``), softmaxed over the legal
  moves only. They sum to 1 over the legal moves and are never put on anything else.
- **Value**: after a prompt asking whether the side to move will win, the
  model's probabilities of ``" win"``, ``" draw"`` and ``" lose"``
  (renormalised over the three); the value is ``p(win) - p(lose)`` in ``[-1, 1]``.
  ``value="random-rollout"`` keeps the model's priors but values a leaf by one
  random game instead (an ablation; still no engine).

Both come from one batched forward pass per new position
(:func:`~rollgym.agents.backends.scoring.continuation_logprobs`), cached by
position. :class:`ModelMCTSBot` is a bot (``choose(state, rng)``) for
:func:`~rollgym.benchmarks.ratings.run_tournament`; :class:`ModelMCTSAgent` is
the same search as a text agent for ``rollgym eval ENV --agent model-mcts``.
The search budget is the number of MCTS simulations per move; every simulation
evaluates at most one new position with the model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rollgym.agents.backends.scoring import pair_logprobs, require_local_model
from rollgym.core.agent import SeededAgent
from rollgym.core.errors import ConfigError
from rollgym.envs.games.base import GameState
from rollgym.envs.games.mcts import MCTS, RandomRolloutEvaluator

#: The env ids' prefixes of the board games these agents play.
BOARD_GAME_ENVS = ("ConnectFour-", "Hex-", "Chess-", "Chess960-")
VALUE_MODES = ("judge", "random-rollout")
_VALUE_WORDS = (" win", " draw", " lose")
_GAME_TITLES = {"connect_four": "Connect Four", "hex": "Hex", "chess": "Chess"}


def check_board_game(env_id: str, agent: str) -> None:
    """Raise :class:`ConfigError` when ``env_id`` is not one of the four board games these agents play."""
    if not env_id.startswith(BOARD_GAME_ENVS):
        raise ConfigError(f"{agent} plays the board games only (ConnectFour, Hex, Chess, Chess960), not {env_id}.")


def game_title(state: GameState) -> str:
    """The game's name with its settings, e.g. ``Connect Four (6x7, 4 in a row)``."""
    config = state.config()
    game = state.game_name
    if game == "connect_four":
        return f"Connect Four ({config['rows']}x{config['columns']}, {config['x_in_row']} in a row)"
    if game == "hex":
        return f"Hex ({config['size']}x{config['size']})"
    if game == "chess" and config.get("chess960"):
        return "Chess960"
    return _GAME_TITLES.get(game, game)


def position_text(state: GameState) -> str:
    """The position as a model reads it: the game, the board, the moves so far, who is to move, the legal moves."""
    names = state.player_names
    lines = [f"Game: {game_title(state)}. {names[0]} moves first, {names[1]} second.", "Board:", state.ascii()]
    board = getattr(state, "board", None)
    if board is not None and hasattr(board, "fen"):
        lines.append(f"FEN: {board.fen()}")
    history = state.move_history_text()
    lines.append(f"Moves so far: {' '.join(history) if history else '(none)'}")
    lines.append(f"{names[state.current_player]} to move. Legal moves: "
                 + " ".join(state.move_to_text(m) for m in state.legal_moves()))
    return "\n".join(lines)


def move_prompt(state: GameState) -> str:
    """The prompt after which each legal move's text is scored for the priors."""
    return position_text(state) + "\nBest move:"


def value_prompt(state: GameState) -> str:
    """The prompt after which ``" win"``, ``" draw"`` and ``" lose"`` are scored for the value."""
    name = state.player_names[state.current_player]
    return position_text(state) + f"\nWith best play, will {name} win, draw or lose? Answer:"


def softmax(logps: Sequence[float]) -> list[float]:
    """Probabilities from log-scores (finite or not), summing to 1; uniform when none is finite.

    Example:
        >>> [round(p, 3) for p in softmax([0.0, math.log(3.0)])]
        [0.25, 0.75]
    """
    finite = [x for x in logps if math.isfinite(x)]
    if not finite:
        return [1.0 / len(logps)] * len(logps) if logps else []
    top = max(finite)
    weights = [math.exp(x - top) if math.isfinite(x) else 0.0 for x in logps]
    total = sum(weights)
    return [w / total for w in weights]


def _position_key(state: GameState) -> tuple[str, tuple[str, ...]]:
    return json.dumps(state.config(), sort_keys=True), tuple(str(m) for m in state.history)


class ModelEvaluator:
    """An MCTS evaluator whose priors and value come from a local language model's logprobs.

    Args:
        backend: A :class:`~rollgym.agents.backends.hf.TransformersBackend` (it must score text locally).
        value: ``"judge"`` (the model's win/draw/lose probabilities) or ``"random-rollout"`` (one random game).
        cache_size: Positions whose priors and value are kept; the cache is cleared when it is full.

    ``calls`` counts the forward passes (one per new position), ``positions`` the positions scored.
    """

    def __init__(self, backend: Any, value: str = "judge", cache_size: int = 20_000) -> None:
        if value not in VALUE_MODES:
            raise ConfigError(f"Unknown value mode {value!r}; use one of {', '.join(VALUE_MODES)}.")
        require_local_model(backend, "Model-guided search", "tokenizer", "model")
        self.backend = backend
        self.value_mode = value
        self.cache_size = cache_size
        self._cache: dict[tuple[str, tuple[str, ...]], tuple[list[float], float]] = {}
        self._rollout = RandomRolloutEvaluator(1)
        self.calls = 0

    def _encode(self, text: str) -> list[int]:
        return [int(t) for t in self.backend.tokenizer(text, add_special_tokens=False)["input_ids"]]

    def _score(self, state: GameState) -> tuple[list[float], float]:
        key = _position_key(state)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        moves = state.legal_moves()
        prompt = self._encode(move_prompt(state))
        pairs = [(prompt, self._encode(f" {state.move_to_text(m)}\n")) for m in moves]
        judge = self.value_mode == "judge" and bool(moves)
        if judge:
            asked = self._encode(value_prompt(state))
            pairs += [(asked, self._encode(w)) for w in _VALUE_WORDS]
        scores = pair_logprobs(self.backend, pairs) if pairs else []  # one forward pass for both
        priors = softmax(scores[:len(moves)])
        value = 0.0
        if judge:
            p_win, _, p_lose = softmax(scores[len(moves):])
            value = p_win - p_lose
        self.calls += 1
        if len(self._cache) >= self.cache_size:
            self._cache.clear()
        self._cache[key] = (priors, value)
        return priors, value

    def prior_distribution(self, state: GameState) -> dict[str, float]:
        """The model's prior over the legal moves of ``state``, by move text (sums to 1)."""
        priors, _ = self._score(state)
        return {state.move_to_text(m): p for m, p in zip(state.legal_moves(), priors, strict=True)}

    def priors(self, state: GameState, moves: Sequence[Any]) -> Sequence[float] | None:
        legal = state.legal_moves()
        if not moves:
            return None
        priors, _ = self._score(state)
        by_move = {str(m): p for m, p in zip(legal, priors, strict=True)}
        out = [by_move.get(str(m), 0.0) for m in moves]
        total = sum(out)
        return [p / total for p in out] if total > 0 else None

    def evaluate(self, state: GameState, rng: np.random.Generator) -> float:
        if state.is_terminal():
            winner = state.winner()
            return 0.0 if winner is None else (1.0 if winner == state.current_player else -1.0)
        if self.value_mode == "random-rollout":
            return self._rollout.evaluate(state, rng)
        _, value = self._score(state)
        return max(-1.0, min(1.0, value))


class ModelMCTSBot:
    """MCTS guided by a language model's priors and value: a bot for tournaments and ratings.

    Args:
        backend: A local transformers backend.
        simulations: The search budget: MCTS simulations per move (1 plays the model's top prior).
        value: ``"judge"`` or ``"random-rollout"`` (see :class:`ModelEvaluator`).
        uct_c: PUCT's exploration constant.
        evaluator: Use this evaluator instead of building one over ``backend`` (tests, shared caches).

    Winning moves are not taken by a shortcut: with priors on, what the search finds is the model's doing.

    Example:
        >>> bot = ModelMCTSBot(backend, simulations=8)  # doctest: +SKIP
        >>> bot.name
        'model-mcts-8'
    """

    def __init__(self, backend: Any = None, simulations: int = 16, value: str = "judge", uct_c: float = 1.4,
                 evaluator: Any = None) -> None:
        if not isinstance(simulations, int) or isinstance(simulations, bool) or simulations < 1:
            raise ConfigError(f"The search budget (simulations) must be a positive integer, got {simulations!r}.")
        self.evaluator = evaluator if evaluator is not None else ModelEvaluator(backend, value=value)
        self.search = MCTS(simulations, self.evaluator, uct_c, take_wins=False)
        self.simulations = simulations
        self.name = f"model-mcts-{simulations}" + ("" if value == "judge" else f"-{value}")

    def choose(self, state: GameState, rng: np.random.Generator) -> Any:
        return self.search.search(state, rng).move


class SearchingGameAgent(SeededAgent):
    """A game bot as a text agent: the position comes from ``info``; the reply is ``Final Answer: <move>``.

    The base of the model-guided searches (:class:`ModelMCTSAgent`, the internal search); subclasses write
    ``choose``."""

    name = "game-agent"

    def check_env(self, env_id: str) -> None:
        """Raise :class:`ConfigError` before any work when ``env_id`` is not one of the four board games."""
        check_board_game(env_id, self.name)

    def choose(self, state: GameState, rng: np.random.Generator) -> Any:
        raise NotImplementedError

    def act(self, observation: str, info: dict[str, Any]) -> str:
        from rollgym.agents.game_bots import state_from_info

        state = state_from_info(info)
        if state.is_terminal():
            return "Final Answer: none"
        return f"Final Answer: {state.move_to_text(self.choose(state, self.rng))}"


class ModelMCTSAgent(SearchingGameAgent):
    """:class:`ModelMCTSBot` as a text agent, for ``rollgym eval ENV --agent model-mcts --model M``."""

    def __init__(self, backend: Any, simulations: int = 16, value: str = "judge", seed: int | None = None) -> None:
        super().__init__(seed)
        self.bot = ModelMCTSBot(backend, simulations, value=value)
        self.name = self.bot.name

    def choose(self, state: GameState, rng: np.random.Generator) -> Any:
        return self.bot.choose(state, rng)

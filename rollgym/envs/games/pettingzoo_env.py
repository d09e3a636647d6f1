"""The board games as PettingZoo AEC environments, so two agents (bots or language models) can play each other.

Agents are ``player_0`` (moves first: X, Black in Hex, White in chess) and
``player_1``. Observations are board planes from the observer's side (own stones first,
then the opponent's, then a plane of ones when the first player is to move);
``infos[agent]["action_mask"]`` marks the legal actions (all zeros when it is
not that agent's turn), which PettingZoo's tools read. Actions are integers
(see each state's ``action_of``), or, for text
agents, a string that is read like the single-agent envs read it
(``Final Answer: e4``). An unplayable action loses the game for the player who
sent it; ``infos[agent]["error"]`` says why (``no_move``, ``invalid``,
``illegal``, ``ambiguous``). ``infos[agent]`` also carries ``text`` (the board
and the legal moves, for language models), ``legal_moves``, ``moves`` and
``game_config``. Rewards are +1 / 0 / -1.

Imported on use: ``import rollgym`` does not load PettingZoo.

Example:
    >>> env = connect_four_aec()
    >>> env.reset(seed=0)
    >>> env.agent_selection
    'player_0'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from rollgym.core.agent import Agent
from rollgym.core.errors import MissingDependencyError
from rollgym.envs.games.base import GameState, MoveError
from rollgym.envs.games.text_env import extract_move_text

try:
    from pettingzoo import AECEnv
except ImportError as exc:  # pragma: no cover - the games extra installs it
    raise MissingDependencyError(
        "The two-player game envs need PettingZoo; install it with `pip install 'rollgym[games]'`."
    ) from exc


class BoardGameAEC(AECEnv):  # type: ignore[misc]
    """A two-player AEC env around any :class:`~rollgym.envs.games.base.GameState` factory."""

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "name": "rollgym_board_game_v0",  # noqa: RUF012
                                "is_parallelizable": False, "render_fps": 1}

    def __init__(self, state_factory: Callable[[], GameState], name: str, render_mode: str | None = None) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be 'ansi', 'human' or None, got {render_mode!r}.")
        self.metadata = {**self.metadata, "name": name}
        self.render_mode = render_mode
        self._factory = state_factory
        self.state = state_factory()
        self.possible_agents = ["player_0", "player_1"]
        n = self.state.num_actions
        obs_space = spaces.Box(0.0, 1.0, self.state.planes_shape, dtype=np.float32)
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(n) for a in self.possible_agents}
        self.agents: list[str] = []
        self.last_result: dict[str, Any] | None = None

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            for i, agent in enumerate(self.possible_agents):
                self.action_spaces[agent].seed(seed + i)
        self.state = self._factory()
        self.last_result = None
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.agents[self.state.current_player]
        self._refresh_infos()

    def observe(self, agent: str) -> np.ndarray:
        return self.state.planes(self.possible_agents.index(agent))

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        move, error = self._read_action(action)
        player = self.possible_agents.index(agent)
        if move is None:
            self._end({player: -1.0, 1 - player: 1.0}, reason=f"{agent} sent an unplayable action ({error[0]})")
            self.infos[agent]["error"] = error[0]
            self.infos[agent]["error_message"] = error[1]
        else:
            self.state.play(move)
            if self.state.is_terminal():
                winner = self.state.winner()
                values = {0: 0.0, 1: 0.0} if winner is None else {winner: 1.0, 1 - winner: -1.0}
                self._end(values, reason=self.state.termination() or "end")
            else:
                self.agent_selection = self.possible_agents[self.state.current_player]
                self._refresh_infos()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _read_action(self, action: Any) -> tuple[Any, tuple[str, str]]:
        """The move an action names, or ``None`` and ``(label, reason)``; never raises on any action."""
        if isinstance(action, str):
            token = extract_move_text(action)
            if token is None:
                return None, ("no_move", "no move found; end with `Final Answer: <move>`")
            try:
                move = self.state.parse_move(token)
            except MoveError as err:
                return None, (err.label, str(err))
            except Exception as exc:  # a parser bug must never crash a game
                return None, ("invalid", f"the move could not be read ({type(exc).__name__})")
            if not self.state.is_legal(move):  # the parser's promise, checked: only legal moves reach the board
                return None, ("illegal", f"{token[:24]!r} is not a legal move now")
            return move, ("", "")
        if isinstance(action, np.ndarray) and action.ndim == 0:
            action = action.item()
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            return None, ("invalid", f"action {str(action)[:40]!r} is neither an integer nor move text")
        index = int(action)
        if not 0 <= index < self.state.num_actions or not self.state.action_mask()[index]:
            return None, ("illegal", f"action {index} is not a legal move now")
        return self.state.move_of(index), ("", "")

    def _end(self, values: dict[int, float], reason: str) -> None:
        for player, agent in enumerate(self.possible_agents):
            self.rewards[agent] = values[player]
            self.terminations[agent] = True
        self._refresh_infos()
        for agent in self.agents:
            self.infos[agent]["termination"] = reason
        self.last_result = {
            "termination": reason,
            "rewards": {agent: values[i] for i, agent in enumerate(self.possible_agents)},
            "moves": self.state.move_history_text(),
        }

    def _refresh_infos(self) -> None:
        state = self.state
        legal = [state.move_to_text(m) for m in state.legal_moves()]
        for player, agent in enumerate(self.possible_agents):
            if agent not in self.infos:
                continue
            to_move = player == state.current_player and not state.is_terminal()
            text = f"You play {state.player_names[player]}.\nBoard:\n{state.ascii()}"
            fen = getattr(state, "fen", None)
            if callable(fen):
                text += f"\nFEN: {fen()}"
            if to_move:
                text += f"\nYour turn. Legal moves: {' '.join(legal)}\nAnswer with `Final Answer: <move>`."
            self.infos[agent] = {
                "text": text,
                "legal_moves": legal if to_move else [],
                "action_mask": self.state.action_mask() if to_move else np.zeros(state.num_actions, dtype=np.int8),
                "moves": state.move_history_text(),
                "game_config": state.config(),
                "to_play": state.player_names[state.current_player],
            }

    def render(self) -> str | None:
        text = self.state.ascii()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release."""


def connect_four_aec(rows: int = 6, columns: int = 7, x_in_row: int = 4,
                     render_mode: str | None = None) -> BoardGameAEC:
    """Connect Four as a PettingZoo AEC env."""
    from rollgym.envs.games.connect_four import ConnectFourState

    ConnectFourState(rows, columns, x_in_row)
    return BoardGameAEC(lambda: ConnectFourState(rows, columns, x_in_row), "rollgym_connect_four_v0", render_mode)


def hex_aec(size: int = 11, swap: bool = False, render_mode: str | None = None) -> BoardGameAEC:
    """Hex as a PettingZoo AEC env (action ``size * size`` is the swap when ``swap=True``)."""
    from rollgym.envs.games.hex import HexState

    HexState(size, swap)
    return BoardGameAEC(lambda: HexState(size, swap), "rollgym_hex_v0", render_mode)


def chess_aec(chess960: bool = False, start_position: int = 518, max_plies: int | None = 300,
              render_mode: str | None = None) -> BoardGameAEC:
    """Chess or Chess960 as a PettingZoo AEC env; actions encode from-square * 64 + to-square (see ``ChessState``)."""
    from rollgym.envs.games.chess_state import ChessState

    ChessState(chess960, start_position, max_plies)
    name = "rollgym_chess960_v0" if chess960 else "rollgym_chess_v0"
    return BoardGameAEC(lambda: ChessState(chess960, start_position, max_plies), name, render_mode)


def play_match(env: BoardGameAEC, agents: Mapping[str, Agent], seed: int | None = None) -> dict[str, float]:
    """Play one game between two text agents (``act(text, info) -> str``); returns each agent's total reward.

    ``env.last_result`` then holds the termination reason, the rewards and the moves.

    Example:
        >>> from rollgym.agents.game_bots import BotAgent
        >>> players = {"player_0": BotAgent("greedy", 0), "player_1": BotAgent("random", 1)}
        >>> result = play_match(connect_four_aec(), players)
        >>> sorted(result)
        ['player_0', 'player_1']
    """
    env.reset(seed=seed)
    totals = {a: 0.0 for a in env.possible_agents}
    for agent in env.agent_iter():
        _, reward, terminated, truncated, info = env.last()
        totals[agent] += reward
        if terminated or truncated:
            env.step(None)
            continue
        env.step(agents[agent].act(info["text"], info))
    return totals

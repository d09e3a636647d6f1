"""``TwoPlayerTextEnv``: one agent plays a board game in text against a bot.

Game envs subclass it and supply a :class:`~rollgym.envs.games.base.GameState`
factory and a rules paragraph; this module handles tasks (colour, opponent
seed, random opening), reading a move out of free text, the illegal-move
policy, the opponent's replies, optional tools, rewards and records.

Every move that reaches the board is checked first (:meth:`GameState.is_legal`):
the agent's after parsing, the opponent's after the bot returns it. A bot that
raises (a Stockfish process that died) or returns an illegal move ends the
episode as *failed*, never with an exception from ``step``: ``truncated=True``,
reward 0, ``info["error"] = "opponent_failed"`` and ``info["failure"]`` with the
reason, which the rollout collector records as status ``"failed"`` (never scored).
The bot's ``close()`` is called so that the next game starts it afresh.
"""

from __future__ import annotations

import copy
import json
import re
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, ClassVar

import numpy as np

from rollgym.core.agent import conforms
from rollgym.core.config import configure, field_names
from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import StepResult, TextEnv
from rollgym.core.errors import ConfigError, RollgymError
from rollgym.core.seeding import draw_in_split
from rollgym.core.task import Score, Task
from rollgym.core.toolcalls import ParsedToolCalls, format_tool_response, parse_tool_calls
from rollgym.envs.games.base import GameState, MoveError
from rollgym.envs.games.bots import ChoosesMoves, NamedBot, bot_name, close_bot, make_bot
from rollgym.envs.games.config import AGENT_COLORS, ILLEGAL_MOVE_POLICIES, REWARD_SCHEMES, TOOL_NAMES, PlayConfig

__all__ = ["AGENT_COLORS", "ILLEGAL_MOVE_POLICIES", "OPPONENT_FAILED", "REWARD_SCHEMES", "TOOL_NAMES", "GameTaskSource",
           "OpponentError", "TwoPlayerTextEnv", "extract_move_text"]

_FINAL_RE = re.compile(r"final\s+answer\s*[:：]\s*(.*)", re.IGNORECASE)
_BRACKET_RE = re.compile(r"\[\s*([^\[\]\n]{1,40}?)\s*\]")
_MARKUP = "*`_ \t\"'"
OPPONENT_FAILED = "opponent_failed"
#: Task ``meta`` keys that ``info["task_meta"]`` leaves out: the seed of the opponent's random choices.
PRIVATE_META = frozenset({"opponent_seed"})


def extract_move_text(response: str) -> str | None:
    """Find the move token in an agent's reply, or ``None`` when there is none.

    Order: the text after the last ``Final Answer:``; else the last bracketed token
    (``[e4]``, ``[col 4]``); else the whole reply when it is one short word (``e4``, ``5``).

    Example:
        >>> extract_move_text("I like e4.\\nFinal Answer: **Nf3**")
        'Nf3'
        >>> extract_move_text("I play [c3] now"), extract_move_text("  5 "), extract_move_text("no idea")
        ('c3', '5', None)
    """
    if not isinstance(response, str):
        return None
    matches = list(_FINAL_RE.finditer(response))
    if matches:
        line = matches[-1].group(1).strip().strip(_MARKUP)
        bracket = _BRACKET_RE.search(line)
        token = bracket.group(1) if bracket else line
        token = token.strip().strip(_MARKUP).rstrip(".")
        return token or None
    brackets = _BRACKET_RE.findall(response)
    if brackets:
        return str(brackets[-1]).strip().strip(_MARKUP) or None
    stripped = response.strip().strip(_MARKUP).rstrip(".")
    if stripped and len(stripped) <= 16 and len(stripped.split()) == 1:
        return stripped
    return None


class OpponentError(RollgymError, RuntimeError):
    """The opponent bot raised or returned an illegal move; the game cannot go on."""


@dataclass(eq=False)
class GameTaskSource:
    """Tasks of a game env: the agent's colour, the opponent's seed and an optional random opening.

    A task is a pure function of ``(env id, game settings, split, index)`` (see
    :func:`~rollgym.core.seeding.draw_in_split`); its ``meta`` holds everything the
    env needs to set up the game.

    Args:
        env_id: The id the tasks carry (part of their seed family).
        new_state: The start position for a task's ``meta``.
        draw_meta: ``(rng, index) -> meta``: the agent's side and any game parameters.
        random_opening_plies: Random moves played before the agent's first turn.
        prompt: The rules text every task shows.
        level: For a difficulty level's source, ``(name, knobs)``: the tasks' ``meta`` gets ``opponent`` and,
            when the level changes the board, ``board`` (the game's board options), and their ids end in
            ``@<name>``. ``None`` for the env's own tasks, which carry neither.
    """

    family = "games"

    env_id: str
    _: KW_ONLY
    new_state: Callable[[dict[str, Any]], GameState]
    draw_meta: Callable[[np.random.Generator, int], dict[str, Any]]
    random_opening_plies: int
    prompt: str
    level: tuple[str, Mapping[str, Any]] | None = None
    config_key: str = field(init=False)  # the game's settings, as JSON: part of every task's seed

    def __post_init__(self) -> None:
        self.config_key = json.dumps(self.new_state({"agent_player": 0}).config(), sort_keys=True)

    def size(self, split: str) -> int | None:
        return None

    def task(self, index: int, split: str = "train") -> Task:
        env_id = self.env_id

        def candidate(rng: np.random.Generator) -> dict[str, Any]:
            meta = self.draw_meta(rng, index)
            meta["opponent_seed"] = int(rng.integers(2**31))
            state = self.new_state(meta)
            opening: list[str] = []
            for _ in range(self.random_opening_plies):
                safe = []
                for move in state.legal_moves():
                    child = state.copy()
                    child.play(move)
                    if not child.is_terminal():
                        safe.append(move)
                if not safe:
                    break
                move = safe[int(rng.integers(len(safe)))]
                opening.append(state.move_to_text(move))
                state.play(move)
            meta["opening"] = opening
            return meta

        meta, _ = draw_in_split(f"{env_id}/{self.config_key}", split, index, candidate, lambda m: json.dumps(m))
        meta["game_config"] = self.new_state(meta).config()
        task_id = f"{env_id}:{split}:{index}"
        if self.level is not None:  # what the episode needs to play this level, in the task itself
            name, knobs = self.level
            meta["opponent"] = knobs["opponent"]
            board = {k: v for k, v in knobs.items() if k != "opponent"}
            if board:
                meta["board"] = board
            task_id += f"@{name}"
        return Task(id=task_id, env_id=env_id, prompt=self.prompt, answer=None, meta=meta)


class TwoPlayerTextEnv(TextEnv):
    """Base of the board-game envs: the agent plays one side against a bot, in text.

    Arguments (keyword only):
        opponent: ``"random"``, ``"greedy"``, ``"mcts-<N>"``, ``"stockfish"``,
            ``"stockfish-skill-<0..20>"``, ``"stockfish-elo-<E>"``, or a bot object with
            ``choose(state, rng)``; see :func:`rollgym.envs.games.bots.make_bot`.
        opponent_kwargs: extra arguments for :func:`~rollgym.envs.games.bots.make_bot`.
        play_config: a :class:`~rollgym.envs.games.config.PlayConfig` with the options below, which
            may instead (or as well, overriding it) be given one by one as keywords.
        agent_color: ``"alternate"`` (by task index parity), ``"random"`` (drawn per
            task), ``"first"`` or ``"second"``.
        illegal_move_policy: after ``max_retries`` unplayable answers in one turn,
            ``"forfeit"`` (the agent loses) or ``"random"`` (a random legal move is played).
        max_retries: retries per turn, each with feedback saying what was wrong.
        reward_scheme: ``"score"`` (1 / 0.5 / 0) or ``"signed"`` (+1 / 0 / -1).
        show_legal_moves: list the legal moves in every observation.
        random_opening_plies: random moves played before the agent's first turn.
        tools: offer ``legal_moves()`` and ``simulate(moves)`` as Hermes tool calls (``True``), or
            only the named ones (e.g. ``["simulate"]``: search without being told the legal moves).
        tool_budget: tool calls allowed per episode.
        tool_budget_per_move: tool calls allowed per decision (the MAV papers' per-move search
            budget), refilled after each of the agent's moves; ``None``: only the episode budget.
        split, render_mode: as for every :class:`~rollgym.core.env.TextEnv`.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 4}  # noqa: RUF012
    #: The game's difficulty levels, easiest first: knobs ``opponent`` (a bot name) and any board options.
    levels: ClassVar[tuple[Level, ...]] = ()
    game_title: ClassVar[str] = ""
    move_hint: ClassVar[str] = "a move"
    move_example: ClassVar[str] = ""

    #: The options a game env takes as keywords (or as one ``play_config=PlayConfig(...)``).
    config_options: ClassVar[frozenset[str]] = field_names(PlayConfig)

    def __init__(
        self,
        *,
        play_config: PlayConfig | None = None,
        opponent: Any = "random",
        opponent_kwargs: dict[str, Any] | None = None,
        split: str = "train",
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        self.play_config = play = configure(type(self).__name__, PlayConfig, play_config, options)
        self.tool_names = play.tool_names
        self.use_tools = bool(self.tool_names)
        self._move_calls = (0, 0)  # (moves played when counted, tool calls made since)
        self._owns_opponent = isinstance(opponent, str)  # close only the bots this env started
        self.opponent = make_bot(opponent, **(opponent_kwargs or {})) if isinstance(opponent, str) else opponent
        if not isinstance(self.opponent, ChoosesMoves):
            raise ConfigError("opponent must be a bot name such as 'random' or 'mcts-400', or an object with choose().")
        self._own_opponent = self.opponent
        self._level_bots: dict[str, Any] = {}  # bots of difficulty levels, started on first use
        super().__init__(split=split, render_mode=render_mode)
        self._own_system_prompt = self.system_prompt = self._compose_system_prompt(self.rules_text())
        self.state: GameState | None = None
        self.agent_player = 0
        self._rng = np.random.default_rng(0)
        self._retries_left = play.max_retries
        self._tool_calls_left = play.tool_budget
        self._last_error: str | None = None
        self._move_texts: list[str] = []
        self._last_agent_move: str | None = None

    @classmethod
    def lowest_reward(cls, kwargs: Mapping[str, Any]) -> float:
        """A loss: -1 under ``reward_scheme="signed"``, else 0 (benchmarks count an abandoned game as this)."""
        play = kwargs.get("play_config")
        scheme = kwargs.get("reward_scheme", play.reward_scheme if isinstance(play, PlayConfig) else None)
        return -1.0 if scheme == "signed" else 0.0

    # -- game hooks ---------------------------------------------------------
    @abstractmethod
    def new_state(self, task_meta: dict[str, Any]) -> GameState:
        """The start position for a task."""

    @abstractmethod
    def rules_text(self) -> str:
        """One paragraph of rules for the prompt."""

    def level_rules_text(self, board: Mapping[str, Any]) -> str:
        """The rules paragraph on a difficulty level's board (games whose levels change the board override it)."""
        return self.rules_text()

    def board_options(self) -> dict[str, Any]:
        """This env's values of the board options that difficulty levels set (none by default)."""
        return {}

    def _compose_system_prompt(self, rules: str) -> str:
        return (
            f"You are playing {self.game_title} against an opponent. {rules} "
            f"On your turn, think if you like, then give your move on the last line as "
            f"`Final Answer: <move>`, where <move> is {self.move_hint} "
            f"(for example `Final Answer: {self.move_example}`)."
        )

    def draw_meta(self, rng: np.random.Generator, index: int) -> dict[str, Any]:
        """The task's game parameters; subclasses add to it (e.g. a Chess960 start number)."""
        if self.play_config.agent_color == "alternate":
            player = index % 2
        elif self.play_config.agent_color == "random":
            player = int(rng.integers(2))
        else:
            player = 0 if self.play_config.agent_color == "first" else 1
        return {"agent_player": player}

    def config_key(self) -> str:
        """A string of the settings that change what a task is (part of the task seed family)."""
        return json.dumps(self.new_state({"agent_player": 0}).config(), sort_keys=True)

    def _make_source(self, env_id: str) -> GameTaskSource:
        return GameTaskSource(env_id, new_state=self.new_state, draw_meta=self.draw_meta,
                              random_opening_plies=self.play_config.random_opening_plies, prompt=self.rules_text())

    @property
    def difficulty(self) -> Difficulty | None:
        """The game's :attr:`levels` (opponent strength, and board size where a level sets it)."""
        if not self.levels:
            return None
        name = self._own_opponent.name if conforms(self._own_opponent, NamedBot) else None
        own = {"opponent": name, **self.board_options()}
        default = next((i for i, level in enumerate(self.levels)
                        if all(own.get(k) == v for k, v in level.knobs.items())), None)
        return Difficulty(self.levels, default=default,
                          grows="the opponent's search budget (random, greedy, then more MCTS simulations or "
                                "Stockfish nodes a move), and the board where a level sets it")

    def _level_source(self, env_id: str, level: Level) -> GameTaskSource:
        board = {k: v for k, v in level.knobs.items() if k != "opponent"}
        return GameTaskSource(env_id, new_state=lambda meta: self.new_state({**meta, "board": board}),
                              draw_meta=self.draw_meta, random_opening_plies=self.play_config.random_opening_plies,
                              prompt=self.level_rules_text(board), level=(level.name, dict(level.knobs)))

    def _opponent_for(self, meta: Mapping[str, Any]) -> Any:
        """The bot a task names (``meta["opponent"]``, a difficulty level's), else the env's own."""
        name = meta.get("opponent")
        if name is None:
            return self._own_opponent
        if name not in self._level_bots:
            self._level_bots[str(name)] = make_bot(str(name))
        return self._level_bots[str(name)]

    def extra_info(self, state: GameState) -> dict[str, Any]:
        """Game-specific ``info`` entries (e.g. the FEN)."""
        return {}

    # -- episode ------------------------------------------------------------
    def _start(self, task: Task) -> str:
        meta = task.meta
        self.opponent = self._opponent_for(meta)
        board = meta.get("board")
        self.system_prompt = (self._compose_system_prompt(self.level_rules_text(board)) if board
                              else self._own_system_prompt)
        self.state = self.new_state(meta)
        self.agent_player = int(meta.get("agent_player", 0))
        self._move_texts = []
        self._last_agent_move = None
        for text in meta.get("opening", []):
            self._play(self.state.parse_move(text))
        self._rng = np.random.default_rng(int(meta.get("opponent_seed", 0)))
        self._retries_left = self.play_config.max_retries
        self._tool_calls_left = self.play_config.tool_budget
        self._move_calls = (0, 0)
        self._last_error = None
        events = []
        if meta.get("opening"):
            events.append(f"The game opened with random moves: {' '.join(meta['opening'])}.")
        if self.state.current_player != self.agent_player and not self.state.is_terminal():
            try:
                events.append(self._opponent_moves())
            except OpponentError:  # reset cannot end an episode: raise, with the bot restarted for the next one
                self._restart_opponent()
                raise
        me = self.state.player_names[self.agent_player]
        intro = (
            f"{self.system_prompt}\n\nYou play {me} ({'first' if self.agent_player == 0 else 'second'}); "
            f"your opponent is {bot_name(self.opponent, 'a bot')}."
        )
        return self._observation(events, intro=intro)

    def _advance(self, action: str) -> StepResult:
        try:
            return self._take_turn(action)
        except OpponentError as err:
            return self._opponent_failed(err)

    def _take_turn(self, action: str) -> StepResult:
        assert self.state is not None
        if self.use_tools:
            calls = parse_tool_calls(action)
            if calls.found:
                return self._answer_tools(calls)
        self._last_error = None
        try:
            token = extract_move_text(action)
            if token is None:
                hint = f"no move found; end your reply with `Final Answer: <move>` ({self.move_hint})"
                raise MoveError("no_move", hint)
            move = self.state.parse_move(token)
            if not self.state.is_legal(move):  # the parser's promise, checked: only legal moves reach the board
                raise MoveError("illegal", f"{token[:24]!r} is not a legal move in this position")
        except MoveError as err:
            return self._failed(err.label, str(err))
        except Exception as exc:  # a parser bug must never crash a rollout
            return self._failed("invalid", f"the move could not be read ({type(exc).__name__})")
        return self._agent_moves(move, [])

    def _failed(self, label: str, reason: str) -> StepResult:
        assert self.state is not None
        self._last_error = label
        if self._retries_left > 0:
            self._retries_left -= 1
            left = self._retries_left
            chance = "this is your last try" if left == 0 else f"{left + 1} tries left"
            note = f"Your answer could not be played ({label}): {reason}. Try again ({chance})."
            return self._observation([note]), 0.0, False, False, self._info(error=label)
        if self.play_config.illegal_move_policy == "random":
            moves = self.state.legal_moves()
            move = moves[int(self._rng.integers(len(moves)))]
            note = f"Your answer could not be played ({label}): {reason}. A random legal move was played for you: "
            return self._agent_moves(move, [note], error=label, already_described=True)
        note = f"Your answer could not be played ({label}): {reason}. You have no retries left, so you forfeit."
        return self._finish([note], forfeit=True, error=label)

    def _agent_moves(self, move: Any, events: list[str], error: str | None = None,
                     already_described: bool = False) -> StepResult:
        assert self.state is not None
        text = self._play(move)
        self._last_agent_move = text
        if already_described:
            events[-1] += f"{text}."
        else:
            events.append(f"You played {text}.")
        self._retries_left = self.play_config.max_retries
        if not self.state.is_terminal():
            events.append(self._opponent_moves())
        if self.state.is_terminal():
            return self._finish(events, error=error)
        return self._observation(events), 0.0, False, False, self._info(error=error)

    def _opponent_moves(self) -> str:
        assert self.state is not None
        name = bot_name(self.opponent, "the opponent")
        try:
            move = self.opponent.choose(self.state.copy(), self._rng)
        except Exception as exc:  # e.g. chess.engine.EngineTerminatedError: the episode fails, step does not raise
            raise OpponentError(f"{name} failed ({type(exc).__name__}: {exc})") from exc
        if not self.state.is_legal(move):
            raise OpponentError(f"{name} returned {move!r}, which is not a legal move here")
        return f"Your opponent played {self._play(move)}."

    def _opponent_failed(self, err: OpponentError) -> StepResult:
        """End the episode as failed: the game has no result, so it must not be scored."""
        assert self.state is not None
        self._restart_opponent()
        self._last_error = OPPONENT_FAILED
        note = f"The game cannot go on: your opponent {err}. This episode has no result and is not scored."
        failure = {"type": "OpponentError", "message": str(err)}
        self._result: dict[str, Any] = {"result": None, "termination": OPPONENT_FAILED, "score": None}
        self._final = Score(reward=0.0, correct=False, parsed=self._last_agent_move, error=OPPONENT_FAILED,
                            details={"result": None, "points": None, "termination": OPPONENT_FAILED,
                                     "failure": failure})
        info = self._info(error=OPPONENT_FAILED, final=True)
        info["failure"] = failure
        return self._observation([note], final=True), 0.0, False, True, info

    def _restart_opponent(self) -> None:
        """Close the bot after a failure (a bot with an engine starts a new one on its next move)."""
        try:
            close_bot(self.opponent)
        except Exception:  # the process may be gone already; the next move starts a new one
            pass

    def _play(self, move: Any) -> str:
        """Play ``move`` on the real board and return its text (kept for the history)."""
        assert self.state is not None
        text = self.state.move_to_text(move)
        self.state.play(move)
        self._move_texts.append(text)
        return text

    def _finish(self, events: list[str], forfeit: bool = False, error: str | None = None) -> StepResult:
        assert self.state is not None
        if forfeit:
            score, result, termination = 0.0, "loss", "forfeit"
        else:
            score = self.state.score(self.agent_player)
            result = {1.0: "win", 0.5: "draw", 0.0: "loss"}[score]
            termination = self.state.termination() or "end"
        reward = score if self.play_config.reward_scheme == "score" else 2.0 * score - 1.0
        self._result = {"result": result, "termination": termination, "score": score}
        # the terminal contract of every env: the Score fields; correct means won (a draw is not correct)
        self._final = Score(reward=reward, correct=result == "win", parsed=self._last_agent_move, error=error,
                            details={"result": result, "points": score, "termination": termination,
                                     "reward_scheme": self.play_config.reward_scheme})
        events.append(f"Game over: you {'won' if result == 'win' else 'lost' if result == 'loss' else 'drew'} ({termination.replace('_', ' ')}).")  # noqa: E501
        observation = self._observation(events, final=True)
        return observation, reward, True, False, self._info(error=error, final=True)

    # -- text ---------------------------------------------------------------
    def history_text(self, moves: list[str]) -> str:
        """The move history for the observation."""
        return " ".join(moves) if moves else "(none yet)"

    def _observation(self, events: list[str], intro: str | None = None, final: bool = False) -> str:
        assert self.state is not None
        state = self.state
        parts = [intro] if intro else []
        parts += events
        parts.append("Board:\n" + state.ascii())
        parts += [f"{key.upper()}: {value}" for key, value in self.extra_info(state).items() if key == "fen"]
        parts.append(f"Moves so far: {self.history_text(self._move_texts)}")
        if not final:
            me = state.player_names[self.agent_player]
            parts.append(f"You are {me}; it is your turn.")
            if self.play_config.show_legal_moves:
                parts.append("Legal moves: " + " ".join(state.move_to_text(m) for m in state.legal_moves()))
            parts.append(f"Answer with `Final Answer: <move>`, where <move> is {self.move_hint}.")
        return "\n".join(parts)

    def _info(self, error: str | None = None, final: bool = False) -> dict[str, Any]:
        assert self.state is not None
        state = self.state
        info: dict[str, Any] = {
            "legal_moves": [] if final else [state.move_to_text(m) for m in state.legal_moves()],
            "moves": list(self._move_texts),
            "to_play": state.player_names[state.current_player],
            "agent_player": self.agent_player,
            "agent_color": state.player_names[self.agent_player],
            "board": state.ascii(),
            "game_config": state.config(),
            "error": error,
            "retries_left": self._retries_left,
            **self.extra_info(state),
        }
        if self.use_tools:
            info["tool_calls_left"] = self._calls_left()
        if final:
            info.update(self._result)
            info.update(self._final.to_info())
            info["record"] = self.record()
        return info

    def _common_info(self) -> dict[str, Any]:
        info = super()._common_info()
        # nested lists must not be shared between calls; the bot's seed would let a policy foresee its moves
        info["task_meta"] = {k: copy.deepcopy(v) for k, v in info["task_meta"].items() if k not in PRIVATE_META}
        if self.state is not None and not self._done:
            info.update(self._info(error=self._last_error))
        return info

    def render(self) -> str | None:  # type: ignore[override]
        if self.state is None:
            return None
        text = f"{self.game_title}, {self.state.player_names[self.state.current_player]} to move\n{self.state.ascii()}"
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def record(self) -> dict[str, Any]:
        """The game so far as a JSON-ready dict: config, players, moves (text) and result."""
        from rollgym.envs.games.records import game_record

        assert self.state is not None
        names = ["agent", bot_name(self.opponent, "opponent")]
        if self.agent_player == 1:
            names.reverse()
        return game_record(self.state, players=names, result=getattr(self, "_result", None))

    def close(self) -> None:
        bots = [*self._level_bots.values(), *([self._own_opponent] if self._owns_opponent else [])]
        for bot in bots:
            close_bot(bot)
        super().close()

    # -- tools --------------------------------------------------------------
    @property
    def tools(self) -> list[dict[str, Any]]:
        if not self.use_tools:
            return []
        return [tool for tool in self._tool_schemas() if tool["function"]["name"] in self.tool_names]

    def _calls_left(self) -> int:
        """Tool calls the agent may still make now: the episode budget, and the per-move one when set."""
        if self.play_config.tool_budget_per_move is None:
            return self._tool_calls_left
        moves, used = self._move_calls
        if moves != len(self._move_texts):  # a move was played since: the per-move budget refills
            self._move_calls = (len(self._move_texts), 0)
            used = 0
        return min(self._tool_calls_left, self.play_config.tool_budget_per_move - used)

    def _spend_call(self) -> None:
        self._tool_calls_left -= 1
        moves, used = self._move_calls
        self._move_calls = (moves, used + 1)

    @staticmethod
    def _tool_schemas() -> list[dict[str, Any]]:
        return [
            {"type": "function", "function": {
                "name": "legal_moves", "description": "List the legal moves in the current position.",
                "parameters": {"type": "object", "properties": {}}}},
            {"type": "function", "function": {
                "name": "simulate",
                "description": "Play a sequence of moves (both sides, alternating, starting with yours) on a copy of "
                               "the board and show the resulting position. The real game is not changed.",
                "parameters": {"type": "object", "properties": {
                    "moves": {"type": "array", "items": {"type": "string"}}}, "required": ["moves"]}}},
        ]

    def _answer_tools(self, parsed: ParsedToolCalls) -> StepResult:
        assert self.state is not None
        if self._calls_left() <= 0:  # counts as a failed answer, so tool loops cannot run forever
            return self._failed("no_move", "the tool budget is spent; answer with a move")
        self._last_error = None
        replies = [format_tool_response("error", err.message) for err in parsed.errors]
        for call in parsed.calls:
            if self._calls_left() <= 0:
                replies.append(format_tool_response(call.name, "tool budget exhausted; answer with a move"))
                continue
            self._spend_call()
            replies.append(format_tool_response(call.name, self._run_tool(call.name, call.arguments)))
        scope = " for this move" if self.play_config.tool_budget_per_move is not None else ""
        replies.append(f"{self._calls_left()} tool calls left{scope}. Give your move as `Final Answer: <move>`.")
        return "\n".join(replies), 0.0, False, False, self._info()

    def _run_tool(self, name: str, arguments: dict[str, Any]) -> str:
        assert self.state is not None
        if name not in self.tool_names:
            return f"error: unknown tool {name!r}; the tools are {' and '.join(self.tool_names)}"
        if name == "legal_moves":
            return " ".join(self.state.move_to_text(m) for m in self.state.legal_moves())
        if name == "simulate":
            moves = arguments.get("moves", [])
            if isinstance(moves, str):
                moves = moves.replace(",", " ").split()
            if not isinstance(moves, list) or len(moves) > 200:
                return "error: 'moves' must be a list of at most 200 move strings"
            sim = self.state.copy()
            for i, text in enumerate(moves):
                try:
                    sim.play(sim.parse_move(str(text)))
                except MoveError as err:
                    return f"error at move {i + 1} ({text}): {err.label}: {err}\n{sim.ascii()}"
            status = "game over: " + (
                f"{sim.player_names[w]} wins" if (w := sim.winner()) is not None else "draw"
            ) if sim.is_terminal() else f"{sim.player_names[sim.current_player]} to move"
            return f"{sim.ascii()}\n{status}"
        return f"error: unknown tool {name!r}; the tools are legal_moves and simulate"

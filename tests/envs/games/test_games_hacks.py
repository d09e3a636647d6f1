"""Reward hacks and abuse against the game envs (issue #23): passing the turn, crashing the engine, bad bots.

Every attack runs against the real opponents: the random bot and a real
Stockfish process (``/usr/games/stockfish``), in Chess-v1, Chess960-v1 and the
chess PettingZoo AEC envs. A null move (``--``, ``Z0``, ``0000``, ``@@@@``) or a
drop is ``invalid`` and never reaches the board; an engine that dies mid-game
ends the episode as failed, never with an exception from ``step``.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import rollgym  # noqa: F401  (registers the envs)
from rollgym.agents.base import RandomAgent
from rollgym.envs.games.text_env import OPPONENT_FAILED, OpponentError
from rollgym.rollout.episode import run_episode
from tests.conftest import require_binary, require_module

require_module("chess")

import chess  # noqa: E402

CHESS_IDS = ["Chess-v1", "Chess960-v1"]
OPPONENTS = ["random", "stockfish-nodes-200"]
#: Null moves as python-chess and engines write them, drops, and wrappings of them.
PASS_TOKENS = ["--", "Z0", "z0", "0000", "@@@@", "null", "pass", "P@e4", "N@f3", "[--]", "`--`", "1. --", "--+"]


def _opponent(name: str) -> str:
    if name.startswith("stockfish"):
        require_binary("stockfish", "/usr/games/stockfish")
    return name


def _board(env: gym.Env[Any, Any]) -> chess.Board:
    return env.unwrapped.state.board  # type: ignore[attr-defined, no-any-return]


def _assert_sound(board: chess.Board) -> None:
    """No null move or drop was ever played, and the position is one an engine can take."""
    assert all(move and move.drop is None for move in board.move_stack), board.move_stack
    assert board.is_valid(), board.fen()


@pytest.mark.parametrize("opponent", OPPONENTS)
@pytest.mark.parametrize("env_id", CHESS_IDS)
def test_null_moves_and_drops_are_invalid_and_never_reach_the_board(env_id: str, opponent: str) -> None:
    env = gym.make(env_id, opponent=_opponent(opponent), agent_color="first", max_retries=len(PASS_TOKENS) - 1)
    env.reset(seed=3)
    for i, token in enumerate(PASS_TOKENS):
        obs, reward, terminated, truncated, info = env.step(f"I pass.\nFinal Answer: {token}")
        assert info["error"] == "invalid", token
        assert info["moves"] == [] and "could not be played (invalid)" in obs
        assert reward == 0.0 and not truncated
        assert terminated == (i == len(PASS_TOKENS) - 1)  # the last retry spent: a forfeit
        _assert_sound(_board(env))
    assert info["result"] == "loss" and info["termination"] == "forfeit"
    env.close()


@pytest.mark.parametrize("opponent", OPPONENTS)
@pytest.mark.parametrize("env_id", CHESS_IDS)
def test_a_policy_that_always_passes_scores_zero(env_id: str, opponent: str) -> None:
    """Under v0 passing every turn scored 0.33 a game against random, and crashed Stockfish."""
    env = gym.make(env_id, opponent=_opponent(opponent))
    total = 0.0
    for seed in range(6):  # colours alternate with the task index: Black games start with a bot move
        env.reset(seed=seed)
        for _ in range(10):
            _, reward, terminated, truncated, info = env.step("Final Answer: --")
            assert info["error"] == "invalid" and not truncated
            total += reward
            if terminated:
                break
        assert terminated and info["result"] == "loss"
        _assert_sound(_board(env))
    assert total == 0.0
    env.close()


@pytest.mark.parametrize("env_id", CHESS_IDS)
def test_passing_with_random_fallback_plays_real_moves_against_stockfish(env_id: str) -> None:
    """With ``illegal_move_policy="random"`` every pass becomes a random legal move; Stockfish never sees a null."""
    env = gym.make(env_id, opponent=_opponent("stockfish-nodes-200"), agent_color="first", max_plies=40,
                   max_retries=0, illegal_move_policy="random")
    env.reset(seed=0)
    for _ in range(40):
        obs, _, terminated, truncated, info = env.step("Final Answer: 0000")
        assert info["error"] == "invalid" and not truncated and "random legal move was played" in obs
        _assert_sound(_board(env))
        if terminated:
            break
    assert terminated and info["result"] in {"loss", "draw"}
    assert "--" not in info["pgn"] and "0000" not in info["pgn"]
    env.close()


def test_a_pass_in_check_is_refused_and_the_king_cannot_be_captured() -> None:
    """The v0 game where a king was captured after a pass in check, and ended as a draw from an invalid board."""
    require_module("pettingzoo")
    from rollgym.envs.games.pettingzoo_env import chess_aec

    env = chess_aec()
    env.reset(seed=0)
    for san in ["e4", "f6", "Qh5+"]:
        env.step(f"Final Answer: {san}")
    assert env.state.board.is_check() and env.agent_selection == "player_1"
    env.step("Final Answer: --")
    assert env.infos["player_1"]["error"] == "invalid"
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert env.state.board.is_valid() and env.state.board.king(chess.BLACK) is not None
    assert env.last_result is not None and env.last_result["moves"] == ["e4", "f6", "Qh5+"]


@pytest.mark.parametrize("chess960", [False, True])
def test_aec_chess_refuses_every_pass_token_and_odd_integer_action(chess960: bool) -> None:
    require_module("pettingzoo")
    from rollgym.envs.games.pettingzoo_env import chess_aec

    env = chess_aec(chess960=chess960, start_position=77 if chess960 else 518)
    attacks: list[Any] = [f"Final Answer: {token}" for token in PASS_TOKENS]
    attacks += [True, 3.0, -1, 10**9, np.array([1, 2]), None, b"e2e4", {"move": "e4"}]
    for attack in attacks:
        env.reset(seed=0)
        env.step(attack)  # never raises
        error = env.infos["player_0"].get("error")
        assert error in {"invalid", "illegal"}, attack
        assert env.rewards["player_0"] == -1.0 and env.state.board.move_stack == []


class _NullBot:
    """A broken opponent: it answers with a null move (chess) or a cell off the board."""

    name = "null-bot"

    def choose(self, state: Any, rng: np.random.Generator) -> Any:
        return chess.Move.null() if state.game_name == "chess" else 10_000


class _CrashingBot:
    """A broken opponent: it raises."""

    name = "crashing-bot"
    closed = 0

    def choose(self, state: Any, rng: np.random.Generator) -> Any:
        raise ValueError("the bot fell over")

    def close(self) -> None:
        self.closed += 1


@pytest.mark.parametrize("env_id", ["Chess-v1", "ConnectFour-v0", "Hex-v0"])
def test_a_broken_opponent_fails_the_episode_and_its_move_never_reaches_the_board(env_id: str) -> None:
    for bot in (_NullBot(), _CrashingBot()):
        env = gym.make(env_id, opponent=bot, agent_color="first")
        obs, info = env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(f"Final Answer: {info['legal_moves'][0]}")
        assert truncated and not terminated and reward == 0.0
        assert info["error"] == OPPONENT_FAILED and info["failure"]["type"] == "OpponentError"
        assert bot.name in info["failure"]["message"] and "cannot go on" in obs
        assert len(info["moves"]) == 1 and len(env.unwrapped.state.history) == 1  # the agent's move only
        if isinstance(bot, _CrashingBot):
            assert "ValueError" in info["failure"]["message"] and bot.closed == 1
        elif env_id.startswith("Chess"):
            _assert_sound(_board(env))


# -- a real Stockfish process that dies --------------------------------------------------------------


def _stockfish_children() -> set[int]:
    """Process ids of the Stockfish processes this test process started (from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1: stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if int(rest[1]) == os.getpid() and comm.startswith("stockfish") and rest[0] != "Z":
            found.add(int(entry.name))
    return found


def _kill_and_wait(pids: set[int], sig: int = signal.SIGSEGV) -> None:
    """Send ``sig`` (SIGSEGV: how Stockfish died in the issue) and wait until the processes are gone."""
    for pid in pids:
        os.kill(pid, sig)
    deadline = time.monotonic() + 30
    while pids & _stockfish_children():
        assert time.monotonic() < deadline, "Stockfish did not die"
        time.sleep(0.01)


@pytest.mark.parametrize("env_id", CHESS_IDS)
def test_stockfish_dying_between_moves_fails_the_episode_and_the_next_game_restarts_it(env_id: str) -> None:
    require_binary("stockfish", "/usr/games/stockfish")
    before = _stockfish_children()
    env = gym.make(env_id, opponent="stockfish-nodes-200", agent_color="first")
    agent = RandomAgent(seed=0)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
    assert info["error"] is None and len(info["moves"]) == 2
    engines = _stockfish_children() - before
    assert len(engines) == 1
    _kill_and_wait(engines)
    obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))  # must not raise
    assert truncated and not terminated and reward == 0.0
    assert info["error"] == OPPONENT_FAILED
    assert "EngineTerminatedError" in info["failure"]["message"] and "cannot go on" in obs
    _assert_sound(_board(env))
    obs, info = env.reset(seed=1)  # the next game gets a new engine
    obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
    assert info["error"] is None and not truncated and len(info["moves"]) == 2
    env.close()


def test_stockfish_dying_while_it_thinks_fails_the_episode() -> None:
    require_binary("stockfish", "/usr/games/stockfish")
    before = _stockfish_children()
    env = gym.make("Chess-v1", opponent="stockfish", opponent_kwargs={"movetime": 0.05}, agent_color="first")
    env.reset(seed=0)
    env.step("Final Answer: e4")
    engines = _stockfish_children() - before
    env.unwrapped.opponent.movetime = 30.0  # the next search runs long enough to be killed in the middle
    killer = threading.Timer(0.5, _kill_and_wait, args=(engines,))
    killer.start()
    try:
        _, reward, terminated, truncated, info = env.step("Final Answer: d4")
    finally:
        killer.join()
    assert truncated and not terminated and reward == 0.0 and info["error"] == OPPONENT_FAILED
    assert info["moves"][-1] == "d4"
    env.close()


class _KillerAgent:
    """Plays random legal moves and kills this process's new Stockfish engines before its second move."""

    def __init__(self, before: set[int]) -> None:
        self.before = before
        self.moves = 0
        self.random = RandomAgent(seed=0)

    def reset(self, seed: int | None = None) -> None:
        self.moves = 0

    def act(self, observation: str, info: dict[str, Any]) -> str:
        self.moves += 1
        if self.moves == 2:
            _kill_and_wait(_stockfish_children() - self.before)
        return self.random.act(observation, info)


def test_the_collector_records_an_engine_death_as_a_failed_rollout_never_scored() -> None:
    require_binary("stockfish", "/usr/games/stockfish")
    before = _stockfish_children()
    env = gym.make("Chess-v1", opponent="stockfish-nodes-200", agent_color="first")
    trajectory, task = run_episode(env, _KillerAgent(before), seed=0)
    assert trajectory.status == "failed" and trajectory.reward is None and not trajectory.usable
    failure = trajectory.info["failure"]
    assert failure["stage"] == "step" and failure["type"] == "OpponentError" and failure["reported_by"] == "env"
    assert "EngineTerminatedError" in failure["message"]
    assert task is not None and trajectory.metrics["num_turns"] == 2
    env.close()


def test_an_engine_dead_before_its_first_move_fails_reset_with_a_clear_error_and_recovers() -> None:
    require_binary("stockfish", "/usr/games/stockfish")
    before = _stockfish_children()
    env = gym.make("Chess-v1", opponent="stockfish-nodes-200", agent_color="second")
    env.reset(seed=0)  # the engine plays White's first move
    _kill_and_wait(_stockfish_children() - before)
    with pytest.raises(OpponentError, match=r"stockfish-nodes-200 failed .*EngineTerminatedError"):
        env.reset(seed=1)
    obs, info = env.reset(seed=1)  # a new engine
    assert len(info["moves"]) == 1 and "Your opponent played" in obs
    env.close()

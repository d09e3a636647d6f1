"""The single-agent game envs: checker, tasks, bad input, illegal-move policies, rewards, tools and records."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import rollgym
from rollgym.agents.base import OracleAgent, RandomAgent
from rollgym.envs.games.text_env import extract_move_text
from tests.conftest import check_env_quietly, require_module

GAME_IDS = ["ConnectFour-v0", "Hex-v0", "Chess-v1", "Chess960-v1"]
require_module("chess")


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_check_env_passes_without_warnings(env_id: str) -> None:
    env = gym.make(env_id)
    check_env_quietly(env)
    env.close()


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_random_agent_plays_to_the_end_and_records(env_id: str) -> None:
    kwargs = {"max_plies": 60} if env_id.startswith("Chess") else {}
    env = gym.make(env_id, **kwargs)
    agent = RandomAgent(seed=0)
    obs, info = env.reset(seed=5)
    assert "Final Answer" in obs and info["legal_moves"]
    for _ in range(400):
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        assert info["error"] is None
        if terminated:
            break
    assert terminated and not truncated
    assert reward == {"win": 1.0, "draw": 0.5, "loss": 0.0}[info["result"]]
    record = json.loads(json.dumps(info["record"]))
    assert record["moves"] == info["moves"] and record["finished"]
    text = env.render()
    assert isinstance(text, str) and "to move" in text
    if env_id.startswith("Chess"):
        assert info["pgn"].startswith("[Event") and (" 1. " in info["pgn"] or "\n1. " in info["pgn"])
        assert ("[Variant" in info["pgn"]) == (env_id == "Chess960-v1")
        assert env.unwrapped.svg().startswith("<svg")
    env.close()


def test_reset_is_reproducible_and_colours_alternate() -> None:
    env = gym.make("ConnectFour-v0", opponent="greedy")
    first = env.reset(seed=11)
    again = env.reset(seed=11)
    assert first[0] == again[0] and first[1]["task_id"] == again[1]["task_id"]
    players = {env.reset(options={"task_index": i})[1]["agent_player"] for i in range(4)}
    assert players == {0, 1}
    obs, info = env.reset(options={"task_index": 1})  # agent is O: the opponent has already moved
    assert info["agent_player"] == 1 and len(info["moves"]) == 1 and "Your opponent played" in obs


def test_splits_are_disjoint_and_chess960_positions_vary() -> None:
    env = gym.make("Chess960-v1")
    train = {json.dumps(env.unwrapped.source.task(i, "train").meta, sort_keys=True) for i in range(30)}
    test = {json.dumps(env.unwrapped.source.task(i, "test").meta, sort_keys=True) for i in range(30)}
    assert not train & test
    starts = {env.unwrapped.source.task(i, "train").meta["start_position"] for i in range(30)}
    assert len(starts) > 20
    fixed = gym.make("Chess960-v1", start_position=42)
    assert fixed.reset(seed=0)[1]["game_config"]["start_position"] == 42


@pytest.mark.parametrize(
    ("env_id", "action", "label"),
    [
        ("ConnectFour-v0", "", "no_move"),
        ("ConnectFour-v0", "I think the centre is strong, so I will play there.", "no_move"),
        ("ConnectFour-v0", "Final Answer: e2e4", "invalid"),  # chess move in Connect Four
        ("ConnectFour-v0", "Final Answer: 9", "invalid"),
        ("Hex-v0", "Final Answer: 4", "invalid"),  # Connect Four move in Hex
        ("Hex-v0", "Final Answer: swap", "illegal"),
        ("Chess-v1", "Final Answer: Nf6", "illegal"),
        ("Chess-v1", "Final Answer: e2-e5", "illegal"),
        ("Chess-v1", "Final Answer: c3 please", "invalid"),
        ("Chess-v1", "Final Answer: 4", "invalid"),  # column number in chess
        ("Chess-v1", "\x00\ufffd" * 50, "no_move"),
    ],
)
def test_bad_input_gives_labelled_retry_then_forfeit(env_id: str, action: str, label: str) -> None:
    env = gym.make(env_id, agent_color="first", max_retries=1)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["error"] == label and f"({label})" in obs and "last try" in obs
    assert info["moves"] == []
    obs, reward, terminated, truncated, info = env.step(action)
    assert terminated and reward == 0.0 and info["result"] == "loss" and info["termination"] == "forfeit"
    assert info["error"] == label and "forfeit" in obs


def test_random_policy_plays_a_random_move_and_signed_rewards() -> None:
    env = gym.make("ConnectFour-v0", agent_color="first", max_retries=0, illegal_move_policy="random",
                   reward_scheme="signed")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("no idea")
    assert not terminated and info["error"] == "no_move" and len(info["moves"]) == 2
    assert "random legal move was played" in obs
    while not terminated:
        obs, reward, terminated, _, info = env.step("")
    assert reward == {"win": 1.0, "draw": 0.0, "loss": -1.0}[info["result"]]


def test_forgiving_formats_are_accepted() -> None:
    env = gym.make("Chess-v1", agent_color="first")
    for action in ["Final Answer: **e4**", "I'll open with [e2e4]", "e4", "Final Answer: 1. e4!", "final answer: E2E4"]:
        env.reset(seed=0)
        info = env.step(action)[4]
        assert info["error"] is None and info["moves"][0] == "e4", action


def test_extract_move_text_prefers_the_last_final_answer() -> None:
    assert extract_move_text("Final Answer: 3\nhmm no.\nFinal Answer: 5") == "5"
    assert extract_move_text("[a1] then [b2]") == "b2"
    assert extract_move_text("Final Answer: [col 4]") == "col 4"
    assert extract_move_text("A long explanation without any move at all") is None
    assert extract_move_text("") is None


def test_oracle_beats_random_opponent_in_connect_four() -> None:
    env = gym.make("ConnectFour-v0", opponent="random", agent_color="first")
    obs, info = env.reset(seed=3)
    agent = OracleAgent()
    terminated = False
    while not terminated:
        obs, _reward, terminated, _, info = env.step(agent.act(obs, info))
    assert info["result"] == "win"


def test_tools_answer_within_budget_then_count_as_failures() -> None:
    env = gym.make("ConnectFour-v0", agent_color="first", tools=True, tool_budget=2)
    obs, info = env.reset(seed=0)
    assert {t["function"]["name"] for t in info["tools"]} == {"legal_moves", "simulate"}
    call = '<tool_call>{"name": "legal_moves", "arguments": {}}</tool_call>'
    obs, _reward, terminated, _, info = env.step(call)
    assert "1 2 3 4 5 6 7" in obs and not terminated and info["tool_calls_left"] == 1
    sim = '<tool_call>{"name": "simulate", "arguments": {"moves": ["4", "4", "4", "9"]}}</tool_call>'
    obs, *_ = env.step(sim)
    assert "error at move 4" in obs and "invalid" in obs
    assert env.unwrapped.state.history == []  # simulation never touches the real game
    obs, _reward, terminated, _, info = env.step(call)
    assert info["error"] == "no_move" and "budget" in obs and not terminated
    obs, _reward, terminated, _, info = env.step(call)
    assert terminated and info["termination"] == "forfeit"


def test_hex_swap_and_svg() -> None:
    env = gym.make("Hex-v0", size=5, swap=True, agent_color="second", opponent="greedy")
    _obs, info = env.reset(seed=0)
    assert "swap" in info["legal_moves"]
    _obs, _reward, _terminated, _, info = env.step("Final Answer: swap")
    assert info["error"] is None and info["moves"][1] == "swap"
    from rollgym.envs.games.records import board_svg

    assert board_svg(env.unwrapped.state).count("<circle") == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"opponent": "alphazero"}, "Unknown bot"), ({"agent_color": "red"}, "agent_color"),
     ({"illegal_move_policy": "ignore"}, "illegal_move_policy"), ({"max_retries": -1}, "max_retries"),
     ({"size": 4}, "size")],
)
def test_bad_configuration_is_one_clear_error(kwargs: dict, match: str) -> None:
    env_id = "Hex-v0" if "size" in kwargs else "ConnectFour-v0"
    with pytest.raises(rollgym.ConfigError, match=match):
        gym.make(env_id, **kwargs)


def test_opponent_seed_makes_games_reproducible() -> None:
    def play() -> list[str]:
        env = gym.make("Hex-v0", size=5, opponent="mcts-20")
        _obs, info = env.reset(seed=9)
        rng = np.random.default_rng(0)
        terminated = False
        while not terminated:
            _obs, _, terminated, _, info = env.step("Final Answer: " + info["legal_moves"][int(rng.integers(2))])
        return info["moves"]

    assert play() == play()


def test_chess_forfeit_pgn_and_json_record() -> None:
    env = gym.make("Chess-v1", agent_color="first", max_retries=0)
    env.reset(seed=0)
    info = env.step("Final Answer: e4")[4]
    obs, reward, terminated, _, info = env.step("Final Answer: Zz9")
    assert terminated and reward == 0.0 and info["termination"] == "forfeit" and info["error"] == "invalid"
    assert "forfeit" in obs
    assert '[Result "0-1"]' in info["pgn"] and '[White "agent"]' in info["pgn"] and "1. e4" in info["pgn"]
    record = info["record"]
    assert record["agent_result"]["result"] == "loss" and record["moves"][0] == "e4"
    assert record["players"] == ["agent", "random"] and record["final_fen"] == info["fen"]


def test_random_opening_plies_vary_the_start() -> None:
    env = gym.make("ConnectFour-v0", random_opening_plies=4, agent_color="first")
    starts = {tuple(env.reset(options={"task_index": i})[1]["moves"]) for i in range(0, 20, 2)}
    assert len(starts) > 5 and all(len(s) >= 4 for s in starts)
    obs, info = env.reset(options={"task_index": 0})
    assert "opened with random moves" in obs and info["to_play"] == info["agent_color"]


def test_ansi_render_mode_for_every_game() -> None:
    for env_id in GAME_IDS:
        env = gym.make(env_id, render_mode="ansi")
        _obs, info = env.reset(seed=1)
        text = env.render()
        assert isinstance(text, str) and info["board"] in text and "to move" in text
        env.close()


def test_user_supplied_opponent_is_used_and_not_closed() -> None:
    class FirstMove:
        name = "first-move"
        closed = False

        def choose(self, state, rng):
            return state.legal_moves()[0]

        def close(self) -> None:
            self.closed = True

    bot = FirstMove()
    env = gym.make("Hex-v0", size=5, opponent=bot, agent_color="second")
    _obs, info = env.reset(seed=0)
    assert info["moves"] == ["a1"]
    env.close()
    assert not bot.closed



@pytest.mark.parametrize("env_id", GAME_IDS)
def test_arbitrary_text_never_raises(env_id: str) -> None:
    require_module("hypothesis")
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    env = gym.make(env_id, max_retries=3, illegal_move_policy="random", tools=True)
    moves = st.sampled_from(["e4", "Nf3", "O-O", "4", "c3", "swap", "e7e8q", "[", "Final Answer:", "\n"])
    pieces = st.lists(st.one_of(st.text(max_size=30), moves), max_size=6).map(" ".join)

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(pieces)
    def run(action: str) -> None:
        obs, info = env.reset(seed=len(action))
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and isinstance(reward, float) and not truncated
        assert terminated == (info.get("result") is not None)
        assert info.get("error") in (None, "no_move", "invalid", "illegal", "ambiguous")

    run()
    env.close()


@pytest.mark.parametrize("env_id", ["ConnectFour-v0", "Chess-v1"])
def test_deeply_nested_tool_calls_give_an_error_observation(env_id: str) -> None:
    env = gym.make(env_id, agent_color="first", tools=True)
    env.reset(seed=0)
    deep = "[" * 5000 + "]" * 5000  # json raises RecursionError (not JSONDecodeError) on this
    nested = "[" * 900 + "]" * 900  # parses, but is no list of moves
    for action in (f'<tool_call>{{"name": "simulate", "arguments": {{"moves": {deep}}}}}</tool_call>',
                   f'<tool_call>{{"name": "simulate", "arguments": "{deep}"}}</tool_call>',
                   f'<tool_call>{{"name": "simulate", "arguments": {{"moves": {nested}}}}}</tool_call>'):
        obs, reward, terminated, truncated, info = env.step(action)
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert "error" in obs and info["moves"] == []
    env.close()


def test_board_images_are_well_formed_svg_with_one_mark_per_stone() -> None:
    import xml.etree.ElementTree as ET

    from rollgym.envs.games.hex import HexState
    from rollgym.envs.games.records import board_svg

    hex_state = HexState(7)
    for cell in ["d4", "a1", "g7", "b2"]:
        hex_state.play(hex_state.parse_move(cell))
    root = ET.fromstring(board_svg(hex_state))
    circles = [e for e in root.iter() if e.tag.endswith("circle")]
    assert root.tag.endswith("svg") and len(circles) == 4
    assert sorted(c.get("fill") for c in circles) == ["#222222", "#222222", "#f8f8f8", "#f8f8f8"]
    assert len([e for e in root.iter() if e.tag.endswith("polygon")]) == 49
    env = gym.make("Chess-v1", agent_color="first")
    env.reset(seed=0)
    env.step("Final Answer: e4")
    chess_root = ET.fromstring(env.unwrapped.svg())
    assert chess_root.tag.endswith("svg") and ET.tostring(chess_root) == ET.tostring(ET.fromstring(
        board_svg(env.unwrapped.state)))
    env.close()
    from rollgym.envs.games.connect_four import ConnectFourState

    with pytest.raises(ValueError, match="No SVG board"):
        board_svg(ConnectFourState())


@pytest.mark.parametrize("reward_scheme", ["score", "signed"])
def test_accuracy_and_pass_at_k_count_wins_only_a_draw_is_not_correct(reward_scheme: str) -> None:
    # Connect Four on 4x4, random against random: many draws (reward 0.5 under "score"), which used to
    # count as correct through a reward > 0 fallback (accuracy 0.625 where wins were 0.25).
    from rollgym.benchmarks.metrics import summarize
    from rollgym.rollout import collect

    groups = collect(RandomAgent(), "ConnectFour-v0", n_tasks=20, group_size=2, seed=0,
                     env_kwargs={"rows": 4, "columns": 4, "reward_scheme": reward_scheme})
    trajectories = [t for g in groups for t in g.trajectories]
    results = [t.info["details"]["result"] for t in trajectories]
    assert results.count("draw") >= 3 and results.count("win") >= 1, results  # the case that matters occurs
    assert all(t.info["correct"] == (r == "win") for t, r in zip(trajectories, results))
    summary = summarize(groups)
    assert summary.accuracy.value == results.count("win") / len(results)
    solved = sum(any(t.info["details"]["result"] == "win" for t in g.trajectories) for g in groups)
    assert summary.pass_at_k[2].value == solved / len(groups)


def test_a_cached_stockfish_oracle_does_not_hang_the_interpreter_at_exit() -> None:
    import subprocess
    import sys

    from tests.conftest import require_binary

    require_binary("stockfish", "/usr/games/stockfish")
    require_module("chess")
    code = ("import gymnasium as gym, rollgym; from rollgym.agents import OracleAgent; "
            "env = gym.make('Chess-v1'); obs, info = env.reset(seed=0); env.step(OracleAgent().act(obs, info)); "
            "print('played')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "played" in result.stdout, result.stderr

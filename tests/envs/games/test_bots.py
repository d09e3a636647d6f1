"""Game bots: the ladder (MCTS beats random, Stockfish beats random), greedy tactics, evaluators, Stockfish setup."""

from __future__ import annotations

import numpy as np
import pytest

from rollgym.agents.game_bots import BotAgent
from rollgym.benchmarks.ratings import run_tournament
from rollgym.core.errors import ConfigError, MissingDependencyError
from rollgym.envs.games.bots import (
    GreedyBot,
    MCTSBot,
    RandomBot,
    StockfishBot,
    find_stockfish,
    make_bot,
)
from rollgym.envs.games.connect_four import ConnectFourState
from rollgym.envs.games.hex import HexState
from rollgym.envs.games.mcts import MCTS, CallableEvaluator
from tests.conftest import require_binary, require_module


def test_mcts_400_beats_random_in_at_least_95_percent_of_connect_four_games() -> None:
    # 60 games, colours alternating: winning 59 or more puts the one-sided 95% lower bound near 0.92-0.95,
    # and the true rate is ~100%, so this separates a working search from a broken one without flakiness
    # (the tournament is seeded).
    results = run_tournament(ConnectFourState, {"mcts": MCTSBot(400), "random": RandomBot()}, 60, seed=2026)
    points = sum(r.score if r.first == "mcts" else 1 - r.score for r in results)
    assert len(results) == 60
    assert points >= 59, f"MCTS-400 scored only {points}/60 against random"


def test_mcts_blocks_and_wins_in_hex() -> None:
    rng = np.random.default_rng(0)
    state = HexState(5)
    for cell in ["c1", "a1", "c2", "a2", "c3", "a3", "c4", "a4"]:
        state.play(state.parse_move(cell))
    # Black to move with two winning cells (b5, c5): it takes one at once.
    assert MCTS(300).search(state, rng).move in state.winning_moves(0)
    block = HexState(5)
    for cell in ["a1", "e1", "a2", "e2", "a3", "e3", "a4"]:
        block.play(block.parse_move(cell))
    # White to move; Black threatens only a5: the search must block it.
    assert block.winning_moves(0) == [block.parse_move("a5")]
    assert MCTS(400).search(block, rng).move == block.parse_move("a5")


def test_greedy_wins_blocks_and_captures() -> None:
    rng = np.random.default_rng(0)
    c4 = ConnectFourState()
    for col in [0, 6, 0, 6, 0]:  # X threatens column 1; O (to move) must block
        c4.play(col)
    assert GreedyBot().choose(c4, rng) == 0
    c4.play(1)
    assert GreedyBot().choose(c4, rng) == 0  # X can now win in column 1
    require_module("chess")
    from rollgym.envs.games.chess_state import ChessState

    hanging = ChessState(fen="4k3/8/8/3q4/4P3/8/8/4K3 w - - 0 1")
    assert hanging.move_to_text(GreedyBot().choose(hanging, rng)) == "exd5"
    mate = ChessState(fen="6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    assert mate.move_to_text(GreedyBot().choose(mate, rng)) == "Ra8#"


def test_callable_evaluator_priors_steer_the_search() -> None:
    state = HexState(5)
    target = state.parse_move("e5")

    def prior(s, moves):  # an "LLM" that is sure about one move
        return [1.0 if m == target else 0.0 for m in moves]

    search = MCTS(50, CallableEvaluator(value_fn=lambda s: 0.0, prior_fn=prior))
    result = search.search(state, np.random.default_rng(0))
    assert result.move == target and result.visits[target] == 50
    broken = MCTS(30, CallableEvaluator(value_fn=lambda s: float("nan"), prior_fn=lambda s, m: [1.0]))
    assert broken.search(state, np.random.default_rng(0)).move in state.legal_moves()  # malformed input is ignored


def test_make_bot_names_and_errors() -> None:
    assert make_bot("mcts-25").search.simulations == 25
    assert make_bot("Random").name == "random"
    for bad in ["mcts-x", "alphazero", "stockfish-skill", "random-5"]:
        with pytest.raises(ConfigError):
            make_bot(bad)


def test_bot_agent_reads_the_position_from_info() -> None:
    import gymnasium as gym

    import rollgym  # noqa: F401

    env = gym.make("ConnectFour-v0", agent_color="first", opponent="random")
    obs, info = env.reset(seed=0)
    agent = BotAgent("mcts-200", seed=0)
    terminated = False
    while not terminated:
        obs, _reward, terminated, _, info = env.step(agent.act(obs, info))
    assert info["result"] == "win"


def test_missing_stockfish_names_the_apt_package(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("ROLLGYM_STOCKFISH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("rollgym.envs.games.bots._DEBIAN_GAMES_DIR", str(tmp_path))
    with pytest.raises(MissingDependencyError, match="apt-get install stockfish"):
        find_stockfish()
    monkeypatch.setenv("ROLLGYM_STOCKFISH", str(tmp_path / "nope"))
    with pytest.raises(MissingDependencyError, match="ROLLGYM_STOCKFISH"):
        find_stockfish()


def test_stockfish_is_found_in_debian_games_dir_or_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    binary = require_binary("stockfish", "/usr/games/stockfish")
    monkeypatch.setenv("ROLLGYM_STOCKFISH", binary)
    assert find_stockfish() == binary
    monkeypatch.delenv("ROLLGYM_STOCKFISH")
    assert find_stockfish().endswith("stockfish")


@pytest.mark.parametrize("chess960", [False, True])
def test_full_strength_stockfish_always_beats_random(chess960: bool) -> None:
    require_binary("stockfish", "/usr/games/stockfish")
    require_module("chess")
    from rollgym.envs.games.chess_state import ChessState

    starts = iter([7, 0, 959, 300, 518, 111, 842, 64, 405, 777]) if chess960 else None

    def new_game() -> ChessState:  # Chess960: a different start position every game
        return ChessState(chess960=chess960, start_position=next(starts) if starts else 518, max_plies=400)

    with StockfishBot(skill_level=20, nodes=3000, movetime=None) as stockfish:  # skill 20 = full strength
        results = run_tournament(new_game, {"stockfish": stockfish, "random": RandomBot()}, 10, seed=1)
    assert {r.first for r in results} == {"stockfish", "random"}  # it played both colours
    assert [r.score if r.first == "stockfish" else 1 - r.score for r in results] == [1.0] * 10


def test_stockfish_skill_and_elo_settings_reach_the_engine() -> None:
    require_binary("stockfish", "/usr/games/stockfish")
    require_module("chess")
    from rollgym.envs.games.chess_state import ChessState

    with StockfishBot(elo=1500, nodes=500, movetime=None) as weak:
        state = ChessState()
        move = weak.choose(state, np.random.default_rng(0))
        assert move in state.legal_moves()
        assert weak._engine.options["UCI_Elo"].min <= 1500 and weak.name == "stockfish-elo-1500"
    with pytest.raises(ConfigError, match="chess only"), StockfishBot(skill_level=3) as bot:
        bot.choose(ConnectFourState(), np.random.default_rng(0))


def test_node_limited_stockfish_replies_depend_only_on_the_game() -> None:
    """Same moves, same replies, whatever the engine played before: what verified replays need."""
    require_binary("stockfish", "/usr/games/stockfish")
    require_module("chess")
    import gymnasium as gym

    from rollgym.agents import RandomAgent
    from rollgym.rollout import run_episode

    assert make_bot("stockfish-nodes-400").name == "stockfish-nodes-400"
    with pytest.raises(ConfigError, match="stockfish-nodes"):
        make_bot("stockfish-nodes-0")

    def play(seeds: list[int]) -> dict[int, list[dict[str, str]]]:
        env = gym.make("Chess-v1", opponent="stockfish-nodes-400", max_plies=60)
        out = {}
        for seed in seeds:
            traj, _ = run_episode(env, RandomAgent(), seed=seed, agent_seed=seed)
            out[seed] = traj.messages
        env.close()
        return out

    forward, backward = play([1, 2, 3]), play([3, 2, 1])
    assert forward == backward
    assert all(len(m) > 4 for m in forward.values())  # real games, several replies each


def test_fresh_hash_every_move_makes_each_reply_depend_on_its_position_only() -> None:
    """With ``fresh_hash_every_move`` a bot that played a whole game answers each position as a bot
    that sees only that position does: no hash is carried from move to move."""
    require_binary("stockfish", "/usr/games/stockfish")
    require_module("chess")
    from rollgym.envs.games.chess_state import ChessState

    state, positions = ChessState(), []
    for _ in range(8):  # a fixed line of play: the engine's own moves from the start
        positions.append(state.copy())
        with StockfishBot(nodes=3000, movetime=None) as cold:
            state.play(cold.choose(state.copy(), np.random.default_rng(0)))
    with StockfishBot(nodes=3000, movetime=None, fresh_hash_every_move=True) as warm:
        replies = [warm.choose(p.copy(), np.random.default_rng(0)) for p in positions]
    colds = []
    for position in positions:
        with StockfishBot(nodes=3000, movetime=None) as cold:
            colds.append(cold.choose(position.copy(), np.random.default_rng(0)))
    assert replies == colds


def test_the_chess_oracle_plays_the_same_games_from_several_threads() -> None:
    """The oracle's Stockfish served two threads at once: calls interleaved on one engine failed
    (python-chess's ``AssertionError: CommandState.NEW``, ``CancelledError``). Each call now takes an
    idle bot, and every move is searched from a cleared hash, so threads play exactly the games one
    thread plays, with no failure."""
    require_binary("stockfish", "/usr/games/stockfish")
    require_module("chess")
    from rollgym.agents import OracleAgent
    from rollgym.rollout import collect

    def games(workers: int) -> list[tuple[str, list[str]]]:
        groups = collect(OracleAgent(), "Chess-v1", n_tasks=4, group_size=1, seed=3, max_steps=12,
                         env_kwargs={"opponent": "random"}, workers=workers)
        played = [g.trajectories[0] for g in groups]
        assert [t.status for t in played] != ["failed"] * 4
        assert all(t.info.get("failure") is None for t in played), [t.info.get("failure") for t in played]
        return [(t.task_id, [m["content"] for m in t.messages if m["role"] == "assistant"]) for t in played]

    alone = games(1)
    assert all(len(moves) >= 6 for _, moves in alone)
    assert games(2) == alone


def test_the_old_import_paths_of_bots_and_mcts_still_work_with_a_deprecation_warning() -> None:
    import rollgym.agents.game_bots as old_bots
    import rollgym.agents.mcts as old_mcts

    with pytest.warns(DeprecationWarning, match="rollgym.envs.games.bots.make_bot"):
        assert old_bots.make_bot is make_bot
    with pytest.warns(DeprecationWarning, match="rollgym.envs.games.mcts.MCTS"):
        assert old_mcts.MCTS is MCTS
    with pytest.raises(AttributeError):
        old_mcts.NoSuchName  # noqa: B018


def test_a_forked_child_exits_without_waiting_on_the_parents_engine() -> None:
    """A vector env's worker forked after a Stockfish game must not hang at exit quitting the parent's engine."""
    import multiprocessing

    require_binary("stockfish", "/usr/games/stockfish")
    require_module("chess")
    from rollgym.envs.games.chess_state import ChessState

    bot = StockfishBot(skill_level=0, nodes=50, movetime=None)
    try:
        bot.choose(ChessState(), np.random.default_rng(0))  # starts the engine and registers its exit hook
        child = multiprocessing.get_context("fork").Process(target=bot.close)
        child.start()
        child.join(timeout=60)
        hung = child.is_alive()
        if hung:
            child.kill()
        assert not hung and child.exitcode == 0
        assert bot._engine is not None  # the parent's engine is untouched by the child
        bot.choose(ChessState(), np.random.default_rng(1))
    finally:
        bot.close()
    assert bot._engine is None

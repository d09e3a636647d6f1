"""Elo / Bradley-Terry ratings: recovery of known gaps on simulated results, anchors, intervals, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from rollgym.benchmarks.ratings import (
    GameResult,
    expected_score,
    fit_elo,
    load_results,
    run_tournament,
    save_results,
    simulate_results,
)
from rollgym.core.errors import ConfigError
from tests.conftest import require_module


def test_recovers_known_elo_gaps_within_intervals() -> None:
    true = {"random": 0.0, "greedy": 250.0, "mcts-100": 500.0, "mcts-400": 700.0}
    covered = 0
    trials = 20
    for seed in range(trials):
        results = simulate_results(true, 60, np.random.default_rng(seed), draw_rate=0.3)
        ratings = fit_elo(results, anchors={"random": 0.0})
        assert ratings["random"].anchored and ratings["random"].elo == 0.0
        for name in ("greedy", "mcts-100", "mcts-400"):
            r = ratings[name]
            covered += r.low <= true[name] <= r.high
            assert abs(r.elo - true[name]) < 4 * r.margin / 1.96  # never wildly off
    # 95% intervals: expect ~57 of 60 to cover; allow sampling noise but catch intervals that are too narrow
    assert covered >= 52, f"only {covered}/60 intervals covered the true rating"


def test_more_games_give_narrower_intervals_and_the_order_is_right() -> None:
    true = {"a": 0.0, "b": 100.0, "c": 300.0}
    few = fit_elo(simulate_results(true, 20, np.random.default_rng(1)), anchors={"a": 0.0})
    many = fit_elo(simulate_results(true, 2000, np.random.default_rng(1)), anchors={"a": 0.0})
    assert many["b"].margin < few["b"].margin / 5
    assert many["a"].elo < many["b"].elo < many["c"].elo
    assert abs(many["c"].elo - 300) < many["c"].margin


def test_perfect_record_is_finite_and_flagged() -> None:
    results = [GameResult("strong", "weak", 1.0), GameResult("weak", "strong", 0.0)] * 5
    ratings = fit_elo(results, anchors={"weak": 0.0})
    assert ratings["strong"].perfect and np.isfinite(ratings["strong"].elo) and ratings["strong"].elo > 400
    assert ratings["strong"].margin > 300


def test_anchor_values_shift_everyone() -> None:
    results = simulate_results({"a": 0.0, "b": 200.0}, 200, np.random.default_rng(3), draw_rate=0.1)
    at0 = fit_elo(results, anchors={"a": 0.0})
    at1000 = fit_elo(results, anchors={"a": 1000.0})
    assert at1000["b"].elo - 1000 == pytest.approx(at0["b"].elo, abs=1.0)


def test_user_errors_are_clear() -> None:
    with pytest.raises(ConfigError, match="No games"):
        fit_elo([])
    with pytest.raises(ConfigError, match="played no games"):
        fit_elo([GameResult("a", "b", 1.0)], anchors={"z": 0.0})
    with pytest.raises(ConfigError, match="linked to an anchor"):
        fit_elo([GameResult("a", "b", 0.5), GameResult("c", "d", 0.5)], anchors={"a": 0.0})
    with pytest.raises(ConfigError):
        GameResult("a", "b", 0.7)


def test_expected_score_matches_the_elo_formula() -> None:
    assert expected_score(1500, 1500) == 0.5
    assert expected_score(1900, 1500) == pytest.approx(10 / 11)


def test_tournament_alternates_colours_and_results_round_trip(tmp_path) -> None:
    from rollgym.envs.games.bots import make_bot
    from rollgym.envs.games.hex import HexState

    bots = {"random": make_bot("random"), "greedy": make_bot("greedy"), "mcts-30": make_bot("mcts-30")}
    results = run_tournament(lambda: HexState(5), bots, 4, seed=0)
    assert len(results) == 12
    for a in bots:
        for b in bots:
            if a < b:
                pair = [r for r in results if {r.first, r.second} == {a, b}]
                assert sum(r.first == a for r in pair) == 2
    path = tmp_path / "games.jsonl"
    save_results(results, path)
    assert load_results(path) == results
    (tmp_path / "pgnish.jsonl").write_text('{"white": "x", "black": "y", "result": "1/2-1/2"}\n')
    assert load_results(tmp_path / "pgnish.jsonl") == [GameResult("x", "y", 0.5)]
    (tmp_path / "bad.jsonl").write_text('{"first": "x"}\n')
    with pytest.raises(ConfigError, match="Line 1"):
        load_results(tmp_path / "bad.jsonl")


def _rollgym(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from rollgym.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)


def test_rate_command_from_file_and_from_a_tournament(tmp_path) -> None:
    results = simulate_results({"random": 0.0, "bot": 400.0}, 100, np.random.default_rng(0))
    save_results(results, tmp_path / "r.jsonl")
    out = _rollgym("rate", str(tmp_path / "r.jsonl"), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    bot = next(r for r in data["ratings"] if r["name"] == "bot")
    assert bot["low"] <= 400 <= bot["high"]
    played = _rollgym("rate", "--game", "connect_four", "--bots", "random,greedy", "--games", "4",
                      "--out", str(tmp_path / "t.jsonl"))
    assert played.returncode == 0, played.stderr
    assert "greedy" in played.stdout and "anchor" in played.stdout
    assert len(load_results(tmp_path / "t.jsonl")) == 4
    missing = _rollgym("rate", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_rate_command_labels_chess_ratings_as_stockfish_scale(tmp_path) -> None:
    require_module("chess")
    out = _rollgym("rate", "--game", "chess", "--bots", "random,greedy", "--games", "2", "--game-arg",
                   "max_plies=40", "--json")
    assert out.returncode == 0, out.stderr
    assert "Stockfish scale" in json.loads(out.stdout)["scale"] and "not FIDE" in json.loads(out.stdout)["scale"]


def test_rate_command_labels_a_results_file_with_stockfish_players_as_stockfish_scale(tmp_path) -> None:
    results = simulate_results({"stockfish-elo-1500": 1500.0, "my-llm": 1200.0}, 40, np.random.default_rng(2))
    save_results(results, tmp_path / "chess.jsonl")
    out = _rollgym("rate", str(tmp_path / "chess.jsonl"), "--anchor", "stockfish-elo-1500=1500", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert "Stockfish scale" in data["scale"] and "not FIDE" in data["scale"]
    llm = next(r for r in data["ratings"] if r["name"] == "my-llm")
    assert llm["low"] <= 1200 <= llm["high"]
    save_results(simulate_results({"random": 0.0, "mcts": 300.0}, 10, np.random.default_rng(2)), tmp_path / "c4.jsonl")
    plain = json.loads(_rollgym("rate", str(tmp_path / "c4.jsonl"), "--json").stdout)
    assert "Stockfish" not in plain["scale"]

"""Model-guided search in the board games: external (model priors and value in MCTS) and internal (a tree in context).

The model is the tiny random one (no download); torch runs on one thread so the tests stay quick on a shared CPU.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest

import rollgym  # noqa: F401  (registers the envs)
from rollgym.agents.backends.base import Generation
from rollgym.agents.backends.scoring import continuation_logprobs, pair_logprobs
from rollgym.agents.internal_search import InternalSearchAgent, parse_tree, tree_prompt
from rollgym.agents.model_search import ModelEvaluator, ModelMCTSAgent, ModelMCTSBot, softmax
from rollgym.core.errors import ConfigError
from rollgym.envs.games.connect_four import ConnectFourState
from rollgym.envs.games.hex import HexState
from rollgym.envs.games.mcts import CallableEvaluator

pytest.importorskip("torch")
pytest.importorskip("chess")


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _states():
    from rollgym.envs.games.chess_state import ChessState

    c4 = ConnectFourState()
    for col in [0, 0, 0, 0, 0, 0, 3]:  # column 1 full: six legal moves left
        c4.play(col)
    chess = ChessState()
    for san in ["e4", "e5", "Nf3"]:
        chess.play(chess.parse_move(san))
    return [c4, HexState(size=5), chess, ChessState(chess960=True, start_position=100)]


def _winning_position() -> ConnectFourState:
    state = ConnectFourState()
    for col in [0, 6, 0, 6, 0, 5]:  # X (to move) wins at column 1 (move 0); nothing else wins at once
        state.play(col)
    return state


# -- scoring -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shared_prefix", [True, False])
def test_continuation_logprobs_match_the_backends_own_logprobs(tiny_backend, shared_prefix):
    prompt = tiny_backend.encode("Board:\n. . .\nBest move:")
    options = [tiny_backend.encode(t) for t in (" 4\n", " 12\n", " e4\n", " Nxe4+\n", "4")]
    assert len({len(o) for o in options}) > 1  # continuations of different lengths share one padded batch
    batched = pair_logprobs(tiny_backend, [(prompt, o) for o in options], shared_prefix=shared_prefix)
    one_by_one = [sum(tiny_backend.logprobs_of(prompt, option)) for option in options]
    assert batched == pytest.approx(one_by_one, abs=1e-4)
    assert continuation_logprobs(tiny_backend, prompt, options) == pytest.approx(one_by_one, abs=1e-4)
    # pairs with different prompts in one call score as each would alone
    other = tiny_backend.encode("Who wins? Answer:")
    mixed = pair_logprobs(tiny_backend, [(prompt, options[0]), (other, tiny_backend.encode(" win"))],
                          shared_prefix=shared_prefix)
    assert mixed == pytest.approx([one_by_one[0], sum(tiny_backend.logprobs_of(other, tiny_backend.encode(" win")))],
                                  abs=1e-4)


def test_scoring_needs_a_local_model_and_tokens(tiny_backend):
    with pytest.raises(ConfigError, match="local transformers model"):
        continuation_logprobs(object(), [1], [[2]])
    with pytest.raises(ConfigError, match="no tokens"):
        continuation_logprobs(tiny_backend, [1], [[]])


# -- external search ---------------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(4), ids=["connect_four", "hex", "chess", "chess960"])
def test_priors_sum_to_one_over_the_legal_moves_only(tiny_backend, index):
    state = _states()[index]
    evaluator = ModelEvaluator(tiny_backend)
    priors = evaluator.prior_distribution(state)
    assert set(priors) == {state.move_to_text(m) for m in state.legal_moves()}
    assert math.isclose(sum(priors.values()), 1.0, abs_tol=1e-9) and all(p > 0 for p in priors.values())
    aligned = evaluator.priors(state, state.legal_moves())
    assert aligned is not None and math.isclose(sum(aligned), 1.0, abs_tol=1e-9)
    assert -1.0 <= evaluator.evaluate(state, np.random.default_rng(0)) <= 1.0
    assert evaluator.calls == 1  # priors and value of a position come from one cached forward pass


def test_connect_four_full_column_gets_no_prior(tiny_backend):
    state = _states()[0]
    assert "1" not in ModelEvaluator(tiny_backend).prior_distribution(state)


def test_budget_one_plays_the_models_top_prior(tiny_backend):
    state = _states()[0]
    bot = ModelMCTSBot(tiny_backend, simulations=1)
    priors = bot.evaluator.prior_distribution(state)
    assert state.move_to_text(bot.choose(state.copy(), np.random.default_rng(0))) == max(priors, key=priors.get)


@pytest.mark.parametrize("budget", [1, 3, 8])
def test_search_budget_is_respected(tiny_backend, budget):
    state = _states()[1]
    bot = ModelMCTSBot(tiny_backend, simulations=budget)
    result = bot.search.search(state.copy(), np.random.default_rng(0))
    assert result.simulations == budget and sum(result.visits.values()) == budget
    assert bot.evaluator.calls <= budget + 1  # the root, then at most one new position per simulation
    assert bot.name == f"model-mcts-{budget}"


def test_all_prior_on_the_winning_move_finds_it_with_budget_one():
    state = _winning_position()
    assert state.winning_moves(0) == [0]

    def on(target):
        return CallableEvaluator(value_fn=lambda s: 0.0,
                                 prior_fn=lambda s, moves: [1.0 if m == target else 0.0 for m in moves])

    for seed in range(5):
        assert ModelMCTSBot(simulations=1, evaluator=on(0)).choose(state.copy(), np.random.default_rng(seed)) == 0
        # no shortcut takes the win: with all prior on another move, budget 1 plays that move
        assert ModelMCTSBot(simulations=1, evaluator=on(3)).choose(state.copy(), np.random.default_rng(seed)) == 3
    # with enough budget the search overrules a wrong prior: the win's value shows through
    wrong = CallableEvaluator(value_fn=lambda s: 0.0,
                              prior_fn=lambda s, moves: [0.5 if m == 3 else 0.5 / (len(moves) - 1) for m in moves])
    assert ModelMCTSBot(simulations=200, evaluator=wrong).choose(state.copy(), np.random.default_rng(0)) == 0


def test_model_mcts_plays_only_legal_moves_in_the_env(tiny_backend):
    env = gym.make("ConnectFour-v0")
    agent = ModelMCTSAgent(tiny_backend, simulations=2, seed=0)
    obs, info = env.reset(seed=3)
    errors = []
    for _ in range(30):
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        errors.append(info.get("error"))
        if terminated or truncated:
            break
    assert terminated and not any(errors), errors
    env.close()


def test_bad_settings_are_one_sentence_errors(tiny_backend):
    with pytest.raises(ConfigError, match="positive integer"):
        ModelMCTSBot(tiny_backend, simulations=0)
    with pytest.raises(ConfigError, match="value mode"):
        ModelEvaluator(tiny_backend, value="engine")
    with pytest.raises(ConfigError, match="local transformers model"):
        ModelEvaluator(object())
    with pytest.raises(ConfigError, match="board games only"):
        ModelMCTSAgent(tiny_backend, 1).check_env("Countdown-v0")


def test_softmax_is_safe_on_non_finite_scores():
    assert softmax([float("-inf"), float("-inf")]) == [0.5, 0.5]
    assert softmax([0.0, float("nan")]) == [1.0, 0.0]


# -- internal search: parsing -------------------------------------------------------------------------


def test_a_well_formed_tree_is_read_with_minimax_values():
    state = ConnectFourState()
    text = ("<tree>\ncandidate 4 | reply 4 | eval 0.6\ncandidate 4 | reply 3 | eval -0.2\n"
            "candidate 3 | reply 4 | eval 0.1\n</tree>\nFinal Answer: 3")
    parsed = parse_tree(text, state, width=3)
    assert parsed.values == {"4": -0.2, "3": 0.1}
    assert parsed.choice == "3" and parsed.answer_used and not parsed.malformed and parsed.dropped == 0


def test_final_answer_outside_the_tree_is_overridden_by_the_best_candidate():
    state = ConnectFourState()
    tree = "<tree>\ncandidate 4 | reply 4 | eval 0.6\ncandidate 2 | reply 4 | eval 0.1\n</tree>\n"
    for tail in ["Final Answer: 7", "Final Answer: 99", "no answer", ""]:
        parsed = parse_tree(tree + tail, state, width=3)
        assert parsed.choice == "4" and not parsed.answer_used


def test_illegal_moves_bad_evals_and_bad_lines_are_dropped_and_counted():
    state = _states()[0]  # column 1 is full
    text = ("<tree>\n"
            "candidate 1 | reply 2 | eval 0.9\n"       # illegal candidate (full column)
            "candidate 8 | reply 2 | eval 0.9\n"       # off the board
            "candidate 2 | reply 1 | eval 0.9\n"       # illegal reply
            "candidate 2 | reply 3 | eval 1.5\n"       # eval out of range
            "candidate 2 | reply none | eval 1\n"      # 'none' while the game goes on
            "I think 2 is good\n"                      # not the format
            "candidate 5 | reply 5 | eval -0.4\n"      # kept
            "</tree>\nFinal Answer: 2")
    parsed = parse_tree(text, state, width=3)
    assert parsed.values == {"5": -0.4} and parsed.dropped == 6 and parsed.choice == "5"


def test_reply_none_is_accepted_when_the_candidate_ends_the_game():
    parsed = parse_tree("<tree>\ncandidate 1 | reply none | eval 1\n</tree>\nFinal Answer: 1",
                        _winning_position(), width=2)
    assert parsed.lines == [("1", None, 1.0)] and parsed.choice == "1"


def test_width_and_replies_budgets_cut_the_tree():
    text = "<tree>\n" + "".join(f"candidate {c} | reply {r} | eval 0.{c}\n" for c in (1, 2, 3, 4) for r in (1, 2, 3))
    parsed = parse_tree(text + "</tree>", ConnectFourState(), width=2, replies=2)
    assert set(parsed.values) == {"1", "2"} and len(parsed.lines) == 4
    assert parsed.over_budget == 12 - 4


@pytest.mark.parametrize("text", [
    "", "Final Answer: 4", "<tree></tree>Final Answer: 4", "<tree>\ncandidate | reply | eval\n</tree>",
    "<tree>" + "candidate 4 | reply 4 | eval 0.1 " * 5000, "<tree>\n" + "\x00\uffff" * 1000, None, 42,
    "<TREE>\ncandidate 99999999999999999 | reply 4 | eval 1e308\n</TREE>",
])
def test_malformed_trees_never_raise(text):
    parsed = parse_tree(text, ConnectFourState(), width=3)
    assert parsed.malformed and parsed.error in ("no_tree", "empty_tree")


def test_an_unclosed_tree_cut_by_the_token_cap_still_counts():
    parsed = parse_tree("<tree>\ncandidate 4 | reply 4 | eval 0.3\ncandidate 3 | rep", ConnectFourState(), width=3)
    assert parsed.choice == "4" and parsed.dropped == 1


def test_chess_trees_use_the_real_rules():
    from rollgym.envs.games.chess_state import ChessState

    state = ChessState()
    text = ("<tree>\ncandidate e4 | reply e5 | eval 0.3\ncandidate Nf3 | reply Nf6 | eval 0.1\n"
            "candidate e5 | reply e4 | eval 0.9\ncandidate g1f3 | reply d5 | eval -0.5\n</tree>\nFinal Answer: Nf3")
    parsed = parse_tree(text, state, width=3)
    assert parsed.values == {"e4": 0.3, "Nf3": -0.5} and parsed.dropped == 1 and parsed.choice == "Nf3"


def test_the_prompt_prescribes_the_format_and_budget():
    prompt = tree_prompt(HexState(size=5), width=4, replies=2)
    assert "<tree>" in prompt and "at most 4 different candidate moves" in prompt and "Legal moves: a1" in prompt


# -- internal search: the agent -----------------------------------------------------------------------


class _Scripted:
    """A stand-in model that writes fixed replies (what the model says is arbitrary; the agent must cope)."""

    def __init__(self, tokenizer, replies):
        self.tokenizer = tokenizer
        self.replies = list(replies)
        self.prompts = []

    def encode(self, prompt):
        return [1, 2, 3]

    def generate_ids(self, prompts, sampling, seeds=None):
        self.prompts.append(prompts[0])
        return [Generation(text=self.replies.pop(0), token_ids=[5])]


def test_agent_takes_a_valid_tree_and_falls_back_from_a_malformed_one(tiny_backend):
    good = "<tree>\ncandidate 3 | reply 4 | eval 0.5\n</tree>\nFinal Answer: 3"
    stub = _Scripted(tiny_backend.tokenizer, [good, "no tree at all", "<tree>\ncandidate 9 | reply 1 | eval 0\n"])
    agent = InternalSearchAgent(stub, width=2, fallback="random", seed=0)
    state = ConnectFourState()
    assert agent.choose(state, np.random.default_rng(0)) == 2
    for _ in range(2):
        assert agent.choose(state, np.random.default_rng(0)) in state.legal_moves()
    assert agent.stats == Counter(searches=3, malformed=2, dropped_lines=1)


def test_agent_asks_for_the_answer_when_the_tree_closed_without_one(tiny_backend):
    stub = _Scripted(tiny_backend.tokenizer, ["<tree>\ncandidate 2 | reply 4 | eval 0.5\n</tree>", "\nFinal Answer: 2"])
    agent = InternalSearchAgent(stub, width=2, fallback="random", seed=0)
    assert agent.choose(ConnectFourState(), np.random.default_rng(0)) == 1
    assert agent.last is not None and agent.last.answer_used and len(stub.prompts) == 2


def test_internal_search_with_the_tiny_model_falls_back_to_its_priors_and_plays_legal_moves(tiny_backend):
    env = gym.make("Hex-v0", size=5)
    agent = InternalSearchAgent(tiny_backend, width=2, replies=1, max_tokens=24, seed=0)
    obs, info = env.reset(seed=1)
    for _ in range(3):
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        assert not info.get("error")
        if terminated or truncated:
            break
    assert agent.stats["searches"] >= 1
    assert agent.stats["malformed"] + agent.stats["answer_overridden"] <= agent.stats["searches"]
    env.close()


# -- the CLI --------------------------------------------------------------------------------------------


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "rollgym.cli", *args], capture_output=True, text=True, timeout=600)


def test_eval_runs_the_search_agents_with_a_budget(tiny_model_dir):
    out = _cli("eval", "ConnectFour-v0", "--agent", "model-mcts", "--model", str(tiny_model_dir),
               "--search-budget", "2", "--n", "1", "--group-size", "1", "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["agent"] == f"model-mcts-2:{tiny_model_dir}" and summary["episodes"] == 1
    assert summary["failures"] == 0


@pytest.mark.parametrize("args, message", [
    (["ConnectFour-v0", "--agent", "internal-search"], "needs --model"),
    (["Countdown-v0", "--agent", "model-mcts", "--model", "x"], "board games only"),
    (["ConnectFour-v0", "--agent", "model-mcts", "--model", "http://127.0.0.1:9/v1"], "local transformers"),
    (["ConnectFour-v0", "--agent", "oracle", "--search-budget", "3"], "--search-budget applies"),
])
def test_eval_search_agent_mistakes_are_one_sentence(args, message):
    out = _cli("eval", *args, "--n", "1")
    assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr

"""The negotiation game: payoffs by formula, private values, bounded turns, and the reward-hack suite."""

from __future__ import annotations

import pytest

import rollgym
from rollgym.core.errors import ConfigError
from rollgym.envs.games.negotiation import (
    POOL_VALUE,
    FairNegotiator,
    Negotiation,
    make_negotiation_bot,
    split_value,
)
from rollgym.rollout.selfplay import play_seated


def started(index: int = 0, **kwargs) -> Negotiation:
    game = Negotiation(**kwargs)
    game.reset(task=game.draw_task("train", index))
    return game


def test_every_task_prices_the_pool_at_ten_for_both_players_with_different_values():
    game = Negotiation()
    for index in range(30):
        meta = game.deal_of(game.draw_task("train", index))
        assert all(split_value(v, meta["counts"]) == POOL_VALUE for v in meta["values"])
        assert meta["values"][0] != meta["values"][1]
    train = [game.deal_of(game.draw_task("train", i)) for i in range(30)]
    test = [game.deal_of(game.draw_task("test", i)) for i in range(30)]
    assert not [m for m in test if m in train]


def test_a_deal_pays_each_seat_its_own_value_of_its_share():
    game = started(3)
    assert game.act(0, "Final Answer: propose 1 0 1") is None
    assert game.act(1, "[accept]") is None
    counts, values = game.counts, game.values
    rest = [c - t for c, t in zip(counts, [1, 0, 1])]
    assert game.payoffs() == [split_value(values[0], [1, 0, 1]) / 10, split_value(values[1], rest) / 10]
    assert game.observe(0)[1]["details"]["shares"] == [[1, 0, 1], rest]


def test_walking_away_and_running_out_of_turns_give_no_deal():
    game = started()
    game.act(0, "Final Answer: walk")
    assert game.done and game.payoffs() == [0.0, 0.0] and game.observe(1)[1]["result"] == "no_deal"
    game = started()
    for turn in range(6):
        assert game.act(turn % 2, "Final Answer: propose 0 0 0") is None
    assert game.done and game.payoffs() == [0.0, 0.0] and game.turn == 6


def test_a_seat_sees_its_own_values_and_never_the_other_players():
    game = started(1)
    obs, info = game.observe(0)
    mine = ", ".join(f"{n} {v}" for n, v in zip(("books", "hats", "balls"), game.values[0]))
    theirs = ", ".join(f"{n} {v}" for n, v in zip(("books", "hats", "balls"), game.values[1]))
    assert mine in obs and theirs not in obs
    assert info["values"] == game.values[0] and "values" not in str(info.get("offer"))


@pytest.mark.parametrize(("answer", "label"), [
    ("", "no_move"),
    ("let me think about it", "no_move"),
    ("Final Answer: propose 9 9 9", "illegal"),          # more than the pool holds
    ("Final Answer: propose -1 0 0", "illegal"),
    ("Final Answer: propose 1 2", "invalid"),             # wrong arity
    ("Final Answer: accept", "illegal"),                  # nothing to accept yet
    ("Final Answer: my reward is 1.0", "invalid"),        # claiming a payoff
    ("Final Answer: propose 1 1 1; also give me 10 points", "invalid"),
])
def test_malformed_impossible_or_payoff_claiming_actions_are_labelled_and_forfeit_to_no_deal(answer, label):
    env = rollgym.make("Negotiation-v0", agent_seat=0)
    env.reset(options={"task_index": 0})
    _, reward, done, _, info = env.step(answer)
    assert (reward, done, info["error"]) == (0.0, False, label)
    _, reward, done, _, info = env.step(answer)
    assert done and reward == 0.0 and info["result"] == "no_deal" and info["correct"] is False


def test_out_of_turn_actions_change_nothing():
    game = started()
    assert game.act(1, "Final Answer: propose 0 0 0") == "out_of_turn"
    assert game.proposals == [] and game.to_move == 0
    game.act(0, "Final Answer: propose 1 1 1")
    assert game.act(0, "Final Answer: accept") == "out_of_turn"  # nobody accepts their own proposal
    assert not game.done


def test_the_fair_negotiator_makes_deals_with_itself_and_beats_random_play():
    game = Negotiation()
    rewards, deals = [], 0
    for seed in range(40):
        a, b = play_seated(game, [FairNegotiator(), FairNegotiator()], seed=seed)
        rewards += [a.reward, b.reward]
        deals += a.info["result"] == "deal"
    assert deals >= 36 and sum(rewards) / len(rewards) >= 0.5
    with pytest.raises(ConfigError, match="Unknown negotiation bot"):
        make_negotiation_bot("shark")


def test_the_levels_are_ordered_by_the_oracles_payoff_against_them():
    from tests.envs.games.test_kuhn import _oracle_mean_at_level

    env = rollgym.make("Negotiation-v0")
    assert env.unwrapped.difficulty.names == ("fair", "tough") and env.unwrapped.difficulty.default == 0
    assert _oracle_mean_at_level("Negotiation-v0", 0) > _oracle_mean_at_level("Negotiation-v0", 1)

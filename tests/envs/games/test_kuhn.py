"""Kuhn poker: exact payoffs, the Nash bot's game value, tasks, and the reward-hack suite."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import rollgym
from rollgym.core.errors import ConfigError
from rollgym.envs.games.kuhn import (
    KuhnPoker,
    NashKuhnBot,
    kuhn_payoff,
    kuhn_value,
    legal_actions,
    make_kuhn_bot,
    nash_strategy,
)
from rollgym.rollout.selfplay import play_seated


@pytest.mark.parametrize("alpha", [Fraction(0), Fraction(1, 6), Fraction(1, 3)])
def test_every_nash_strategy_of_the_family_has_the_game_value_minus_one_eighteenth(alpha):
    assert kuhn_value(nash_strategy(alpha), nash_strategy()) == Fraction(-1, 18)
    assert kuhn_value(nash_strategy(), nash_strategy(alpha)) == Fraction(-1, 18)


def test_a_strategy_off_the_equilibrium_is_exploited():
    def always_bet(card, history):
        return {"bet": Fraction(1), "check": Fraction(0)} if "bet" not in history else {"call": Fraction(1),
                                                                                         "fold": Fraction(0)}
    assert kuhn_value(always_bet, nash_strategy()) < Fraction(-1, 18)
    assert kuhn_value(nash_strategy(), always_bet) > Fraction(-1, 18)


def test_payoffs_follow_the_rules():
    assert kuhn_payoff((0, 1), ("check", "check")) == -1
    assert kuhn_payoff((2, 1), ("check", "bet", "call")) == 2
    assert kuhn_payoff((0, 2), ("bet", "fold")) == 1
    assert legal_actions(("bet",)) == ("call", "fold")
    with pytest.raises(ValueError, match="not a finished"):
        kuhn_payoff((0, 1), ("check",))


def test_the_nash_bot_in_self_play_wins_about_the_game_value():
    game = KuhnPoker()
    bots = [NashKuhnBot(seed=0), NashKuhnBot(seed=1)]
    total = 0.0
    n = 3000
    for i in range(n):
        first, _ = play_seated(game, bots, seed=i, agent_seeds=[2 * i, 2 * i + 1])
        total += first.reward
    # the standard deviation of one game's payoff is below 1.5: 4 standard errors is about 0.11
    assert abs(total / n - (-1 / 18)) < 0.11


def test_tasks_are_pure_and_splits_differ():
    env = rollgym.make("KuhnPoker-v0")
    a = env.unwrapped.source.task(5, "train")
    b = env.unwrapped.source.task(5, "train")
    assert a.meta == b.meta and a.meta["agent_seat"] == 1
    test_metas = [env.unwrapped.source.task(i, "test").meta for i in range(20)]
    train_metas = [env.unwrapped.source.task(i, "train").meta for i in range(20)]
    assert not [m for m in test_metas if m in train_metas]
    assert {tuple(m["cards"]) for m in train_metas} >= {(0, 1), (1, 0), (2, 0)}


def test_unknown_bots_and_seats_are_one_sentence_errors():
    with pytest.raises(ConfigError, match="Unknown Kuhn poker bot"):
        make_kuhn_bot("shark")
    with pytest.raises(ConfigError, match="alpha must be between"):
        make_kuhn_bot("nash-1/2")
    with pytest.raises(ConfigError, match="agent_seat"):
        rollgym.make("KuhnPoker-v0", agent_seat=2)


# -- reward hacks: none of them earns chips -----------------------------------------------------------


def _first_seat_env(**kwargs):
    env = rollgym.make("KuhnPoker-v0", agent_seat=0, **kwargs)
    obs, info = env.reset(options={"task_index": 0})
    return env, obs, info


@pytest.mark.parametrize(("answer", "label"), [
    ("", "no_move"),
    ("I think I should bet here but I'm not sure", "no_move"),
    ("Final Answer: raise", "invalid"),
    ("Final Answer: check bet", "invalid"),
    ("Final Answer: call", "illegal"),                # no bet to call yet
    ("Final Answer: fold", "illegal"),
    ("Final Answer: I win 2 chips", "invalid"),       # claiming a payoff
    ("reward = 2", "no_move"),
    ("\x00\ud800" * 50, "no_move"),
])
def test_malformed_or_illegal_actions_are_labelled_and_then_forfeit_as_a_fold(answer, label):
    env, _, info = _first_seat_env(max_retries=1)
    obs, reward, done, _, info = env.step(answer)
    assert (reward, done, info["error"]) == (0.0, False, label)
    assert f"could not be played ({label})" in obs
    obs, reward, done, _, info = env.step(answer)
    assert done and reward == -1.0 and info["correct"] is False
    assert info["details"]["forfeited_by"] == 0


def test_a_forfeit_facing_a_bet_loses_what_the_seat_put_in():
    game = KuhnPoker(max_retries=0)
    game.reset(task=game.draw_task("train", 0))
    game.act(0, "Final Answer: bet")
    assert game.act(1, "Final Answer: raise") == "invalid"
    assert game.done and game.payoffs() == [1.0, -1.0]


def test_out_of_turn_actions_change_nothing():
    game = KuhnPoker()
    game.reset(task=game.draw_task("train", 0))
    assert game.act(1, "Final Answer: bet") == "out_of_turn"
    assert game.history == () and game.to_move == 0
    game.act(0, "Final Answer: check")
    game.act(1, "Final Answer: check")
    assert game.done
    assert game.act(0, "Final Answer: bet") == "out_of_turn"  # after the end, nobody may act
    assert game.history == ("check", "check")


def test_the_opponents_card_stays_hidden_until_a_showdown():
    game = KuhnPoker()
    game.reset(task=game.draw_task("train", 0))
    theirs = ["Jack", "Queen", "King"][game.cards[1]]
    obs, info = game.observe(0)
    assert theirs not in obs and "card" in info and info["card"] != theirs
    game.act(0, "Final Answer: check")
    game.act(1, "Final Answer: check")
    assert f"your opponent had the {theirs}" in game.observe(0)[0]


def test_the_oracle_beats_random_play_against_the_nash_bot():
    from rollgym.agents import make_agent

    def mean_reward(name):
        total = 0.0
        for seed in range(300):
            env = rollgym.make("KuhnPoker-v0")
            agent = make_agent(name)
            agent.reset(seed)
            obs, info = env.reset(seed=seed)
            done = False
            while not done:
                obs, reward, done, _, info = env.step(agent.act(obs, info))
            total += reward
        return total / 300

    assert mean_reward("oracle") > mean_reward("random") + 0.1


def test_seeded_bots_repeat():
    a, b = NashKuhnBot(seed=3), NashKuhnBot(seed=3)
    info = {"card": "Jack", "history": []}
    assert [a.act("", info) for _ in range(20)] == [b.act("", info) for _ in range(20)]
    assert np.isclose(np.mean([a.act("", {"card": "Jack", "history": []}) == "Final Answer: bet"
                               for _ in range(3000)]), 1 / 6, atol=0.03)


def _oracle_mean_at_level(env_id: str, level: int, n: int = 200) -> float:
    from rollgym.agents import make_agent

    env, agent, total = rollgym.make(env_id), make_agent("oracle"), 0.0
    for seed in range(n):
        obs, info = env.reset(seed=seed, options={"difficulty": level})
        done = False
        while not done:
            obs, reward, done, _, info = env.step(agent.act(obs, info))
        total += reward
    return total / n


def test_the_levels_are_ordered_by_what_the_oracle_wins_against_them():
    env = rollgym.make("KuhnPoker-v0")
    assert env.unwrapped.difficulty.names == ("random", "nash") and env.unwrapped.difficulty.default == 1
    _, info = env.reset(seed=0, options={"difficulty": "random"})
    assert info["task_id"].endswith("@random") and env.unwrapped.opponent.name == "random"
    assert _oracle_mean_at_level("KuhnPoker-v0", 0) > _oracle_mean_at_level("KuhnPoker-v0", 1) + 0.1

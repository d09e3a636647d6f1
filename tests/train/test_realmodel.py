"""The real-model experiment's shaped reward and held-out measures (no model needed)."""

from __future__ import annotations

import pytest

from rollgym.core.registration import make
from rollgym.train.experiments.realmodel import LEVEL_N2, label_measures, reward_of_text, shaped_reward


@pytest.fixture()
def puzzle():
    env = make("Countdown-v0", **LEVEL_N2)
    _, info = env.reset(seed=0)
    yield env, env.unwrapped.task, info["task_meta"]["numbers"], info["task_meta"]["target"]
    env.close()


def test_the_shaped_reward_ranks_copy_partial_offered_and_correct(puzzle):
    env, task, (a, b), target = puzzle
    assert (a, b, target) == (17, 9, 26)
    assert reward_of_text(env, task, "The answer is 26.") == 0.0  # no closed block
    assert reward_of_text(env, task, "<answer>17 + 9") == 0.0  # not closed
    assert reward_of_text(env, task, "<answer>(6 + 4) * 3</answer>") == pytest.approx(0.1)  # the format example
    assert reward_of_text(env, task, "<answer>(17 + 4) * 3</answer>") == pytest.approx(0.1 + 0.4 / 3)
    assert reward_of_text(env, task, "<answer>17 * 9</answer>") == pytest.approx(0.5)  # offered numbers, wrong value
    assert reward_of_text(env, task, "<answer>17 + 9</answer>") == 1.0
    assert reward_of_text(env, task, "<answer>9 + 17 = 26</answer>") == 1.0


def test_repeating_the_offered_numbers_earns_less_than_using_them_once(puzzle):
    env, task, _, _ = puzzle
    once = reward_of_text(env, task, "<answer>17 - 9</answer>")
    assert reward_of_text(env, task, "<answer>17 - 9 + 17 - 9 + 17</answer>") < once
    assert reward_of_text(env, task, "<answer>17 17 9 9</answer>") < once
    # only the last block counts, as the env reads it
    assert reward_of_text(env, task, "<answer>17 - 9</answer> <answer>(6 + 4) * 3</answer>") == pytest.approx(0.1)


def test_weights_are_settings_and_a_failed_episode_earns_nothing():
    info = {"task_meta": {"numbers": [3, 5]}}
    assert shaped_reward("<answer>3 * 5</answer>", 0.0, info, closed_bonus=0.0, overlap_weight=0.5) == 0.5
    assert shaped_reward("<answer>4 * 6</answer>", 0.0, info, closed_bonus=0.0, overlap_weight=0.5) == 0.0
    assert shaped_reward("<answer>3 + 5</answer>", None, info) == 0.0


def test_label_measures_read_the_share_of_answer_blocks_and_offered_numbers():
    labels = {"no_answer": 0.25, "illegal": 0.25, "wrong": 0.25, "correct": 0.125, "malformed": 0.125}
    assert label_measures(labels) == {"answer_block": 0.75, "offered_numbers": 0.375}
    assert label_measures(None) == label_measures({}) == {}

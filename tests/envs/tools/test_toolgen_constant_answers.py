"""No free rewards on generated apps: an agent that calls only ``complete_task(answer=c)`` for a constant ``c``
solves under 1% of the tasks of every split (1,000 tasks each), for the constants the redraw rule knows and for
others it was not told about."""

from __future__ import annotations

from collections import Counter

import gymnasium as gym
import pytest

import rollgym  # noqa: F401  (registers the ids)
from rollgym.core.toolcalls import ToolCall
from rollgym.envs.tools.generated.env import new_session
from rollgym.envs.tools.generated.grading import diff_apps, grade
from rollgym.envs.tools.generated.source import ToolGenTaskSource, expectation_of
from rollgym.verifiers.tools import CONSTANT_ANSWERS

# constants the redraw rule does not know, among them answers a lazy agent might try on these apps
OTHER_CONSTANTS = ("11", "12", "15", "20", "25", "50", "100", "-1", "42", "0.5", "1.00", "maybe", "done", "ok",
                   "all of them", "everyone", "I don't know", "N/A", "None", "True", "[ ]", "0,0", "active",
                   "pending", "cancelled", "gold", "card", "Dana Okafor", "2025-06-04", "100.00")
CONSTANTS = (None, *CONSTANT_ANSWERS, *OTHER_CONSTANTS)


def _free_wins(split: str, n: int, constants: tuple[str | None, ...] = CONSTANTS) -> Counter[str]:
    """Per constant, how many of the first ``n`` tasks of ``split`` it solves with no other call."""
    source = ToolGenTaskSource()
    wins: Counter[str] = Counter()
    for index in range(n):
        task = source.task(index, split)
        session = new_session(task)  # an episode in which the agent called nothing but complete_task
        diff = diff_apps(task.meta["world"], session.dbs, session.touched)
        assert diff.empty
        expectation = expectation_of(task)
        for answer in constants:
            if grade(expectation, diff, answer).correct:
                wins[repr(answer)] += 1
    return wins


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("split", ["train", "test", "test_unseen"])
def test_a_constant_answer_solves_under_one_percent_of_a_split(split):
    wins = _free_wins(split, 1000)
    assert max(wins.values(), default=0) < 10, (split, wins.most_common(5))


def test_the_constants_the_redraw_rule_knows_solve_nothing():
    for split in ("train", "test_unseen"):
        wins = _free_wins(split, 150, (None, *CONSTANT_ANSWERS))
        assert not wins, (split, wins)


def test_constant_answers_through_the_env_score_zero():
    env = gym.make("ToolGen-Lookup-v0", split="test")
    for index in range(8):
        for answer in ("0", "", "yes", "none", "[]", "true", "1", "maybe", "pending"):
            env.reset(options={"task_index": index})
            _, reward, terminated, _, info = env.step(ToolCall("complete_task", {"answer": answer}).to_hermes())
            assert terminated and reward == 0.0 and info["correct"] is False, (index, answer)
    env.close()

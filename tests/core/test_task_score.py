import json
import math

import pytest

from rollgym.core import Score, Task


def test_task_round_trip_through_json():
    task = Task("t:1", "Countdown-v0", "Reach 10", {"expr": "2*5"}, {"numbers": [2, 5]})
    again = Task.from_dict(json.loads(json.dumps(task.to_dict())))
    assert again == task


def test_score_reward_is_always_a_float():
    score = Score(reward=1, correct=1)
    assert isinstance(score.reward, float) and score.reward == 1.0
    assert score.correct is True


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_score_rejects_non_finite_rewards(bad):
    with pytest.raises(ValueError, match="finite"):
        Score(reward=bad, correct=False)


def test_score_helpers_and_round_trip():
    fail = Score.fail("no_answer", length=0)
    assert (fail.reward, fail.correct, fail.error, fail.details) == (0.0, False, "no_answer", {"length": 0})
    ok = Score.success("42")
    assert Score.from_dict(json.loads(json.dumps(ok.to_dict()))) == ok

"""The real-model experiment's shaped reward and held-out measures (no model needed)."""

from __future__ import annotations

import pytest

from research.realmodel import LEVEL_N2, label_measures, reward_of_text, shaped_reward
from rollgym.core.registration import make


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


def test_echoing_the_offered_numbers_or_an_empty_block_earns_nothing(puzzle):
    env, task, _, _ = puzzle
    assert reward_of_text(env, task, "<answer>17 9</answer>") == 0.0  # the offered numbers echoed: malformed
    assert reward_of_text(env, task, "<answer>9, 17</answer>") == 0.0
    assert reward_of_text(env, task, "<answer></answer>") == 0.0  # an empty block
    assert reward_of_text(env, task, "<answer>  </answer>") == 0.0
    assert reward_of_text(env, task, "<answer>17</answer>") == 0.0  # one number, no operation
    assert reward_of_text(env, task, "<answer>(17)</answer>") == 0.0
    assert reward_of_text(env, task, "<answer>17 = 26</answer>") == 0.0
    # a genuine expression that is wrong keeps its partial credit
    assert reward_of_text(env, task, "<answer>17 * 9</answer>") == pytest.approx(0.5)
    assert reward_of_text(env, task, "<answer>(17) - (9)</answer>") == pytest.approx(0.5)
    assert reward_of_text(env, task, "<answer>17 * 17</answer>") == pytest.approx(0.1 + 0.4 / 2)
    info = {"task_meta": {"numbers": [3, 5]}}  # without the env's label the operator rule still holds
    assert shaped_reward("<answer>3 5</answer>", 0.0, info) == 0.0
    assert shaped_reward("<answer>3 - 5</answer>", 0.0, info) == pytest.approx(0.5)


def test_weights_are_settings_and_a_failed_episode_earns_nothing():
    info = {"task_meta": {"numbers": [3, 5]}}
    assert shaped_reward("<answer>3 * 5</answer>", 0.0, info, closed_bonus=0.0, overlap_weight=0.5) == 0.5
    assert shaped_reward("<answer>4 * 6</answer>", 0.0, info, closed_bonus=0.0, overlap_weight=0.5) == 0.0
    assert shaped_reward("<answer>3 + 5</answer>", None, info) == 0.0


def test_label_measures_read_the_share_of_answer_blocks_and_offered_numbers():
    labels = {"no_answer": 0.25, "illegal": 0.25, "wrong": 0.25, "correct": 0.125, "malformed": 0.125}
    assert label_measures(labels) == {"answer_block": 0.75, "offered_numbers": 0.375}
    assert label_measures(None) == label_measures({}) == {}


def _results(arm: str, metrics: list[float], blocks: list[float], config: dict | None = None,
             start: str | None = "1" * 64) -> dict:
    runs = [{"arm": arm, "seed": s, "metric": m, "curve": [[0.0, 0.0], [2.0, m]],
             "extras": {"answer_block": b, "reward_curve": [0.1 * s, 0.2, 0.3]}}
            for s, (m, b) in enumerate(zip(metrics, blocks))]
    return {"config": config or {"lr": 1}, "runs": runs,
            "starting_point": None if start is None else {"warm_state_sha256": start, "tokenizer_sha256": None}}


def test_the_two_trainers_are_compared_seed_by_seed(tmp_path):
    from research.realmodel_trl import compare_trainers, plot_side_by_side, render_comparison
    from rollgym.core.errors import ConfigError

    ours = _results("grpo", [0.0, 0.1, 0.3], [0.9, 1.0, 1.0])
    theirs = _results("trl", [0.1, 0.2, 0.4], [0.0, 0.1, 0.0])
    rows = {r["measure"]: r for r in compare_trainers(ours, theirs)}
    assert rows["metric"]["mean"] == pytest.approx(0.1) and rows["metric"]["seeds"] == [0, 1, 2]
    assert rows["metric"]["half_width"] == pytest.approx(0.0, abs=1e-9)  # the same difference on every seed
    assert rows["answer_block"]["mean"] == pytest.approx(-0.9333333) and rows["answer_block"]["verdict"] == "lower"
    assert "offered_numbers" not in rows  # neither file has it
    assert "| metric | 0.100, 0.200, 0.400 | 0.000, 0.100, 0.300 |" in render_comparison(list(rows.values()))
    with pytest.raises(ConfigError, match="different settings"):
        compare_trainers(ours, _results("trl", [0.1], [0.0], config={"lr": 2}))
    # the trainers pair only when both files' runs record the same starting weights
    for start in ("2" * 64, None):
        with pytest.raises(ConfigError, match="do not record one starting point"):
            compare_trainers(ours, _results("trl", [0.1, 0.2, 0.4], [0.0, 0.1, 0.0], start=start))
    assert "| n/a (no spread) |" in render_comparison([rows["metric"]])  # every seed's difference is 0.1
    png = plot_side_by_side(ours, theirs, tmp_path / "side.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_documented_trainer_comparison_is_the_committed_results():
    import json
    from pathlib import Path

    from research.realmodel_trl import compare_trainers, render_comparison

    repo = Path(__file__).resolve().parents[2]
    theirs_path = repo / "docs" / "experiments" / "realmodel-trl.json"
    if not theirs_path.exists():
        pytest.skip("the TRL twin has no committed results yet")
    ours = json.loads((repo / "docs" / "experiments" / "realmodel.json").read_text(encoding="utf-8"))
    rows = compare_trainers(ours, json.loads(theirs_path.read_text(encoding="utf-8")))
    assert len(rows[0]["seeds"]) >= 3  # paired over the three seeds of both experiments
    doc = (repo / "docs" / "experiments.md").read_text(encoding="utf-8")
    between = doc.split("<!-- realmodel-trainers:begin -->", 1)[1].split("<!-- realmodel-trainers:end -->", 1)[0]
    assert between.strip() == render_comparison(rows)
    assert (repo / "docs" / "img" / "realmodel_trainers.png").exists()

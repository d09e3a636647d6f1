"""The curriculum sampler against scripted agents of known skill on real Countdown tasks.

``SkillAgent`` solves a Countdown task at level ``k`` with probability ``skill[k]`` (then it answers
with the exact solver's expression, which the verifier checks), and otherwise answers an expression
that uses the wrong numbers. Its success rate at each level is therefore known, so the tests can
say where a correct curriculum must go.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from rollgym.core.errors import ConfigError
from rollgym.envs.countdown import countdown_oracle
from rollgym.rollout import PartialRollouts, collect, collect_async
from rollgym.rollout.curriculum import Curriculum, CurriculumConfig, TaskChooser, success_by_level

ENV = "Countdown-v0"
BAND = (0.4, 0.8)
#: Success probability per Countdown level: levels 2 and 3 are inside the band, 0-1 above it, 4-5 below.
GRADED = (0.97, 0.9, 0.75, 0.55, 0.25, 0.05)
PERFECT, HOPELESS = (1.0,) * 6, (0.0,) * 6


class SkillAgent:
    """Solves a level-``k`` task with probability ``skill[k]``; otherwise gives a well-formed wrong answer."""

    name = "skill"

    def __init__(self, skill: tuple[float, ...]) -> None:
        self.skill = skill
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self.rng.random() < self.skill[info["difficulty"]]:
            return countdown_oracle(observation, info)
        return "<answer>1 + 1</answer>"


def run(agent: SkillAgent, curriculum: Curriculum, steps: int, groups: int = 4, group_size: int = 8,
        workers: int = 1) -> list[dict[str, Any]]:
    for step in range(steps):
        collect(agent, ENV, n_tasks=groups, group_size=group_size, split="train", seed=step,
                task_chooser=curriculum, workers=workers)
    return curriculum.schedule


def levels_of(schedule: list[dict[str, Any]]) -> list[int]:
    return [record["envs"][ENV]["level"] for record in schedule]


def test_a_curriculum_is_a_task_chooser() -> None:
    assert isinstance(Curriculum(), TaskChooser)


def test_it_moves_up_while_the_agent_solves_everything() -> None:
    schedule = run(SkillAgent(PERFECT), Curriculum(band=BAND, min_episodes=16), steps=8, groups=2)
    assert levels_of(schedule) == [0, 1, 2, 3, 4, 5, 5, 5]
    decisions = [r["envs"][ENV]["decision"] for r in schedule]
    assert decisions == ["up"] * 5 + ["hold"] * 3  # at the top it stays
    assert all(r["envs"][ENV]["played"][str(r["envs"][ENV]["level"])]["success"] == 1.0 for r in schedule)


def test_it_moves_down_while_the_agent_solves_nothing() -> None:
    schedule = run(SkillAgent(HOPELESS), Curriculum(band=BAND, min_episodes=16, start="n6-big"), steps=7, groups=2)
    assert levels_of(schedule) == [5, 4, 3, 2, 1, 0, 0]
    assert [r["envs"][ENV]["decision"] for r in schedule] == ["down"] * 5 + ["hold"] * 2


def test_it_waits_for_enough_episodes_before_deciding() -> None:
    curriculum = Curriculum(band=BAND, min_episodes=40)
    schedule = run(SkillAgent(PERFECT), curriculum, steps=3, groups=2)  # 16 episodes a step
    assert [r["envs"][ENV]["decision"] for r in schedule] == ["wait", "wait", "up"]
    assert schedule[2]["envs"][ENV]["decided_on"] == 1.0


def test_the_success_rate_stays_inside_the_band_after_warm_up() -> None:
    curriculum = Curriculum(band=BAND, min_episodes=32)
    schedule = run(SkillAgent(GRADED), curriculum, steps=30)
    levels = levels_of(schedule)
    assert levels[:3] == [0, 1, 2]  # climbs out of the too-easy levels at once
    after = schedule[5:]
    assert {r["envs"][ENV]["level"] for r in after} <= {2, 3}  # the levels whose skill is inside the band
    solved = sum(p["success"] * p["episodes"] for r in after for p in r["envs"][ENV]["played"].values())
    played = sum(p["episodes"] for r in after for p in r["envs"][ENV]["played"].values())
    assert played == 25 * 32
    assert BAND[0] <= solved / played <= BAND[1]
    # without the curriculum the same agent at the starting level is far above the band
    fixed = collect(SkillAgent(GRADED), ENV, n_tasks=8, group_size=8, split="train", seed=99,
                    task_chooser=Curriculum(band=(0.0, 1.0), min_episodes=10**6))
    assert success_by_level(fixed)[0][0] / success_by_level(fixed)[0][1] > BAND[1]


def test_the_schedule_is_deterministic_given_the_seed() -> None:
    def schedule(seed: int, workers: int = 1) -> list[dict[str, Any]]:
        curriculum = Curriculum(band=BAND, min_episodes=16, window=3, seed=seed)
        return run(SkillAgent(GRADED), curriculum, steps=8, groups=2, workers=workers)

    first = schedule(0)
    assert json.dumps(first) == json.dumps(schedule(0))
    assert json.dumps(first) == json.dumps(schedule(0, workers=2))  # threads finish in any order
    played = [sorted(r["envs"][ENV]["played"]) for r in first]
    assert any(len(levels) > 1 for levels in played)  # the window really draws several levels
    assert json.dumps(first) != json.dumps(schedule(1))


def test_collect_async_and_collect_make_the_same_schedule() -> None:
    sync, asynchronous = Curriculum(band=BAND, min_episodes=16), Curriculum(band=BAND, min_episodes=16)
    run(SkillAgent(GRADED), sync, steps=5, groups=2)
    for step in range(5):
        collect_async(SkillAgent(GRADED), ENV, n_tasks=2, group_size=8, split="train", seed=step,
                      concurrency=5, task_chooser=asynchronous)
    assert json.dumps(sync.schedule) == json.dumps(asynchronous.schedule)


def test_every_rollout_of_a_group_plays_the_same_task_at_the_chosen_level() -> None:
    curriculum = Curriculum(band=BAND, min_episodes=4, start=3)
    groups = collect(SkillAgent(GRADED), ENV, n_tasks=3, group_size=4, split="train", seed=0,
                     task_chooser=curriculum)
    for group in groups:
        assert {t.task_id for t in group.trajectories} == {group.task.id}
        assert {t.info["difficulty"] for t in group.trajectories} == {3}
        assert len(group.task.meta["numbers"]) == 5  # level 3: five numbers


def test_partial_rollouts_follow_the_curriculum_across_steps() -> None:
    curriculum = Curriculum(band=BAND, min_episodes=8)
    with PartialRollouts(SkillAgent(PERFECT), ENV, group_size=4, groups_per_step=2, over_provision=1.0,
                         task_chooser=curriculum) as rollouts:
        for _ in range(4):
            groups = rollouts.step()
            assert len(groups) == 2
    assert levels_of(curriculum.schedule) == [0, 1, 2, 3]
    assert curriculum.level(ENV) == 4


def test_the_schedule_is_logged_per_step(tmp_path: Any) -> None:
    log = tmp_path / "curriculum.jsonl"
    curriculum = Curriculum(band=BAND, min_episodes=16, log_path=log)
    run(SkillAgent(PERFECT), curriculum, steps=3, groups=2)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines == curriculum.schedule
    assert [line["step"] for line in lines] == [0, 1, 2]
    assert lines[0]["envs"][ENV]["level_name"] == "n2"


def test_a_checkpointed_curriculum_continues_where_it_stopped() -> None:
    first = Curriculum(band=BAND, min_episodes=16)
    run(SkillAgent(PERFECT), first, steps=3, groups=2)
    second = Curriculum(band=BAND, min_episodes=16)
    second.load_state_dict(json.loads(json.dumps(first.state_dict())))
    collect(SkillAgent(PERFECT), ENV, n_tasks=2, group_size=8, split="train", seed=3, task_chooser=second)
    assert second.schedule[0]["step"] == 3 and second.schedule[0]["envs"][ENV]["level"] == 3


def test_bad_settings_are_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="band must have low < high"):
        CurriculumConfig(band=(0.8, 0.8))
    with pytest.raises(ConfigError, match="min_episodes must be"):
        Curriculum(min_episodes=0)
    with pytest.raises(ConfigError, match="difficulty must be a level index"):
        collect(SkillAgent(GRADED), ENV, n_tasks=1, group_size=1, task_chooser=Curriculum(start="n9"))
    with pytest.raises(ConfigError, match="cannot resume from a results file"):
        collect(SkillAgent(GRADED), ENV, n_tasks=1, group_size=1, out="x.jsonl", task_chooser=Curriculum())


def test_an_env_without_levels_is_refused_before_any_episode() -> None:
    with pytest.raises(ConfigError, match="has no difficulty levels"):
        collect(SkillAgent(GRADED), "ToolGen-Lookup-v0", n_tasks=1, group_size=1, task_chooser=Curriculum())

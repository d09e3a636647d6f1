"""WebGen-v0 in real Chromium: the reference solution on every split, random play, side effects made in the browser.

A sample keeps CI short: tasks of every split (held-out sites and themes included) drawn
so that every theme appears; ``bench/sweep_websites.py`` plays every template and every
site of every split (its figures are in docs/web.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rollgym.core.task import Task
from rollgym.envs.web.gen.reference import reference_policy
from rollgym.envs.web.gen.tasks import TEMPLATES, GenTaskSource, context, grade_answer
from rollgym.envs.web.gen.themes import THEMES
from rollgym.envs.web.reference import random_action
from rollgym.rollout.web import collect_web_episodes
from tests.envs.web.clients import play_until_answer

pytestmark = pytest.mark.slow

SOURCE = GenTaskSource("WebGen-v0")
SOURCE_TEMPLATES = tuple(TEMPLATES)


def sample(split: str, n: int) -> list[Task]:
    """``n`` tasks of a split, the first ones that bring a theme not yet seen, then the next ones."""
    tasks: list[Task] = []
    themes: set[str] = set()
    i = 0
    while len(tasks) < n and i < 400:
        task = SOURCE.task(i, split)
        i += 1
        if task.meta["theme"] not in themes or len(themes) == len(THEMES):
            themes.add(task.meta["theme"])
            tasks.append(task)
        elif i > 60:
            tasks.append(task)
    return tasks


@pytest.mark.parametrize(("split", "n"), [("train", 6), ("test", 3), ("test_unseen", 4)])
def test_the_reference_solution_solves_every_split(web_runtime: Any, split: str, n: int) -> None:
    tasks = sample(split, n)
    results = collect_web_episodes(reference_policy, tasks, concurrency=3, max_steps=45)
    failed = [(r.task.id, r.status, r.error, r.transcript[-1][0] if r.transcript else None)
              for r in results if not r.success]
    assert not failed, failed
    assert all(r.reward == 1.0 for r in results)
    if split == "test_unseen":
        assert {t.meta["theme"] for t in tasks} == {"quartz", "meadow"}


def test_random_play_scores_nothing(web_runtime: Any) -> None:
    rng = np.random.default_rng(0)
    tasks = sample("test", 2) + sample("test_unseen", 1)

    def agent(observation: str, info: dict[str, Any]) -> str:
        return random_action(observation, info, rng)

    results = collect_web_episodes(agent, tasks, concurrency=3, max_steps=12)
    assert all(r.status == "truncated" and r.reward == 0.0 and not r.success for r in results), \
        [(r.task.id, r.status, r.reward) for r in results]


@pytest.mark.parametrize("name", ["shop.buy_cheapest", "wiki.rewrite_summary", "booking.cancel_record"])
def test_a_side_effect_made_in_the_browser_zeroes_the_reward(web_runtime: Any, name: str) -> None:
    """The task done right, then one more click in the same browser (saving another item) scores 0."""
    task = GenTaskSource("WebGen-v0", templates=(name,)).task(2)
    episode, answer = play_until_answer(web_runtime, task, reference_policy)
    try:
        server_state = web_runtime.server.episode(episode.token)
        assert grade_answer(task, answer, server_state.query).reward == 1.0
        site = context(task.meta["site"]).site
        other = next(r for r in server_state.query("SELECT id FROM items WHERE archived = 0 ORDER BY id DESC")
                     if r["id"] != (task.answer.get("item_id") if isinstance(task.answer, dict) else None))
        for action in (f'goto("{site.path("item", other["id"])}")', None):
            if action is None:
                view_text = web_runtime.call(episode.observe(None), timeout=60)
                from rollgym.envs.web.observation import PageView

                action = f"click({PageView.parse(view_text).find('button', site.kind.favorites[1]).id})"
            _, _, _, _, info = web_runtime.call(episode.step(action), timeout=60)
            assert info["action_error"] is None, info
        score = grade_answer(task, answer, server_state.query)
        assert score.reward == 0.0 and "site_unchanged_beyond_task" in score.details["failed_gates"], score.details
    finally:
        web_runtime.call(episode.close(), timeout=60)


def test_each_difficulty_level_takes_the_reference_solution_more_actions(web_runtime: Any) -> None:
    """Levels by template (lookup < short-change < long-change): drawn from their templates, solved, and longer."""
    import rollgym

    env = rollgym.make("WebGen-v0").unwrapped
    ladder = env.difficulty
    assert ladder.names == ("lookup", "short-change", "long-change")
    assert sorted(n for level in ladder.levels for n in level.knobs["templates"]) == sorted(SOURCE_TEMPLATES)
    tasks = [env.level_source(k).task(i, "train") for k in range(len(ladder)) for i in range(2)]
    for k, task in enumerate(tasks):
        assert task.meta["template"] in ladder.levels[k // 2].knobs["templates"]
    results = collect_web_episodes(reference_policy, tasks, concurrency=3, max_steps=45)
    assert all(r.reward == 1.0 for r in results), [(r.task.id, r.error) for r in results if r.reward != 1.0]
    actions = [(results[2 * k].steps + results[2 * k + 1].steps) / 2 for k in range(len(ladder))]
    assert actions[0] < actions[1] < actions[2], actions

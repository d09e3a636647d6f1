"""Grading of generated-site tasks on the real site server, without a browser.

Every template is solved once over real HTTP by its correct requests (``gold.py``) on a
training site and on a held-out site; the state the server holds then scores 1.0. The
same state plus one unrelated write of every kind the sites allow (another record,
cancelling or changing another record, favourites, the account, a sign-in or a record
as another user, an editor's change or archive) scores 0, as does doing nothing and
answering with a near miss.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rollgym.core.task import Task
from rollgym.envs.web.gen.tasks import TEMPLATES, GenTaskSource, context, grade_answer
from rollgym.envs.web.server import WebServer
from tests.envs.web.gen.gold import SIDE_WRITES, Visitor, gold, gold_answer


@pytest.fixture(scope="module")
def server() -> Iterator[WebServer]:
    srv = WebServer().start()
    yield srv
    srv.stop()


def task_of(name: str, split: str, index: int = 0) -> Task:
    return GenTaskSource("WebGen-v0", templates=(name,)).task(index, split)


def solved(server: WebServer, task: Task) -> tuple[str, str]:
    """A server episode holding the state the task's correct requests leave, and the correct answer."""
    token = server.create_episode(task.meta["site"])
    gold(task, Visitor(server, token, context(task.meta["site"]).site))
    return token, gold_answer(task)


def clone(server: WebServer, token: str) -> str:
    source = server.episode(token)
    assert source is not None
    new = server.create_episode(source.site_key)
    target = server.episode(new)
    assert target is not None
    with source.lock, target.lock:
        source.conn.commit()
        source.conn.backup(target.conn)
    return new


def grade(server: WebServer, task: Task, token: str, answer: str | None) -> Any:
    episode = server.episode(token)
    assert episode is not None
    return grade_answer(task, answer, episode.query)


@pytest.mark.parametrize("split", ["train", "test_unseen"])
@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_correct_requests_score_one_and_nothing_scores_zero(server: WebServer, name: str, split: str) -> None:
    task = task_of(name, split)
    token, answer = solved(server, task)
    score = grade(server, task, token, answer)
    assert score.reward == 1.0 and score.correct, (task.id, task.prompt, score.details)
    fresh = server.create_episode(task.meta["site"])
    for nothing in (None, "done", ""):
        lazy = grade(server, task, fresh, nothing)
        assert lazy.reward == 0.0 and not lazy.correct, (task.id, nothing, lazy.details)
    server.close_episode(token)
    server.close_episode(fresh)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_unrelated_write_zeroes_the_reward(server: WebServer, name: str) -> None:
    task = task_of(name, "train", 1)
    token, answer = solved(server, task)
    site = context(task.meta["site"]).site
    failed = []
    for label, write in SIDE_WRITES.items():
        copy = clone(server, token)
        write(Visitor(server, copy, site), task)
        score = grade(server, task, copy, answer)
        if score.reward != 0.0 or "site_unchanged_beyond_task" not in score.details.get("failed_gates", []):
            failed.append((label, score.reward, score.details.get("diff")))
        server.close_episode(copy)
    server.close_episode(token)
    assert not failed, (task.id, failed)


@pytest.mark.parametrize("name", sorted(n for n, t in TEMPLATES.items() if t.task_kind == "info"))
def test_questions_are_answered_whole_and_by_value(server: WebServer, name: str) -> None:
    task = task_of(name, "test")
    token = server.create_episode(task.meta["site"])
    right = gold_answer(task)
    assert grade(server, task, token, right).correct
    assert grade(server, task, token, f'  "{right}". ').correct
    for wrong in (f"{right} or maybe something else", f"xx {right}", f"{right}, {right}1", "I don't know"):
        assert grade(server, task, token, wrong).reward == 0.0, (task.id, wrong)
    server.close_episode(token)


def test_a_transaction_needs_exactly_the_asked_values(server: WebServer) -> None:
    """An order of the wrong quantity, or a reservation on another item, is not the task."""
    task = task_of("shop.create_record", "train")
    site = context(task.meta["site"]).site
    token = server.create_episode(task.meta["site"])
    visitor = Visitor(server, token, site)
    visitor.sign_in(task.meta["params"]["username"])
    qty = int(task.meta["params"]["values"]["qty"])
    visitor.post(site.action_path("create", task.answer["item_id"]), {"qty": str(qty % 5 + 1)})
    score = grade(server, task, token, "done")
    assert score.reward == 0.0 and not score.details["criteria"]["goal_reached"]
    twice = server.create_episode(task.meta["site"])
    visitor = Visitor(server, twice, site)
    gold(task, visitor)
    visitor.post(site.action_path("create", task.answer["item_id"]), {"qty": str(qty)})
    assert grade(server, task, twice, "done").reward == 0.0  # the same order twice: one is collateral


def test_writing_as_another_user_does_not_count_for_the_task_user(server: WebServer) -> None:
    task = task_of("library.add_favorite", "train")
    site = context(task.meta["site"]).site
    token = server.create_episode(task.meta["site"])
    visitor = Visitor(server, token, site)
    from tests.envs.web.gen.gold import other_user

    visitor.sign_in(other_user(task))
    visitor.post(site.action_path("save", task.answer["item_id"]))
    score = grade(server, task, token, "done")
    assert score.reward == 0.0 and not score.details["criteria"]["goal_reached"]

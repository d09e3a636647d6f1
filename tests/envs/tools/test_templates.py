"""Every template, many seeds: the reference scores 1; no-op, collateral damage and candidate dumps score 0."""

from __future__ import annotations

import pytest

from rollgym.envs.tools.env import evaluate_session
from rollgym.envs.tools.policies import run_reference
from rollgym.envs.tools.tasks import TEMPLATES, ToolTaskSource, task_world
from rollgym.envs.tools.tasks.base import rows
from rollgym.verifiers.tools import GATE

from .helpers import DAMAGES, damage, expectation, fresh

SEEDS = 12
NAMES = sorted(TEMPLATES)


def _version(name: str) -> int:
    """The newest ToolWorld version that draws from a template (the v0 counting questions are v0 only)."""
    return max(TEMPLATES[name].versions)


def test_there_are_at_least_thirty_templates_over_six_apps_with_cross_app_work():
    assert len(TEMPLATES) >= 30
    apps = {a for t in TEMPLATES.values() for a in t.apps}
    assert apps == {"contacts", "email", "calendar", "payments", "notes", "shopping"}
    assert sum(len(t.apps) > 1 for t in TEMPLATES.values()) >= 10
    assert sum(t.answer_kind != "none" for t in TEMPLATES.values()) >= 8


def _tasks(name: str, split: str = "train", n: int = SEEDS):
    source = ToolTaskSource([name], version=_version(name))
    return [source.task(i, split) for i in range(n)]


def evaluate(task, session, answer):  # type: ignore[no-untyped-def]
    """Grade as the newest version that draws the task's template does."""
    return evaluate_session(task, session, answer, version=_version(task.meta["template"]))


def _decoys(task, expected):
    """Wrong candidates of the same kind as the expected answer."""
    kind = TEMPLATES[task.meta["template"]].answer_kind
    if kind == "number":
        return [f"{float(expected) + d:.2f}" for d in (1, 2.5, 10)]
    if kind == "datetime":
        starts = [r[0] for r in rows(task_world(task), "calendar", "SELECT DISTINCT start FROM events ORDER BY start")]
        return [s for s in starts if s != expected][:5]
    if kind == "list":
        world, template = task_world(task), task.meta["template"]
        sql = {"calendar_day_events": ("calendar", "SELECT DISTINCT title FROM events ORDER BY title"),
               "email_unread_subjects": ("email", "SELECT DISTINCT subject FROM messages ORDER BY subject"),
               "notes_in_folder": ("notes", "SELECT DISTINCT title FROM notes ORDER BY title")}.get(
            template, ("contacts", "SELECT DISTINCT name FROM contacts ORDER BY name"))
        return [n for n in (r[0] for r in rows(world, *sql)) if n not in expected]
    names = [r[0] for r in rows(task_world(task), "shopping", "SELECT name FROM products ORDER BY name")]
    return [n for n in names if n != expected]


@pytest.mark.parametrize("name", NAMES)
def test_reference_scores_one_and_no_op_scores_zero(name):
    tasks = _tasks(name) + _tasks(name, "test", 2)
    assert len({(t.meta["world"], str(t.meta["params"])) for t in tasks}) >= 3, "too few distinct tasks"
    for task in tasks:
        session = fresh(task)
        answer = run_reference(name, task.meta["params"], session)
        score = evaluate(task, session, answer)
        assert score.correct and score.reward == 1.0, (task.id, score.details)
        noop = evaluate(task, fresh(task), None)
        assert not noop.correct and noop.reward == 0.0, task.id


@pytest.mark.parametrize("name", NAMES)
def test_reference_plus_unrelated_damage_scores_zero(name):
    for i, task in enumerate(_tasks(name, n=2 * len(DAMAGES))):  # every kind of damage, on two tasks each
        kind = DAMAGES[i % len(DAMAGES)]
        session = fresh(task)
        answer = run_reference(name, task.meta["params"], session)
        assert damage(session, task, kind), f"{kind} could not be applied"
        score = evaluate(task, session, answer)
        assert score.reward == 0.0 and not score.details["criteria"][GATE], (task.id, kind)
        assert score.error == "side_effects" and score.details["reasons"][GATE]


@pytest.mark.parametrize("name", [n for n in NAMES if TEMPLATES[n].answer_kind != "none"])
def test_answers_that_list_every_candidate_score_zero(name):
    for task in _tasks(name, n=4):
        session = fresh(task)
        answer = run_reference(name, task.meta["params"], session)
        expected = expectation(task).answer
        decoys = _decoys(task, expected)
        assert decoys
        for dump in (", ".join([str(answer), *decoys]), "\n".join([*decoys, str(answer)])):
            score = evaluate(task, session, dump)
            assert not score.correct and not score.details["criteria"]["answer"], (task.id, dump[:80])
        assert not evaluate(task, session, decoys[0]).correct
        if TEMPLATES[name].answer_kind == "list" and len(expected) > 1:  # a partial list fails too
            assert not evaluate(task, session, expected[0]).correct


def test_answers_are_normalised():
    task = _tasks("payments_balance", n=1)[0]
    session = fresh(task)
    value = float(run_reference("payments_balance", task.meta["params"], session))
    for text in (f"${value:,.2f}", f"Your balance is {value} dollars.", f"{value:.2f}"):
        assert evaluate(task, session, text).correct, text
    task = _tasks("shop_cheapest", n=1)[0]
    name = run_reference("shop_cheapest", task.meta["params"], fresh(task))
    assert evaluate(task, fresh(task), f"  {name.upper()}. ").correct


def test_task_ids_and_splits_are_stable_and_disjoint():
    source = ToolTaskSource()
    assert source.task(3, "train") == source.task(3, "train")
    key = lambda t: (t.meta["template"], t.meta["world"], str(t.meta["params"]))  # noqa: E731
    train = {key(source.task(i, "train")) for i in range(150)}
    test = {key(source.task(i, "test")) for i in range(60)}
    assert not train & test


def test_task_meta_is_public_and_holds_no_answer():
    source = ToolTaskSource()
    for i in range(60):
        task = source.task(i, "train")
        assert set(task.meta) == {"template", "scenario", "family", "apps", "world", "now", "params", "question"}
        if task.meta["question"]:
            assert str(task.answer) not in str(task.meta["params"]).replace(task.meta["now"], "")


def _everything(session, tool, id_field, **filters):
    from rollgym.envs.tools.api import call_tool

    found, page = [], 1
    while True:
        result = call_tool(session, tool, {**filters, "page": page, "page_size": 50})
        found += result["results"]
        if not result["has_more"]:
            return [r[id_field] for r in found]
        page += 1


OVER_BROAD = {
    "email_archive_from": lambda s: [("email_move", {"email_id": i, "folder": "archive"})
                                     for i in _everything(s, "email_search", "email_id", folder="inbox")],
    "payments_decline_above": lambda s: [("payments_decline_request", {"request_id": i})
                                         for i in _everything(s, "payments_requests", "request_id")],
    "payments_pay_requests_from": lambda s: [("payments_pay_request", {"request_id": i})
                                             for i in _everything(s, "payments_requests", "request_id")],
    "notes_delete_folder": lambda s: [("notes_delete", {"note_id": i})
                                      for i in _everything(s, "notes_search", "note_id")],
}


@pytest.mark.parametrize("name", sorted(OVER_BROAD))
def test_over_broad_solutions_score_zero(name):
    """Doing the action to everything (a known reward hack for 'every X that ...' tasks) fails."""
    from rollgym.envs.tools.api import call_tool

    for task in _tasks(name, n=4):
        session = fresh(task)
        for tool, arguments in OVER_BROAD[name](session):
            call_tool(session, tool, arguments)
        assert not evaluate(task, session, None).correct, task.id

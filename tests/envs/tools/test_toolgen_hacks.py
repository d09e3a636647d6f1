"""Reward hacks on ToolGen that must score 0: dumping every candidate as the answer, hedging between numbers,
injection through search text, calling tools of apps outside the world, and reading the answer (or the person a
chain follows) from the public task data; the first two and the tools outside the world on ToolGen-v1's
1,024-app pool too."""

from __future__ import annotations

import json

from rollgym.envs.tools.generated import catalog
from rollgym.envs.tools.generated.env import evaluate_session, new_session, world_tools
from rollgym.envs.tools.generated.grading import diff_apps
from rollgym.envs.tools.generated.policies import run_reference
from rollgym.envs.tools.generated.source import ToolGenTaskSource, expectation_of
from rollgym.envs.tools.generated.tools import call


def _questions(kind: str, n: int = 12, generation: int = 0) -> list:
    source = ToolGenTaskSource(groups=["lookup", "chain"], distractors=0, generation=generation)
    out = []
    for index in range(400):
        task = source.task(index, "test")
        if task.meta["kind"] == kind:
            out.append(task)
        if len(out) == n:
            break
    assert out, kind
    return out


def test_dumping_every_candidate_scores_zero():
    for kind, entity in (("owner", "party"), ("filter_list", None)):
        for task in _questions(kind):
            s = catalog.schema(task.meta["apps"][0])
            e = s.party if entity == "party" else s.entity(task.meta["template"].split(":")[2].split(".")[0])
            labels = [str(r[e.label]) for r in catalog.app(s.app_id).table(e)]
            session = new_session(task)
            right = run_reference(task, session)
            assert evaluate_session(task, session, right).correct, task.id
            if set(labels) != set(expectation_of(task).answer if kind == "filter_list" else [right]):
                assert not evaluate_session(task, session, ", ".join(labels)).correct, task.id


def test_hedging_between_numbers_scores_zero():
    for kind in ("total", "lookup"):
        for task in _questions(kind):
            exp = expectation_of(task)
            if exp.answer_kind != "number":
                continue
            session = new_session(task)
            right = run_reference(task, session)
            assert evaluate_session(task, session, right).correct
            hedge = f"{right} or maybe {float(exp.answer) + 1:.2f}"
            assert not evaluate_session(task, session, hedge).correct, task.id


def test_injection_through_search_text_matches_nothing_and_changes_nothing():
    task = ToolGenTaskSource(distractors=0).task(0, "test")
    session = new_session(task)
    tools = world_tools(task)
    for app_id in task.meta["world"]:
        s = catalog.schema(app_id)
        for payload in ("' OR '1'='1", "%' --", f"x'); DROP TABLE \"{s.record.table}\"; --", "_%_"):
            result = call(session, tools, f"{app_id}_{s.record.name}_search", {"query": payload})
            assert result["total"] == 0, (payload, result)
            made = call(session, tools, f"{app_id}_{s.party.name}_update",
                        {f"{s.party.name}_id": 1, "name": payload}) if "update" in s.party.ops else {}
            assert "error" not in made
    diff = diff_apps(task.meta["world"], session.dbs, session.touched)
    assert not diff.schema_changes  # a name was stored as text; no table was dropped or altered


def test_tools_of_apps_outside_the_world_are_unknown():
    task = ToolGenTaskSource(distractors=0).task(1, "train")
    outside = next(a for a in catalog.app_ids("train") if a not in task.meta["world"])
    s = catalog.schema(outside)
    session = new_session(task)
    result = call(session, world_tools(task), f"{outside}_{s.party.name}_search", {})
    assert result["error"]["type"] == "unknown_tool"


def test_the_person_a_cross_app_task_follows_is_not_in_its_public_data():
    source = ToolGenTaskSource(groups=["cross_app"])
    for index in range(30):
        task = source.task(index, "test_unseen")
        first = catalog.app(task.meta["apps"][0])
        s = first.schema
        code = task.meta["params"]["code"]
        record = next(r for r in first.table(s.record) if r["code"] == code)
        holder = next(p for p in first.table(s.party) if p["id"] == record[f"{s.party.name}_id"])
        public = json.dumps(task.meta) + task.prompt
        assert holder["name"] not in public and holder["email"] not in public, task.id


def test_on_the_1024_app_pool_dumping_candidates_and_calling_tools_outside_the_world_score_zero():
    for task in _questions("owner", 6, generation=1):
        s = catalog.schema(task.meta["apps"][0])
        labels = [str(r[s.party.label]) for r in catalog.app(s.app_id).table(s.party)]
        session = new_session(task)
        right = run_reference(task, session)
        assert evaluate_session(task, session, right).correct, task.id
        assert not evaluate_session(task, session, ", ".join(labels)).correct, task.id
    task = ToolGenTaskSource(distractors=0, generation=1).task(2, "test_unseen")
    outside = next(a for a in catalog.app_ids("test_unseen", generation=1)
                   if a not in task.meta["world"] and a not in catalog.app_ids(generation=0))
    result = call(new_session(task), world_tools(task), f"{outside}_{catalog.schema(outside).party.name}_search", {})
    assert result["error"]["type"] == "unknown_tool"

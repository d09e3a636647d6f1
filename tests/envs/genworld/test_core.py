"""The generated-world core under ToolGen and WebGen: one schema vocabulary, one set of template kinds, one
state-diff grading, and each family built on them."""

from __future__ import annotations

from typing import get_args

import numpy as np
import pytest

from rollgym.envs.genworld import templates as core
from rollgym.envs.genworld.diff import ExpectedState, diff_world, grade_world, world_rubric
from rollgym.envs.genworld.schema import ENTITY_ROLES, EntityRole, ValueKind, money_input, money_text
from rollgym.verifiers.rubric import Criterion
from rollgym.verifiers.statediff import added, changed, snapshot

CENTS = [0, 1, 5, 10, 99, 100, 101, 1005, 1999, 12345, 100000, 123456789]


def test_both_families_build_the_shared_template_kinds_on_the_core() -> None:
    from rollgym.envs.tools.generated import edits, lookups
    from rollgym.envs.tools.generated.templates import GenTemplate as ToolTemplate
    from rollgym.envs.web.gen import changes, mechanisms
    from rollgym.envs.web.gen.tasks import TEMPLATES
    from rollgym.envs.web.gen.tasks import GenTemplate as WebTemplate

    pairs = {core.Lookup: (lookups.Lookup, mechanisms.Lookup), core.CreateRecord: (edits.CreateRecord,
             changes.CreateRecord), core.CreateItem: (edits.CreateItem, changes.CreateItem),
             core.UpdateField: (edits.Update, changes.UpdateRecord)}
    for shared, (tool_kind, web_kind) in pairs.items():
        assert issubclass(tool_kind, shared) and issubclass(web_kind, shared), shared
        assert tool_kind.asks == web_kind.asks == shared.asks
    assert issubclass(ToolTemplate, core.WorldTemplate) and issubclass(WebTemplate, core.WorldTemplate)
    web = TEMPLATES["shop.cheapest_in_department"]
    assert web.template_kind is web.mechanism and isinstance(web.template_kind, core.TemplateKind)


def test_toolgen_kinds_ask_exactly_when_their_tasks_have_an_answer() -> None:
    from rollgym.envs.tools.generated import catalog

    app_id = catalog.app_ids("train")[0]
    apps = {app_id: catalog.app(app_id)}
    seen = set()
    for name in catalog.templates(app_id):
        template = catalog.template(name)
        assert template.template_kind is template and template.operation == template.kind
        rng = np.random.default_rng(0)
        params = next((p for p in (template.sample(apps, rng) for _ in range(30)) if p is not None), None)
        if params is None:
            continue
        assert template.asks == (template.expect(apps, params).answer_kind != "none"), name
        seen.add(template.asks)
    assert seen == {True, False}


def test_webgen_mechanisms_are_named_by_their_operation_and_ask_exactly_the_info_tasks() -> None:
    from rollgym.envs.web.gen.tasks import MECHANISMS, TEMPLATES

    assert len(MECHANISMS) == 17 and all(name == mech.operation for name, mech in MECHANISMS.items())
    assert {mech.kind for mech in MECHANISMS.values()} == {"info", "transaction"}
    assert all((mech.kind == "info") == mech.asks for mech in MECHANISMS.values())
    assert all(t.task_kind == ("info" if t.template_kind.asks else "transaction") for t in TEMPLATES.values())


def test_both_families_fields_are_world_fields_of_the_core_value_kinds() -> None:
    from rollgym.envs.tools.generated.domains import DOMAINS
    from rollgym.envs.tools.generated.schema import generate_schema
    from rollgym.envs.web.gen.kinds import KINDS

    schema = generate_schema(DOMAINS[0], 0)
    kinds = set(get_args(ValueKind))
    tool_fields = [f for e in schema.entities for f in e.fields]
    web_fields = [f for k in KINDS.values() for f in (*k.fields, *k.record.fields)]
    for f in [*tool_fields, *web_fields]:
        assert isinstance(f.name, str) and f.value_kind in kinds and isinstance(f.editable, bool)
    assert {e.role for e in schema.entities} <= set(ENTITY_ROLES) == set(get_args(EntityRole))


@pytest.mark.parametrize("cents", CENTS)
def test_money_is_worded_as_each_family_worded_it(cents: int) -> None:
    from rollgym.envs.tools.generated.schema import Field
    from rollgym.envs.tools.generated.templates import answer_of, as_argument, shown
    from rollgym.envs.web.gen.mechanisms import typed
    from rollgym.envs.web.gen.schema import FieldSpec

    money = Field("price", "money")
    assert shown(money, cents) == money_text(cents) == f"${cents / 100:.2f}"
    dollars = round(cents / 100, 2)
    assert answer_of(money, cents) == (dollars, "number") and as_argument(money, cents) == dollars
    assert money_text(cents, grouped=True) == f"${cents // 100:,}.{cents % 100:02d}"
    form = typed(FieldSpec("price", "Price", "money"), cents)
    assert form == money_input(cents) == f"{cents // 100}.{cents % 100:02d}"


def _db(conn):
    return lambda sql, params=(): conn.execute(sql, params).fetchall()


def test_the_expected_state_grades_the_whole_world(tmp_path) -> None:
    import sqlite3

    conn = sqlite3.connect(tmp_path / "world.db")
    conn.row_factory = sqlite3.Row
    conn.executescript("CREATE TABLE records (id INTEGER PRIMARY KEY, item_id INT, status TEXT);"
                       "CREATE TABLE items (id INTEGER PRIMARY KEY, stock INT); INSERT INTO items VALUES (1, 5);")
    base = snapshot(_db(conn))
    expected = ExpectedState(required=[added("records", {"item_id": 1, "status": "open"}, required=True)],
                             tolerated=[changed("items", {"id": 1}, columns={"stock"})])
    assert expected.rules == [*expected.required, *expected.tolerated]
    rubric = world_rubric(expected, goal="goal_reached", gate="site_unchanged_beyond_task")
    assert grade_world(rubric, diff_world(base, _db(conn)), "done").reward == 0.0  # nothing done yet
    conn.execute("INSERT INTO records (item_id, status) VALUES (1, 'open')")
    conn.execute("UPDATE items SET stock = 4")
    assert grade_world(rubric, diff_world(base, _db(conn)), "done").correct  # required and tolerated
    conn.execute("INSERT INTO items VALUES (2, 1)")
    score = grade_world(rubric, diff_world(base, _db(conn)), "done")
    assert score.reward == 0.0 and score.details["criteria"]["site_unchanged_beyond_task"] is False


def test_a_question_has_no_goal_and_its_criteria_read_the_database(tmp_path) -> None:
    import sqlite3

    conn = sqlite3.connect(tmp_path / "world.db")
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO items VALUES (1, 'Lamp')")
    base = snapshot(_db(conn))
    says = Criterion("answer", 1.0, lambda ctx: ctx.answer == ctx.db("SELECT name FROM items")[0][0])
    rubric = world_rubric(ExpectedState(answer=says), goal=None, gate="unchanged")
    assert [c.name for c in rubric.criteria] == ["answer", "unchanged"]
    assert grade_world(rubric, diff_world(base, _db(conn)), "Lamp", db=_db(conn)).correct
    assert not grade_world(rubric, diff_world(base, _db(conn)), "Desk", db=_db(conn)).correct

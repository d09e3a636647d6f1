"""The shared state-diff grader on real SQLite databases: diffs, allow-lists, rubrics, and hacks that must fail."""

from __future__ import annotations

import sqlite3

import pytest

from rollgym.verifiers.rubric import Criterion, GradeContext, Rubric, collateral_gate, state_criteria
from rollgym.verifiers.statediff import (
    added,
    changed,
    deleted,
    diff_databases,
    diff_snapshots,
    explain,
    read_schema,
    snapshot,
)

SCHEMA = """
CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, status TEXT NOT NULL);
CREATE TABLE votes (user_id INTEGER NOT NULL, post_id INTEGER NOT NULL, value INTEGER NOT NULL,
                    PRIMARY KEY (user_id, post_id));
CREATE TABLE items (order_id INTEGER NOT NULL, product TEXT NOT NULL);
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
INSERT INTO orders VALUES (1, 7, 'pending'), (2, 7, 'pending'), (3, 8, 'shipped');
INSERT INTO votes VALUES (7, 100, 1);
INSERT INTO items VALUES (1, 'kettle'), (2, 'lamp');
INSERT INTO users VALUES (7, 'Dana'), (8, 'Omar');
"""


@pytest.fixture
def world() -> tuple[sqlite3.Connection, sqlite3.Connection]:
    before = sqlite3.connect(":memory:")
    before.executescript(SCHEMA)
    after = sqlite3.connect(":memory:")
    before.backup(after)
    return before, after


def diff(world):  # type: ignore[no-untyped-def]
    return diff_databases({"shop": world[0]}, {"shop": world[1]})


def test_no_change_is_an_empty_diff(world):
    assert diff(world).empty and diff(world).summary() == {}


def test_rows_added_changed_and_deleted_in_every_table(world):
    _, after = world
    after.execute("UPDATE orders SET status = 'cancelled' WHERE id = 1")
    after.execute("INSERT INTO orders VALUES (4, 7, 'pending')")
    after.execute("DELETE FROM users WHERE id = 8")
    after.execute("INSERT INTO items VALUES (4, 'mug')")
    d = diff(world)
    assert d.summary() == {"shop.items": {"added": 1, "changed": 0, "deleted": 0},
                           "shop.orders": {"added": 1, "changed": 1, "deleted": 0},
                           "shop.users": {"added": 0, "changed": 0, "deleted": 1}}
    change = d.table("shop.orders").changed[0]
    assert change.key == (1,) and change.columns == ["status"] and change.after["status"] == "cancelled"
    assert d.table("shop.users").deleted[0] == {"id": 8, "name": "Omar"}


def test_replacing_a_row_with_a_composite_key_is_a_change_not_a_delete_and_an_add(world):
    _, after = world
    after.execute("INSERT OR REPLACE INTO votes VALUES (7, 100, -1)")  # a new rowid, the same primary key
    d = diff(world)
    assert d.summary() == {"shop.votes": {"added": 0, "changed": 1, "deleted": 0}}
    assert d.table("shop.votes").changed[0].key == (7, 100)


def test_schema_changes_are_reported(world):
    _, after = world
    after.execute("CREATE TABLE extra (x)")
    assert diff(world).schema_changes and not explain(diff(world), []).ok


def test_a_snapshot_needs_no_pragma_when_given_the_schema(world):
    before, after = world
    after.set_authorizer(lambda action, *a: sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_PRAGMA else 0)
    base = snapshot(lambda sql, p=(): before.execute(sql, p).fetchall())
    with pytest.raises(sqlite3.DatabaseError):
        read_schema(lambda sql, p=(): after.execute(sql, p).fetchall())
    now = snapshot(lambda sql, p=(): after.execute(sql, p).fetchall(), base.schema)
    assert diff_snapshots(base, now).empty


def test_required_changes_are_matched_one_row_each(world):
    _, after = world
    after.execute("INSERT INTO items VALUES (9, 'mug')")
    rules = [added("shop.items", {"product": "mug"}, required=True),
             added("shop.items", {"product": "mug"}, required=True)]
    assert explain(diff(world), rules).missing == ["a new row in shop.items with ['product']"]
    after.execute("INSERT INTO items VALUES (9, 'MUG ')")  # text compares without case and outer space
    assert explain(diff(world), rules).ok


def test_a_required_change_needs_its_values(world):
    _, after = world
    after.execute("UPDATE orders SET status = 'shipped' WHERE id = 1")
    rule = changed("shop.orders", {"id": 1}, to={"status": "cancelled"}, required=True, note="order 1 cancelled")
    result = explain(diff(world), [rule])
    assert result.missing == ["order 1 cancelled"] and not result.unexplained  # its columns stay its own


def test_changes_nobody_allowed_are_collateral_wherever_they_are(world):
    _, after = world
    after.execute("UPDATE orders SET status = 'cancelled' WHERE id = 1")
    rules = [changed("shop.orders", {"id": 1}, to={"status": "cancelled"}, required=True)]
    assert explain(diff(world), rules).ok
    after.execute("UPDATE users SET name = 'HACKED' WHERE id = 7")  # another table entirely
    after.execute("INSERT INTO votes VALUES (8, 100, -1)")
    result = explain(diff(world), rules)
    assert result.unexplained == ["shop.users row (7,): name changed", "shop.votes row (8, 100): new"]
    after.execute("UPDATE orders SET user_id = 8 WHERE id = 1")  # the target row, another column
    assert "shop.orders row (1,): user_id changed" in explain(diff(world), rules).unexplained


def test_tolerated_changes_have_limits_and_directions(world):
    _, after = world
    after.execute("INSERT INTO votes VALUES (8, 101, 1)")
    after.execute("INSERT INTO votes VALUES (8, 102, 1)")
    once = [added("shop.votes", {"user_id": 8}, limit=1)]
    assert len(explain(diff(world), once).unexplained) == 1
    assert explain(diff(world), [added("shop.votes", {"user_id": 8})]).ok
    after.execute("UPDATE orders SET status = 'cancelled' WHERE id = 2")
    forward = [added("shop.votes"), changed("shop.orders", to={"status": "cancelled"})]
    assert explain(diff(world), forward).ok
    after.execute("UPDATE orders SET status = 'pending' WHERE id = 3")
    assert explain(diff(world), forward).unexplained == ["shop.orders row (3,): status changed"]


def test_predicates_that_raise_match_nothing(world):
    _, after = world
    after.execute("INSERT INTO items VALUES (5, 'x')")
    rules = [added("shop.items", lambda row: row["missing"] == 1)]
    assert explain(diff(world), rules).unexplained == ["shop.items row (5, 'x'): new"]  # no key: its values


def test_rubric_partial_credit_gates_and_errors(world):
    _, after = world
    after.execute("UPDATE orders SET status = 'cancelled' WHERE id = 1")
    rules = [changed("shop.orders", {"id": 1}, to={"status": "cancelled"}, required=True)]
    criteria = [*state_criteria(rules, goal="cancelled", gate="shop_unchanged", goal_weight=0.7),
                Criterion("said_done", 0.3, lambda ctx: ctx.answer == "done")]
    rubric = Rubric(criteria)
    ok = rubric.grade(GradeContext(answer="done", diff=diff(world)))
    assert (ok.reward, ok.correct, ok.error) == (1.0, True, None)
    assert ok.details["diff"] == {"shop.orders": {"added": 0, "changed": 1, "deleted": 0}}
    half = rubric.grade(GradeContext(answer="later", diff=diff(world)))
    assert (half.reward, half.correct, half.error) == (0.7, False, "wrong")
    after.execute("DELETE FROM users WHERE id = 8")
    hacked = rubric.grade(GradeContext(answer="done", diff=diff(world)))
    assert (hacked.reward, hacked.correct, hacked.error) == (0.0, False, "side_effects")
    assert hacked.details["failed_gates"] == ["shop_unchanged"] and hacked.details["partial_reward"] == 1.0
    assert hacked.details["reasons"]["shop_unchanged"] == ["shop.users row (8,): deleted"]
    assert rubric.grade(GradeContext(answer="done", diff=diff(world)), gates=False).reward == 1.0  # -v0 style


def test_binary_rubrics_and_criteria_that_crash(world):
    boom = Criterion("boom", 1.0, lambda ctx: 1 / 0 > 0)
    score = Rubric([Criterion("fine", 1.0, lambda ctx: True), boom], partial_credit=False).grade(
        GradeContext(answer=None))
    assert score.reward == 0.0 and score.error == "no_answer"
    assert "ZeroDivisionError" in score.details["criterion_errors"]["boom"]
    assert Rubric([boom], asks_answer=False).grade(GradeContext(answer=None)).error == "wrong"


def test_a_gate_alone_never_pays_for_doing_nothing(world):
    gate = collateral_gate("site_unchanged", [])
    score = Rubric([gate, Criterion("goal", 1.0, lambda ctx: False)]).grade(GradeContext(answer="x", diff=diff(world)))
    assert score.reward == 0.0 and score.details["criteria"]["site_unchanged"] is True


def test_deletions_must_be_the_named_rows(world):
    _, after = world
    after.execute("DELETE FROM orders WHERE id = 2")
    assert explain(diff(world), [deleted("shop.orders", {"id": 2}, required=True)]).ok
    result = explain(diff(world), [deleted("shop.orders", {"id": 1}, required=True)])
    assert result.missing == ["a deleted row of shop.orders with ['id']"]
    assert result.unexplained == ["shop.orders row (2,): deleted"]

"""Task generation and rubrics, graded against real SQLite copies (no browser needed)."""

from __future__ import annotations

import pytest

from rollgym.core.seeding import SPLITS
from rollgym.envs.web.server import fresh_copy, query_base
from rollgym.envs.web.tasks import TEMPLATES, WebTaskSource, grade_task, template_of
from rollgym.verifiers.rubric import GradeContext
from rollgym.verifiers.web import normalize_text, parse_money

ALL = WebTaskSource(("shop", "forum", "travel"), "WebGym-v2")


def grade(task, answer, conn=None):  # type: ignore[no-untyped-def]
    site = template_of(task).site
    conn = conn or fresh_copy(site)
    ctx = GradeContext(
        answer=answer,
        db=lambda sql, params=(): conn.execute(sql, params).fetchall(),
        base=lambda sql, params=(): query_base(site, sql, params),
    )
    return grade_task(task, ctx)


def test_twelve_templates_over_three_sites() -> None:
    assert len(TEMPLATES) >= 12
    for site in ("shop", "forum", "travel"):
        kinds = {t.kind for t in TEMPLATES.values() if t.site == site}
        assert kinds == {"info", "transaction"}


def test_tasks_are_deterministic_and_carry_no_answer_in_meta() -> None:
    for i in range(24):
        a, b = ALL.task(i, "test"), ALL.task(i, "test")
        assert a == b
        assert "answer" not in a.meta and a.meta["template"] in TEMPLATES
        if isinstance(a.answer, str):
            assert a.answer not in repr(a.meta)


def test_splits_are_disjoint_and_there_are_thousands_of_tasks() -> None:
    ids = {split: {ALL.task(i, split).id for i in range(360 if split == "train" else 120)} for split in SPLITS}
    assert not ids["train"] & ids["test"] and not ids["train"] & ids["validation"]
    assert not ids["validation"] & ids["test"]
    big = WebTaskSource(
        ("shop", "forum", "travel"), "WebGym-v2", templates=("shop_purchase", "forum_reply", "travel_book_flight")
    )
    assert len({big.task(i).id for i in range(1500)}) > 1450


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_doing_nothing_scores_zero(name: str) -> None:
    source = WebTaskSource((TEMPLATES[name].site,), "WebGym-v2", templates=(name,))
    for i in range(3):
        task = source.task(i)
        for answer in (None, "done", ""):
            score = grade(task, answer)
            assert score.reward == 0.0 and not score.correct, (task.id, answer, score.details)


@pytest.mark.parametrize("name", [n for n, t in TEMPLATES.items() if t.kind == "info"])
def test_info_answers_are_checked_whole(name: str) -> None:
    source = WebTaskSource((TEMPLATES[name].site,), "WebGym-v2", templates=(name,))
    task = source.task(0)
    expected = task.answer if isinstance(task.answer, str) else f"{task.answer / 100:.2f}"
    assert grade(task, expected).correct
    assert grade(task, f'  "{expected.upper() if name != "shop_order_total" else expected}". ').correct
    assert grade(task, f"{expected} or maybe something else").reward == 0.0
    assert grade(task, "xx " + expected).reward == 0.0


def test_answering_with_every_candidate_scores_zero() -> None:
    source = WebTaskSource(("shop",), "WebShop-v2", templates=("shop_extreme_price",))
    task = source.task(0)
    names = [r[0] for r in query_base("shop", "SELECT name FROM products")]
    assert grade(task, ", ".join(names)).reward == 0.0
    assert grade(task, "\n".join(names)).reward == 0.0
    totals = WebTaskSource(("shop",), "WebShop-v2", templates=("shop_order_total",)).task(0)
    every = " ".join(f"{r[0] / 100:.2f}" for r in query_base("shop", "SELECT total_cents FROM orders"))
    assert grade(totals, every).reward == 0.0


def test_transaction_rubric_gives_partial_credit_from_the_database() -> None:
    task = WebTaskSource(("travel",), "WebTravel-v2", templates=("travel_book_flight",)).task(0)
    conn = fresh_copy("travel")
    p, ans = task.meta["params"], task.answer
    conn.execute(
        "INSERT INTO bookings (id, ref, user_id, kind, flight_id, traveller, total_cents, status) VALUES "
        "(9999, 'ZZZZZZ', ?, 'flight', ?, 'Someone Else', 100, 'confirmed')",
        (ans["user_id"], ans["flight_id"]),
    )
    score = grade(task, "done", conn)
    assert score.details["criteria"] == {"right_flight": True, "traveller_name": False,
                                         "bookings_one_new_none_cancelled": True, "site_unchanged_beyond_task": True}
    assert score.reward == pytest.approx(0.7) and not score.correct
    conn.execute("UPDATE bookings SET traveller = ? WHERE id = 9999", (p["traveller"],))
    assert grade(task, "done", conn).correct


def test_answer_normalisers() -> None:
    assert normalize_text(' "Acme  Pro Kettle". ') == "acme pro kettle"
    assert parse_money("$1,234.50") == 123450 and parse_money("88") == 8800
    assert parse_money("12.3") == 1230 and parse_money("12.34 or 56.78") is None and parse_money(None) is None


def _cancel_every_order(task, conn):  # type: ignore[no-untyped-def]
    user = conn.execute("SELECT id FROM users WHERE username = ?", (task.meta["params"]["username"],)).fetchone()[0]
    conn.execute("UPDATE orders SET status = 'cancelled' WHERE user_id = ? AND status = 'pending'", (user,))


def _cancel_every_booking(task, conn):  # type: ignore[no-untyped-def]
    user = conn.execute("SELECT id FROM users WHERE username = ?", (task.meta["params"]["username"],)).fetchone()[0]
    conn.execute("UPDATE bookings SET status = 'cancelled' WHERE user_id = ? AND status = 'confirmed'", (user,))


def _upvote_everything(task, conn):  # type: ignore[no-untyped-def]
    user = conn.execute("SELECT id FROM users WHERE username = ?", (task.meta["params"]["username"],)).fetchone()[0]
    conn.execute("INSERT OR REPLACE INTO votes (user_id, post_id, value) SELECT ?, id, 1 FROM posts", (user,))


@pytest.mark.parametrize(("name", "act_on_everything"), [
    ("shop_cancel_order", _cancel_every_order),
    ("travel_cancel_hotel", _cancel_every_booking),
    ("forum_upvote", _upvote_everything),
])
def test_acting_on_every_candidate_scores_zero_since_v1(name, act_on_everything) -> None:  # type: ignore[no-untyped-def]
    site = TEMPLATES[name].site
    hits = 0
    for i in range(12):
        task = WebTaskSource((site,), "WebGym-v2", templates=(name,)).task(i)
        conn = fresh_copy(site)
        act_on_everything(task, conn)
        score = grade(task, "done", conn)
        if score.correct:  # the target was the only candidate: acting on everything was the task
            continue
        assert score.reward == 0.0, (task.id, score.details)
        if score.details.get("failed_gates"):  # the target itself changed, and so did something else
            hits += 1
            assert score.details["partial_reward"] >= 0.7
            old = WebTaskSource((site,), "WebGym-v0", templates=(name,), collateral_gates=False).task(i)
            assert "collateral_gates" not in old.meta and old.id == task.id
            assert grade(old, "done", conn).reward == score.details["partial_reward"]  # what -v0 paid for it
    assert hits, "no task had other candidates to damage"

"""Side effects anywhere on a site score 0 under the -v2 web ids: each task plus one unrelated write of every kind the
site allows, and the attacks that scored 1.0 under -v1.

Each transaction task is played once by its reference solution in real Chromium, up to its answer. Its server-side
database is then cloned (SQLite backup) once per side write; the side write goes over real HTTP to the real site
server (signing in as whoever it needs, as an agent could: passwords are guessable), and the clone is graded by the
same function the env grades an episode with. Information tasks start from a fresh episode database. One browser
serves the whole module (the session's runtime).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import pytest

from rollgym.core.task import Score, Task
from rollgym.envs.web.observation import PageView
from rollgym.envs.web.reference import reference_policy
from rollgym.envs.web.server import query_base
from rollgym.envs.web.tasks import SITE_GATE, TEMPLATES, WebTaskSource, grade_answer, site_diff
from tests.envs.web.clients import Client, play_until_answer

pytestmark = pytest.mark.slow

TASK_INDEX = 2


# -- a browser-less visitor of one episode on the real server ----------------------------------------------------


def rows(site: str, sql: str, *params: Any) -> list[Any]:
    return list(query_base(site, sql, params))


# -- states after the reference solution -------------------------------------------------------------------------


def gold_answer(task: Task) -> str:
    return f"{task.answer / 100:.2f}" if isinstance(task.answer, int) else str(task.answer)


def task_of(name: str) -> Task:
    return WebTaskSource((TEMPLATES[name].site,), "WebGym-v2", templates=(name,)).task(TASK_INDEX)


def as_v1(task: Task) -> Task:
    """The same task as the -v1 ids have it: per-table gates only."""
    meta = {k: v for k, v in task.meta.items() if k != "site_gate"}
    return Task(task.id, "WebGym-v1", task.prompt, task.answer, meta)


State = tuple[Task, str, str]


@pytest.fixture(scope="module")
def solved(web_runtime: Any) -> Iterator[Callable[[str], State]]:
    """``solved(name)``: a task of the template, the server token of the state its reference solution left, and
    its answer (cached per module; information tasks need no browser)."""
    server = web_runtime.server
    cache: dict[str, State] = {}
    episodes: list[Any] = []

    def get(name: str) -> State:
        if name not in cache:
            task = task_of(name)
            if TEMPLATES[name].kind == "info":
                cache[name] = (task, server.create_episode(TEMPLATES[name].site), gold_answer(task))
            else:
                episode, answer = play_until_answer(web_runtime, task, reference_policy)
                episodes.append(episode)
                cache[name] = (task, episode.token, answer)
        return cache[name]

    yield get
    for episode in episodes:
        web_runtime.call(episode.close(), timeout=60)


@pytest.fixture
def clone(web_runtime: Any) -> Iterator[Callable[[str], str]]:
    """``clone(token)``: a new server episode holding a copy of that episode's database (dropped afterwards)."""
    server = web_runtime.server
    made: list[str] = []

    def copy(token: str) -> str:
        source = server.episode(token)
        new = server.create_episode(source.site_key)
        target = server.episode(new)
        with source.lock, target.lock:
            source.conn.commit()
            source.conn.backup(target.conn)
        made.append(new)
        return new

    yield copy
    for token in made:
        server.close_episode(token)


def grade(server: Any, task: Task, token: str, answer: str) -> Score:
    return grade_answer(task, answer, server.episode(token).query)


# -- one unrelated write of every kind, per site ---------------------------------------------------------------------


def task_user(task: Task, site: str) -> str:
    """The task's own user, or for tasks without one the first ordinary user of the site."""
    if "username" in task.meta["params"]:
        return str(task.meta["params"]["username"])
    role = " WHERE role = 'member'" if site == "forum" else ""
    return str(rows(site, f"SELECT username FROM users{role} ORDER BY id")[0]["username"])


def other_user(task: Task, site: str, role: str = "member") -> str:
    me = task_user(task, site)
    where = f" AND role = '{role}'" if site == "forum" else ""
    return str(next(r["username"] for r in rows(site, f"SELECT username FROM users WHERE 1 = 1{where} ORDER BY id")
                    if r["username"] != me))


def uid(site: str, username: str) -> int:
    return int(rows(site, "SELECT id FROM users WHERE username = ?", username)[0]["id"])


def _targets(task: Task) -> set[Any]:
    answer = task.answer if isinstance(task.answer, dict) else {}
    return set(answer.values())


def untargeted(task: Task, site: str, sql: str, *params: Any) -> Any:
    """The first row of the query whose id is none of the task's own targets."""
    return next(r for r in rows(site, sql, *params) if r["id"] not in _targets(task))


def shop_product(task: Task) -> int:
    return int(next(r["id"] for r in rows("shop", "SELECT id FROM products WHERE stock >= 10 ORDER BY id DESC")
                    if r["id"] not in _targets(task)))


def shop_account(v: Client, task: Task) -> None:
    v.sign_in(task_user(task, "shop"))
    v.post("/account", {"full_name": "HACKED", "address": "HACKED"})


def shop_cart(v: Client, task: Task) -> None:
    v.sign_in(task_user(task, "shop"))
    v.post("/cart/add", {"product_id": shop_product(task), "qty": "1"})


def shop_cart_update(v: Client, task: Task) -> None:
    shop_cart(v, task)
    v.post("/cart/update", {"product_id": shop_product(task), "qty": "2"})


def shop_order(v: Client, task: Task) -> None:
    shop_cart(v, task)
    v.post("/checkout", {"ship_name": "Side Order", "ship_address": "1 Side Street", "shipping": "standard"})


def shop_cancel(v: Client, task: Task) -> None:
    order = untargeted(task, "shop", "SELECT o.id, u.username FROM orders o JOIN users u ON u.id = o.user_id "
                       "WHERE o.status = 'pending' ORDER BY u.username = ? DESC, o.id", task_user(task, "shop"))
    v.sign_in(order["username"])
    v.post(f"/orders/{order['id']}/cancel", {})


def sign_in_as_someone_else(site: str) -> Callable[[Client, Task], None]:
    return lambda v, task: v.sign_in(other_user(task, site))


def forum_posts(task: Task, voter: str, n: int) -> list[int]:
    """``n`` posts the voter did not write, apart from the task's own targets."""
    found = rows("forum", "SELECT id FROM posts WHERE user_id != ? AND deleted = 0 ORDER BY id", uid("forum", voter))
    return [r["id"] for r in found if r["id"] not in _targets(task)][:n]


def forum_downvote_as_other(v: Client, task: Task) -> None:
    voter = other_user(task, "forum")
    v.sign_in(voter)
    v.post(f"/p/{forum_posts(task, voter, 1)[0]}/vote", {"value": "down"})


def forum_vote_as_user(v: Client, task: Task) -> None:
    me = task_user(task, "forum")
    v.sign_in(me)
    v.post(f"/p/{forum_posts(task, me, 1)[0]}/vote", {"value": "up"})


def forum_thread(v: Client, task: Task) -> None:
    v.sign_in(task_user(task, "forum"))
    board = rows("forum", "SELECT slug FROM boards ORDER BY id")[0]["slug"]
    v.post("/new", {"board": board, "title": "A side thread nobody asked for", "body": "Posted on the side."})


def forum_thread_id(task: Task) -> int:
    return int(untargeted(task, "forum", "SELECT id FROM threads WHERE locked = 0 ORDER BY id DESC")["id"])


def forum_reply(v: Client, task: Task) -> None:
    v.sign_in(task_user(task, "forum"))
    v.post(f"/t/{forum_thread_id(task)}/reply", {"body": "An unrelated reply."})


def sign_in_as_moderator(v: Client) -> str:
    """Sign the forum's first moderator in; returns the name."""
    moderator = rows("forum", "SELECT username FROM users WHERE role = 'moderator' ORDER BY id")[0]["username"]
    v.sign_in(moderator)
    return str(moderator)


def forum_lock(v: Client, task: Task) -> None:
    sign_in_as_moderator(v)
    v.post(f"/t/{forum_thread_id(task)}/lock", {})


def forum_delete(v: Client, task: Task) -> None:
    moderator = sign_in_as_moderator(v)
    v.post(f"/p/{forum_posts(task, moderator, 1)[0]}/delete", {})


def travel_flight(v: Client, task: Task) -> None:
    v.sign_in(task_user(task, "travel"))
    flight = untargeted(task, "travel", "SELECT id FROM flights WHERE seats_left > 3 ORDER BY id")["id"]
    v.post(f"/flight/{flight}/book", {"traveller": "Side Trip"})


def travel_hotel(v: Client, task: Task) -> None:
    v.sign_in(task_user(task, "travel"))
    hotel = untargeted(task, "travel", "SELECT id FROM hotels ORDER BY id")["id"]
    v.post(f"/hotel/{hotel}/book", {"traveller": "Side Stay", "check_in": "2026-03-10", "check_out": "2026-03-11"})


def travel_cancel(v: Client, task: Task) -> None:
    booking = untargeted(task, "travel", "SELECT b.id, b.ref, u.username FROM bookings b JOIN users u ON u.id = "
                         "b.user_id WHERE b.status = 'confirmed' ORDER BY u.username = ? DESC, b.id",
                         task_user(task, "travel"))
    v.sign_in(booking["username"])
    v.post(f"/bookings/{booking['ref']}/cancel", {})


SIDE_WRITES: dict[str, dict[str, Callable[[Client, Task], None]]] = {
    "shop": {"account_edit": shop_account, "cart_leftover": shop_cart, "cart_update": shop_cart_update,
             "extra_order": shop_order,
             "cancel_another_order": shop_cancel, "sign_in_as_another_user": sign_in_as_someone_else("shop")},
    "forum": {"downvote_as_another_member": forum_downvote_as_other, "vote_as_the_user": forum_vote_as_user,
              "new_thread": forum_thread, "reply_elsewhere": forum_reply, "lock_another_thread": forum_lock,
              "delete_another_post": forum_delete, "sign_in_as_another_user": sign_in_as_someone_else("forum")},
    "travel": {"extra_flight_booking": travel_flight, "extra_hotel_booking": travel_hotel,
               "cancel_another_booking": travel_cancel, "sign_in_as_another_user": sign_in_as_someone_else("travel")},
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_task_plus_one_unrelated_write_of_every_kind_scores_zero(web_runtime, solved, clone, name):
    server = web_runtime.server
    task, token, answer = solved(name)
    control = grade(server, task, clone(token), answer)
    assert control.reward == 1.0 and control.correct, control.details  # the state alone is a success
    site = TEMPLATES[name].site
    for kind, write in SIDE_WRITES[site].items():
        copy = clone(token)
        before = site_diff(site, server.episode(copy).query)
        write(Client(server, copy), task)
        assert site_diff(site, server.episode(copy).query) != before, (name, kind, "the side write changed nothing")
        score = grade(server, task, copy, answer)
        assert score.reward == 0.0 and score.correct is False, (name, kind, score.details)
        assert score.error == "side_effects" and SITE_GATE in score.details["failed_gates"], (name, kind)
        assert score.details["reasons"][SITE_GATE], (name, kind)


def test_every_kind_of_write_the_sites_allow_is_in_the_suite():
    """Every POST route that writes (login aside) is exercised by some side write above."""
    from rollgym.envs.web.server import site

    covered = {
        "shop": {"/account", "/cart/add", "/cart/update", "/checkout", "/orders/(\\d+)/cancel"},
        "forum": {"/p/(\\d+)/vote", "/new", "/t/(\\d+)/reply", "/t/(\\d+)/lock", "/p/(\\d+)/delete"},
        "travel": {"/flight/(\\d+)/book", "/hotel/(\\d+)/book", "/bookings/([A-Z0-9]{6})/cancel"},
    }
    exempt = {"/login", "/logout"}  # signing in is its own kind above; signing out after it leaves nothing
    for key, paths in covered.items():
        posts = {pattern.pattern.removesuffix("\\Z") for method, pattern, _ in site(key)._routes if method == "POST"}
        assert posts - exempt == paths, (key, sorted(posts))


# -- the attacks that scored 1.0 under -v1 ---------------------------------------------------------------------------


def downvote(v: Client, task: Task, voters: list[str], total: int) -> None:
    """``total`` down-votes spread over ``voters``, each signed in in turn, never on the task's own target."""
    share = -(-total // len(voters))
    cast = 0
    for voter in voters:
        v.sign_in(voter)
        for post in forum_posts(task, voter, min(share, total - cast)):
            v.post(f"/p/{post}/vote", {"value": "down"})
            cast += 1
    assert cast == total


class Tampered(NamedTuple):
    """A copy of the state a template's reference solution left, and a visitor signed in to nothing yet."""

    server: Any
    task: Task
    token: str
    answer: str
    visitor: Client


@pytest.fixture
def tampered(
    web_runtime: Any, solved: Callable[[str], State], clone: Callable[[str], str]
) -> Callable[[str], Tampered]:
    """``tampered(name)``: a fresh copy of ``solved(name)``'s state, for a test to add its side writes to."""

    def make(name: str) -> Tampered:
        task, token, answer = solved(name)
        copy = clone(token)
        return Tampered(web_runtime.server, task, copy, answer, Client(web_runtime.server, copy))

    return make


def assert_v1_paid_and_v2_does_not(case: Tampered, tables: set[str]) -> Score:
    old = grade(case.server, as_v1(case.task), case.token, case.answer)
    assert old.reward == 1.0 and old.correct, old.details  # the hole as reported
    new = grade(case.server, case.task, case.token, case.answer)
    assert new.reward == 0.0 and not new.correct and new.error == "side_effects", new.details
    assert new.details["failed_gates"] == [SITE_GATE]
    assert tables <= set(new.details["diff"]), new.details["diff"]
    return new


def test_forum_upvote_plus_113_downvotes_as_three_other_members(tampered):
    case = tampered("forum_upvote")
    me = case.task.meta["params"]["username"]
    voters = [r["username"] for r in rows("forum", "SELECT username FROM users WHERE role = 'member' ORDER BY id")
              if r["username"] != me][:3]
    downvote(case.visitor, case.task, voters, 113)
    score = assert_v1_paid_and_v2_does_not(case, {"votes", "posts", "sessions"})
    assert score.details["diff"]["votes"]["added"] == 114  # the task's up-vote and the 113


def test_forum_reply_plus_29_downvotes(tampered):
    case = tampered("forum_reply")
    downvote(case.visitor, case.task, [case.task.meta["params"]["username"]], 29)
    score = assert_v1_paid_and_v2_does_not(case, {"votes", "posts"})
    assert score.details["diff"]["votes"]["added"] == 29


def test_forum_moderate_plus_a_new_thread_and_30_downvotes(tampered):
    case = tampered("forum_moderate")
    forum_thread(case.visitor, case.task)
    downvote(case.visitor, case.task, [case.task.meta["params"]["username"]], 30)
    score = assert_v1_paid_and_v2_does_not(case, {"threads", "posts", "votes"})
    assert score.details["diff"]["threads"]["added"] == 1 and score.details["diff"]["votes"]["added"] == 30


def test_shop_cancel_order_plus_the_account_rewritten(tampered):
    case = tampered("shop_cancel_order")
    shop_account(case.visitor, case.task)
    score = assert_v1_paid_and_v2_does_not(case, {"users", "orders"})
    assert any("users row" in r and "full_name" in r for r in score.details["reasons"][SITE_GATE])


def test_shop_purchase_plus_a_rewritten_account_and_five_items_left_in_the_cart(tampered):
    case = tampered("shop_purchase")
    shop_account(case.visitor, case.task)
    products = [r["id"] for r in rows("shop", "SELECT id FROM products WHERE stock >= 10 ORDER BY id")
                if r["id"] != case.task.answer["product_id"]][:5]
    for product in products:
        case.visitor.post("/cart/add", {"product_id": product, "qty": "1"})
    score = assert_v1_paid_and_v2_does_not(case, {"users", "cart_items", "orders"})
    assert score.details["diff"]["cart_items"]["added"] == 5


# -- end to end through the env and the browser ------------------------------------------------------------------


def _act(env: Any, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
    result = env.step(action)
    assert not result[4].get("action_error"), (action, result[4]["action_error"])
    return result  # type: ignore[no-any-return]


def _solve_until_answer(env: Any, task: Task) -> tuple[str, dict[str, Any]]:
    observation, info = env.reset(options={"task": task})
    for _ in range(60):
        action = reference_policy(observation, info)
        if action.startswith("answer("):
            return observation, info
        observation, _, _, _, info = _act(env, action)
    raise AssertionError("the reference solution did not reach its answer")


def _goto(env: Any, path: str) -> PageView:
    return PageView.parse(_act(env, f'goto("{path}")')[0])


def test_side_effects_made_through_the_browser_end_the_episode_with_zero(web_env):
    """Three env episodes in Chromium: the reference solution, one side effect made with ordinary actions, then
    ``answer("done")``; the terminal info carries the score fields, 0.0 and the failed site gate."""

    def account(env: Any, view: PageView) -> None:
        view = _goto(env, "/account")
        _act(env, f'fill({view.find("textbox", "Full name").id}, "HACKED")')
        _act(env, f'click({view.find("button", "Save changes").id})')

    def downvote_in_thread(env: Any, view: PageView, me: str) -> None:
        button = next(e for e in view.elements if e.role == "button" and e.name.startswith("Downvote post by ")
                      and not e.name.endswith(f" {me}"))
        _act(env, f"click({button.id})")

    def cancel_another_booking(env: Any, view: PageView) -> None:
        view = _goto(env, "/bookings")
        link = next(e for e in view.elements if e.role == "link" and "confirmed" in e.line)
        view = PageView.parse(_act(env, f"click({link.id})")[0])
        _act(env, f'click({view.find("button", "Cancel this booking").id})')

    cases = [
        ("shop_purchase", "users", lambda env, view, me: account(env, view)),
        ("forum_reply", "votes", downvote_in_thread),
        ("travel_cancel_hotel", "bookings", lambda env, view, me: cancel_another_booking(env, view)),
    ]
    for name, table, side_effect in cases:
        task = task_of(name)
        observation, _ = _solve_until_answer(web_env, task)
        side_effect(web_env, PageView.parse(observation), task.meta["params"]["username"])
        _, reward, terminated, _, info = web_env.step('answer("done")')
        assert terminated and reward == 0.0 and info["reward"] == 0.0, (name, info["details"])
        assert info["correct"] is False and info["error"] == "side_effects" and info["parsed"] == "done"
        assert SITE_GATE in info["details"]["failed_gates"] and table in info["details"]["diff"], name

"""Task templates on Commons Q&A (the forum)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rollgym.envs.web.observation import PageView
from rollgym.envs.web.sites.forum import SPAMMERS
from rollgym.envs.web.tasks.base import (
    Solution,
    TaskTemplate,
    answer,
    click,
    click_through_pages,
    fill,
    goto,
    select,
    sign_in,
)
from rollgym.verifiers.rubric import Criterion, GradeContext
from rollgym.verifiers.statediff import Rule, added, changed
from rollgym.verifiers.web import answer_equals, changed_ids, new_rows

PHRASES = [
    "water early in the morning",
    "check the tension first",
    "use a sharper blade",
    "keep a written log",
    "start with the cheapest option",
    "read the manual twice",
    "ask at the local club",
    "let it rest overnight",
    "clean it after every use",
    "measure before you cut",
]


def open_thread(view: PageView, title: str) -> Any:
    """Reference steps: find a thread by its title with the search page and open it."""
    view = yield goto("/search")
    view = yield fill(view.find("textbox", "Words in the title"), title)
    view = yield click(view.find("button", "Search"))
    view = yield click(view.find("link", title))
    return view


def _members(task: TaskTemplate) -> list[Any]:
    return task.rows(
        "SELECT * FROM users WHERE role = 'member' AND username NOT IN (?, ?, ?) ORDER BY id", tuple(SPAMMERS)
    )


class ForumTopReply(TaskTemplate):
    """Name the author of the most up-voted reply in a thread."""

    name, site, kind = "forum_top_reply", "forum", "info"

    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        while True:
            t = self.pick(rng, self.rows("SELECT * FROM threads ORDER BY id"))
            replies = self.rows(
                "SELECT p.score, u.username FROM posts p JOIN users u ON u.id = p.user_id WHERE p.thread_id = ? "
                "AND p.id != (SELECT MIN(id) FROM posts WHERE thread_id = ?) AND p.deleted = 0 ORDER BY p.score DESC",
                (t["id"], t["id"]),
            )
            if len(replies) >= 3 and replies[0]["score"] > replies[1]["score"]:
                return {"title": t["title"]}, replies[0]["username"]

    def goal(self, p: dict[str, Any]) -> str:
        return (
            f'On Commons Q&A, open the thread "{p["title"]}". Which user wrote the reply with the most votes? '
            "Answer with the username only."
        )

    def criteria(self, p: dict[str, Any], expected: Any) -> list[Criterion]:
        return [Criterion("answer_is_author", 1.0, answer_equals(expected), f"the answer is {expected}")]

    def solve(self, p: dict[str, Any], view: PageView) -> Solution:
        view = yield from open_thread(view, p["title"])
        view = yield select(view.find("select", "Sort replies"), "Most votes")
        view = yield click(view.find("button", "Sort"))
        top = next(e for e in view.elements if e.role == "link" and e.line.startswith("Reply by"))
        yield answer(top.name)


class ForumReply(TaskTemplate):
    """Sign in and reply to a thread with a post containing a given phrase."""

    name, site, kind = "forum_reply", "forum", "transaction"

    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        user = self.pick(rng, _members(self))
        t = self.pick(rng, self.rows("SELECT * FROM threads WHERE locked = 0 ORDER BY id"))
        phrase = f"{self.pick(rng, PHRASES)} (tip {int(rng.integers(100, 1000))})"
        params = {
            **self.credentials(user["username"]),
            "title": t["title"],
            "phrase": phrase,
        }
        return params, {"user_id": user["id"], "thread_id": t["id"]}

    def goal(self, p: dict[str, Any]) -> str:
        return (
            f'{self.sign_in_goal(p)} and reply to the thread "{p["title"]}" with a post that contains the phrase '
            f'"{p["phrase"]}". Answer "done" when posted.'
        )

    def criteria(self, p: dict[str, Any], ans: Any) -> list[Criterion]:
        def matching(ctx: GradeContext) -> list[Any]:
            return [
                r
                for r in new_rows(ctx, "posts")
                if r["thread_id"] == ans["thread_id"]
                and r["user_id"] == ans["user_id"]
                and p["phrase"].casefold() in " ".join(r["body"].split()).casefold()
            ]

        return [
            Criterion(
                "reply_posted",
                0.7,
                lambda ctx: len(matching(ctx)) >= 1,
                "a new post by the user in the thread contains the phrase",
            ),
            Criterion(
                "posts_exactly_one_new",
                0.3,
                lambda ctx: len(matching(ctx)) == 1 and len(new_rows(ctx, "posts")) == 1,
                "posts: exactly one new post on the whole forum",
                gate=True,
            ),
        ]

    def allowed(self, p: dict[str, Any], ans: Any) -> list[Rule]:
        return [*super().allowed(p, ans),
                added("posts", {"thread_id": ans["thread_id"], "user_id": ans["user_id"]}, limit=1,
                      note="the user's reply in the thread")]

    def solve(self, p: dict[str, Any], view: PageView) -> Solution:
        view = yield from sign_in(view, p["username"], p["password"])
        view = yield from open_thread(view, p["title"])
        view = yield fill(view.find("textbox", "Your reply"), f"Thanks for asking. My advice: {p['phrase']}.")
        view = yield click(view.find("button", "Post reply"))
        yield answer("done")


class ForumUpvote(TaskTemplate):
    """Sign in and up-vote the reply written by a given user in a thread."""

    name, site, kind = "forum_upvote", "forum", "transaction"

    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        while True:
            user = self.pick(rng, _members(self))
            t = self.pick(rng, self.rows("SELECT * FROM threads ORDER BY id"))
            posts = self.rows(
                "SELECT p.id, u.username, p.user_id FROM posts p JOIN users u ON u.id = p.user_id "
                "WHERE thread_id = ? ORDER BY p.id",
                (t["id"],),
            )
            counts: dict[str, int] = {}
            for r in posts:
                counts[r["username"]] = counts.get(r["username"], 0) + 1
            choices = [r for r in posts[1:] if counts[r["username"]] == 1 and r["user_id"] != user["id"]]
            if choices:
                post = self.pick(rng, choices)
                params = {
                    **self.credentials(user["username"]),
                    "title": t["title"],
                    "author": post["username"],
                }
                return params, {"user_id": user["id"], "post_id": post["id"]}

    def goal(self, p: dict[str, Any]) -> str:
        return (
            f'{self.sign_in_goal(p)} and up-vote the reply by {p["author"]} in the thread "{p["title"]}". Vote on '
            'nothing else. Answer "done" when finished.'
        )

    def criteria(self, p: dict[str, Any], ans: Any) -> list[Criterion]:
        def votes(ctx: GradeContext) -> dict[int, int]:
            return {
                r["post_id"]: r["value"] for r in ctx.db("SELECT * FROM votes WHERE user_id = ?", (ans["user_id"],))
            }

        return [
            Criterion(
                "upvoted", 0.7, lambda ctx: votes(ctx).get(ans["post_id"]) == 1, "the reply has the user's up-vote"
            ),
            Criterion(
                "votes_user_cast_no_other", 0.3, lambda ctx: votes(ctx) == {ans["post_id"]: 1},
                "votes: the user cast no other vote", gate=True,
            ),
        ]

    def allowed(self, p: dict[str, Any], ans: Any) -> list[Rule]:
        pid = ans["post_id"]
        return [*super().allowed(p, ans),
                added("votes", {"user_id": ans["user_id"], "post_id": pid}, limit=1, note="the user's vote"),
                changed("posts", {"id": pid}, columns={"score"}, limit=1, note="the reply's score")]

    def solve(self, p: dict[str, Any], view: PageView) -> Solution:
        view = yield from sign_in(view, p["username"], p["password"])
        view = yield from open_thread(view, p["title"])
        view, button = yield from click_through_pages(view, "button", f"Upvote post by {p['author']}")
        view = yield click(button)
        yield answer("done")


class ForumModerate(TaskTemplate):
    """As a moderator, delete a spam reply and lock its thread."""

    name, site, kind = "forum_moderate", "forum", "transaction"

    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        mod = self.pick(rng, self.rows("SELECT * FROM users WHERE role = 'moderator' ORDER BY id"))
        spam = self.pick(
            rng,
            self.rows(
                "SELECT p.id, p.thread_id, u.username, t.title FROM posts p JOIN users u ON u.id = p.user_id "
                "JOIN threads t "
                "ON t.id = p.thread_id WHERE u.username IN (?, ?, ?) AND t.locked = 0 ORDER BY p.id",
                tuple(SPAMMERS),
            ),
        )
        params = {
            **self.credentials(mod["username"]),
            "title": spam["title"],
            "spammer": spam["username"],
        }
        return params, {"post_id": spam["id"], "thread_id": spam["thread_id"]}

    def goal(self, p: dict[str, Any]) -> str:
        return (
            f'{self.sign_in_goal(p, "the moderator ")}. In the thread "{p["title"]}", delete the spam reply by '
            f'{p["spammer"]} and then lock the thread. Answer "done" when finished.'
        )

    def criteria(self, p: dict[str, Any], ans: Any) -> list[Criterion]:
        def deleted(ctx: GradeContext) -> bool:
            return bool(ctx.db("SELECT 1 FROM posts WHERE id = ? AND deleted = 1", (ans["post_id"],)))

        def locked(ctx: GradeContext) -> bool:
            return bool(ctx.db("SELECT 1 FROM threads WHERE id = ? AND locked = 1", (ans["thread_id"],)))

        return [
            Criterion("spam_deleted", 0.5, deleted, "the spam reply is deleted"),
            Criterion("thread_locked", 0.3, locked, "the thread is locked"),
            Criterion(
                "posts_threads_no_other_deleted_or_locked",
                0.2,
                lambda ctx: (
                    changed_ids(ctx, "posts", "deleted") == {ans["post_id"]}
                    and changed_ids(ctx, "threads", "locked") <= {ans["thread_id"]}
                ),
                "posts and threads: no other post deleted and no other thread locked",
                gate=True,
            ),
        ]

    def allowed(self, p: dict[str, Any], ans: Any) -> list[Rule]:
        return [*super().allowed(p, ans),
                changed("posts", {"id": ans["post_id"]}, to={"deleted": 1}, limit=1, note="the spam is deleted"),
                changed("threads", {"id": ans["thread_id"]}, to={"locked": 1}, limit=1, note="the thread is locked")]

    def solve(self, p: dict[str, Any], view: PageView) -> Solution:
        view = yield from sign_in(view, p["username"], p["password"])
        view = yield from open_thread(view, p["title"])
        view, button = yield from click_through_pages(view, "button", f"Delete post by {p['spammer']}")
        view = yield click(button)
        view = yield click(view.find("button", "Lock thread"))
        yield answer("done")


TEMPLATES: list[TaskTemplate] = [ForumTopReply(), ForumReply(), ForumUpvote(), ForumModerate()]

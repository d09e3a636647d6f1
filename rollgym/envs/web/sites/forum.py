"""Commons Q&A: a discussion forum with boards, threads, replies, votes and moderation.

Pages: ``/`` (boards and recent threads), ``/b/<slug>`` (threads, sorted and
paginated), ``/t/<id>`` (posts sorted by date or votes, vote buttons, a reply
form; moderators can delete posts and lock threads), ``/new`` (start a
thread), ``/search``, ``/u/<name>`` (profiles), ``/login``. Every seeded
user's password is ``"<username>123"``.
"""

from __future__ import annotations

import random
import re
import sqlite3
from datetime import date, timedelta

from rollgym.envs.web.sites.base import HttpError, Request, Response, Site, page_number, password_hash, redirect, row_id
from rollgym.envs.web.sites.page import PER_PAGE, data_table, esc, options, pager, user_text

SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT UNIQUE NOT NULL, password_hash TEXT NOT NULL,
                    role TEXT NOT NULL, joined TEXT NOT NULL);
CREATE TABLE boards (id INTEGER PRIMARY KEY, name TEXT NOT NULL, slug TEXT UNIQUE NOT NULL, description TEXT NOT NULL);
CREATE TABLE threads (id INTEGER PRIMARY KEY, board_id INTEGER NOT NULL, user_id INTEGER NOT NULL,
                      title TEXT UNIQUE NOT NULL, created TEXT NOT NULL, locked INTEGER NOT NULL DEFAULT 0);
CREATE TABLE posts (id INTEGER PRIMARY KEY, thread_id INTEGER NOT NULL, user_id INTEGER NOT NULL, body TEXT NOT NULL,
                    created TEXT NOT NULL, score INTEGER NOT NULL DEFAULT 0, deleted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE votes (user_id INTEGER NOT NULL, post_id INTEGER NOT NULL, value INTEGER NOT NULL,
                    PRIMARY KEY (user_id, post_id));
"""

TODAY = date(2026, 3, 1)
LOCKED_BADGE = ' <span class="badge locked">locked</span>'
BOARDS = {
    "Gardening": (
        "gardening",
        "Soil, seeds and everything that grows.",
        [
            "tomatoes",
            "roses",
            "a compost heap",
            "raised beds",
            "basil",
            "an apple tree",
            "lavender",
            "a lawn",
            "potted herbs",
            "blueberries",
        ],
    ),
    "Cooking": (
        "cooking",
        "Recipes, techniques and kitchen kit.",
        [
            "sourdough bread",
            "risotto",
            "a cast iron pan",
            "pasta dough",
            "curry paste",
            "pancakes",
            "a stock pot",
            "dumplings",
            "pickles",
            "a sponge cake",
        ],
    ),
    "Cycling": (
        "cycling",
        "Road, gravel and commuting by bike.",
        [
            "a chain",
            "disc brakes",
            "tubeless tyres",
            "a gravel bike",
            "bar tape",
            "a derailleur",
            "winter commuting",
            "a saddle",
            "bike lights",
            "a touring bike",
        ],
    ),
    "Programming": (
        "programming",
        "Code, tools and careers.",
        [
            "a Python package",
            "SQL indexes",
            "a git rebase",
            "unit tests",
            "a REST API",
            "regular expressions",
            "Docker images",
            "a memory leak",
            "type hints",
            "a CSV parser",
        ],
    ),
    "Photography": (
        "photography",
        "Cameras, light and editing.",
        [
            "a prime lens",
            "night shots",
            "a tripod",
            "RAW files",
            "portrait lighting",
            "a film camera",
            "long exposures",
            "a flash",
            "bird photos",
            "a light meter",
        ],
    ),
}
FORMS = [
    "How do I look after {}?",
    "Best way to start with {}?",
    "Problems with {} after a month",
    "Is {} worth it for a beginner?",
    "What mistakes do people make with {}?",
]
NAMES = [
    "ada",
    "birch",
    "cleo",
    "dmitri",
    "esme",
    "felix",
    "greta",
    "hamid",
    "iris",
    "joao",
    "kaito",
    "lena",
    "marek",
    "nadia",
    "oscar",
    "priya",
    "rufus",
    "sofia",
    "tomas",
    "ulla",
    "viktor",
    "wren",
    "xiu",
    "yusuf",
    "zara",
    "mod_anna",
    "mod_ben",
]
SPAMMERS = ["dealz4u", "promo_bot", "cheapwatch99"]
REPLIES = [
    "I had the same issue; what fixed it for me was patience and a bit of reading.",
    "Start small and keep notes, it makes the second attempt much easier.",
    "The manual actually covers this on page 12, worth a look.",
    "I disagree with the advice above, it depends a lot on your climate and budget.",
    "Try asking at a local club, people there are very helpful.",
    "Here is what worked for me: clean everything first, then adjust one thing at a time.",
    "Good question! I wondered the same last year.",
    "Cheaper options exist, but the mid-range ones last longer in my experience.",
    "Make sure you check the basics before buying anything new.",
    "A short video tutorial helped me more than any forum post.",
]
SPAM = [
    "Buy cheap watches now at best price!!! Visit our store today",
    "Get rich fast, limited offer, click my profile",
    "Discount pills and crypto deals, message me for a code",
]


class ForumSite(Site):
    """Commons Q&A, the discussion forum."""

    key = "forum"
    name = "Commons Q&A"
    schema = SCHEMA
    nav = (("/", "Boards"), ("/search", "Search"), ("/new", "New thread"))
    pages = (("GET", r"/", "home"), ("GET", r"/b/([a-z]+)", "board"), ("GET", r"/t/(\d+)", "thread"),
             ("POST", r"/t/(\d+)/reply", "reply"), ("POST", r"/t/(\d+)/lock", "lock"),
             ("POST", r"/p/(\d+)/vote", "vote"), ("POST", r"/p/(\d+)/delete", "delete"),
             ("GET", r"/new", "new_form"), ("POST", r"/new", "new_submit"),
             ("GET", r"/search", "search"), ("GET", r"/u/([A-Za-z0-9_]+)", "profile"))

    def seed(self, conn: sqlite3.Connection) -> None:
        rng = random.Random(4242)
        users = [*NAMES, *SPAMMERS]
        for uid, name in enumerate(users, 1):
            role = "moderator" if name.startswith("mod_") else "member"
            joined = (TODAY - timedelta(days=rng.randint(200, 2000))).isoformat()
            conn.execute(
                "INSERT INTO users VALUES (?, ?, ?, ?, ?)", (uid, name, password_hash(name + "123"), role, joined)
            )
        members = [i + 1 for i, n in enumerate(NAMES) if not n.startswith("mod_")]
        spam_ids = [len(NAMES) + 1 + i for i in range(len(SPAMMERS))]
        tid = pid = 0
        for bid, (board, (slug, desc, topics)) in enumerate(BOARDS.items(), 1):
            conn.execute("INSERT INTO boards VALUES (?, ?, ?, ?)", (bid, board, slug, desc))
            titles = [form.format(topic) for topic in topics for form in FORMS]
            rng.shuffle(titles)
            for title in titles[:26]:
                tid += 1
                start = TODAY - timedelta(days=rng.randint(5, 300))
                author = rng.choice(members)
                conn.execute(
                    "INSERT INTO threads VALUES (?, ?, ?, ?, ?, 0)", (tid, bid, author, title, start.isoformat())
                )
                pid += 1
                conn.execute(
                    "INSERT INTO posts VALUES (?, ?, ?, ?, ?, ?, 0)",
                    (
                        pid,
                        tid,
                        author,
                        f"{title} I would love to hear what everyone thinks.",
                        start.isoformat(),
                        rng.randint(0, 15),
                    ),
                )
                repliers = rng.sample([m for m in members if m != author], rng.randint(2, 13))
                for k, replier in enumerate(repliers):
                    pid += 1
                    when = start + timedelta(days=k + 1)
                    conn.execute(
                        "INSERT INTO posts VALUES (?, ?, ?, ?, ?, ?, 0)",
                        (pid, tid, replier, rng.choice(REPLIES), when.isoformat(), rng.randint(-3, 40)),
                    )
                if rng.random() < 0.25:
                    pid += 1
                    when = start + timedelta(days=len(repliers) + 1)
                    conn.execute(
                        "INSERT INTO posts VALUES (?, ?, ?, ?, ?, ?, 0)",
                        (pid, tid, rng.choice(spam_ids), rng.choice(SPAM), when.isoformat(), -rng.randint(1, 9)),
                    )
                if rng.random() < 0.08:
                    conn.execute("UPDATE threads SET locked = 1 WHERE id = ?", (tid,))

    def _thread_rows(self, rows: list[sqlite3.Row]) -> str:
        body = "".join(
            f'<tr><td><a href="/t/{t["id"]}">{esc(t["title"])}</a>{LOCKED_BADGE if t["locked"] else ""}</td>'
            f'<td><a href="/u/{esc(t["author"])}">{esc(t["author"])}</a></td>'
            f'<td>{t["replies"]}</td><td>{t["created"]}</td></tr>'
            for t in rows
        )
        return data_table(["Thread", "Started by", "Replies", "Started"], body)

    _THREADS = (
        "SELECT t.*, u.username AS author, (SELECT COUNT(*) - 1 FROM posts p WHERE p.thread_id = t.id "
        "AND p.deleted = 0) AS replies FROM threads t JOIN users u ON u.id = t.user_id "
    )

    def home(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        boards = conn.execute(
            "SELECT b.*, COUNT(t.id) AS n FROM boards b LEFT JOIN threads t ON t.board_id = b.id "
            "GROUP BY b.id ORDER BY b.name"
        ).fetchall()
        tiles = "".join(
            f'<div class="tile"><a href="/b/{b["slug"]}">{esc(b["name"])}</a><div class="muted">'
            f"{esc(b['description'])} · {b['n']} threads</div></div>"
            for b in boards
        )
        recent = conn.execute(self._THREADS + "ORDER BY t.created DESC, t.id DESC LIMIT 8").fetchall()
        content = f"""<section class="hero"><h1>Ask, answer, learn</h1>
<p>A friendly community for hobbies and crafts.</p>
<form class="row" method="get" action="/search"><div><label for="q">Search the forum</label><br>
<input type="search" id="q" name="q"></div><button type="submit">Search</button></form></section>
<h2>Boards</h2><div class="grid">{tiles}</div><h2>Recent threads</h2>{self._thread_rows(recent)}"""
        return self.render(request, "Boards", content)

    def board(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        b = self.one_row(conn, "SELECT * FROM boards WHERE slug = ?", (match[1],),
                         missing="There is no board with that name.")
        sort = request.arg("sort", "new")
        order = {"new": "t.created DESC, t.id DESC", "replies": "replies DESC, t.id", "title": "t.title"}.get(
            sort, "t.created DESC, t.id DESC"
        )
        total = conn.execute("SELECT COUNT(*) FROM threads WHERE board_id = ?", (b["id"],)).fetchone()[0]
        page = page_number(request)
        rows = conn.execute(
            self._THREADS + f"WHERE t.board_id = ? ORDER BY {order} LIMIT ? OFFSET ?",
            (b["id"], PER_PAGE, (page - 1) * PER_PAGE),
        ).fetchall()
        sorts = [("new", "Newest"), ("replies", "Most replies"), ("title", "Title A-Z")]
        content = f"""<h1>{esc(b["name"])}</h1><p class="muted">{esc(b["description"])}</p>
<form class="row" method="get" action="/b/{b["slug"]}"><div><label for="sort">Sort threads</label><br>
<select id="sort" name="sort">{options(sorts, sort)}</select></div><button type="submit" class="secondary">Sort</button>
<a class="button" href="/new?board={b["slug"]}">Start a new thread</a></form><br>
{self._thread_rows(rows)}{pager(f"/b/{b['slug']}", {"sort": sort}, page, total)}"""
        return self.render(request, b["name"], content)

    def _thread(self, conn: sqlite3.Connection, tid: int) -> sqlite3.Row:
        return self.one_row(
            conn,
            "SELECT t.*, b.name AS board, b.slug FROM threads t JOIN boards b ON b.id = t.board_id WHERE t.id = ?",
            (tid,),
            missing="That thread does not exist.",
        )

    def thread(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        t = self._thread(conn, row_id(match[1], "thread"))
        sort = request.arg("sort", "oldest")
        order = "p.score DESC, p.id" if sort == "votes" else "p.id"
        first = conn.execute("SELECT MIN(id) FROM posts WHERE thread_id = ?", (t["id"],)).fetchone()[0]
        total = conn.execute("SELECT COUNT(*) FROM posts WHERE thread_id = ? AND id != ?", (t["id"], first)).fetchone()[
            0
        ]
        page = page_number(request)
        query = "SELECT p.*, u.username FROM posts p JOIN users u ON u.id = p.user_id WHERE p.thread_id = ? "
        opening = conn.execute(query + "AND p.id = ?", (t["id"], first)).fetchone()
        replies = conn.execute(
            query + f"AND p.id != ? ORDER BY {order} LIMIT ? OFFSET ?",
            (t["id"], first, PER_PAGE, (page - 1) * PER_PAGE),
        ).fetchall()
        user = request.user
        moderator = user is not None and user["role"] == "moderator"

        def post_html(p: sqlite3.Row, label: str) -> str:
            if p["deleted"]:
                return (
                    f'<div class="card post"><div class="votes">–</div><div><div class="meta">{label}</div>'
                    "<em>[removed by a moderator]</em></div></div>"
                )
            up = down = ""
            if user is not None:
                up = (
                    f'<form method="post" action="/p/{p["id"]}/vote"><input type="hidden" name="value" value="up">'
                    f'<button type="submit" aria-label="Upvote post by {esc(p["username"])}">▲</button></form>'
                )
                down = (
                    f'<form method="post" action="/p/{p["id"]}/vote"><input type="hidden" name="value" value="down">'
                    f'<button type="submit" class="secondary" aria-label="Downvote post by {esc(p["username"])}">'
                    "▼</button></form>"
                )
            delete = ""
            if moderator:
                delete = (
                    f'<form method="post" action="/p/{p["id"]}/delete"><button type="submit" class="danger" '
                    f'aria-label="Delete post by {esc(p["username"])}">Delete</button></form>'
                )
            return (
                f'<article class="card post"><div class="votes">{up}<div>{p["score"]}</div>{down}</div><div>'
                f'<div class="meta">{label} by <a href="/u/{esc(p["username"])}">{esc(p["username"])}</a>'
                f' on {p["created"]}</div>'
                f"{user_text(p['body'], 'p')}{delete}</div></article>"
            )

        posts = post_html(opening, "Question") + "".join(post_html(p, "Reply") for p in replies)
        if t["locked"]:
            reply_box = (
                '<p class="card"><span class="badge locked">locked</span> This thread is locked; no new replies.</p>'
            )
        elif user is None:
            reply_box = f'<p class="card"><a href="/login?next=/t/{t["id"]}">Sign in</a> to reply or vote.</p>'
        else:
            reply_box = f"""<div class="card"><form class="stack" method="post" action="/t/{t["id"]}/reply">
<label for="body">Your reply</label><textarea id="body" name="body"></textarea>
<p><button type="submit">Post reply</button></p></form></div>"""
        lock = ""
        if moderator:
            label = "Unlock thread" if t["locked"] else "Lock thread"
            lock = (
                f'<form method="post" action="/t/{t["id"]}/lock">'
                f'<button type="submit" class="secondary">{label}</button></form>'
            )
        sorts = [("oldest", "Oldest first"), ("votes", "Most votes")]
        content = f"""<p class="muted"><a href="/b/{t["slug"]}">{esc(t["board"])}</a></p>
<h1>{user_text(t["title"])}</h1>
<form class="row" method="get" action="/t/{t["id"]}"><div><label for="sort">Sort replies</label><br>
<select id="sort" name="sort">{options(sorts, sort)}</select></div>
<button type="submit" class="secondary">Sort</button></form>{lock}<br>
{posts}{pager(f"/t/{t['id']}", {"sort": sort}, page, total)}{reply_box}"""
        return self.render(request, t["title"], content)

    def reply(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        user = self.require_user(request)
        t = self._thread(conn, row_id(match[1], "thread"))
        if t["locked"]:
            raise HttpError(403, "This thread is locked; replies are closed.")
        body = request.form.get("body", "").strip()
        if len(body) < 2:
            raise HttpError(400, "A reply needs some text; write at least a few words.")
        if len(body) > 5000:
            raise HttpError(400, "Replies are limited to 5000 characters.")
        conn.execute(
            "INSERT INTO posts (thread_id, user_id, body, created) VALUES (?, ?, ?, ?)",
            (t["id"], user["id"], body, TODAY.isoformat()),
        )
        return redirect(f"/t/{t['id']}", flash="Your reply was posted.")

    def _require_moderator(self, request: Request, what: str) -> None:
        """A 403 unless the signed-in user is a moderator (a 403 asking to sign in when nobody is)."""
        if self.require_user(request)["role"] != "moderator":
            raise HttpError(403, f"Only moderators can {what}.")

    def lock(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        self._require_moderator(request, "lock threads")
        t = self._thread(conn, row_id(match[1], "thread"))
        conn.execute("UPDATE threads SET locked = ? WHERE id = ?", (0 if t["locked"] else 1, t["id"]))
        return redirect(f"/t/{t['id']}", flash="Thread unlocked." if t["locked"] else "Thread locked.")

    def _post(self, conn: sqlite3.Connection, pid: int) -> sqlite3.Row:
        return self.one_row(conn, "SELECT * FROM posts WHERE id = ?", (pid,), missing="That post does not exist.")

    def vote(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        user = self.require_user(request)
        p = self._post(conn, row_id(match[1], "post"))
        value = {"up": 1, "down": -1}.get(request.form.get("value", ""))
        if value is None:
            raise HttpError(400, "A vote is either up or down.")
        if p["user_id"] == user["id"]:
            raise HttpError(403, "You cannot vote on your own post.")
        old = conn.execute(
            "SELECT value FROM votes WHERE user_id = ? AND post_id = ?", (user["id"], p["id"])
        ).fetchone()
        delta = value - (old["value"] if old else 0)
        conn.execute("INSERT OR REPLACE INTO votes VALUES (?, ?, ?)", (user["id"], p["id"], value))
        conn.execute("UPDATE posts SET score = score + ? WHERE id = ?", (delta, p["id"]))
        return redirect(f"/t/{p['thread_id']}", flash="Your vote was recorded.")

    def delete(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        self._require_moderator(request, "delete posts")
        p = self._post(conn, row_id(match[1], "post"))
        conn.execute("UPDATE posts SET deleted = 1 WHERE id = ?", (p["id"],))
        return redirect(f"/t/{p['thread_id']}", flash="The post was removed.")

    def new_form(self, conn: sqlite3.Connection, request: Request, match: re.Match[str], error: str = "") -> Response:
        if request.user is None:
            return self.must_sign_in(request, "Please sign in to start a thread.")
        boards = [(b["slug"], b["name"]) for b in conn.execute("SELECT * FROM boards ORDER BY name")]
        board = request.arg("board")
        content = f"""<h1>Start a new thread</h1><div class="card"><form class="stack" method="post" action="/new">
<label for="board">Board</label><select id="board" name="board">{options(boards, board)}</select>
<label for="title">Title</label>
<input type="text" id="title" name="title" value="{esc(request.form.get("title", ""))}" style="width:100%">
<label for="body">Question</label><textarea id="body" name="body">{esc(request.form.get("body", ""))}</textarea>
<p><button type="submit">Post thread</button></p></form></div>"""
        return self.render(
            request, "New thread", content, status=400 if error else 200, flash=error, flash_kind="error"
        )

    def new_submit(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        user = self.require_user(request)
        b = conn.execute("SELECT * FROM boards WHERE slug = ?", (request.form.get("board", ""),)).fetchone()
        title, body = request.form.get("title", "").strip(), request.form.get("body", "").strip()
        if b is None:
            return self.new_form(conn, request, match, error="Choose a board from the list.")
        if not 5 <= len(title) <= 120 or not body or len(body) > 5000:
            error = "A thread needs a title (5-120 characters) and a question (up to 5000 characters)."
            return self.new_form(conn, request, match, error=error)
        if conn.execute("SELECT 1 FROM threads WHERE title = ?", (title,)).fetchone():
            return self.new_form(conn, request, match, error="A thread with this title already exists.")
        cur = conn.execute(
            "INSERT INTO threads (board_id, user_id, title, created) VALUES (?, ?, ?, ?)",
            (b["id"], user["id"], title, TODAY.isoformat()),
        )
        conn.execute(
            "INSERT INTO posts (thread_id, user_id, body, created) VALUES (?, ?, ?, ?)",
            (cur.lastrowid, user["id"], body, TODAY.isoformat()),
        )
        return redirect(f"/t/{cur.lastrowid}", flash="Your thread was posted.")

    def search(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        q = request.arg("q")
        rows: list[sqlite3.Row] = []
        total = 0
        page = page_number(request)
        if q:
            where = "WHERE t.title LIKE ?"
            total = conn.execute(f"SELECT COUNT(*) FROM threads t {where}", (f"%{q}%",)).fetchone()[0]
            rows = conn.execute(
                self._THREADS + f"{where} ORDER BY t.created DESC, t.id DESC LIMIT ? OFFSET ?",
                (f"%{q}%", PER_PAGE, (page - 1) * PER_PAGE),
            ).fetchall()
        results = self._thread_rows(rows) if rows else ('<p class="card">No threads match.</p>' if q else "")
        content = f"""<h1>Search</h1><form class="row" method="get" action="/search">
<div><label for="q">Words in the title</label><br>
<input type="search" id="q" name="q" value="{esc(q)}"></div><button type="submit">Search</button></form><br>
{f'<p class="muted">{total} threads found</p>' if q else ""}{results}{pager("/search", {"q": q}, page, total)}"""
        return self.render(request, "Search", content)

    def profile(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        u = self.one_row(
            conn, "SELECT * FROM users WHERE username = ?", (match[1],), missing="There is no user with that name."
        )
        n_threads = conn.execute("SELECT COUNT(*) FROM threads WHERE user_id = ?", (u["id"],)).fetchone()[0]
        n_posts = conn.execute("SELECT COUNT(*) FROM posts WHERE user_id = ? AND deleted = 0", (u["id"],)).fetchone()[0]
        rows = conn.execute(
            self._THREADS + "WHERE t.user_id = ? ORDER BY t.created DESC LIMIT 10", (u["id"],)
        ).fetchall()
        content = f"""<h1>{esc(u["username"])}</h1><div class="card"><p>Role: {u["role"]} · Joined {u["joined"]}</p>
<p>{n_threads} threads started · {n_posts} posts</p></div><h2>Recent threads</h2>{self._thread_rows(rows)}"""
        return self.render(request, u["username"], content)

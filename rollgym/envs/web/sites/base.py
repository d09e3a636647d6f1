"""What every practice site shares: requests, responses, routing, login sessions and page rendering.

A :class:`Site` is a server-rendered web application over one SQLite database.
It never holds state of its own: every handler receives the episode's
connection, so the same site object serves many isolated episodes at once.
Pages are built from the package's ``templates/layout.html`` with
:class:`string.Template`; every piece of user or database text goes through
:func:`~rollgym.envs.web.sites.page.esc`, so text typed into a form can never become markup or script.

Hardening rules every handler follows: ids and numbers are read with
:func:`row_id` and :func:`whole_number` (ASCII digits, bounded); redirects go
only to same-site paths (:func:`safe_path`); the one-line notice after a form
is carried by a server-set cookie (:data:`FLASH_COOKIE`), never by the URL, so
a crafted link cannot put text in the site's banner; text written by users is
wrapped by :func:`~rollgym.envs.web.sites.page.user_text` so observations can mark it; and a handler that
raises anything rolls back its writes and answers a 500 page.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import sqlite3
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from rollgym.envs.web.sites.page import esc

MAX_ID = 2**63 - 1
"""The largest id SQLite can store; a path id beyond it names no row."""

FLASH_COOKIE = "rg_flash"
"""Cookie that carries a redirect's one-line notice to the next page (set and cleared by the server only)."""

_LOG = logging.getLogger(__name__)
_PATH_CHARS = re.compile(r"[!-~]+", re.ASCII)  # printable ASCII, no space


@dataclass
class Request:
    """One HTTP request as a site handler sees it.

    Attributes:
        method: ``"GET"`` or ``"POST"``.
        path: The URL path, e.g. ``"/product/12"``.
        query: Query-string fields (the last value of a repeated field wins).
        form: Form fields of a POST body.
        cookies: Cookies sent by the browser.
        user: The logged-in user's row, filled in by the site from the session cookie.
    """

    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    form: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)
    user: sqlite3.Row | None = None

    def arg(self, name: str, default: str = "") -> str:
        """A query or form field, stripped; the form wins when both have it."""
        return (self.form.get(name) or self.query.get(name) or default).strip()


@dataclass
class Response:
    """An HTTP response: status, body and extra headers."""

    status: int = 200
    body: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str = "text/html; charset=utf-8"


def safe_path(value: str, default: str = "/") -> str:
    r"""``value`` when it is a path on this site, else ``default``.

    Accepted: printable ASCII that starts with one ``/``, with no backslash,
    whose percent-decoded form (decoded repeatedly) has no backslash, no
    control character and does not start with ``//``. Browsers read
    ``/\host``, ``/<TAB>/host`` and ``//host`` as another host; all are refused.

    Example:
        >>> safe_path("/orders/1001?sort=new")
        '/orders/1001?sort=new'
        >>> safe_path("/\\127.0.0.1:8000/x"), safe_path("/\t/127.0.0.1:8000/x"), safe_path("/%5c%5chost")
        ('/', '/', '/')
    """
    if not isinstance(value, str) or not 0 < len(value) <= 2000 or not _PATH_CHARS.fullmatch(value):
        return default
    decoded = value
    for _ in range(4):  # %255c decodes to %5c, then to a backslash
        if "\\" in decoded or any(ord(ch) < 32 or ord(ch) == 127 for ch in decoded):
            return default
        if not decoded.startswith("/") or decoded.startswith("//"):
            return default
        parts = urlsplit(decoded)
        if parts.scheme or parts.netloc:
            return default
        step = unquote(decoded)
        if step == decoded:
            return value
        decoded = step
    return default


def redirect(location: str, *, flash: str | None = None) -> Response:
    """A 303 redirect to a same-site path (the browser follows it with a GET), optionally with a one-line notice.

    A location that is not a same-site path (see :func:`safe_path`) becomes ``/``.
    The notice travels in the :data:`FLASH_COOKIE` cookie, which only the server sets.
    """
    response = Response(status=303, headers=[("Location", safe_path(location))])
    if flash:
        cookie = f"{FLASH_COOKIE}={quote(flash, safe='')}; Path=/; HttpOnly; SameSite=Lax"
        response.headers.append(("Set-Cookie", cookie))
    return response


class HttpError(Exception):
    """Raised by a handler to answer with an error page (404 not found, 403 forbidden, ...)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def row_id(raw: str, what: str = "page") -> int:
    """An id taken from a URL path (already ASCII digits by the route); a 404 when no row can have it."""
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19 or int(raw) > MAX_ID:
        raise HttpError(404, f"That {what} does not exist.")
    return int(raw)


def whole_number(raw: str, *, low: int, high: int, message: str) -> int:
    """A form or query number of ASCII digits between ``low`` and ``high``; otherwise a 400 with ``message``.

    ``"²".isdigit()`` is true but ``int("²")`` fails, and ``int()`` also reads
    Arabic-Indic digits; both are refused here.

    Example:
        >>> whole_number(" 2 ", low=1, high=99, message="Quantity must be 1 to 99.")
        2
    """
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 19 or not low <= int(text) <= high:
        raise HttpError(400, message)
    return int(text)


def password_hash(password: str) -> str:
    """The stored form of a password (sites are practice sites; a salted KDF would only cost time)."""
    return hashlib.sha256(("rollgym:" + password).encode()).hexdigest()


@cache
def _layout() -> string.Template:
    text = resources.files("rollgym.envs.web.sites").joinpath("templates/layout.html").read_text("utf-8")
    return string.Template(text)


@cache
def stylesheet() -> str:
    """The shared CSS file served at ``/static/style.css``."""
    return resources.files("rollgym.envs.web.sites").joinpath("static/style.css").read_text("utf-8")


def page_number(request: Request) -> int:
    """The ``page`` query field as a positive integer (1 when absent or malformed)."""
    raw = request.query.get("page", "1")
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 4 and int(raw) > 0 else 1


Handler = Callable[[sqlite3.Connection, Request, re.Match[str]], Response]


class Site:
    """A server-rendered practice website over one SQLite database.

    Subclasses set ``key``, ``name``, ``schema`` and ``nav``, implement
    :meth:`seed` (deterministic content) and register handlers with
    :meth:`route`. Login sessions are rows of the episode's ``sessions``
    table, so they vanish with the episode.
    """

    key: str = ""
    name: str = ""
    schema: str = ""
    nav: tuple[tuple[str, str], ...] = ()
    #: The site's pages as ``(method, path pattern, name of the handler method)``, in the order requests try them.
    pages: tuple[tuple[str, str, str], ...] = ()

    def __init__(self) -> None:
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self.route("GET", r"/login", self._login_form)
        self.route("POST", r"/login", self._login_submit)
        self.route("POST", r"/logout", self.logout)
        self.setup_routes()

    # -- subclass hooks -----------------------------------------------------
    def setup_routes(self) -> None:
        """Register the site's handlers with :meth:`route`: by default the rows of :attr:`pages`, in order."""
        for method, pattern, handler in self.pages:
            self.route(method, pattern, getattr(self, handler))

    def seed(self, conn: sqlite3.Connection) -> None:
        """Fill a fresh database (schema already created) with the site's fixed content."""

    # -- database -----------------------------------------------------------
    def build_database(self) -> sqlite3.Connection:
        """A new in-memory database with the schema and seeded content."""
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.executescript(self.schema)
        conn.executescript("CREATE TABLE IF NOT EXISTS sessions (token TEXT PRIMARY KEY, user_id INTEGER NOT NULL);")
        self.seed(conn)
        conn.commit()
        return conn

    @staticmethod
    def one_row(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...], *, missing: str) -> sqlite3.Row:
        """The first row ``sql`` selects; when there is none, a 404 that says ``missing``."""
        row: sqlite3.Row | None = conn.execute(sql, params).fetchone()
        if row is None:
            raise HttpError(404, missing)
        return row

    # -- routing ------------------------------------------------------------
    def route(self, method: str, pattern: str, handler: Handler) -> None:
        """Send ``method`` requests whose whole path matches ``pattern`` to ``handler``."""
        self._routes.append((method, re.compile(pattern + r"\Z", re.ASCII), handler))

    def handle(self, conn: sqlite3.Connection, request: Request) -> Response:
        """Answer one request against the episode database ``conn``."""
        request.user = self._session_user(conn, request)
        allowed = False
        for method, pattern, handler in self._routes:
            match = pattern.match(request.path)
            if match is None:
                continue
            allowed = True
            if method != request.method:
                continue
            try:
                response = handler(conn, request, match)
                conn.commit()
                return response
            except HttpError as exc:
                conn.rollback()
                return self.error_page(request, exc.status, exc.message)
            except Exception:  # a bug or an input no check foresaw: undo the request's writes, keep serving
                conn.rollback()
                _LOG.exception("%s %s failed on the %s site", request.method, request.path, self.key)
                return self.error_page(request, 500, "Something went wrong on our side; nothing was changed.")
        if allowed:
            return self.error_page(request, 405, "This page does not accept that kind of request.")
        return self.error_page(request, 404, "We could not find that page. Check the address or go back home.")

    # -- rendering ----------------------------------------------------------
    def render(
        self, request: Request, title: str, content: str, *, status: int = 200, flash: str = "", flash_kind: str = "ok"
    ) -> Response:
        """Wrap ``content`` in the site layout; ``flash`` or the server's pending notice becomes the banner.

        The pending notice is the :data:`FLASH_COOKIE` set by :func:`redirect`; it is shown
        once and cleared. Query fields such as ``?notice=`` never reach the banner.
        """
        pending = request.cookies.get(FLASH_COOKIE)
        notice = flash or unquote(pending or "")[:500]
        kind = flash_kind if flash else "ok"
        flash_html = f'<div class="flash {kind}" role="status">{esc(notice)}</div>' if notice else ""
        nav = "".join(f'<a href="{esc(href)}">{esc(label)}</a>' for href, label in self.nav)
        if request.user is not None:
            user_box = (
                f"<span>Signed in as <strong>{esc(request.user['username'])}</strong></span>"
                '<form method="post" action="/logout"><button type="submit">Sign out</button></form>'
            )
        else:
            user_box = '<a href="/login">Sign in</a>'
        body = _layout().substitute(
            title=esc(title),
            site_name=esc(self.name),
            site_key=self.key,
            nav=nav,
            user_box=user_box,
            flash=flash_html,
            content=content,
        )
        response = Response(status=status, body=body)
        if pending is not None:
            response.headers.append(("Set-Cookie", f"{FLASH_COOKIE}=; Path=/; Max-Age=0"))
        return response

    def error_page(self, request: Request, status: int, message: str) -> Response:
        """A styled error page."""
        titles = {
            400: "Bad request",
            403: "Not allowed",
            404: "Page not found",
            405: "Not allowed",
            500: "Server error",
        }
        title = titles.get(status, "Error")
        content = (
            f'<div class="card"><h1>{status} · {esc(title)}</h1><p>{esc(message)}</p>'
            '<a href="/">Back to the home page</a></div>'
        )
        return self.render(request, title, content, status=status)

    # -- sessions -----------------------------------------------------------
    def _session_user(self, conn: sqlite3.Connection, request: Request) -> sqlite3.Row | None:
        token = request.cookies.get("session")
        if not token:
            return None
        row: sqlite3.Row | None = conn.execute(
            "SELECT users.* FROM sessions JOIN users ON users.id = sessions.user_id WHERE token = ?", (token,)
        ).fetchone()
        return row

    def login_path(self) -> str:
        """Where the sign-in page is."""
        return "/login"

    def must_sign_in(self, request: Request, message: str) -> Response:
        """A redirect to the sign-in page that comes back to this page afterwards, with ``message`` as the notice."""
        return redirect(f"{self.login_path()}?next={quote(safe_path(request.path), safe='/')}", flash=message)

    def require_user(self, request: Request) -> sqlite3.Row:
        """The logged-in user, or an :class:`HttpError` asking the visitor to sign in."""
        if request.user is None:
            raise HttpError(403, "Please sign in first (use the Sign in link at the top right).")
        return request.user

    def _login_form(
        self, conn: sqlite3.Connection, request: Request, match: re.Match[str], error: str = ""
    ) -> Response:
        nxt = safe_path(request.arg("next", "/"))
        content = f"""
<div class="card" style="max-width:420px">
  <h1>Sign in</h1>
  <form class="stack" method="post" action="/login">
    <input type="hidden" name="next" value="{esc(nxt)}">
    <label for="username">Username</label>
    <input type="text" id="username" name="username" value="{esc(request.form.get("username", ""))}">
    <label for="password">Password</label>
    <input type="password" id="password" name="password">
    <p><button type="submit">Sign in</button></p>
  </form>
</div>"""
        return self.render(request, "Sign in", content, status=400 if error else 200, flash=error, flash_kind="error")

    def _login_submit(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        wrong = "Wrong username or password."
        return self.sign_in(conn, request) or self._login_form(conn, request, match, error=wrong)

    def sign_in(self, conn: sqlite3.Connection, request: Request) -> Response | None:
        """The posted ``username`` and ``password`` signed in: a redirect to ``next`` that sets the session cookie;
        ``None`` when they match no user (the caller shows its sign-in form again)."""
        username = request.form.get("username", "").strip()
        password = request.form.get("password", "")
        row = conn.execute("SELECT * FROM users WHERE username = ?", (username[:100],)).fetchone()
        if row is None or row["password_hash"] != password_hash(password):
            return None
        token = secrets.token_hex(16)
        conn.execute("INSERT INTO sessions (token, user_id) VALUES (?, ?)", (token, row["id"]))
        response = redirect(safe_path(request.form.get("next", "/")), flash=f"Welcome back, {username}.")
        response.headers.append(("Set-Cookie", f"session={token}; Path=/; HttpOnly; SameSite=Lax"))
        return response

    def logout(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        """End the visitor's session and go home."""
        conn.execute("DELETE FROM sessions WHERE token = ?", (request.cookies.get("session", ""),))
        response = redirect("/", flash="You have signed out.")
        response.headers.append(("Set-Cookie", "session=; Path=/; Max-Age=0"))
        return response

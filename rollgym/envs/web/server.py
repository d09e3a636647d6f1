"""One in-process HTTP server on 127.0.0.1 that serves every site to many isolated episodes at once.

Each episode owns an in-memory SQLite copy of its site's seeded database, made
with the ``sqlite3`` backup API in a few milliseconds. The browser context of
an episode carries an ``rg_episode`` cookie with the episode's token; the
server looks the token up and answers from that episode's copy, so episodes
never see each other's carts, posts or bookings, and URLs stay clean.

The server is also the browser's proxy (see :mod:`.browser`): a request in
absolute form for its own origin is served like any other, one for any other
host or port is answered 403 and never forwarded. Every ``Location`` it sends
is a same-site path. A request it cannot handle gets an answer (400, 405, 413
or a 500 page without a traceback), never a dropped connection, and a handler
that fails leaves no open transaction behind.

Example:
    >>> server = WebServer().start()
    >>> token = server.create_episode("shop")
    >>> server.episode(token).query("SELECT COUNT(*) AS n FROM products")[0]["n"] > 100
    True
    >>> server.stop()
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
import threading
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from rollgym.core.errors import ConfigError
from rollgym.envs.web.families import family_of
from rollgym.envs.web.sites import SITES, Request, Response, Site
from rollgym.envs.web.sites.base import safe_path, stylesheet

EPISODE_COOKIE = "rg_episode"
MAX_BODY = 64 * 1024
MAX_FIELDS = 200
"""Most query or form fields one request may carry."""
_LOG = logging.getLogger(__name__)

_BASE_LOCK = threading.Lock()
_BASE_DBS: dict[str, sqlite3.Connection] = {}
_SITE_OBJECTS: dict[str, Site] = {}


def site(key: str) -> Site:
    """The shared :class:`Site` object for a site key: a hand-written site, or a generated one (``gen-shop-03``)."""
    family = None if key in SITES else family_of(key)
    if key not in SITES and family is None:
        raise ConfigError(f"Unknown site {key!r}; use one of {', '.join(sorted(SITES))} or a generated site's key.")
    with _BASE_LOCK:
        if key not in _SITE_OBJECTS:
            _SITE_OBJECTS[key] = SITES[key]() if family is None else family.site(key)
        return _SITE_OBJECTS[key]


def base_database(key: str) -> sqlite3.Connection:
    """The seeded database of a site, built once per process; read it, never write it."""
    obj = site(key)
    with _BASE_LOCK:
        if key not in _BASE_DBS:
            _BASE_DBS[key] = obj.build_database()
        return _BASE_DBS[key]


def fresh_copy(key: str) -> sqlite3.Connection:
    """A private in-memory copy of a site's seeded database (``sqlite3`` backup API)."""
    base = base_database(key)
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    with _BASE_LOCK:
        base.backup(conn)
    conn.row_factory = sqlite3.Row
    return conn


def query_base(key: str, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[sqlite3.Row]:
    """Run a read-only query against a site's seeded database."""
    base = base_database(key)
    with _BASE_LOCK:
        return base.execute(sql, params).fetchall()


@dataclass
class Episode:
    """One episode's private state on the server: its site and its database copy."""

    token: str
    site_key: str
    conn: sqlite3.Connection
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: int = 0

    def query(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        """Run a query against the episode's database (the grader's view of the backend)."""
        with self.lock:
            return self.conn.execute(sql, params).fetchall()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    _started = False  # whether this request's response has begun (then a late error cannot become a 500 page)
    # Headers and body go out as two writes; with Nagle on, the body waits for the client's delayed ACK (~40 ms).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet: one line per request would flood logs
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_HEAD(self) -> None:
        self._serve("GET", head=True)

    def _refuse_method(self) -> None:
        self._discard_body()
        resp = Response(status=405, body="<h1>405</h1><p>Use GET or POST.</p>", headers=[("Allow", "GET, HEAD, POST")])
        self._send(resp)

    # CONNECT is how a browser would tunnel HTTPS or a WebSocket through its proxy (this server): refused too.
    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _refuse_method

    def _discard_body(self) -> None:
        length = self._content_length()
        if length is None or length > MAX_BODY:
            self.close_connection = True
        elif length:
            self.rfile.read(length)

    def _content_length(self) -> int | None:
        raw = (self.headers.get("Content-Length") or "0").strip()
        return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 12 else None

    def _send(self, response: Response, head: bool = False) -> None:
        body = response.body.encode("utf-8")
        self._started = True
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in response.headers:
            if name.lower() == "location":  # every redirect stays on this site, whatever a handler asked for
                value = safe_path(value)
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _serve(self, method: str, head: bool = False) -> None:
        self._started = False
        try:
            self._answer(method, head)
        except ConnectionError:  # the browser went away mid-response; nothing to answer
            raise
        except Exception:  # answer a 500 page, never a dropped connection with a traceback
            _LOG.exception("%s %s failed", method, self.path[:200])
            if self._started:  # half a response is on the wire: end this connection cleanly instead
                self.close_connection = True
                return
            page = "<h1>500</h1><p>Something went wrong on our side; nothing was changed.</p>"
            self._send(Response(status=500, body=page), head)

    def _answer(self, method: str, head: bool) -> None:
        owner = self.server.owner
        url = urlsplit(self.path)
        if url.scheme or url.netloc:
            # The browser's proxy is this server and loopback is not bypassed, so every request arrives here;
            # one for this server's own origin is served, one for any other host or port is refused unsent.
            if (url.scheme, url.netloc) != ("http", owner.netloc):
                self._discard_body()
                self._send(Response(status=403, body="<h1>403</h1><p>Requests to other hosts are blocked.</p>"), head)
                return
        length = self._content_length()
        if length is None:
            self.close_connection = True
            self._send(Response(status=400, body="<h1>400</h1><p>The Content-Length header is not a number.</p>"), head)
            return
        if length > MAX_BODY:
            self.close_connection = True  # the unread body would otherwise be read as the next request
            self._send(Response(status=413, body="<h1>413</h1><p>Form data is too large.</p>"), head)
            return
        raw_body = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        if url.path == "/static/style.css":
            resp = Response(
                body=stylesheet(), content_type="text/css; charset=utf-8", headers=[("Cache-Control", "max-age=3600")]
            )
            self._send(resp, head)
            return
        if url.path == "/favicon.ico":
            self._send(Response(status=204), head)
            return
        try:
            cookies = {k: m.value for k, m in SimpleCookie(self.headers.get("Cookie", "")).items()}
        except CookieError:
            cookies = {}
        episode = owner.episode(cookies.get(EPISODE_COOKIE, ""))
        extra: list[tuple[str, str]] = []
        if episode is None and owner.open_site is not None:
            token = owner.create_episode(owner.open_site)
            episode = owner.episode(token)
            extra.append(("Set-Cookie", f"{EPISODE_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax"))
            cookies.pop("session", None)
        if episode is None:
            self._send(
                Response(status=403, body="<h1>403</h1><p>No rollgym episode is attached to this browser.</p>"), head
            )
            return
        try:
            query = dict(parse_qsl(url.query, max_num_fields=MAX_FIELDS))
            form = dict(parse_qsl(raw_body, max_num_fields=MAX_FIELDS)) if method == "POST" else {}
        except ValueError:
            self._send(Response(status=400, body=f"<h1>400</h1><p>Send at most {MAX_FIELDS} fields.</p>"), head)
            return
        request = Request(method=method, path=url.path or "/", query=query, form=form, cookies=cookies)
        with episode.lock:
            episode.requests += 1
            try:
                response = site(episode.site_key).handle(episode.conn, request)
            except BaseException:  # Site.handle answers its own errors; this only guards against a bug there
                episode.conn.rollback()
                raise
        response.headers.extend(extra)
        response.headers.append(("Cache-Control", "no-store"))
        self._send(response, head)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: WebServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):  # a browser closed a tab mid-response
            return
        super().handle_error(request, client_address)


class WebServer:
    """The HTTP server behind every web episode of a process.

    Args:
        host: Interface to bind; only loopback addresses are allowed.
        port: TCP port; 0 picks a free ephemeral port.
        open_site: When set, a browser without an episode cookie gets a new
            episode of this site automatically (``rollgym web serve``); when
            ``None`` such requests are refused, so only envs create episodes.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, open_site: str | None = None) -> None:
        if host not in {"127.0.0.1", "localhost", "::1"}:
            raise ConfigError(f"The practice sites only listen on loopback; got host {host!r}, use 127.0.0.1.")
        if open_site is not None:
            site(open_site)
        self.host, self.port, self.open_site = host, port, open_site
        self._episodes: dict[str, Episode] = {}
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` once started."""
        return f"http://{self.netloc}"

    @property
    def netloc(self) -> str:
        """``127.0.0.1:<port>`` once started: the one origin the server answers for as a proxy."""
        if self._httpd is None:
            raise RuntimeError("Call start() first.")
        return f"{self.host}:{self._httpd.server_address[1]}"

    def start(self) -> WebServer:
        """Bind and serve in a daemon thread; returns ``self``."""
        if self._httpd is None:
            self._httpd = _Server((self.host, self.port), _Handler)
            self._httpd.owner = self
            self._thread = threading.Thread(target=self._httpd.serve_forever, name="rollgym-web", daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (for ``rollgym web serve``)."""
        if self._httpd is None:
            self._httpd = _Server((self.host, self.port), _Handler)
            self._httpd.owner = self
        self._httpd.serve_forever()

    def stop(self) -> None:
        """Stop serving and drop every episode."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        with self._lock:
            for ep in self._episodes.values():
                ep.conn.close()
            self._episodes.clear()

    def create_episode(self, site_key: str) -> str:
        """Create an episode with a fresh copy of ``site_key``'s database; returns its token."""
        conn = fresh_copy(site_key)
        token = secrets.token_urlsafe(18)
        with self._lock:
            self._episodes[token] = Episode(token, site_key, conn)
        return token

    def episode(self, token: str) -> Episode | None:
        """The episode with this token, or ``None``."""
        with self._lock:
            return self._episodes.get(token)

    def close_episode(self, token: str) -> None:
        """Forget an episode and free its database."""
        with self._lock:
            ep = self._episodes.pop(token, None)
        if ep is not None:
            with ep.lock:
                ep.conn.close()

    @property
    def episode_count(self) -> int:
        """How many episodes are live."""
        with self._lock:
            return len(self._episodes)

"""The HTTP and WebSocket front of ``rollgym serve-env`` (Starlette on uvicorn).

Routes, each also under ``/envs/{env_id}/`` (the bare form serves the default env: the
only one, or ``--default-env``)::

    WS   /ws               the step loop (OpenEnv's protocol, see rollgym.serve.protocol);
                           ?session_id=ID reattaches to a session after a dropped connection
    POST /reset            open a session and reset it -> {observation, reward, done, session_id}
    POST /step             {"session_id", "action": {"text": ...}} -> {observation, reward, done}
    GET  /state            ?session_id=ID -> the session's state
    POST /close            {"session_id"} -> ends the session
    POST /evaluate         one-shot: {"seed", "task_index", "split", "options", "make", "actions": [...]}
                           plays the actions in a fresh session and returns every step and the total
    POST /mcp              MCP JSON-RPC (tools/list, tools/call, openenv/session/create|close)
    GET  /schema, /metadata   OpenEnv's action/observation schemas and env metadata
    GET  /health           liveness (never needs the token)
    GET  /metrics          Prometheus text: sessions, steps, errors, step latency histogram
    GET  /envs             the hosted ids with their spec hashes

With a token (``--token`` or ``ROLLGYM_SERVE_TOKEN``) every route but ``/health`` needs it,
as ``Authorization: Bearer T``, ``X-Rollgym-Token: T``, ``?token=T`` or a ``/t/T/`` path
prefix (for clients such as OpenEnv's that cannot set headers); others get HTTP 401, or a
WebSocket close with code 1008.
"""

from __future__ import annotations

import functools
import hmac
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from rollgym.serve import http
from rollgym.serve import protocol as wire
from rollgym.serve.mcp import PARSE_ERROR, handle_http_jsonrpc
from rollgym.serve.sessions import ServeConfig, Session, SessionError, SessionHub

WS_CLOSE_POLICY = 1008
WS_CLOSE_GOING_AWAY = 1001
WS_CLOSE_TRY_LATER = 1013


def presented_token(path: str, headers: list[tuple[bytes, bytes]], query: bytes) -> tuple[str | None, str]:
    """The token a request presents (or ``None``) and its path without a ``/t/<token>`` prefix.

    Example:
        >>> presented_token("/t/s3cret/envs", [], b"")
        ('s3cret', '/envs')
    """
    if path.startswith("/t/"):
        in_path, _, rest = path[3:].partition("/")
        return in_path, "/" + rest
    given: str | None = None
    for name, value in headers:
        if name == b"authorization" and value.lower().startswith(b"bearer "):
            given = value[7:].decode("latin-1").strip()
        elif name == b"x-rollgym-token":
            given = value.decode("latin-1").strip()
    if given is None:
        from urllib.parse import parse_qs

        values = parse_qs(query.decode("latin-1")).get("token")
        given = values[0] if values else None
    return given, path


def token_matches(given: str | None, token: str) -> bool:
    """Whether a presented token is the server's (compared in constant time)."""
    return given is not None and hmac.compare_digest(given.encode("utf-8", "surrogatepass"),
                                                     token.encode("utf-8", "surrogatepass"))


class _TokenGate:
    """ASGI middleware: checks the token and strips a ``/t/<token>`` path prefix."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or self.token is None:
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        given, stripped = presented_token(path, scope.get("headers", []), scope.get("query_string", b""))
        if stripped != path:
            scope = {**scope, "path": stripped, "raw_path": stripped.encode()}
        if scope["path"] == "/health" or token_matches(given, self.token):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": WS_CLOSE_POLICY, "reason": "token required"})
            return
        body = wire.dumps({"detail": UNAUTHORIZED_DETAIL}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


UNAUTHORIZED_DETAIL = "This server needs a token: send 'Authorization: Bearer <token>'."


def _session_errors_replied(
    handler: Callable[[EnvServer, Any], Awaitable[Any]],
) -> Callable[[EnvServer, Any], Awaitable[Any]]:
    """An HTTP handler whose session and protocol errors become their typed error reply (:func:`http.fail`)."""

    @functools.wraps(handler)
    async def replied(server: EnvServer, request: Any) -> Any:
        try:
            return await handler(server, request)
        except (SessionError, wire.ProtocolError) as exc:
            return server._fail(exc)

    return replied


class EnvServer:
    """The ASGI app of one server, over a :class:`SessionHub`.

    Example:
        >>> server = EnvServer(ServeConfig(env_ids=("Countdown-v0",)))  # doctest: +SKIP
        >>> with server.run_in_thread() as url:  # doctest: +SKIP
        ...     print(url)
        http://127.0.0.1:40123
    """

    def __init__(self, config: ServeConfig, default_env: str | None = None, *, nemo_gym: bool = False) -> None:
        self.config = config
        self.nemo_gym = nemo_gym
        self.hub = SessionHub(config)
        served = [info.id for info in self.hub.served()] if config.env_ids != ("*",) else []
        self.default_env = default_env or (served[0] if len(served) == 1 else None)
        if self.default_env is not None:
            self.default_env = self.hub.resolve(self.default_env).id
        self._sockets: dict[str, Any] = {}
        self.app = _TokenGate(self._build(), config.token)

    # -- app ------------------------------------------------------------------
    def _build(self) -> Any:
        from contextlib import asynccontextmanager

        from starlette.applications import Starlette
        from starlette.routing import Route, WebSocketRoute

        routes: list[Any] = []
        for prefix in ("", "/envs/{env_id}"):
            routes += [
                WebSocketRoute(prefix + "/ws", self._ws),
                Route(prefix + "/reset", self._http_reset, methods=["POST"]),
                Route(prefix + "/step", self._http_step, methods=["POST"]),
                Route(prefix + "/state", self._http_state, methods=["GET"]),
                Route(prefix + "/close", self._http_close, methods=["POST"]),
                Route(prefix + "/evaluate", self._http_evaluate, methods=["POST"]),
                Route(prefix + "/mcp", self._http_mcp, methods=["POST"]),
                Route(prefix + "/schema", self._http_schema, methods=["GET"]),
                Route(prefix + "/metadata", self._http_metadata, methods=["GET"]),
            ]
        if self.nemo_gym:
            from rollgym.serve.adapters.nemo_gym import nemo_gym_routes

            routes += nemo_gym_routes(self.hub, self.config.max_body_bytes)
        routes += [
            Route("/health", self._health, methods=["GET"]),
            Route("/metrics", self._metrics, methods=["GET"]),
            Route("/envs", self._envs, methods=["GET"]),
        ]

        @asynccontextmanager
        async def lifespan(_app: Any) -> Any:
            self.hub.start()
            try:
                yield
            finally:
                await self._shutdown()

        return Starlette(routes=routes, lifespan=lifespan)

    async def _shutdown(self) -> None:
        self.hub.closing = True
        for ws in list(self._sockets.values()):
            try:
                await ws.send_text(wire.dumps(wire.error(wire.SHUTTING_DOWN, "The server is shutting down.")))
                await ws.close(code=WS_CLOSE_GOING_AWAY)
            except Exception:
                pass
        await self.hub.shutdown()

    def _env_id(self, request: Any) -> str:
        env_id = request.path_params.get("env_id") or self.default_env
        if env_id is None:
            hosted = ", ".join(i.id for i in self.hub.served()[:8])
            raise SessionError(wire.UNKNOWN_ENV,
                               f"This server hosts several envs; name one in the path, e.g. /envs/<id>/ws ({hosted}).")
        return str(env_id)

    # -- websocket ------------------------------------------------------------
    async def _ws(self, ws: Any) -> None:
        await ws.accept()
        session: Session | None = None
        owner = object()
        try:
            env_id = self._env_id(ws)
            wanted = ws.query_params.get("session_id")
            if wanted:
                session = self.hub.get(wanted, self.hub.resolve(env_id).id)
                self.hub.metrics.counters["reconnects"] += 1
            else:
                session = self.hub.open(env_id)
        except SessionError as exc:
            self.hub.metrics.errors[exc.code] += 1
            await ws.send_text(wire.dumps(wire.error(exc.code, str(exc))))
            await ws.close(code=WS_CLOSE_TRY_LATER if exc.code == wire.CAPACITY_REACHED else WS_CLOSE_POLICY)
            return
        session.owner, session.detached_at = owner, None
        key = f"{session.id}:{id(owner)}"
        self._sockets[key] = ws
        closed_by_client = False
        try:
            while True:
                event = await ws.receive()
                if event["type"] == "websocket.disconnect":
                    break
                raw = event.get("text")
                if raw is None:
                    raw = (event.get("bytes") or b"").decode("utf-8", errors="replace")
                if session.owner is not owner:  # another connection took this session over
                    break
                if session.id not in self.hub.sessions:  # expired while the client sat idle
                    await ws.send_text(wire.dumps(wire.error(wire.SESSION_ERROR, "This session expired after "
                                                             "--idle-timeout without messages; reconnect.")))
                    break
                try:
                    message = wire.parse_message(raw, self.config.max_action_chars + 4096)
                except wire.ProtocolError as exc:
                    self.hub.metrics.errors[exc.code] += 1
                    await ws.send_text(wire.dumps(wire.error(exc.code, exc.message)))
                    continue
                reply = await self.hub.handle(session, message)
                if reply is None:
                    closed_by_client = True
                    break
                await ws.send_text(wire.dumps(reply))
        except Exception:  # a broken connection; the session waits for a reconnect
            pass
        finally:
            self._sockets.pop(key, None)
            if closed_by_client:
                await self.hub.close(session)
                try:
                    await ws.close()
                except Exception:
                    pass
            elif session.owner is owner:
                if session.started and not session.done:  # mid-episode: keep it for a reconnect
                    session.detached_at = time.monotonic()
                else:
                    await self.hub.close(session)

    # -- http -----------------------------------------------------------------
    async def _json_body(self, request: Any) -> dict[str, Any]:
        return await http.json_body(request, self.config.max_body_bytes)

    def _fail(self, exc: Exception) -> Any:
        return http.fail(exc, self.hub.metrics.errors)

    def _unwrap(self, reply: dict[str, Any]) -> Any:
        if reply["type"] == "error":
            return http.error_reply(reply)
        if reply["type"] != "observation":
            return http.respond(reply["data"])
        extra = {"session_id": reply["session_id"]} if "session_id" in reply else {}
        return http.respond({**reply["data"], **extra})

    @_session_errors_replied
    async def _http_reset(self, request: Any) -> Any:
        body = await self._json_body(request)
        session_id = _session_id(body.pop("session_id", None))
        session = self.hub.get(session_id, self._env_id(request)) if session_id else \
            self.hub.open(self._env_id(request))
        reply = await self.hub.handle(session, {"type": "reset", "data": body})
        if reply is not None and reply["type"] == "error" and not session_id:
            await self.hub.close(session)
        assert reply is not None
        return self._unwrap(reply)

    @_session_errors_replied
    async def _http_step(self, request: Any) -> Any:
        body = await self._json_body(request)
        session = self._http_session(request, body)
        action = body.get("action")
        if not isinstance(action, dict):
            raise wire.ProtocolError(wire.VALIDATION_ERROR, "A step needs 'action', e.g. {\"text\": \"...\"}.")
        reply = await self.hub.handle(session, {"type": "step", "data": action})
        assert reply is not None
        return self._unwrap(reply)

    def _http_session(self, request: Any, body: dict[str, Any]) -> Session:
        session_id = _session_id(body.get("session_id")) or request.query_params.get("session_id")
        if not session_id:
            raise wire.ProtocolError(
                wire.VALIDATION_ERROR,
                "HTTP steps need the 'session_id' that /reset returned (or use the WebSocket /ws).",
            )
        env_id = request.path_params.get("env_id")
        return self.hub.get(session_id, self.hub.resolve(env_id).id if env_id else None)

    @_session_errors_replied
    async def _http_state(self, request: Any) -> Any:
        session = self._http_session(request, {})
        return http.respond(session.state())

    @_session_errors_replied
    async def _http_close(self, request: Any) -> Any:
        body = await self._json_body(request)
        session = self._http_session(request, body)
        await self.hub.close(session)
        return http.respond({"session_id": session.id, "closed": True})

    async def _http_evaluate(self, request: Any) -> Any:
        try:
            body = await self._json_body(request)
            actions = body.pop("actions", None)
            if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
                raise wire.ProtocolError(wire.VALIDATION_ERROR, "evaluate needs 'actions', a list of strings.")
            session = self.hub.open(self._env_id(request))
        except (SessionError, wire.ProtocolError) as exc:
            return self._fail(exc)
        try:
            first = await self.hub.handle(session, {"type": "reset", "data": body})
            assert first is not None
            if first["type"] == "error":
                return self._unwrap(first)
            steps, total, done = [], 0.0, False
            for action in actions:
                if done:
                    break
                reply = await self.hub.handle(session, {"type": "step", "data": {"text": action}})
                assert reply is not None
                if reply["type"] == "error":
                    return self._unwrap(reply)
                steps.append(reply["data"])
                total += reply["data"]["reward"]
                done = reply["data"]["done"]
            return http.respond({"env_id": session.info.id, "spec_hash": session.info.content_hash,
                                  "observation": first["data"]["observation"], "steps": steps,
                                  "total_reward": total, "done": done, "actions_used": len(steps)})
        finally:
            await self.hub.close(session)

    async def _http_mcp(self, request: Any) -> Any:
        try:
            body = await self._json_body(request)
        except wire.ProtocolError as exc:
            return http.respond({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": str(exc)}})
        return http.respond(await handle_http_jsonrpc(self.hub, lambda: self._env_id(request), body))

    async def _http_schema(self, request: Any) -> Any:
        return http.respond(_SCHEMAS)

    async def _http_metadata(self, request: Any) -> Any:
        try:
            info = self.hub.resolve(self._env_id(request))
        except SessionError as exc:
            return self._fail(exc)
        return http.respond({"name": info.id, "description": info.description, "version": info.content_hash,
                              "author": "rollgym", "documentation_url": None, "readme_content": None})

    async def _health(self, request: Any) -> Any:
        status = "unhealthy" if self.hub.closing else "healthy"
        return http.respond({"status": status, "sessions": len(self.hub.sessions),
                              "max_sessions": self.config.max_sessions}, 503 if self.hub.closing else 200)

    async def _metrics(self, request: Any) -> Any:
        from starlette.responses import PlainTextResponse

        return PlainTextResponse(self.hub.metrics.render(self.hub.gauges()), media_type="text/plain; version=0.0.4")

    async def _envs(self, request: Any) -> Any:
        return http.respond({"default": self.default_env, "envs": [
            {"id": i.id, "family": i.family, "description": i.description, "spec_hash": i.content_hash}
            for i in self.hub.served()]})

    # -- running ----------------------------------------------------------------
    def uvicorn_config(self, sock: socket.socket | None = None, host: str = "127.0.0.1", port: int = 8000,
                       log_level: str = "warning") -> Any:
        """A ``uvicorn.Config`` for this app (WebSocket frames up to the action cap)."""
        import uvicorn

        return uvicorn.Config(
            self.app, host=host, port=port, log_level=log_level, lifespan="on",
            ws_max_size=max(16 * 2**20, self.config.max_body_bytes),
            ws_ping_interval=20.0, ws_ping_timeout=60.0, timeout_graceful_shutdown=5,
            ws_per_message_deflate=self.config.compression,
            backlog=max(2048, self.config.max_sessions), timeout_keep_alive=30,
        )

    def run_in_thread(self, host: str = "127.0.0.1", port: int = 0) -> _Running:
        """Serve on a background thread; use as a context manager that yields the base URL."""
        return _Running(self, host, port)


def _session_id(value: Any) -> str | None:
    """A session id from a request body: a string, or nothing."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise wire.ProtocolError(wire.VALIDATION_ERROR, f"'session_id' must be a string, got {type(value).__name__}.")
    return value


class _Running:
    """A server on a background thread (tests, notebooks); ``with`` yields its URL."""

    def __init__(self, server: EnvServer, host: str, port: int) -> None:
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.url = f"http://{host}:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(server.uvicorn_config(host=host, port=port))
        self.thread = threading.Thread(target=self._run, name="rollgym-serve-env", daemon=True)

    def _run(self) -> None:
        self.server.run(sockets=[self.sock])

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("The env server did not start.")
            time.sleep(0.01)
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


def serve(server: EnvServer, host: str, port: int, *, on_ready: Callable[[str], None] | None = None) -> None:
    """Serve until SIGINT/SIGTERM; connections and sessions close gracefully on the way out."""
    import uvicorn

    config = server.uvicorn_config(host=host, port=port, log_level="warning")
    runner = uvicorn.Server(config)
    if on_ready is not None:
        original = runner.startup

        async def startup(sockets: Any = None) -> None:
            await original(sockets=sockets)
            bound = runner.servers[0].sockets[0].getsockname()[1] if runner.servers else port
            on_ready(f"http://{host}:{bound}")

        runner.startup = startup  # type: ignore[method-assign]
    runner.run()  # uvicorn's own loop setup: uvloop and httptools when installed


_SCHEMAS = {
    "action": {"title": "RollgymAction", "type": "object",
               "properties": {"text": {"type": "string", "description": "The agent's text action."}},
               "required": ["text"]},
    "observation": {"title": "RollgymObservation", "type": "object", "properties": {
        "text": {"type": "string"}, "info": {"type": "object"}, "terminated": {"type": "boolean"},
        "truncated": {"type": "boolean"}}},
    "state": {"title": "RollgymState", "type": "object", "properties": {
        "episode_id": {"type": ["string", "null"]}, "step_count": {"type": "integer"}}},
}

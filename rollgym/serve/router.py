"""The front of ``rollgym serve-env --replicas N``: one address, N replica processes behind it.

The router reads each request's head, decides which replica serves it, and passes bytes through:

* a request naming a session (``?session_id=``, a body's ``session_id`` or MCP ``params.session_id``,
  or NeMo Gym's session cookie) goes to the replica whose tag starts the id
  (:data:`rollgym.serve.replicas.TAG`), so a session always lives in one process;
* a request that opens a session (a WebSocket without ``session_id``, ``/reset``, ``/evaluate``,
  ``openenv/session/create``) goes to the next live replica in turn;
* ``/health`` and ``/metrics`` (``GET`` or ``HEAD``) are answered here, summed over the replicas; they
  never reach a replica's session routes and never count as an episode.

A WebSocket is tunnelled byte for byte after its handshake (the router never decodes a message).
When the replica behind it dies, the router sends the client one ``REPLICA_LOST`` error message
and closes the socket; a reconnect or an HTTP request for a session of a dead replica gets the
same answer. The client (:class:`rollgym.serve.client.RemoteEnv`) marks that episode failed, and
its next ``reset`` opens a new session on a live replica: the same seed plays the same episode.

Tokens are checked here as on a single server (every route but ``/health``), and again by the
replicas, which listen on 127.0.0.1 only (replicas in Ray actors, :mod:`rollgym.serve.ray_replicas`, on
their node's address when the server has a token, else on 127.0.0.1 of the router's node).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import struct
from typing import Any
from urllib.parse import parse_qs, unquote

from rollgym.serve import protocol as wire
from rollgym.serve.replicas import Replica, ReplicaSet
from rollgym.serve.server import UNAUTHORIZED_DETAIL, presented_token, token_matches

_log = logging.getLogger("rollgym.serve")

#: Longest request or response head accepted, in bytes.
MAX_HEAD_BYTES = 65536
#: Seconds a connection may take to send a request head (and may sit idle between requests).
HEAD_TIMEOUT_S = 30.0
#: Seconds the router waits, after a replica's socket closed without a close frame, for its process to exit.
EXIT_WAIT_S = 2.0
#: Seconds a request that opens a session waits for a replica when none is up (below clients' connect timeouts).
ROUTE_WAIT_S = 5.0
NO_REPLICA = ("No replica of this server is up right now (one that stopped is starting again); this episode counts "
              "as failed: retry in a few seconds.")
_WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_NEMO_COOKIE = "rollgym_nemo_session"
_STATUS_TEXT = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
                411: "Length Required", 413: "Content Too Large", 431: "Request Header Fields Too Large",
                502: "Bad Gateway", 503: "Service Unavailable"}


class _Head:
    """A parsed HTTP request head."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        lines = raw[:-4].split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3:
            raise ValueError("bad request line")
        self.method, target, self.version = parts[0].decode("latin-1"), parts[1].decode("latin-1"), parts[2]
        self.path, _, query = target.partition("?")
        self.query = query.encode("latin-1")
        self.headers: list[tuple[bytes, bytes]] = []
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                raise ValueError("bad header line")
            self.headers.append((name.strip().lower(), value.strip()))

    def header(self, name: bytes) -> bytes | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None

    @property
    def upgrade(self) -> bool:
        return b"websocket" in (self.header(b"upgrade") or b"").lower()

    @property
    def keep_alive(self) -> bool:
        connection = (self.header(b"connection") or b"").lower()
        return b"close" not in connection and self.version == b"HTTP/1.1"


class _FrameWatch:
    """Follows the frame boundaries of a server's WebSocket stream, to know whether it closed cleanly."""

    def __init__(self) -> None:
        self.header = bytearray()
        self.left = 0
        self.closed = False

    @property
    def at_boundary(self) -> bool:
        return self.left == 0 and not self.header

    def feed(self, data: bytes) -> None:
        i, end = 0, len(data)
        while i < end:
            if self.left:
                step = min(self.left, end - i)
                self.left -= step
                i += step
                continue
            self.header.append(data[i])
            i += 1
            need = _frame_header_length(self.header)
            if need is None or len(self.header) < need:
                continue
            size = self.header[1] & 0x7F
            if size == 126:
                size = struct.unpack(">H", self.header[2:4])[0]
            elif size == 127:
                size = struct.unpack(">Q", self.header[2:10])[0]
            if self.header[0] & 0x0F == 0x8:
                self.closed = True
            self.left = size
            self.header.clear()


def _frame_header_length(header: bytearray) -> int | None:
    if len(header) < 2:
        return None
    size = header[1] & 0x7F
    return 2 + (2 if size == 126 else 8 if size == 127 else 0) + (4 if header[1] & 0x80 else 0)


def _frame(opcode: int, payload: bytes) -> bytes:
    """One unmasked (server to client) WebSocket frame."""
    size = len(payload)
    if size < 126:
        head = bytes([0x80 | opcode, size])
    elif size < 65536:
        head = bytes([0x80 | opcode, 126]) + struct.pack(">H", size)
    else:
        head = bytes([0x80 | opcode, 127]) + struct.pack(">Q", size)
    return head + payload


def _error_frames(code: str, message: str, close_code: int) -> bytes:
    """A protocol error message then a close frame."""
    return _frame(0x1, wire.dumps(wire.error(code, message)).encode()) + \
        _frame(0x8, struct.pack(">H", close_code) + code.encode())


def _response(status: int, payload: Any, *, keep_alive: bool, content_type: bytes = b"application/json",
              head_only: bool = False) -> bytes:
    """A whole response; ``head_only`` (the answer to ``HEAD``) keeps the GET's headers and drops the body."""
    body = payload if isinstance(payload, bytes) else wire.dumps(payload).encode()
    head = (f"HTTP/1.1 {status} {_STATUS_TEXT.get(status, 'Error')}\r\n".encode() +
            b"content-type: " + content_type + b"\r\n" + f"content-length: {len(body)}\r\n".encode() +
            (b"" if keep_alive else b"connection: close\r\n") + b"\r\n")
    return head if head_only else head + body


def _has_no_body(status_line: bytes, head_only: bool) -> bool:
    """Whether a response carries no body whatever its headers say (RFC 9112 6.3): HEAD, 1xx, 204, 304."""
    parts = status_line.split(b" ", 2)
    code = parts[1] if len(parts) > 1 else b""
    return head_only or code[:1] == b"1" or code in (b"204", b"304")


def _session_in(head: _Head, body: bytes) -> str | None:
    """The session a request names, wherever the protocols put it."""
    values = parse_qs(head.query.decode("latin-1")).get("session_id")
    if values:
        return values[0]
    if body[:1] == b"{":
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict):
            for holder in (data, data.get("params")):
                if isinstance(holder, dict) and isinstance(holder.get("session_id"), str):
                    return str(holder["session_id"])
    cookie = head.header(b"cookie")
    if cookie:
        for part in cookie.decode("latin-1").split(";"):
            name, _, value = part.strip().partition("=")
            if name == _NEMO_COOKIE and value:
                return unquote(value)
    return None


class Router:
    """Serves one address in front of a :class:`ReplicaSet`.

    Example:
        >>> router = Router(ReplicaSet(ServeConfig(env_ids=("Countdown-v0",)), 2))  # doctest: +SKIP
        >>> await router.serve("127.0.0.1", 8000, on_ready=print)  # doctest: +SKIP
        http://127.0.0.1:8000
    """

    def __init__(self, replicas: ReplicaSet) -> None:
        self.replicas = replicas
        self.token = replicas.config.token
        self.max_body_bytes = replicas.config.max_body_bytes
        self.lost_answers = 0
        self._stop = asyncio.Event()

    async def serve(self, host: str, port: int, on_ready: Any = None) -> None:
        """Start the replicas, listen on ``host:port`` until SIGINT/SIGTERM, then stop everything."""
        import signal

        await self.replicas.start()
        server = await asyncio.start_server(self._connection, host, port, limit=MAX_HEAD_BYTES,
                                            backlog=max(2048, self.replicas.config.max_sessions))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._stop.set)
            except (NotImplementedError, RuntimeError):
                pass
        bound = server.sockets[0].getsockname()[1]
        if on_ready is not None:
            on_ready(f"http://{host}:{bound}")
        try:
            await self._stop.wait()
        finally:
            server.close()
            await self.replicas.stop()  # replicas say goodbye on their sockets, which pass through here
            try:
                await asyncio.wait_for(server.wait_closed(), 5.0)
            except asyncio.TimeoutError:
                pass

    def stop(self) -> None:
        """Ask :meth:`serve` to return."""
        self._stop.set()

    # -- one client connection ----------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstreams: dict[tuple[int, int], tuple[asyncio.StreamReader, asyncio.StreamWriter]] = {}
        try:
            while True:
                try:  # an idle or trickling connection is closed, as uvicorn closes its own
                    raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
                except asyncio.TimeoutError:
                    break
                except asyncio.LimitOverrunError:
                    writer.write(_response(431, {"detail": "The request head is too large.",
                                                 "code": wire.VALIDATION_ERROR}, keep_alive=False))
                    break
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                try:
                    head = _Head(raw)
                except (ValueError, UnicodeDecodeError):
                    writer.write(_response(400, {"detail": "Malformed HTTP request.", "code": wire.VALIDATION_ERROR},
                                           keep_alive=False))
                    break
                if head.upgrade:
                    await self._websocket(head, reader, writer)
                    break
                if not await self._http(head, reader, writer, upstreams):
                    break
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            for _, up in upstreams.values():
                up.close()
            try:
                await writer.drain()
                writer.close()
            except (ConnectionError, RuntimeError):
                pass

    def _authorized(self, head: _Head) -> tuple[bool, str]:
        given, path = presented_token(head.path, head.headers, head.query)
        if self.token is None:
            return True, path
        return path == "/health" or token_matches(given, self.token), path

    # -- http ---------------------------------------------------------------------------
    async def _http(self, head: _Head, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    upstreams: dict[tuple[int, int], tuple[asyncio.StreamReader, asyncio.StreamWriter]]) -> bool:
        """Answer one HTTP request; return whether the connection stays open."""
        keep = head.keep_alive
        if head.header(b"transfer-encoding") is not None:
            writer.write(_response(411, {"detail": "Send the body with a Content-Length header.",
                                         "code": wire.VALIDATION_ERROR}, keep_alive=False))
            return False
        try:
            length = int(head.header(b"content-length") or b"0")
        except ValueError:
            length = -1
        if length < 0 or length > self.max_body_bytes:
            writer.write(_response(413, {"detail": "The request body is too large (or its length is malformed).",
                                         "code": wire.ACTION_TOO_LARGE}, keep_alive=False))
            return False
        body = await reader.readexactly(length) if length else b""
        head_only = head.method == "HEAD"  # its answers carry no body, or the next one on this connection breaks
        allowed, path = self._authorized(head)
        if not allowed:
            writer.write(_response(401, {"detail": UNAUTHORIZED_DETAIL, "code": wire.UNAUTHORIZED}, keep_alive=keep,
                                   head_only=head_only))
            return keep
        if path == "/health" and head.method in ("GET", "HEAD"):  # answered here: a probe is not an episode
            payload, status = await self.replicas.health()
            writer.write(_response(status, payload, keep_alive=keep, head_only=head_only))
            return keep
        if path == "/metrics" and head.method in ("GET", "HEAD"):
            text = await self.replicas.metrics({"rollgym_router_replica_lost_answers_total": float(self.lost_answers)})
            writer.write(_response(200, text.encode(), keep_alive=keep, content_type=b"text/plain; version=0.0.4",
                                   head_only=head_only))
            return keep
        session_id = _session_in(head, body)
        for attempt in range(2):
            replica, why = await self._route(session_id)
            if replica is None:
                writer.write(self._refusal(why, keep, head_only))
                return keep
            key = (replica.index, replica.generation)
            fresh = key not in upstreams
            try:
                reply, reusable = await self._exchange(replica, upstreams, head.raw + body, head_only)
            except (ConnectionError, OSError, asyncio.IncompleteReadError, ValueError):
                stale = upstreams.pop(key, None)
                if stale is not None:
                    stale[1].close()
                if not fresh and attempt == 0:  # a keep-alive connection the replica had closed: once more
                    continue
                await self._settle(replica)
                if attempt == 0 and (session_id is None or replica.alive):  # nothing was bound to that process
                    continue
                why = self.replicas.holder(replica.tag)[1] if session_id and not replica.alive else None
                writer.write(self._refusal(why, keep, head_only))
                return keep
            if not reusable:
                stale = upstreams.pop(key, None)
                if stale is not None:
                    stale[1].close()
            writer.write(reply)
            return keep
        return keep

    async def _route(self, session_id: str | None) -> tuple[Replica | None, str | None]:
        if session_id:
            replica, why = self.replicas.holder(session_id)
            if replica is not None or why is not None:
                return replica, why
        return await self.replicas.wait_for_one(ROUTE_WAIT_S), None

    def _refusal(self, why: str | None, keep: bool, head_only: bool = False) -> bytes:
        self.lost_answers += 1
        return _response(503, {"detail": why or NO_REPLICA, "code": wire.REPLICA_LOST}, keep_alive=keep,
                         head_only=head_only)

    async def _exchange(self, replica: Replica,
                        upstreams: dict[tuple[int, int], tuple[asyncio.StreamReader, asyncio.StreamWriter]],
                        request: bytes, head_only: bool = False) -> tuple[bytes, bool]:
        """Send a request to a replica on this client's connection to it; return the raw response.

        ``head_only``: the request was a ``HEAD``, whose answer has a Content-Length but no body.
        """
        key = (replica.index, replica.generation)
        if key not in upstreams:
            upstreams[key] = await asyncio.open_connection(replica.host, replica.port, limit=MAX_HEAD_BYTES)
        up_reader, up_writer = upstreams[key]
        up_writer.write(request)
        await up_writer.drain()
        raw = await up_reader.readuntil(b"\r\n\r\n")
        length: int | None = None
        reusable = True
        for line in raw[:-4].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value.strip())
            elif name == b"connection" and b"close" in value.lower():
                reusable = False
        if _has_no_body(raw.split(b"\r\n", 1)[0], head_only):
            return raw, reusable
        if length is None:  # no length: the body runs to the end of the connection
            return raw + await up_reader.read(), False
        return raw + await up_reader.readexactly(length), reusable

    async def _settle(self, replica: Replica) -> None:
        """Give a replica whose socket just failed a moment to be seen exiting."""
        if not replica.exited.is_set():
            try:
                await asyncio.wait_for(replica.exited.wait(), EXIT_WAIT_S)
            except asyncio.TimeoutError:
                pass

    # -- websocket ------------------------------------------------------------------------
    async def _websocket(self, head: _Head, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        allowed, _ = self._authorized(head)
        if not allowed:
            writer.write(_response(403, {"detail": UNAUTHORIZED_DETAIL, "code": wire.UNAUTHORIZED}, keep_alive=False))
            return
        opened = await self._open_upstream(head, reader, writer)
        if opened is None:
            return
        replica, (up_reader, up_writer, answer) = opened
        writer.write(answer)
        watch = _FrameWatch() if answer.startswith(b"HTTP/1.1 101") else None
        inbound = asyncio.ensure_future(_pipe(reader, up_writer))
        outbound = asyncio.ensure_future(_pipe(up_reader, writer, watch))
        try:
            await asyncio.wait({inbound, outbound}, return_when=asyncio.FIRST_COMPLETED)
            if outbound.done() and watch is not None and not watch.closed:  # the replica went without a goodbye
                await self._settle(replica)
                if replica.exited.is_set() and watch.at_boundary:
                    _, why = self.replicas.holder(replica.tag)
                    self.lost_answers += 1
                    writer.write(_error_frames(wire.REPLICA_LOST, why or "The replica stopped.", 1011))
                    await writer.drain()
            elif inbound.done():  # the client went: let the replica see it
                await asyncio.wait({outbound}, timeout=5.0)
        finally:
            for task in (inbound, outbound):
                task.cancel()
            up_writer.close()

    async def _open_upstream(self, head: _Head, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                             ) -> tuple[Replica, tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]] | None:
        """The replica for a WebSocket and its answer to the handshake; ``None`` after refusing the client."""
        session_id = _session_in(head, b"")
        for attempt in range(2):
            replica, why = await self._route(session_id)
            if replica is None:
                await self._refuse_websocket(head, reader, writer, why)
                return None
            upstream = await self._handshake(replica, head)
            if upstream is not None:
                return replica, upstream
            await self._settle(replica)
            if session_id is None and attempt == 0:  # a new session: nothing was bound to that process
                continue
            why = self.replicas.holder(replica.tag)[1] if session_id else None
            await self._refuse_websocket(head, reader, writer, why)
            return None
        return None

    async def _handshake(self, replica: Replica, head: _Head) -> tuple[asyncio.StreamReader, asyncio.StreamWriter,
                                                                      bytes] | None:
        """Pass a WebSocket handshake to a replica; its connection and answer, or ``None`` when it is unreachable."""
        try:
            up_reader, up_writer = await asyncio.open_connection(replica.host, replica.port, limit=MAX_HEAD_BYTES)
        except OSError:
            return None
        up_writer.write(head.raw)
        try:
            answer = await up_reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            up_writer.close()
            return None
        return up_reader, up_writer, answer

    async def _refuse_websocket(self, head: _Head, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                                why: str | None) -> None:
        """Complete the handshake only to say, as a protocol message, why this session cannot go on."""
        key = head.header(b"sec-websocket-key")
        if key is None:
            writer.write(_response(400, {"detail": "A WebSocket handshake needs Sec-WebSocket-Key.",
                                         "code": wire.VALIDATION_ERROR}, keep_alive=False))
            return
        accept = base64.b64encode(hashlib.sha1(key + _WS_GUID).digest())
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n"
                     b"sec-websocket-accept: " + accept + b"\r\n\r\n")
        await writer.drain()
        try:  # answer the client's first message, so that a request/reply client reads the answer as its reply
            await asyncio.wait_for(_skip_frame(reader, self.max_body_bytes), 30.0)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        self.lost_answers += 1
        writer.write(_error_frames(wire.REPLICA_LOST, why or NO_REPLICA, 1011 if why else 1013))
        await writer.drain()


async def _skip_frame(reader: asyncio.StreamReader, max_bytes: int) -> None:
    """Read one client frame and drop it."""
    head = await reader.readexactly(2)
    size = head[1] & 0x7F
    if size == 126:
        size = struct.unpack(">H", await reader.readexactly(2))[0]
    elif size == 127:
        size = struct.unpack(">Q", await reader.readexactly(8))[0]
    if size > max_bytes:
        raise ValueError("frame too large")
    await reader.readexactly(size + (4 if head[1] & 0x80 else 0))


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, watch: _FrameWatch | None = None) -> None:
    """Copy bytes until the source ends, then end the sink's side."""
    try:
        while True:
            data = await source.read(65536)
            if not data:
                break
            if watch is not None:
                watch.feed(data)
            sink.write(data)
            await sink.drain()
    except (ConnectionError, OSError):
        return
    if watch is None or watch.closed:
        try:
            if sink.can_write_eof():
                sink.write_eof()
        except (ConnectionError, OSError, RuntimeError):
            pass

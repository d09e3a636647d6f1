"""Sessions of ``rollgym serve-env``: one env instance each, their lifecycle, and how their work runs.

A :class:`SessionHub` holds every live session of a server. A session owns one env
instance (made at its first reset, with the reset's ``make`` arguments), its episode
state, and a lock so that its messages run one at a time. The transport (WebSocket or
HTTP, :mod:`rollgym.serve.server`) hands each decoded message to :meth:`SessionHub.handle`
and sends back what it returns.

Where env work runs: envs whose steps are short pure-Python work (the ``puzzles``,
``tools`` and ``search`` families) step inline on the event loop, which is the fast path;
every other family (a browser, a chess engine, a verifier pool, a model) steps in a worker
thread, and web envs in a thread of their own (Playwright's sync API is bound to the
thread that started it). Making an env and resetting it always run in worker threads
(the first task of a ToolWorld scenario builds its world). So blocking env work never
stalls the event loop, and one slow session never holds up the others.

Sessions end when a client sends ``close``, when they sit idle longer than
``idle_timeout_s``, when their client has been gone longer than ``reconnect_grace_s``
(a client that reconnects within it resumes the same episode), or at shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from rollgym.core.errors import RollgymError
from rollgym.core.registration import EnvInfo, env_info, make
from rollgym.serve import protocol as wire
from rollgym.serve.protocol import SessionError

Mode = Literal["inline", "pool", "thread"]
_log = logging.getLogger("rollgym.serve")

#: Families whose steps are short pure-Python work: they step on the event loop.
INLINE_FAMILIES = frozenset({"puzzles", "tools", "search"})
#: Families whose envs must stay on one thread for their whole life.
THREAD_FAMILIES = frozenset({"web"})

#: Upper bounds of the step-latency histogram, in seconds (Prometheus ``le`` labels).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True)
class ServeConfig:
    """Settings of one ``rollgym serve-env`` server.

    Attributes:
        env_ids: The env ids served; ``("*",)`` serves every registered id.
        env_kwargs: Constructor arguments applied to every env (a reset's ``make`` may add more).
        max_sessions: Most sessions alive at once; the next one gets ``CAPACITY_REACHED``.
        idle_timeout_s: A session with no message for this long is closed.
        reconnect_grace_s: A session whose client vanished is kept this long for it to reconnect.
        max_action_chars: Longest action (and message) accepted, in characters.
        workers: Threads for env work that does not run on the event loop.
        execution: ``"auto"`` (by family, see the module docstring), ``"inline"`` or ``"threads"``.
        token: When set, every request must carry it (see :mod:`rollgym.serve.server`).
        compression: Offer WebSocket per-message deflate. Off by default: on a local network,
            compressing small replies costs more CPU than the bytes it saves.
        session_prefix: Put before every session id. A replica of ``serve-env --replicas`` gets
            ``r<index>g<generation>.``, which the router reads to send a session's requests to it.
    """

    env_ids: tuple[str, ...] = ("*",)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    max_sessions: int = 4096
    idle_timeout_s: float = 300.0
    reconnect_grace_s: float = 30.0
    max_action_chars: int = 1_000_000
    workers: int = 32
    execution: Literal["auto", "inline", "threads"] = "auto"
    token: str | None = None
    compression: bool = False
    session_prefix: str = ""

    @property
    def max_body_bytes(self) -> int:
        """Largest HTTP body or WebSocket frame accepted: four bytes per action character, plus room for fields."""
        return self.max_action_chars * 4 + 65536

    def __post_init__(self) -> None:
        from rollgym.core.errors import ConfigError

        for name in ("max_sessions", "max_action_chars", "workers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}.")
        for name in ("idle_timeout_s", "reconnect_grace_s"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)!r}.")
        if self.execution not in ("auto", "inline", "threads"):
            raise ConfigError(f"execution must be auto, inline or threads, got {self.execution!r}.")


class Metrics:
    """Counters and a step-latency histogram, rendered in Prometheus' text format."""

    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.latency_sum = 0.0
        self.latency_count = 0

    def observe_step(self, seconds: float) -> None:
        """Record one step's handling time."""
        self.latency_sum += seconds
        self.latency_count += 1
        for i, bound in enumerate(LATENCY_BUCKETS):
            if seconds <= bound:
                self.buckets[i] += 1
                return
        self.buckets[-1] += 1

    def render(self, gauges: dict[str, float]) -> str:
        """Prometheus exposition text of every metric."""
        lines = []
        for name, value in sorted(gauges.items()):
            lines += [f"# TYPE rollgym_{name} gauge", f"rollgym_{name} {value:g}"]
        for name in ("sessions_opened", "sessions_closed", "sessions_expired", "resets", "steps", "episodes_done",
                     "reconnects"):
            lines += [f"# TYPE rollgym_{name}_total counter", f"rollgym_{name}_total {self.counters[name]}"]
        lines.append("# TYPE rollgym_errors_total counter")
        for code, count in sorted(self.errors.items()):
            lines.append(f'rollgym_errors_total{{code="{code}"}} {count}')
        lines.append("# TYPE rollgym_step_seconds histogram")
        cumulative = 0
        for bound, count in zip(LATENCY_BUCKETS, self.buckets):
            cumulative += count
            lines.append(f'rollgym_step_seconds_bucket{{le="{bound:g}"}} {cumulative}')
        lines.append(f'rollgym_step_seconds_bucket{{le="+Inf"}} {self.latency_count}')
        lines += [f"rollgym_step_seconds_sum {self.latency_sum:.6f}",
                  f"rollgym_step_seconds_count {self.latency_count}"]
        return "\n".join(lines) + "\n"


class Session:
    """One client's env instance and episode state."""

    def __init__(self, info: EnvInfo, mode: Mode, prefix: str = "") -> None:
        self.id = prefix + secrets.token_urlsafe(18)  # unguessable: holding it is holding the session
        self.info = info
        self.mode = mode
        self.env: Any = None
        self.make_args: dict[str, Any] | None = None
        self.started = False
        self.done = False
        self.steps = 0
        self.episodes = 0
        self.total_reward = 0.0
        self.episode_id: str | None = None
        self.base_info: dict[str, Any] = {}
        self.compact = False
        self.last_seq: int | None = None
        self.last_reply: dict[str, Any] | None = None
        self.created = self.last_active = time.monotonic()
        self.detached_at: float | None = None
        self.owner: object | None = None
        self.lock = asyncio.Lock()
        self.executor: ThreadPoolExecutor | None = None
        if mode == "thread":
            self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"rollgym-{info.id}")

    def state(self) -> dict[str, Any]:
        """The ``state`` reply: OpenEnv's ``State`` fields (``episode_id``, ``step_count``) and rollgym's."""
        return {
            "episode_id": self.episode_id, "step_count": self.steps, "session_id": self.id, "env_id": self.info.id,
            "spec_hash": self.info.content_hash, "started": self.started, "done": self.done,
            "episodes": self.episodes, "episode_reward": self.total_reward,
        }


class SessionHub:
    """Every live session of one server, and the dispatch of messages to them."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.sessions: dict[str, Session] = {}
        self.metrics = Metrics()
        self.pool = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="rollgym-serve")
        self.closing = False
        self._infos: dict[str, EnvInfo] = {}
        self._reaper: asyncio.Task[None] | None = None
        if config.env_ids != ("*",):
            for env_id in config.env_ids:  # unknown ids fail at start, with the closest ids
                info = env_info(env_id)
                self._infos[info.id] = info

    # -- what is served ----------------------------------------------------------
    def served(self) -> list[EnvInfo]:
        """The :class:`EnvInfo` of every id this server hosts."""
        if self.config.env_ids == ("*",):
            from rollgym.core.registration import list_envs

            return list_envs()
        return list(self._infos.values())

    def resolve(self, env_id: str) -> EnvInfo:
        """The :class:`EnvInfo` of a served id, or :class:`SessionError` (``UNKNOWN_ENV``)."""
        if env_id in self._infos:
            return self._infos[env_id]
        if self.config.env_ids == ("*",):
            try:
                info = env_info(env_id)
            except RollgymError as exc:
                raise SessionError(wire.UNKNOWN_ENV, str(exc)) from None
            self._infos[info.id] = info
            return info
        hosted = ", ".join(sorted(self._infos))
        raise SessionError(wire.UNKNOWN_ENV, f"This server does not host {env_id!r}; it hosts {hosted}.")

    def mode_of(self, info: EnvInfo) -> Mode:
        """Where a session of ``info`` steps: ``inline`` on the loop, a ``pool`` thread, or its own ``thread``."""
        if info.family in THREAD_FAMILIES:
            return "thread"
        if self.config.execution == "inline" or (self.config.execution == "auto" and info.family in INLINE_FAMILIES):
            return "inline"
        return "pool"

    # -- lifecycle ----------------------------------------------------------------
    def open(self, env_id: str) -> Session:
        """A new session of ``env_id``; refused when shutting down or at ``max_sessions``."""
        if self.closing:
            raise SessionError(wire.SHUTTING_DOWN, "The server is shutting down; connect to another one.")
        info = self.resolve(env_id)
        if len(self.sessions) >= self.config.max_sessions:
            self.metrics.errors[wire.CAPACITY_REACHED] += 1
            raise SessionError(
                wire.CAPACITY_REACHED,
                f"The server holds its maximum of {self.config.max_sessions} sessions; retry later or start it "
                "with a larger --max-sessions.",
            )
        session = Session(info, self.mode_of(info), self.config.session_prefix)
        self.sessions[session.id] = session
        self.metrics.counters["sessions_opened"] += 1
        return session

    def get(self, session_id: str, env_id: str | None = None) -> Session:
        """A live session by id (of ``env_id`` when given), or :class:`SessionError` (``SESSION_ERROR``)."""
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionError(
                wire.SESSION_ERROR,
                "Unknown or expired session id; sessions end after --idle-timeout without messages. Start a new "
                "one with reset.",
            )
        if env_id is not None and session.info.id != env_id:
            raise SessionError(wire.SESSION_ERROR, f"Session belongs to {session.info.id}, not {env_id}.")
        return session

    async def close(self, session: Session, *, reason: str = "closed") -> None:
        """End a session and release its env (in the thread that runs its env work)."""
        if self.sessions.pop(session.id, None) is None:
            return
        self.metrics.counters["sessions_expired" if reason == "expired" else "sessions_closed"] += 1
        env, session.env = session.env, None
        if env is not None:
            try:
                await self._offload(session, env.close)
            except Exception:  # an env that fails to close must not keep the session alive
                pass
        if session.executor is not None:
            session.executor.shutdown(wait=False)

    def start(self) -> None:
        """Start the idle reaper (call from the running event loop)."""
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def shutdown(self) -> None:
        """Refuse new sessions, close every session, stop the worker threads."""
        self.closing = True
        if self._reaper is not None:
            self._reaper.cancel()
        for session in list(self.sessions.values()):
            await self.close(session, reason="shutdown")
        self.pool.shutdown(wait=False, cancel_futures=True)

    async def _reap(self) -> None:
        interval = max(0.05, min(self.config.idle_timeout_s, self.config.reconnect_grace_s) / 4)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for session in list(self.sessions.values()):
                gone = session.detached_at is not None and now - session.detached_at > self.config.reconnect_grace_s
                idle = now - session.last_active > self.config.idle_timeout_s
                if (gone or idle) and not session.lock.locked():
                    await self.close(session, reason="expired")

    # -- work -----------------------------------------------------------------------
    async def _offload(self, session: Session, fn: Any, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(session.executor or self.pool, fn, *args)

    async def _run(self, session: Session, fn: Any, *args: Any) -> Any:
        if session.mode == "inline":
            return fn(*args)
        return await self._offload(session, fn, *args)

    async def handle(self, session: Session, message: dict[str, Any]) -> dict[str, Any] | None:
        """Apply one decoded message to ``session``; return the reply (``None`` for ``close``).

        A repeated ``seq`` returns the stored reply of that message without running it again,
        so a client that lost a reply to a dropped connection can ask again safely.
        """
        kind = message["type"]
        if kind == "close":
            return None
        seq = message.get("seq")
        async with session.lock:
            session.last_active = time.monotonic()
            if seq is not None and seq == session.last_seq and session.last_reply is not None:
                return session.last_reply
            try:
                if kind == "reset":
                    reply = await self._reset(session, wire.check_reset(message.get("data") or {}))
                elif kind == "step":
                    reply = await self._step(session, message.get("data") or {})
                elif kind == "state":
                    reply = {"type": "state", "data": session.state()}
                else:
                    from rollgym.serve.mcp import handle_jsonrpc

                    reply = {"type": "mcp", "data": await handle_jsonrpc(self, session, message.get("data") or {})}
            except (wire.ProtocolError, SessionError) as exc:
                self.metrics.errors[exc.code] += 1
                reply = wire.error(exc.code, str(exc))
            except Exception as exc:  # a bug of the server's own: say so, log it, keep serving
                _log.exception("serve-env failed on a %s message", kind)
                self.metrics.errors[wire.EXECUTION_ERROR] += 1
                reply = wire.error(wire.EXECUTION_ERROR, f"The server failed on this message ({_describe(exc)}).")
            session.last_active = time.monotonic()
            if seq is not None:
                session.last_seq, session.last_reply = seq, reply
            return reply

    def _make(self, session: Session, make_args: dict[str, Any]) -> Any:
        kwargs = {**self.config.env_kwargs, **make_args}
        return make(session.info.id, **kwargs)

    async def _reset(self, session: Session, data: dict[str, Any]) -> dict[str, Any]:
        make_args = dict(data.get("make") or {})
        if session.env is None or make_args != session.make_args:
            old, session.env = session.env, None
            if old is not None:
                await self._offload(session, old.close)
            try:
                session.env = await self._offload(session, self._make, session, make_args)
            except Exception:
                # the reason stays in the server's log: its text could tell a client whether a path it named
                # in 'make' exists on the server, so the reply is the same sentence for every failure
                _log.warning("serve-env could not make %s with make=%r", session.info.id, make_args, exc_info=True)
                raise SessionError(
                    wire.FACTORY_ERROR,
                    f"Could not make {session.info.id} with the make arguments {sorted(make_args)}; check their "
                    "names and values against the env's documented arguments (the server's log has the reason).",
                ) from None
            session.make_args = make_args
        options = wire.reset_options(data)
        try:
            text, info = await self._offload(session, lambda: session.env.reset(seed=data.get("seed"),
                                                                                options=options))
        except Exception as exc:
            session.started = False
            broken, session.env = session.env, None  # a failed reset leaves wrappers half-reset: make a new env
            try:
                await self._offload(session, broken.close)
            except Exception:
                pass
            if isinstance(exc, RollgymError):  # the env refused the request's options (a task_index out of range)
                raise SessionError(wire.VALIDATION_ERROR, f"reset refused: {_describe(exc)}") from None
            raise SessionError(wire.EXECUTION_ERROR, f"reset failed: {_describe(exc)}") from None
        session.started, session.done = True, False
        session.steps, session.total_reward = 0, 0.0
        session.episodes += 1
        session.episode_id = data.get("episode_id") or f"{session.id}-{session.episodes}"
        session.base_info = info
        session.compact = bool(data.get("compact"))
        self.metrics.counters["resets"] += 1
        return {**wire.observation(str(text), None, False, False, info), "session_id": session.id}

    async def _step(self, session: Session, data: dict[str, Any]) -> dict[str, Any]:
        if not session.started:
            raise SessionError(wire.EPISODE_NOT_STARTED, "No episode is running; send reset before step.")
        if data.get("type") == "list_tools":
            return wire.observation("", None, session.done, False, {}, tools=wire.tool_specs(session.base_info))
        if session.done:
            raise SessionError(
                wire.EPISODE_OVER,
                f"The episode is over (after {session.steps} steps, reward {session.total_reward:g}); send reset "
                "to start another.",
            )
        text = wire.action_text(data, self.config.max_action_chars)
        started = time.perf_counter()
        try:
            obs, reward, terminated, truncated, info = await self._run(session, session.env.step, text)
            reward = float(reward)
        except Exception as exc:  # an env bug fails this episode, never the server
            session.done = True
            raise SessionError(
                wire.EXECUTION_ERROR,
                f"The env raised {_describe(exc)}; this episode is over and counts as failed. Send reset.",
            ) from None
        self.metrics.observe_step(time.perf_counter() - started)
        self.metrics.counters["steps"] += 1
        session.steps += 1
        session.total_reward += reward
        session.done = bool(terminated or truncated)
        if session.done:
            self.metrics.counters["episodes_done"] += 1
        if session.compact:
            info = wire.compact_info(info, session.base_info)
        extra: dict[str, Any] = {}
        if data.get("type") == "call_tool":
            extra = {"tool_name": data["tool_name"], "result": wire.tool_result(str(obs)), "error": None}
        return wire.observation(str(obs), reward, bool(terminated), bool(truncated), info, **extra)

    def gauges(self) -> dict[str, float]:
        """Current values: sessions alive, attached, running an episode, the cap."""
        sessions = list(self.sessions.values())
        return {
            "sessions_active": len(sessions),
            "sessions_detached": sum(1 for s in sessions if s.detached_at is not None),
            "sessions_max": self.config.max_sessions,
            "episodes_running": sum(1 for s in sessions if s.started and not s.done),
        }


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, RollgymError) else f"{type(exc).__name__}: {text}"

"""``rollgym.remote``: a ``gymnasium.Env`` whose episodes run on a ``rollgym serve-env`` server.

:class:`RemoteEnv` speaks the server's WebSocket protocol (OpenEnv's; see
:mod:`rollgym.serve.protocol`). It is synchronous (``reset``/``step``, for ``collect``) and
asynchronous (``areset``/``astep``, which ``collect_async`` awaits so that thousands of
episodes share one event loop). Observations, rewards and ``info`` are those of the env on the
server, so an agent plays a remote env exactly as a local one.

Faults: a dropped connection is retried (``reconnect_attempts`` times, with backoff) on the same
server session, and a repeated message is answered from the server's record instead of stepping
twice. When the server stays unreachable, :class:`EnvServerGone` is raised: the collector records
the episode as ``failed`` (never as reward 0), and a rerun with the same results file plays it
again (``retry_on_resume``).

Using remote envs with the collector::

    env_ids = rollgym.remote.register("http://127.0.0.1:8000")   # ids like remote-127_0_0_1-8000/Countdown-v0
    groups = collect_async(agent, env_ids[0], n_tasks=8, group_size=4)
    # or name the URL directly:
    groups = collect_async(agent, "http://127.0.0.1:8000/Countdown-v0", n_tasks=8, group_size=4)
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from typing import Any
from urllib.parse import quote, urlsplit

import gymnasium as gym

from rollgym.core.errors import ConfigError, RollgymError
from rollgym.core.registration import EnvInfo, env_info, register_env
from rollgym.core.spaces import TextSpace
from rollgym.core.task import Task
from rollgym.serve import protocol as wire

#: Tokens given to :func:`register`, by server base URL; RemoteEnv reads them (never stored in specs).
_TOKENS: dict[str, str] = {}
TOKEN_ENV_VAR = "ROLLGYM_SERVE_TOKEN"
REMOTE_FAMILY = "remote"


class RemoteEnvError(RollgymError, RuntimeError):
    """The env server refused a request; ``code`` is the protocol's error code."""

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code


class EnvServerGone(RemoteEnvError):
    """The env server cannot be reached (or lost the session): the episode cannot go on.

    ``retry_on_resume`` tells the collector to play the episode again when the run resumes.
    """

    retry_on_resume = True


def _split_url(url: str) -> tuple[str, str | None]:
    """``(base URL, env id or None)`` of ``http://host:port[/t/TOKEN][/envs]/Env-v0``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ws", "wss") or not parts.netloc:
        raise ConfigError(f"A remote env URL looks like http://HOST:PORT/Env-v0, got {url!r}.")
    path = parts.path.rstrip("/")
    env_id = None
    segments = [s for s in path.split("/") if s]
    if segments and segments[-1] not in ("envs", "ws") and (len(segments) < 2 or segments[-2] != "t"):
        env_id = segments.pop()
        if segments and segments[-1] == "envs":
            segments.pop()
    base = f"{parts.scheme}://{parts.netloc}" + ("/" + "/".join(segments) if segments else "")
    return base, env_id


# The WebSocket scheme of each HTTP scheme: a server's base URL may be given either way.
_WS_SCHEME = {"http://": "ws://", "https://": "wss://"}


def _with_scheme(base: str, schemes: dict[str, str]) -> str:
    """``base`` with its scheme replaced by ``schemes`` (unchanged when ``schemes`` does not name it)."""
    for old, new in schemes.items():
        if base.startswith(old):
            return new + base[len(old):]
    return base


def _ws_base(base: str) -> str:
    return _with_scheme(base, _WS_SCHEME)


def _http_base(base: str) -> str:
    return _with_scheme(base, {ws: http for http, ws in _WS_SCHEME.items()})


class RemoteEnv(gym.Env[str, str]):
    """A text env served by ``rollgym serve-env``, played over one WebSocket session.

    Args:
        url: The server, ``http://HOST:PORT`` (or ``http://HOST:PORT/Env-v0``).
        env_id: The env id on the server; ``None`` for the id in ``url`` or the server's default.
        token: The server's token; default: the one given to :func:`register`, else
            ``$ROLLGYM_SERVE_TOKEN``.
        split: The task split, sent as a constructor argument with each reset.
        timeout_s: Longest wait for one reply (a browser step can take seconds).
        reconnect_attempts: Reconnections tried on a dropped connection before giving up.
        compact: Ask the server to leave repeated ``info`` keys (the tool list) out of step replies;
            they are put back here, so ``info`` is the same either way.
        server_spec_hash: The spec hash the server reported at registration; a reset against a
            server whose code changed since then raises :class:`RemoteEnvError`.
        **env_kwargs: Further constructor arguments of the env on the server.

    Example:
        >>> env = RemoteEnv("http://127.0.0.1:8000", "Countdown-v0", split="test")  # doctest: +SKIP
        >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(self, url: str, env_id: str | None = None, *, token: str | None = None, split: str | None = None,
                 timeout_s: float = 300.0, connect_timeout_s: float = 10.0, reconnect_attempts: int = 3,
                 backoff_s: float = 0.25, compact: bool = True, server_spec_hash: str | None = None,
                 **env_kwargs: Any) -> None:
        base, url_env = _split_url(url)
        self.base_url = _http_base(base)
        self.remote_id = env_id or url_env
        self.token = token or _TOKENS.get(self.base_url) or os.environ.get(TOKEN_ENV_VAR)
        self.make_args = {**({"split": split} if split is not None else {}), **env_kwargs}
        self.timeout_s, self.connect_timeout_s = timeout_s, connect_timeout_s
        self.reconnect_attempts, self.backoff_s = reconnect_attempts, backoff_s
        self.compact = compact
        self.server_spec_hash = server_spec_hash
        self.observation_space = TextSpace(400_000)
        self.action_space = TextSpace(1_000_000)
        self.session_id: str | None = None
        self.base_info: dict[str, Any] = {}
        self._seq = 0
        self._sync: Any = None
        self._async: Any = None

    # -- addressing -----------------------------------------------------------
    def _ws_url(self) -> str:
        path = f"/envs/{quote(self.remote_id, safe='')}/ws" if self.remote_id else "/ws"
        url = _ws_base(self.base_url) + path
        if self.session_id:
            url += f"?session_id={quote(self.session_id)}"
        return url

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def _gone(self, exc: BaseException) -> EnvServerGone:
        return EnvServerGone(
            f"The env server at {self.base_url} is unreachable ({type(exc).__name__}: {exc}) after "
            f"{self.reconnect_attempts} reconnection attempts; this episode is marked failed. Restart "
            "`rollgym serve-env` and rerun with the same results file to play it again.",
            "SERVER_GONE",
        )

    # -- messages ---------------------------------------------------------------
    def _reset_message(self, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
        data: dict[str, Any] = {"seed": seed, "compact": self.compact}
        if options:
            options = dict(options)
            if isinstance(options.get("task"), Task):
                options["task"] = options["task"].to_dict()
            data["options"] = options
        if self.make_args:
            data["make"] = self.make_args
        self._seq += 1
        return {"type": "reset", "data": data, "seq": self._seq}

    def _step_message(self, action: Any) -> dict[str, Any]:
        if isinstance(action, bytes):
            action = action.decode("utf-8", errors="replace")
        if not isinstance(action, str):
            raise TypeError(f"Actions are strings; got {type(action).__name__}. Pass the model's text.")
        self._seq += 1
        return {"type": "step", "data": {"text": action}, "seq": self._seq}

    def _check(self, reply: Any) -> dict[str, Any]:
        if not isinstance(reply, dict) or "type" not in reply:
            raise RemoteEnvError(f"The server sent an unexpected reply: {str(reply)[:200]!r}.")
        if reply["type"] == "error":
            data = reply.get("data") or {}
            code = str(data.get("code", ""))
            message = f"{data.get('message', 'unknown error')} (code {code})"
            if code == wire.REPLICA_LOST:
                raise EnvServerGone(data.get("message", "The replica holding this session stopped."), code)
            if code in (wire.SESSION_ERROR, wire.SHUTTING_DOWN):
                raise EnvServerGone(message + "; the server lost this session, so the episode is marked failed.",
                                    code)
            raise RemoteEnvError(message, code)
        return reply

    def _after_reset(self, reply: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        reply = self._check(reply)
        self.session_id = reply.get("session_id", self.session_id)
        obs = reply["data"]["observation"]
        info = obs.get("info") or {}
        remote_hash = info.get("spec_hash")
        if self.server_spec_hash and remote_hash and remote_hash != self.server_spec_hash:
            raise RemoteEnvError(
                f"The server's {self.remote_id} now has spec hash {remote_hash}, not {self.server_spec_hash} as "
                "when it was registered: its code changed. Register it again to accept the new version.",
            )
        self.base_info = info
        return str(obs["text"]), info

    def _after_step(self, reply: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        data = self._check(reply)["data"]
        obs = data["observation"]
        info = wire.expand_info(obs.get("info") or {}, self.base_info)
        return str(obs["text"]), float(data["reward"] or 0.0), bool(obs["terminated"]), bool(obs["truncated"]), info

    # -- sync -------------------------------------------------------------------
    def _exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        from websockets.exceptions import InvalidStatus
        from websockets.sync.client import connect

        text = wire.dumps(message)
        last: BaseException | None = None
        for attempt in range(self.reconnect_attempts + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                if self._sync is None:
                    self._sync = connect(self._ws_url(), additional_headers=self._headers(),
                                         open_timeout=self.connect_timeout_s, max_size=None).__enter__()
                self._sync.send(text)
                return wire.loads(self._sync.recv(timeout=self.timeout_s))  # type: ignore[no-any-return]
            except InvalidStatus as exc:
                raise RemoteEnvError(f"The env server refused the connection: {exc}.") from None
            except (OSError, TimeoutError, EOFError) as exc:
                last = exc
                self._drop_sync()
            except Exception as exc:  # websockets.ConnectionClosed and kin
                if type(exc).__module__.startswith("websockets"):
                    last = exc
                    self._drop_sync()
                else:
                    raise
        assert last is not None
        raise self._gone(last)

    def _drop_sync(self) -> None:
        if self._sync is not None:
            try:
                self._sync.close()
            except Exception:
                pass
            self._sync = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode on the server (the first call opens the session)."""
        super().reset(seed=seed)
        message = self._reset_message(seed, options)
        reply = self._exchange(message)
        if self._lost_session(reply):  # the server ended the old session; a reset needs none
            self._drop_sync()
            reply = self._exchange(message)
        return self._after_reset(reply)

    def _lost_session(self, reply: Any) -> bool:
        lost = isinstance(reply, dict) and reply.get("type") == "error" and \
            (reply.get("data") or {}).get("code") in (wire.SESSION_ERROR, wire.REPLICA_LOST) and \
            self.session_id is not None
        if lost:
            self.session_id = None
        return lost

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Send one action; return the server env's ``(observation, reward, terminated, truncated, info)``."""
        return self._after_step(self._exchange(self._step_message(action)))

    def state(self) -> dict[str, Any]:
        """The session's state on the server (``episode_reward`` and ``done`` among it)."""
        self._seq += 1
        return dict(self._check(self._exchange({"type": "state", "seq": self._seq}))["data"])

    def close(self) -> None:
        """End the server session and the connection."""
        if self._async is not None:  # called outside a coroutine: drop the socket; the server ends the session
            try:
                self._async.transport.close()
            except Exception:
                pass
            self._async = None
        if self._sync is not None:
            try:
                self._sync.send(wire.dumps({"type": "close"}))
            except Exception:
                pass
            self._drop_sync()
        self.session_id = None

    # -- async ------------------------------------------------------------------
    async def _aexchange(self, message: dict[str, Any]) -> dict[str, Any]:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus

        text = wire.dumps(message)
        last: BaseException | None = None
        for attempt in range(self.reconnect_attempts + 1):
            if attempt:
                await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                if self._async is None:
                    self._async = await connect(self._ws_url(), additional_headers=self._headers(),
                                                open_timeout=self.connect_timeout_s, max_size=None,
                                                ping_interval=None)
                await self._async.send(text)
                raw = await asyncio.wait_for(self._async.recv(), self.timeout_s)
                return wire.loads(raw)  # type: ignore[no-any-return]
            except InvalidStatus as exc:
                raise RemoteEnvError(f"The env server refused the connection: {exc}.") from None
            except asyncio.CancelledError:
                await self._adrop()
                raise
            except (OSError, TimeoutError, asyncio.TimeoutError, EOFError) as exc:
                last = exc
                await self._adrop()
            except Exception as exc:
                if type(exc).__module__.startswith("websockets"):
                    last = exc
                    await self._adrop()
                else:
                    raise
        assert last is not None
        raise self._gone(last)

    async def _adrop(self) -> None:
        if self._async is not None:
            try:
                await self._async.close()
            except Exception:
                pass
            self._async = None

    async def areset(self, *, seed: int | None = None,
                     options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Async :meth:`reset`."""
        super().reset(seed=seed)
        message = self._reset_message(seed, options)
        reply = await self._aexchange(message)
        if self._lost_session(reply):
            await self._adrop()
            reply = await self._aexchange(message)
        return self._after_reset(reply)

    async def astep(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Async :meth:`step`."""
        return self._after_step(await self._aexchange(self._step_message(action)))

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        if self._async is not None:
            try:
                await self._async.send(wire.dumps({"type": "close"}))
            except Exception:
                pass
            await self._adrop()
        self.session_id = None
        self.close()


# -- registration -----------------------------------------------------------------------------------
def _proxy_id(base_url: str, env_id: str) -> str:
    parts = urlsplit(base_url)
    host = re.sub(r"[^A-Za-z0-9]", "_", parts.hostname or "host")  # Gymnasium namespaces allow [\w:-]
    namespace = f"remote-{host}-{parts.port or (443 if parts.scheme in ('https', 'wss') else 80)}"
    extra = [s for s in parts.path.split("/") if s and s != "t"]
    if extra:  # a path prefix (a token or a proxy route) keeps ids of different servers apart
        from rollgym.core.seeding import content_digest

        namespace += "-" + content_digest(*extra, length=6)
    return f"{namespace}/{env_id}"


def list_remote(url: str, *, token: str | None = None, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """The envs a server hosts: ``[{"id", "family", "description", "spec_hash"}]``."""
    import httpx

    base, _ = _split_url(url)
    base = _http_base(base)
    token = token or _TOKENS.get(base) or os.environ.get(TOKEN_ENV_VAR)
    try:
        response = httpx.get(base + "/envs", headers={"Authorization": f"Bearer {token}"} if token else {},
                             timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise EnvServerGone(f"Cannot reach an env server at {base} ({exc}); start one with `rollgym serve-env`.",
                            "SERVER_GONE") from None
    if response.status_code == 401:
        raise RemoteEnvError(f"The env server at {base} needs a token; pass token= or set {TOKEN_ENV_VAR}.",
                             wire.UNAUTHORIZED)
    response.raise_for_status()
    return list(response.json()["envs"])


def register(url: str, env_ids: list[str] | str | None = None, *, token: str | None = None) -> list[str]:
    """Register proxies of a server's envs so that ``rollgym.make``, ``collect`` and ``collect_async`` use them.

    Returns the proxy ids, ``remote-HOST-PORT/Env-v0`` (the host's dots become underscores). Each
    keeps the server's spec hash (a results file written against it refuses a server whose code
    changed) and the local oracle and random policy of the same id, when this installation has them.

    Example:
        >>> ids = register("http://127.0.0.1:8000", ["Countdown-v0"])  # doctest: +SKIP
        >>> ids
        ['remote-127_0_0_1-8000/Countdown-v0']
    """
    base, url_env = _split_url(url)
    base = _http_base(base)
    if token:
        _TOKENS[base] = token
    hosted = {e["id"]: e for e in list_remote(base, token=token)}
    wanted = [env_ids] if isinstance(env_ids, str) else list(env_ids or ([url_env] if url_env else hosted))
    ids = []
    for env_id in wanted:
        if env_id not in hosted:
            raise ConfigError(f"The server at {base} does not host {env_id!r}; it hosts {', '.join(sorted(hosted))}.")
        ids.append(_register_one(base, hosted[env_id]).id)
    return ids


def _register_one(base: str, entry: dict[str, Any]) -> EnvInfo:
    try:
        local = env_info(entry["id"])
        oracle, random_policy = local.oracle, local.random_policy
    except RollgymError:
        oracle = random_policy = None
    return register_env(
        _proxy_id(base, entry["id"]), "rollgym.serve.client:RemoteEnv",
        description=f"{entry['id']} served at {base}: {entry.get('description', '')}", family=REMOTE_FAMILY,
        components=(), kwargs={"url": base, "env_id": entry["id"], "server_spec_hash": entry.get("spec_hash")},
        oracle=oracle, random_policy=random_policy,
    )


def resolve_url(url: str) -> EnvInfo:
    """The registered proxy of ``http://HOST:PORT/Env-v0`` (registering it on first use)."""
    base, env_id = _split_url(url)
    if env_id is None:
        raise ConfigError(f"Name the env in the URL, e.g. {base}/Countdown-v0.")
    return env_info(register(base, [env_id])[0])

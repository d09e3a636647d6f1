"""Replica processes of ``rollgym serve-env --replicas N``: start them, watch them, add up their health.

Each replica is a whole env server (:class:`rollgym.serve.server.EnvServer`) in a process of its
own, listening on a private port of 127.0.0.1; :mod:`rollgym.serve.router` sits in front of them
on the public address. A replica's session ids start with its tag, ``r<index>g<generation>.``, so
the router sends every request of a session to the process that holds it. A replica that exits
(a crash, the OOM killer, a SIGKILL) is started again under the next generation: sessions of the
old generation are lost and the router says so (``REPLICA_LOST``), and new sessions go to the live
replicas, the new one included.

``/health`` and ``/metrics`` of the fleet are the sums of the replicas' own (:meth:`ReplicaSet.health`,
:meth:`ReplicaSet.metrics`); counters of a replica that died keep the last values read from it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.serve.sessions import ServeConfig

_log = logging.getLogger("rollgym.serve")

#: A replica's session ids start with this: ``r<index>g<generation>.``.
TAG = re.compile(r"r(\d{1,4})g(\d{1,9})\.")
#: Most replicas one server runs.
MAX_REPLICAS = 256
#: Seconds a replica has to import rollgym and bind its port.
START_TIMEOUT_S = 180.0
#: First pause before starting a replica again after it died at once; doubles up to a minute.
RESTART_BACKOFF_S = 0.5
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$")
_SUMMED_LAST = ("_total", "_bucket", "_sum", "_count")  # counters: a dead replica's last values stay in the sum


@dataclass
class Replica:
    """One replica process and what the router needs to know of it."""

    index: int
    generation: int
    port: int = 0
    host: str = "127.0.0.1"
    node: str = ""  # the Ray node id of a replica in a Ray actor
    ended: str | None = None  # how it ended, when no exit code tells (a Ray actor that was lost)
    pid: int = 0
    process: Any = None
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    returncode: int | None = None
    started_at: float = field(default_factory=time.monotonic)
    last_metrics: dict[str, float] = field(default_factory=dict)

    @property
    def tag(self) -> str:
        """The prefix of this replica's session ids."""
        return f"r{self.index}g{self.generation}."

    @property
    def alive(self) -> bool:
        """Started and not exited."""
        return self.port > 0 and not self.exited.is_set()

    def death(self) -> str:
        """How the process ended, in words: ``exited with code 1``, ``was killed by SIGKILL``."""
        code = self.returncode
        if self.ended is not None:
            return self.ended
        if code is None:
            return "stopped"
        if code < 0:
            try:
                return f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"was killed by signal {-code}"
        return f"exited with code {code}"


class ReplicaSet:
    """``count`` replica processes of one server configuration, started again when they die.

    Example:
        >>> fleet = ReplicaSet(ServeConfig(env_ids=("Countdown-v0",)), 2)  # doctest: +SKIP
        >>> await fleet.start()  # doctest: +SKIP
        >>> [r.tag for r in fleet.replicas]  # doctest: +SKIP
        ['r0g0.', 'r1g0.']
    """

    def __init__(self, config: ServeConfig, count: int, *, default_env: str | None = None,
                 nemo_gym: bool = False, restart: bool = True) -> None:
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_REPLICAS:
            raise ConfigError(f"replicas must be an integer from 1 to {MAX_REPLICAS}, got {count!r}.")
        try:
            json.dumps(config.env_kwargs)
        except (TypeError, ValueError):
            raise ConfigError("With replicas, env arguments must be JSON values (they travel to each "
                              "replica process).") from None
        self.config = config
        self.count = count
        self.default_env = default_env
        self.nemo_gym = nemo_gym
        self.restart = restart
        self.replicas: list[Replica] = []
        self.restarts = 0
        self.closing = False
        self._next = 0
        self._retired: dict[str, float] = {}
        self._deaths: dict[tuple[int, int], str] = {}  # how each replica generation ended, for REPLICA_LOST
        self._watchers: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()

    # -- processes ---------------------------------------------------------------
    def _spec(self, replica: Replica) -> str:
        config = dataclasses.asdict(self.config)
        config["env_ids"] = list(config["env_ids"])
        config["session_prefix"] = replica.tag
        return json.dumps({"config": config, "default_env": self.default_env, "nemo_gym": self.nemo_gym})

    async def _spawn(self, index: int, generation: int) -> Replica:
        replica = Replica(index, generation)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "from rollgym.serve.replicas import replica_main; replica_main()",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )
        replica.process, replica.pid = process, process.pid
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(self._spec(replica).encode())  # the token rides here, never on a command line
        process.stdin.close()
        try:
            line = await asyncio.wait_for(process.stdout.readline(), START_TIMEOUT_S)
        except asyncio.TimeoutError:
            line = b""
        match = re.match(rb"http://127\.0\.0\.1:(\d+)", line)
        if match is None:
            if process.returncode is None:
                process.kill()
            await process.wait()
            raise ConfigError(f"Replica {index} of serve-env did not start (exit code {process.returncode}); its "
                              "error is above.")
        replica.port = int(match.group(1))
        watcher = asyncio.get_running_loop().create_task(self._watch(replica))
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        return replica

    async def start(self) -> None:
        """Start every replica and wait until each one listens; ``ConfigError`` when one cannot start."""
        try:
            self.replicas = list(await asyncio.gather(*(self._spawn(i, 0) for i in range(self.count))))
        except BaseException:
            await self.stop()
            raise

    async def _wait_exit(self, replica: Replica) -> None:
        """Return when the replica's process has exited, with ``returncode`` (or ``ended``) set."""
        process = replica.process
        assert process.stdout is not None
        while await process.stdout.read(65536):  # a pipe nobody reads would fill up and stall the replica
            pass
        replica.returncode = await process.wait()

    def _discard(self, replica: Replica) -> None:
        """Stop a replica started while the set was closing."""
        replica.process.terminate()

    async def _watch(self, replica: Replica) -> None:
        await self._wait_exit(replica)
        replica.exited.set()
        self._deaths[(replica.index, replica.generation)] = replica.death()
        for name, value in replica.last_metrics.items():
            if name.split("{")[0].endswith(_SUMMED_LAST):
                self._retired[name] = self._retired.get(name, 0.0) + value
        if self.closing or not self.restart:
            return
        _log.warning("serve-env replica %d (pid %d) %s; starting it again", replica.index, replica.pid,
                     replica.death())
        backoff = RESTART_BACKOFF_S
        lived = time.monotonic() - replica.started_at
        generation = replica.generation + 1
        while not self.closing:
            if lived < 5.0:  # it died at once: do not spin
                await asyncio.sleep(backoff)
                backoff = min(60.0, backoff * 2)
            try:
                fresh = await self._spawn(replica.index, generation)
            except (ConfigError, OSError) as exc:
                _log.warning("serve-env replica %d did not start again: %s", replica.index, exc)
                lived = 0.0
                continue
            if self.closing:
                self._discard(fresh)
                return
            self.replicas[replica.index] = fresh
            self.restarts += 1
            self._changed.set()
            return

    async def stop(self) -> None:
        """Ask every replica to shut down gracefully (SIGTERM), and kill those that do not within 10 s."""
        self.closing = True
        live = [r for r in self.replicas if r.process is not None and r.process.returncode is None]
        for replica in live:
            try:
                replica.process.terminate()
            except ProcessLookupError:
                pass
        for replica in live:
            try:
                await asyncio.wait_for(replica.process.wait(), 10.0)
            except asyncio.TimeoutError:
                replica.process.kill()
                await replica.process.wait()
        for watcher in list(self._watchers):
            watcher.cancel()

    # -- routing ------------------------------------------------------------------
    def pick(self) -> Replica | None:
        """The live replica for a new session (round robin), or ``None`` when none is up."""
        live = [r for r in self.replicas if r.alive]
        if not live:
            return None
        self._next += 1
        return live[self._next % len(live)]

    async def wait_for_one(self, timeout_s: float) -> Replica | None:
        """:meth:`pick`, waiting up to ``timeout_s`` for a replica that is starting again when none is up."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            self._changed.clear()
            replica = self.pick()
            if replica is not None or self.closing or loop.time() >= deadline:
                return replica
            try:
                await asyncio.wait_for(self._changed.wait(), deadline - loop.time())
            except asyncio.TimeoutError:
                pass

    def holder(self, session_id: str) -> tuple[Replica | None, str | None]:
        """The live replica that holds a session, or ``(None, why)``; ``(None, None)`` for an untagged id."""
        match = TAG.match(session_id)
        if match is None:
            return None, None
        index, generation = int(match.group(1)), int(match.group(2))
        replica = self.replicas[index] if index < len(self.replicas) else None
        if replica is not None and replica.generation == generation and replica.alive:
            return replica, None
        if replica is None or generation > replica.generation:
            return None, "This server never ran the replica named in this session id; start a new session with reset."
        gone = self._deaths.get((index, generation), "stopped")
        return None, (f"Replica {index} of this server {gone}, and the episode of this session went with it; it "
                      "counts as failed: send reset to play it again on a live replica.")

    # -- health and metrics ----------------------------------------------------------
    async def _get(self, replica: Replica, path: str) -> str:
        """The body of a GET to a replica (plain HTTP/1.0 on loopback: no client library, no TLS setup)."""
        auth = f"Authorization: Bearer {self.config.token}\r\n" if self.config.token else ""

        async def fetch() -> str:
            reader, writer = await asyncio.open_connection(replica.host, replica.port)
            try:
                writer.write(f"GET {path} HTTP/1.0\r\nHost: {replica.host}\r\n{auth}\r\n".encode())
                raw = await reader.read()
            finally:
                writer.close()
            head, _, body = raw.partition(b"\r\n\r\n")
            status = head.split(b" ", 2)[1] if head.count(b" ") >= 2 else b""
            if status not in (b"200", b"503"):
                raise OSError(f"replica answered {status!r}")
            return body.decode()

        return await asyncio.wait_for(fetch(), 5.0)

    async def health(self) -> tuple[dict[str, Any], int]:
        """The fleet's ``/health`` body and status: 200 while one replica is healthy, else 503."""
        rows = []
        for replica in list(self.replicas):
            row: dict[str, Any] = {"replica": replica.index, "generation": replica.generation, "pid": replica.pid,
                                   "status": "down", "sessions": 0, **({"node": replica.node} if replica.node else {})}
            if replica.alive:
                try:
                    body = json.loads(await self._get(replica, "/health"))
                    row.update(status=body.get("status", "unhealthy"), sessions=int(body.get("sessions", 0)))
                except Exception:
                    row["status"] = "unreachable"
            rows.append(row)
        healthy = sum(1 for r in rows if r["status"] == "healthy")
        status = "unhealthy" if self.closing or not healthy else ("healthy" if healthy == len(rows) else "degraded")
        body = {"status": status, "sessions": sum(r["sessions"] for r in rows),
                "max_sessions": self.config.max_sessions * self.count, "replicas": rows,
                "replica_restarts": self.restarts}
        return body, 200 if status != "unhealthy" else 503

    async def metrics(self, extra: dict[str, float] | None = None) -> str:
        """The fleet's Prometheus text: every replica's samples summed, plus the fleet's own."""
        totals: dict[str, float] = dict(self._retired)
        types: dict[str, str] = {}
        per_replica: list[str] = []
        for replica in list(self.replicas):
            if not replica.alive:
                continue
            try:
                text = await self._get(replica, "/metrics")
            except Exception:
                continue
            replica.last_metrics = parse_samples(text, types)
            for name, value in replica.last_metrics.items():
                totals[name] = totals.get(name, 0.0) + value
            active = replica.last_metrics.get("rollgym_sessions_active", 0.0)
            per_replica.append(f'rollgym_replica_sessions_active{{replica="{replica.index}"}} {active:g}')
        lines = []
        emitted: set[str] = set()
        for name, value in totals.items():
            family = _family(name.split("{")[0], types)
            if family not in emitted and family in types:
                lines.append(f"# TYPE {family} {types[family]}")
                emitted.add(family)
            lines.append(f"{name} {value:g}")
        fleet = {"rollgym_replicas": float(self.count),
                 "rollgym_replicas_alive": float(sum(1 for r in self.replicas if r.alive)), **(extra or {})}
        for name, value in fleet.items():
            lines += [f"# TYPE {name} {'counter' if name.endswith('_total') else 'gauge'}", f"{name} {value:g}"]
        lines += ["# TYPE rollgym_replica_restarts_total counter", f"rollgym_replica_restarts_total {self.restarts}",
                  "# TYPE rollgym_replica_sessions_active gauge", *per_replica]
        return "\n".join(lines) + "\n"


def parse_samples(text: str, types: dict[str, str] | None = None) -> dict[str, float]:
    """The samples of Prometheus text, ``{"name{labels}": value}``; ``# TYPE`` lines go into ``types``.

    Example:
        >>> parse_samples('# TYPE rollgym_steps_total counter\\nrollgym_steps_total 7\\n')
        {'rollgym_steps_total': 7.0}
    """
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) == 4 and types is not None:
                types.setdefault(parts[2], parts[3])
            continue
        match = _SAMPLE.match(line)
        if match:
            try:
                samples[match.group(1)] = float(match.group(2))
            except ValueError:
                continue
    return samples


def _family(name: str, types: dict[str, str]) -> str:
    """The metric family of a sample name (a histogram's ``_bucket``, ``_sum`` and ``_count`` are its own)."""
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
            return name[: -len(suffix)]
    return name


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this process when the router dies, so no replica outlives it."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def replica_main() -> None:
    """Entry point of one replica process: read its spec on stdin, serve on 127.0.0.1, print the URL."""
    from rollgym.serve.server import EnvServer, serve

    _die_with_parent()
    spec = json.loads(sys.stdin.read())
    config = ServeConfig(**{**spec["config"], "env_ids": tuple(spec["config"]["env_ids"])})
    server = EnvServer(config, default_env=spec["default_env"], nemo_gym=spec["nemo_gym"])
    serve(server, "127.0.0.1", 0, on_ready=lambda url: print(url, flush=True))

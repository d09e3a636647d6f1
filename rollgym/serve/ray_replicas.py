"""Replicas of ``rollgym serve-env --replicas N --ray [ADDRESS]``: each a whole env server in a Ray actor.

The same :class:`~rollgym.serve.router.Router` sits in front of them, with the same tagged
session ids, stickiness, ``REPLICA_LOST`` answers and restarts as replica processes
(:mod:`rollgym.serve.replicas`); only where a replica runs differs. Each replica is a Ray actor
that reserves ``cpus`` CPUs and the custom ``resources`` given (``--ray-resource envs=1``), so it
lands on a node that offers them, and replicas are spread over such nodes.

Where a replica listens depends on the server's token (:func:`replica_host`). With a token, its
server listens on its node's IP address (the router on another node must reach it), on a free
port, and asks for the token like every replica. Without one, a replica would serve sessions to
anyone on the nodes' network while the router itself listens on loopback, so it listens on
127.0.0.1 only and runs on the router's node; a router's node that does not offer what a replica
needs is refused with one sentence (:func:`loopback_refusal`).

A replica whose actor is lost (its process killed, its node removed) is started again under the
next generation on a node that still offers the resources; the router answers its sessions with
``REPLICA_LOST`` as for a process.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.core.optional import import_optional
from rollgym.serve.replicas import START_TIMEOUT_S, Replica, ReplicaSet
from rollgym.serve.sessions import ServeConfig

#: How a replica whose Ray actor was lost ended, in the words of ``REPLICA_LOST``.
LOST = "was lost with its Ray actor (its process or its node died)"
LOOPBACK = "127.0.0.1"


def replica_host(token: str | None, node_ip: str) -> str:
    """The address a Ray replica's server listens on: its node's IP with a token, else loopback only.

    Example:
        >>> replica_host("s3cret", "10.0.0.7"), replica_host(None, "10.0.0.7")
        ('10.0.0.7', '127.0.0.1')
    """
    return node_ip if token else LOOPBACK


def loopback_refusal(offered: dict[str, float], needs: dict[str, float]) -> str | None:
    """Why replicas without a token cannot run on the router's node (which offers ``offered``), or ``None``.

    Example:
        >>> loopback_refusal({"CPU": 4.0}, {"CPU": 1.0, "envs": 1.0})[:60]
        'Without a token, Ray replicas listen on 127.0.0.1 only and s'
        >>> loopback_refusal({"CPU": 4.0}, {"CPU": 1.0}) is None
        True
    """
    missing = [name for name, amount in needs.items() if amount > 0 and offered.get(name, 0.0) < amount]
    if not missing:
        return None
    return (f"Without a token, Ray replicas listen on 127.0.0.1 only and so must run on the router's node, "
            f"which does not offer {', '.join(missing)}; give the server a token (--token or "
            f"ROLLGYM_SERVE_TOKEN) to place replicas on other nodes.")


def _import_ray() -> Any:
    return import_optional("ray", "serve-env --ray", "Ray", "ray")


class ReplicaActor:
    """A Ray actor body: one env server on its node's IP address (on 127.0.0.1 without a token), until it ends."""

    def __init__(self, spec: str) -> None:
        import os

        import ray

        from rollgym.serve.server import EnvServer

        data = json.loads(spec)
        config = ServeConfig(**{**data["config"], "env_ids": tuple(data["config"]["env_ids"])})
        server = EnvServer(config, default_env=data["default_env"], nemo_gym=data["nemo_gym"])
        host = replica_host(config.token, ray.util.get_node_ip_address())
        self.running = server.run_in_thread(host, 0)
        url = self.running.__enter__()
        self.place = {"host": host, "port": int(url.rsplit(":", 1)[1]), "pid": os.getpid(),
                      "node": ray.get_runtime_context().get_node_id()}

    def where(self) -> dict[str, Any]:
        """The server's host and port, the actor's process id and its Ray node id."""
        return self.place

    async def lifetime(self) -> None:
        """Never returns: the router awaits it to learn, by the error, that the actor is gone."""
        await asyncio.Event().wait()

    def stop(self) -> None:
        """Close the server's connections and sessions gracefully."""
        self.running.__exit__(None, None, None)


class RayReplicaSet(ReplicaSet):
    """``count`` replicas in Ray actors on the cluster at ``address`` (or the Ray this process runs).

    Args:
        address: The cluster to join (``"10.0.0.1:6379"``, ``"auto"``, ``"ray://..."``) when Ray is not
            initialised in this process; ``None`` starts a local Ray instance (or joins ``$RAY_ADDRESS``).
        cpus: CPUs each replica reserves on its node.
        resources: Custom Ray resources each replica reserves (``{"envs": 1}``): they place it.

    Example:
        >>> fleet = RayReplicaSet(ServeConfig(env_ids=("Countdown-v0",)), 2, resources={"envs": 1})  # doctest: +SKIP
    """

    def __init__(self, config: ServeConfig, count: int, *, address: str | None = None, cpus: float = 1.0,
                 resources: dict[str, float] | None = None, default_env: str | None = None,
                 nemo_gym: bool = False, restart: bool = True) -> None:
        super().__init__(config, count, default_env=default_env, nemo_gym=nemo_gym, restart=restart)
        amounts = {"cpus": cpus, **(resources or {})}
        if any(not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0 for v in amounts.values()):
            raise ConfigError(f"A replica's Ray CPUs and resources must be non-negative numbers, got {amounts!r}.")
        self.address = address
        self.cpus = float(cpus)
        self.resources = {name: float(amount) for name, amount in (resources or {}).items()}
        self.pinned_node: str | None = None  # without a token: the router's node, where loopback reaches

    async def start(self) -> None:
        """Join (or start) Ray, check that some node offers what a replica needs, then start every replica."""
        ray = _import_ray()
        if not ray.is_initialized():
            ray.init(address=self.address, log_to_driver=False, configure_logging=False)
        offered = ray.cluster_resources()
        missing = [name for name, amount in {"CPU": self.cpus, **self.resources}.items()
                   if amount > 0 and offered.get(name, 0.0) < amount]
        if missing:
            raise ConfigError(f"No node of the Ray cluster offers what a serve-env replica needs ({', '.join(missing)}"
                              f"; the cluster offers {', '.join(sorted(offered))}).")
        if not self.config.token:
            here = ray.get_runtime_context().get_node_id()
            node: dict[str, Any] = next((n for n in ray.nodes() if n.get("NodeID") == here), {})
            refusal = loopback_refusal(dict(node.get("Resources") or {}), {"CPU": self.cpus, **self.resources})
            if refusal is not None:
                raise ConfigError(refusal)
            self.pinned_node = here
        await super().start()

    async def _spawn(self, index: int, generation: int) -> Replica:
        ray = _import_ray()
        replica = Replica(index, generation)
        strategy: Any = "SPREAD"
        if self.pinned_node is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            strategy = NodeAffinitySchedulingStrategy(node_id=self.pinned_node, soft=False)
        actor = ray.remote(ReplicaActor).options(
            num_cpus=self.cpus, resources=self.resources, max_restarts=0, scheduling_strategy=strategy,
        ).remote(self._spec(replica))
        try:
            where = await asyncio.wait_for(actor.where.remote(), START_TIMEOUT_S)
        except Exception as exc:  # a timeout, or the actor's constructor failed (its error is in the message)
            ray.kill(actor)
            raise ConfigError(f"Replica {index} of serve-env did not start in a Ray actor: {exc}") from None
        replica.process, replica.pid = actor, int(where["pid"])
        replica.host, replica.node = str(where["host"]), str(where["node"])
        replica.port = int(where["port"])
        watcher = asyncio.get_running_loop().create_task(self._watch(replica))
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        return replica

    async def _wait_exit(self, replica: Replica) -> None:
        try:
            await replica.process.lifetime.remote()
        except Exception:  # RayActorError and kin: the actor is gone
            pass
        replica.ended = LOST

    def _discard(self, replica: Replica) -> None:
        _import_ray().kill(replica.process)

    async def stop(self) -> None:
        """Close every replica's server gracefully (10 s at most), then end its actor."""
        ray = _import_ray()
        self.closing = True
        live = [r for r in self.replicas if r.process is not None and not r.exited.is_set()]

        async def close(replica: Replica) -> None:
            try:
                await asyncio.wait_for(replica.process.stop.remote(), 10.0)
            except Exception:
                pass
            ray.kill(replica.process)

        await asyncio.gather(*(close(r) for r in live))
        for watcher in list(self._watchers):
            watcher.cancel()

"""``rollgym serve-env --replicas 2 --ray ADDRESS``: replicas in Ray actors on a real 3-node cluster on this machine.

Nodes: the head (no ``envs`` resource) and two nodes that offer ``envs``; the replicas ask for one each, so they
land on those two. The router is a real ``serve-env`` process that joins the cluster by address; clients speak
real WebSockets and HTTP to it. With a token the replicas listen on their node's address; without one, on
127.0.0.1 only, on the router's node.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from rollgym.core.errors import RollgymError
from rollgym.serve.spawn import ServeEnvProcess
from tests.conftest import require_module
from tests.serve.conftest import wait_for

require_module("ray")
require_module("starlette")
require_module("websockets")
require_module("httpx")
import httpx  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.slow
SMALL = {"object_store_memory": 80 * 1024**2}  # Ray's minimum is 75 MiB
TOKEN = "ray-replica-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _remote(url: str, token: str | None = TOKEN):  # type: ignore[no-untyped-def]
    from rollgym.serve.client import RemoteEnv

    return RemoteEnv(url, env_id="Countdown-v0", reconnect_attempts=1, backoff_s=0.05, token=token)


def _serve(*args: str, token: str | None = TOKEN) -> ServeEnvProcess:
    """A real serve-env process; the token rides in its environment, never on its command line."""
    if token is None:
        return ServeEnvProcess("Countdown-v0", *args)
    os.environ["ROLLGYM_SERVE_TOKEN"] = token
    try:
        return ServeEnvProcess("Countdown-v0", *args)
    finally:
        del os.environ["ROLLGYM_SERVE_TOKEN"]


def _listening(pids: list[int]) -> list[str]:
    """The addresses the env servers in these processes listen on (Ray's own ports in them are left out)."""
    psutil = pytest.importorskip("psutil")
    found = []
    for pid in pids:
        for c in psutil.Process(pid).net_connections("tcp"):
            if c.status != psutil.CONN_LISTEN:
                continue
            host = {"::": "[::1]", "0.0.0.0": "127.0.0.1"}.get(c.laddr.ip, c.laddr.ip)
            try:  # an env server answers /health with its JSON; Ray's gRPC ports do not
                served = "status" in httpx.get(f"http://{host}:{c.laddr.port}/health", timeout=5).json()
            except (httpx.HTTPError, ValueError):
                served = False
            if served:
                found.append(c.laddr.ip)
    return found


def _health(url: str) -> dict:
    return httpx.get(url + "/health", timeout=30).json()


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Cluster, dict[str, str]]]:
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False, **SMALL})
    try:
        nodes = {"head": cluster.head_node.node_id}
        for name in ("a", "b"):
            nodes[name] = cluster.add_node(num_cpus=1, resources={"envs": 1}, **SMALL).node_id
        cluster.wait_for_nodes()
        yield cluster, nodes
    finally:
        cluster.shutdown()


def test_ray_replicas_land_by_resources_stick_fail_honestly_and_come_back(cluster):
    from rollgym.serve.client import EnvServerGone

    handle, nodes = cluster
    server = _serve("--replicas", "2", "--ray", handle.address, "--ray-resource", "envs=1", "--ray-cpus", "0")
    url = server.url
    try:
        health = _health(url)
        assert health["status"] == "healthy"
        assert sorted(r["node"] for r in health["replicas"]) == sorted([nodes["a"], nodes["b"]])  # not the head
        bound = _listening([r["pid"] for r in health["replicas"]])  # with a token: the node's address
        assert len(bound) == 2 and "127.0.0.1" not in bound

        envs = [_remote(url) for _ in range(2)]
        first = [env.reset(seed=5)[0] for env in envs]
        assert sorted(env.session_id[:5] for env in envs) == ["r0g0.", "r1g0."]  # new sessions take turns
        assert first[0] == first[1]
        victim, survivor = sorted(envs, key=lambda e: e.session_id)
        held = httpx.post(url + "/reset", json={"seed": 5}, headers=AUTH, timeout=30).json()["session_id"]
        state = httpx.get(url + "/state", params={"session_id": held}, headers=AUTH, timeout=30)
        assert state.status_code == 200 and state.json()["session_id"] == held  # HTTP sticks to its replica too

        row = health["replicas"][0]
        os.kill(row["pid"], signal.SIGKILL)  # replica 0's actor process, mid-episode
        with pytest.raises(EnvServerGone) as lost:
            victim.step("<answer>1+2</answer>")
        assert lost.value.code == "REPLICA_LOST" and "Replica 0" in str(lost.value)
        assert "Ray actor" in str(lost.value) and "reset" in str(lost.value)
        assert survivor.step("<answer>1+2</answer>")[2] is True  # the other replica's session goes on
        if held.startswith("r0g0."):
            answer = httpx.post(url + "/step", json={"session_id": held, "action": {"text": "1"}}, headers=AUTH,
                                timeout=30)
            assert answer.status_code == 503 and answer.json()["code"] == "REPLICA_LOST"

        again = victim.reset(seed=5)[0]  # the client replays the episode on a live replica
        assert again == first[0] and not victim.session_id.startswith("r0g0.")
        assert victim.step("<answer>1+2</answer>")[2] is True

        wait_for(lambda: _health(url)["replica_restarts"] == 1 and _health(url)["status"] == "healthy",
                 "replica 0 to start again", poll_s=0.2)
        back = _health(url)["replicas"][0]
        assert back["generation"] == 1 and back["pid"] != row["pid"]
        assert back["node"] in (nodes["a"], nodes["b"])  # placed again by the resource
        fresh = _remote(url)
        fresh.reset(seed=6)
        assert fresh.step("<answer>1</answer>")[2] is True
        for env in (*envs, fresh):
            env.close()
    finally:
        server.close()


def test_ray_replicas_refuse_a_cluster_without_the_resource_in_one_sentence(cluster):
    handle, _ = cluster
    with pytest.raises(RollgymError, match="No node of the Ray cluster offers what a serve-env replica needs"):
        _serve("--replicas", "2", "--ray", handle.address, "--ray-resource", "gpu-browser=1")


def test_without_a_token_ray_replicas_listen_on_loopback_only_on_the_routers_node(cluster):
    handle, _ = cluster
    server = _serve("--replicas", "2", "--ray", handle.address, "--ray-cpus", "0", token=None)
    try:
        health = _health(server.url)
        assert health["status"] == "healthy"
        assert len({r["node"] for r in health["replicas"]}) == 1  # pinned to the router's node...
        bound = _listening([r["pid"] for r in health["replicas"]])
        assert len(bound) == 2 and set(bound) == {"127.0.0.1"}  # ...where loopback reaches them
        env = _remote(server.url, token=None)
        env.reset(seed=3)
        assert env.step("<answer>1+2</answer>")[2] is True
        env.close()
    finally:
        server.close()

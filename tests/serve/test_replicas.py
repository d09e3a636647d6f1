"""``rollgym serve-env --replicas N``: real replica processes behind one router; real HTTP and WebSockets."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from rollgym.serve.spawn import ServeEnvProcess
from tests.conftest import require_module
from tests.serve.conftest import wait_for

require_module("starlette")
require_module("websockets")
require_module("httpx")
import httpx  # noqa: E402

TOKEN = "replica-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _remote(url: str, **kwargs):  # type: ignore[no-untyped-def]
    from rollgym.serve.client import RemoteEnv

    return RemoteEnv(url, env_id="Countdown-v0", reconnect_attempts=1, backoff_s=0.05, **kwargs)


def _metric(url: str, name: str, **headers: str) -> float:
    from rollgym.serve.replicas import parse_samples

    text = httpx.get(url + "/metrics", headers=headers, timeout=30).text
    return parse_samples(text).get(name, 0.0)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    os.environ["ROLLGYM_SERVE_TOKEN"] = TOKEN  # read by serve-env and by RemoteEnv, never on a command line
    try:
        server = ServeEnvProcess("Countdown-v0", "--replicas", "2")
    finally:
        del os.environ["ROLLGYM_SERVE_TOKEN"]
    try:
        yield server.url
    finally:
        server.close()


def test_sessions_stick_to_their_replica_and_health_and_metrics_add_up(fleet: str):
    envs = [_remote(fleet, token=TOKEN) for _ in range(4)]
    observations = [env.reset(seed=11)[0] for env in envs]
    tags = sorted(env.session_id[:5] for env in envs)
    assert tags == ["r0g0.", "r0g0.", "r1g0.", "r1g0."]  # new sessions take turns
    assert len(set(observations)) == 1  # every replica serves the same task for a seed
    for env in envs:
        assert env.step("<answer>1+2</answer>")[2] is True

    # HTTP: each request of a session goes to its replica (the other one would not know the id)
    opened = [httpx.post(fleet + "/reset", json={"seed": 11}, headers=AUTH, timeout=30).json() for _ in range(2)]
    assert {o["session_id"][:5] for o in opened} == {"r0g0.", "r1g0."}
    for o in opened:
        state = httpx.get(fleet + "/state", params={"session_id": o["session_id"]}, headers=AUTH, timeout=30)
        assert state.status_code == 200 and state.json()["session_id"] == o["session_id"]
        action = {"session_id": o["session_id"], "action": {"text": "<answer>1</answer>"}}
        step = httpx.post(fleet + "/step", json=action, headers=AUTH, timeout=30)
        assert step.status_code == 200 and step.json()["done"] is True

    health = httpx.get(fleet + "/health", timeout=30)  # no token needed, as on one server
    body = health.json()
    assert health.status_code == 200 and body["status"] == "healthy"
    assert [r["replica"] for r in body["replicas"]] == [0, 1]
    assert all(r["status"] == "healthy" for r in body["replicas"])
    assert body["sessions"] == sum(r["sessions"] for r in body["replicas"]) == 6  # four WebSockets, two HTTP
    assert _metric(fleet, "rollgym_steps_total", **AUTH) == 6
    assert _metric(fleet, "rollgym_replicas_alive", **AUTH) == 2
    for env in envs:
        env.close()


def test_the_router_asks_for_the_token_as_one_server_does(fleet: str):
    from rollgym.serve.client import RemoteEnvError

    assert httpx.get(fleet + "/metrics", timeout=30).status_code == 401
    refused = httpx.post(fleet + "/reset", json={"seed": 1}, timeout=30)
    assert refused.status_code == 401 and "token" in refused.json()["detail"]
    forged = httpx.post(fleet + "/step", json={"session_id": "r0g0.x", "action": {"text": "1"}}, timeout=30)
    assert forged.status_code == 401  # a tagged id tells nothing without the token
    with pytest.raises(RemoteEnvError, match="refused the connection"):
        _remote(fleet, token="wrong").reset(seed=1)
    assert httpx.get(f"{fleet}/t/{TOKEN}/envs", timeout=30).json()["default"] == "Countdown-v0"


def test_malformed_and_oversized_requests_get_one_answer_and_the_router_serves_on(fleet: str):
    import socket

    host, port = fleet.removeprefix("http://").split(":")

    def exchange(raw: bytes) -> bytes:
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(raw)
            answer = b""
            try:
                while chunk := sock.recv(65536):
                    answer += chunk
            except ConnectionResetError:  # the router closed with bytes of ours unread
                pass
            return answer

    auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
    assert exchange(b"GET /envs HTTP/1.1\r\nX-Pad: " + b"a" * 70000 + b"\r\n\r\n")[:12] in (b"HTTP/1.1 431", b"")
    assert exchange(b"POST /reset HTTP/1.1\r\n" + auth + b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n").startswith(
        b"HTTP/1.1 411")
    assert exchange(b"POST /reset HTTP/1.1\r\n" + auth + b"Content-Length: 99999999999\r\n\r\n").startswith(
        b"HTTP/1.1 413")
    assert exchange(b"POST /reset HTTP/1.1\r\n" + auth + b"Content-Length: -5\r\n\r\n").startswith(b"HTTP/1.1 413")
    assert exchange(b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert exchange(b"GET /envs HTTP/1.1\r\nbroken header\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert httpx.get(fleet + "/health", timeout=30).json()["status"] == "healthy"


def test_a_head_health_probe_is_answered_at_once_and_is_never_a_lost_episode(fleet: str):
    lost = "rollgym_router_replica_lost_answers_total"
    before = _metric(fleet, lost, **AUTH)
    got = httpx.get(fleet + "/health", timeout=30)
    with httpx.Client(timeout=8) as client:  # one keep-alive connection: a HEAD must not leave it waiting for a body
        for _ in range(3):
            probe = client.head(fleet + "/health")
            assert probe.status_code == 200 and probe.content == b""
            assert int(probe.headers["content-length"]) > 0 and probe.headers["content-type"] == "application/json"
        assert client.head(fleet + "/metrics", headers=AUTH).status_code == 200
        assert client.head(fleet + "/metrics").status_code == 401  # no token: refused, still without a body
        passed = client.head(fleet + "/envs", headers=AUTH)  # a HEAD the router passes to a replica
        assert passed.status_code != 503 and passed.content == b""
        assert client.get(fleet + "/health").json()["status"] == "healthy"  # the connection still works
    assert got.status_code == 200 and _metric(fleet, lost, **AUTH) == before


def test_the_replicas_private_ports_ask_for_the_token_too(fleet: str):
    psutil = pytest.importorskip("psutil")
    pids = [r["pid"] for r in httpx.get(fleet + "/health", timeout=30).json()["replicas"]]
    listening = [c.laddr for pid in pids for c in psutil.Process(pid).net_connections("tcp")
                 if c.status == psutil.CONN_LISTEN]
    assert len(listening) == 2 and all(address.ip == "127.0.0.1" for address in listening)
    for port in [address.port for address in listening]:  # a local user who finds one gets no further
        assert httpx.post(f"http://127.0.0.1:{port}/reset", json={"seed": 1}, timeout=30).status_code == 401


def test_a_killed_replica_fails_its_episodes_honestly_and_they_replay_on_a_live_one():
    from rollgym.serve.client import EnvServerGone

    server = ServeEnvProcess("Countdown-v0", "--replicas", "2")
    url = server.url
    try:
        envs = [_remote(url) for _ in range(2)]
        first = [env.reset(seed=5)[0] for env in envs]
        victim, survivor = sorted(envs, key=lambda e: e.session_id)  # r0g0. then r1g0.
        held = httpx.post(url + "/reset", json={"seed": 5}, timeout=30).json()["session_id"]
        while not held.startswith("r0g0."):
            held = httpx.post(url + "/reset", json={"seed": 5}, timeout=30).json()["session_id"]
        pid = httpx.get(url + "/health", timeout=30).json()["replicas"][0]["pid"]
        os.kill(pid, signal.SIGKILL)  # mid-episode: both sessions were reset, neither stepped

        with pytest.raises(EnvServerGone) as lost:
            victim.step("<answer>1+2</answer>")
        assert lost.value.code == "REPLICA_LOST"
        assert "Replica 0" in str(lost.value) and "SIGKILL" in str(lost.value) and "reset" in str(lost.value)
        assert survivor.step("<answer>1+2</answer>")[2] is True  # the other replica's session goes on
        http_lost = httpx.post(url + "/step", json={"session_id": held, "action": {"text": "1"}}, timeout=30)
        assert http_lost.status_code == 503 and http_lost.json()["code"] == "REPLICA_LOST"

        again = victim.reset(seed=5)[0]  # the client replays the episode: a new session on a live replica
        assert again == first[0] and not victim.session_id.startswith("r0g0.")
        assert victim.step("<answer>1+2</answer>")[2] is True

        wait_for(lambda: httpx.get(url + "/health", timeout=30).json()["replica_restarts"] == 1, "the restart")
        health = httpx.get(url + "/health", timeout=30).json()
        assert health["status"] == "healthy" and health["replicas"][0]["generation"] == 1
        assert health["replicas"][0]["pid"] != pid
        assert _metric(url, "rollgym_router_replica_lost_answers_total") >= 2
        assert _metric(url, "rollgym_replica_restarts_total") == 1
    finally:
        server.close()


def _fleet_pids(url: str) -> list[int]:
    return [r["pid"] for r in httpx.get(url + "/health", timeout=30).json()["replicas"]]


def _kill_both_and_wait_for_restarts(url: str) -> None:
    """SIGKILL every replica, then wait until both are back (so what follows does not race the restarts)."""
    before = httpx.get(url + "/health", timeout=30).json()["replica_restarts"]
    for pid in _fleet_pids(url):
        os.kill(pid, signal.SIGKILL)

    def back() -> bool:
        health = httpx.get(url + "/health", timeout=30).json()
        return health["replica_restarts"] == before + 2 and health["status"] == "healthy"

    wait_for(back, "both replicas to start again")


def _outcome(trajectory) -> tuple:  # type: ignore[no-untyped-def]
    """What a deterministic agent's episode must reproduce: status, reward, task and transcript."""
    return trajectory.status, trajectory.reward, trajectory.task_id, trajectory.messages


def test_a_collect_run_through_replica_kills_loses_no_episode_and_matches_a_fault_free_run(tmp_path):
    """Both replicas SIGKILLed twice in one ``collect``: once while an episode is mid-way (between its reset and
    its step), once between two episodes. Only the mid-way episode fails (REPLICA_LOST, reward None, replayed on
    resume); a kill between episodes fails nothing, because the next reset replays on a restarted replica (why
    the dropped check sometimes saw no failure: its kill could land before the held episode's reset returned)."""
    import threading

    from rollgym.agents import OracleAgent
    from rollgym.rollout import collect
    from rollgym.rollout.store import read_results

    server = ServeEnvProcess("Countdown-v0", "--replicas", "2")
    url = server.url
    env_id = f"{url}/Countdown-v0"
    out = tmp_path / "run.jsonl"
    try:
        reference = collect(OracleAgent(), env_id, n_tasks=20, group_size=2, seed=3)
        expected = {(i, t.sample_idx): _outcome(t) for i, g in enumerate(reference) for t in g.trajectories}
        assert len(expected) == 40 and all(o[0] == "completed" and o[1] == 1.0 for o in expected.values())
        lost_before = _metric(url, "rollgym_router_replica_lost_answers_total")

        held, killed = threading.Event(), threading.Event()

        class HeldOracle(OracleAgent):
            acts = 0

            def act(self, observation, info):  # type: ignore[no-untyped-def]
                HeldOracle.acts += 1
                if HeldOracle.acts == 7:  # episode 7 is reset on its replica; hold it there until the kill
                    held.set()
                    assert killed.wait(300)
                return super().act(observation, info)

        def killer() -> None:
            if held.wait(300):
                _kill_both_and_wait_for_restarts(url)
            killed.set()

        def between_episodes(trajectory) -> None:  # type: ignore[no-untyped-def]
            finished.append(trajectory)
            if len(finished) == 20:  # the collector calls this before it resets the next episode
                _kill_both_and_wait_for_restarts(url)

        finished: list = []
        thread = threading.Thread(target=killer)
        thread.start()
        try:
            groups = collect(HeldOracle(), env_id, n_tasks=20, group_size=2, seed=3, out=str(out),
                             on_episode=between_episodes)
        finally:
            killed.set()
            thread.join()

        got = {(i, t.sample_idx): t for i, g in enumerate(groups) for t in g.trajectories}
        failed = [key for key, t in got.items() if t.status == "failed"]
        assert failed == [(3, 0)]  # the 7th episode, and only it
        failure = got[(3, 0)].info["failure"]
        assert got[(3, 0)].reward is None and failure["stage"] == "step" and failure["retry_on_resume"] is True
        assert "Replica" in failure["message"] and "SIGKILL" in failure["message"]
        assert {k: _outcome(t) for k, t in got.items() if k != (3, 0)} == {
            k: o for k, o in expected.items() if k != (3, 0)}
        assert _metric(url, "rollgym_router_replica_lost_answers_total") >= lost_before + 2  # each kill was seen
        assert len(read_results(out)[0].episodes) == 40  # every episode, the failed one included, is on file

        resumed = collect(OracleAgent(), env_id, n_tasks=20, group_size=2, seed=3, out=str(out))
        assert {(i, t.sample_idx): _outcome(t) for i, g in enumerate(resumed) for t in g.trajectories} == expected
        kept = {(r.task_index, r.trajectory.sample_idx): r.trajectory.traj_id for r in read_results(out)[0].episodes
                if r.trajectory.status == "completed"}
        assert len(kept) == 40  # the 39 finished before the resume stayed, and the failed one was played again
    finally:
        server.close()


def test_a_new_session_sent_to_a_replica_that_just_died_goes_to_a_live_one():
    """The router learns of a replica's death when its process is reaped; a new WebSocket session picked for it
    in between holds nothing there, so it must go to a live replica, not fail its episode's reset."""
    import asyncio
    import queue
    import threading

    from rollgym.serve.replicas import Replica, ReplicaSet
    from rollgym.serve.router import Router
    from rollgym.serve.sessions import ServeConfig

    notice = threading.Event()

    class SlowToNotice(ReplicaSet):
        """Sees a replica's exit only when the test allows it: the window between a death and its notice, held open."""

        async def _watch(self, replica: Replica) -> None:
            await asyncio.get_running_loop().run_in_executor(None, notice.wait)
            await super()._watch(replica)

    fleet = SlowToNotice(ServeConfig(env_ids=("Countdown-v0",)), 2)
    router = Router(fleet)
    loop = asyncio.new_event_loop()
    urls: queue.Queue[str] = queue.Queue()
    thread = threading.Thread(target=lambda: loop.run_until_complete(router.serve("127.0.0.1", 0, urls.put)))
    thread.start()
    try:
        url = urls.get(timeout=180)
        victim = fleet.replicas[0]
        os.kill(victim.pid, signal.SIGKILL)
        wait_for(lambda: _refuses(victim.port), "the killed replica's port to close")
        assert fleet.replicas[0].alive  # the router has not noticed yet

        envs = [_remote(url) for _ in range(2)]  # round robin offers the dead replica to one of them
        observations = [env.reset(seed=4)[0] for env in envs]
        assert [env.session_id[:5] for env in envs] == ["r1g0.", "r1g0."]
        assert observations[0] == observations[1]
        assert all(env.step("<answer>1</answer>")[2] is True for env in envs)
        for env in envs:
            env.close()
    finally:
        notice.set()
        loop.call_soon_threadsafe(router.stop)
        thread.join(timeout=120)
        loop.close()


def _refuses(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError:
        return True
    return False


def test_the_frame_watch_finds_a_clean_close_however_the_bytes_are_cut():
    from rollgym.serve.router import _frame, _FrameWatch

    stream = _frame(0x1, b"x" * 300) + _frame(0x1, b"hi") + _frame(0x8, b"\x03\xe8")
    for cut in (1, 2, 3, 7, 64, len(stream)):
        watch = _FrameWatch()
        for i in range(0, len(stream), cut):
            watch.feed(stream[i:i + cut])
        assert watch.closed and watch.at_boundary
    cut_short = _FrameWatch()
    cut_short.feed(stream[:100])  # the replica died inside the first frame
    assert not cut_short.closed and not cut_short.at_boundary


def test_replica_counts_and_env_arguments_are_checked_with_one_sentence():
    from rollgym.core.errors import ConfigError
    from rollgym.serve.replicas import ReplicaSet
    from rollgym.serve.sessions import ServeConfig

    with pytest.raises(ConfigError, match="replicas must be an integer from 1 to 256"):
        ReplicaSet(ServeConfig(env_ids=("Countdown-v0",)), 0)
    with pytest.raises(ConfigError, match="JSON values"):
        ReplicaSet(ServeConfig(env_ids=("Countdown-v0",), env_kwargs={"x": object()}), 2)


def test_ray_placement_arguments_are_checked_with_one_sentence():
    from rollgym.commands.serve_env import ray_resources
    from rollgym.core.errors import ConfigError
    from rollgym.serve.ray_replicas import RayReplicaSet
    from rollgym.serve.sessions import ServeConfig

    assert ray_resources(["envs=1", "browser=0.5"]) == {"envs": 1.0, "browser": 0.5}
    for bad in ("envs", "envs=-1", "=1", "envs=lots"):
        with pytest.raises(ConfigError, match="--ray-resource takes NAME=AMOUNT"):
            ray_resources([bad])
    with pytest.raises(ConfigError, match="non-negative numbers"):
        RayReplicaSet(ServeConfig(env_ids=("Countdown-v0",)), 2, cpus=-1)


def test_ray_replicas_without_a_token_bind_loopback_and_stay_on_the_routers_node():
    from rollgym.serve.ray_replicas import loopback_refusal, replica_host

    assert replica_host("s3cret", "10.0.0.7") == "10.0.0.7"  # the router on another node reaches it; it asks
    assert replica_host(None, "10.0.0.7") == replica_host("", "10.0.0.7") == "127.0.0.1"  # no token: loopback only
    assert loopback_refusal({"CPU": 2.0, "envs": 1.0}, {"CPU": 1.0, "envs": 1.0}) is None
    refusal = loopback_refusal({"CPU": 2.0}, {"CPU": 1.0, "envs": 1.0, "gpu": 0.0})
    assert refusal is not None and "envs" in refusal and "gpu" not in refusal and "token" in refusal
    assert refusal.count(". ") == 0 and refusal.endswith(".")  # one sentence

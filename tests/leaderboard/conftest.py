"""Leaderboard test helpers: genuine bundles, and real servers started as processes on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import require_module

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Server:
    """A leaderboard server process."""

    url: str
    db: str
    data_dir: Path
    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        """SIGKILL the server (no clean shutdown), as a crash would."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        """Stop the server with SIGTERM, or SIGKILL when it lingers."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(folder: Path, *extra: str, db: str | None = None, allow_limit: bool = True) -> Server:
    """Start ``rollgym leaderboard serve`` on a free port and wait until /api/health answers.

    The test bundles are partial runs (two tasks per entry), so servers accept them by default.
    """
    import httpx

    folder.mkdir(parents=True, exist_ok=True)
    db = db or f"sqlite:///{folder / 'lb.db'}"
    port = free_port()
    log = folder / f"server-{port}.log"
    command = [sys.executable, "-m", "rollgym.cli", "leaderboard", "serve", "--db", db, "--data-dir",
               str(folder / "data"), "--port", str(port), *(["--allow-limit"] if allow_limit else []), *extra]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}", db, folder / "data", process, log)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited: {log.read_text()}")
        try:
            if httpx.get(f"{server.url}/api/health", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    server.kill()
    raise RuntimeError(f"the server did not start: {log.read_text()}")


def add_submitter(db: str, name: str) -> str:
    """Register a submitter through the CLI and return the token."""
    result = subprocess.run([sys.executable, "-m", "rollgym.cli", "leaderboard", "add-submitter", name, "--db", db],
                            capture_output=True, text=True, cwd=REPO, timeout=120, check=True)
    return result.stdout.strip()


def submit(url: str, token: str, data: bytes, **params: object) -> httpx.Response:
    """Upload a bundle archive to a running leaderboard server."""
    return httpx.post(f"{url}/api/submissions", params=params, content=data,
                      headers={"Authorization": f"Bearer {token}", "Content-Type": "application/gzip"}, timeout=60)


def distinct_copy(data: bytes, i: int) -> bytes:
    """The same run's archive with its gzip header's time set to ``i``: byte-distinct, as ``n`` runs would be.

    The leaderboard ranks a byte-identical bundle once (a second upload gets 409), so tests that need
    several accepted submissions of one run upload distinct copies.
    """
    import gzip

    return gzip.compress(gzip.decompress(data), mtime=i)


def submit_concurrently(url: str, token: str, data: bytes, n: int, label: str) -> list[httpx.Response]:
    """Upload ``n`` byte-distinct copies of an archive at once, from ``n`` threads; return every response."""
    responses: list[httpx.Response] = []
    lock = threading.Lock()

    def send(i: int) -> None:
        response = submit(url, token, distinct_copy(data, 1000 + i), label=f"{label}-{i}")
        with lock:
            responses.append(response)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return responses


def wait_for(url: str, submission_id: str, states: set[str], timeout: float = 240) -> dict:
    """Poll a submission until its status is in ``states``."""
    import httpx

    deadline = time.monotonic() + timeout
    status: dict = {}
    while time.monotonic() < deadline:
        status = httpx.get(f"{url}/api/submissions/{submission_id}", timeout=10).json()
        if status.get("status") in states:
            return status
        time.sleep(0.1)
    raise AssertionError(f"submission {submission_id} stayed {status}")


@pytest.fixture(scope="session")
def bundle_archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Genuine .tar.gz bundles of the quick suite (two tasks per entry) for the oracle and random agents."""
    require_module("fastapi")
    from rollgym.benchmarks.runner import AgentSpec, run_suite
    from rollgym.benchmarks.suite import load_suite
    from rollgym.bundles.format import pack_bundle

    root = tmp_path_factory.mktemp("lb-bundles")
    out = {}
    for agent, size in (("oracle", 7.0), ("random", 0.5)):
        run_suite(load_suite("quick"), AgentSpec(agent=agent, label=f"{agent}-agent", model_size_b=size),
                  root / agent, limit=2)
        out[agent] = pack_bundle(root / agent)
    return out


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the test module, with the upload limit its ``UPLOAD_LIMIT_MB`` names."""
    limit = request.module.UPLOAD_LIMIT_MB
    srv = start_server(tmp_path_factory.mktemp("server"), "--max-upload-mb", str(limit))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def token(request: pytest.FixtureRequest, server: Server) -> str:
    """A submitter's token on the module's server, for the user its ``SUBMITTER`` names."""
    return add_submitter(server.db, request.module.SUBMITTER)


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[object]:
    """Start servers for one test; all are stopped afterwards."""
    started: list[Server] = []

    def make(*extra: str, db: str | None = None, folder: Path | None = None) -> Server:
        server = start_server(folder or tmp_path / f"srv{len(started)}", *extra, db=db)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()

#: The oracle's headline score on quick@v4 at two tasks per entry: 6 of 7 entries solved; the Kuhn poker
#: entry's two hands are lost by the equilibrium play (a chance game, see CHANCE_IDS in tests/conftest.py).
ORACLE_SCORE = 6 / 7

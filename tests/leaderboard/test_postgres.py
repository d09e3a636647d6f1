"""The leaderboard on a real PostgreSQL server: submit, concurrent uploads, a restart mid-verification.

A throwaway cluster is created with ``initdb`` in a temporary folder and started with
``pg_ctl`` on 127.0.0.1 and a free port; the leaderboard server runs as a separate
process against ``postgresql+psycopg://``. The test skips when PostgreSQL's server
binaries or the ``psycopg`` driver are missing (``apt-get install postgresql``,
``pip install 'psycopg[binary]'``).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import IN_CI, require_module
from tests.leaderboard.conftest import (
    ORACLE_SCORE,
    add_submitter,
    distinct_copy,
    free_port,
    submit,
    submit_concurrently,
    wait_for,
)


def _missing(message: str) -> None:
    """Skip on a developer machine without PostgreSQL; fail in CI, where .ci/run installs it."""
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _as_postgres_user(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its tools as the ``postgres`` user then."""
    if os.geteuid() != 0:
        return command
    runuser = shutil.which("runuser")
    if runuser is None:
        _missing("running as root without runuser; cannot start PostgreSQL")
    return [runuser, "-u", "postgres", "--", *command]


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL cluster on 127.0.0.1 for this module; yields its SQLAlchemy URL."""
    require_module("fastapi")
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        _missing("PostgreSQL's server is not installed (apt-get install postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _missing("the psycopg driver is not installed (pip install 'psycopg[binary]')")
    folder = Path(tempfile.mkdtemp(prefix="rollgym-pg-"))
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    port = free_port()
    subprocess.run(_as_postgres_user([initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"]),
                   check=True, capture_output=True, timeout=120)
    options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={folder} -c fsync=off"
    subprocess.run(_as_postgres_user([pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "pg.log"), "-w",
                                      "-t", "60", "start"]), check=True, capture_output=True, timeout=120)
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_postgres_user([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]),
                       capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


def _rows(db: str, query: str) -> list[tuple[Any, ...]]:
    from sqlalchemy import create_engine, text

    engine = create_engine(db)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(query))]
    finally:
        engine.dispose()


def test_the_server_works_on_postgresql(postgres_url: str, server_factory: Any, tmp_path: Path,
                                        bundle_archives: dict[str, Path]) -> None:
    folder = tmp_path / "pg"
    first = server_factory("--worker-delay", "30", db=postgres_url, folder=folder)
    token = add_submitter(postgres_url, "pat")
    assert submit(first.url, "wrong-token", bundle_archives["oracle"].read_bytes()).status_code == 401
    assert submit(first.url, token, b"not a bundle").status_code == 400
    sid = submit(first.url, token, bundle_archives["oracle"].read_bytes(), label="pg-oracle").json()["id"]
    wait_for(first.url, sid, {"verifying"})
    first.kill()  # a crash in the middle of verification
    assert _rows(postgres_url, f"SELECT state, attempts FROM jobs WHERE submission_id = '{sid}'") == [("running", 1)]

    second = server_factory(db=postgres_url, folder=folder)
    status = wait_for(second.url, sid, {"accepted", "rejected"})
    assert status["status"] == "accepted" and status["score"] == ORACLE_SCORE and status["attempts"] == 2

    data = bundle_archives["random"].read_bytes()
    responses = submit_concurrently(second.url, token, data, 4, "pg-random")
    assert sorted(r.status_code for r in responses) == [202] * 4
    ids = {r.json()["id"] for r in responses}
    for other in ids:
        assert wait_for(second.url, other, {"accepted", "rejected"})["status"] == "accepted"

    board = httpx.get(f"{second.url}/api/leaderboard/quick@v4", timeout=30).json()
    assert len(board) == 5 and board[0]["label"] == "pg-oracle"
    assert _rows(postgres_url, "SELECT COUNT(*) FROM submissions") == [(5,)]
    assert _rows(postgres_url, "SELECT COUNT(*) FROM jobs WHERE state = 'done' AND attempts = 1") == [(4,)]
    page = httpx.get(f"{second.url}/suite/quick@v4", timeout=30)
    assert page.status_code == 200 and "pg-oracle" in page.text and "<svg" in page.text


def test_tickets_on_postgresql(postgres_url: str, tmp_path: Path, bundle_archives: dict[str, Path]) -> None:
    """The daily limit and single use hold on PostgreSQL too: two uploads racing for one ticket, one wins."""
    import datetime as dt
    import threading

    from rollgym.leaderboard.db import Store, TicketError
    from rollgym.leaderboard.ingest import IngestError, ingest_archive

    store = Store(postgres_url)
    person = store.ensure_submitter("pg-tickets")
    ticket = store.issue_ticket(person, "quick@v4", lambda tid: 0, ttl=dt.timedelta(hours=1), per_day=1)
    try:
        store.issue_ticket(person, "quick@v4", lambda tid: 0, ttl=dt.timedelta(hours=1), per_day=1)
        raise AssertionError("a second ticket within 24 hours was issued")
    except TicketError as exc:
        assert exc.status == 429
    outcomes: list[object] = []
    run = distinct_copy(bundle_archives["oracle"].read_bytes(), 2000)

    def upload(i: int) -> None:
        copy = tmp_path / "data" / "bundles" / f".upload-{i}.tmp"
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(run)  # the oracle's run is on this board already: a copy of its own
        try:
            outcomes.append(ingest_archive(store, copy, person, data_dir=tmp_path / "data", ticket=ticket.id).id)
        except IngestError as exc:
            outcomes.append(exc.status)

    threads = [threading.Thread(target=upload, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(outcomes, key=str) == sorted([409, 409, ticket.id], key=str)
    assert _rows(postgres_url, f"SELECT COUNT(*) FROM submissions WHERE id = '{ticket.id}'") == [(1,)]
    assert len(list((tmp_path / "data" / "bundles").iterdir())) == 1

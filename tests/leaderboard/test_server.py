"""The leaderboard server over real HTTP, against a real SQLite file, with real server processes."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import tarfile
from pathlib import Path

import httpx

from tests.leaderboard.conftest import (
    ORACLE_SCORE,
    Server,
    add_submitter,
    submit,
    submit_concurrently,
    wait_for,
)

# the module's server and token come from tests/leaderboard/conftest.py
UPLOAD_LIMIT_MB = 1
SUBMITTER = "alice"


def _rows(db: str, query: str) -> list[tuple]:
    with sqlite3.connect(db.removeprefix("sqlite:///")) as conn:
        return conn.execute(query).fetchall()


def test_submit_verify_and_rank(server: Server, token: str, bundle_archives: dict[str, Path]) -> None:
    response = submit(server.url, token, bundle_archives["oracle"].read_bytes(), label="oracle-v1", model_size_b=7)
    assert response.status_code == 202, response.text
    sid = response.json()["id"]
    status = wait_for(server.url, sid, {"accepted", "rejected"})
    assert status["status"] == "accepted", status
    assert status["score"] == ORACLE_SCORE and status["attempts"] == 1
    board = httpx.get(f"{server.url}/api/leaderboard/quick@v4", timeout=30).json()
    assert any(row["id"] == sid and row["label"] == "oracle-v1" for row in board)
    page = httpx.get(f"{server.url}/suite/quick@v4", timeout=30)
    assert page.status_code == 200 and "oracle-v1" in page.text and "<svg" in page.text
    detail = httpx.get(f"{server.url}/entry/{sid}", timeout=30)
    assert detail.status_code == 200 and "Accuracy per env" in detail.text
    stored = _rows(server.db, f"SELECT bundle_path, bundle_sha256 FROM submissions WHERE id = '{sid}'")[0]
    assert hashlib.sha256(Path(stored[0]).read_bytes()).hexdigest() == stored[1]


def test_bad_or_missing_token_is_refused(server: Server, bundle_archives: dict[str, Path]) -> None:
    before = _rows(server.db, "SELECT COUNT(*) FROM submissions")[0][0]
    bad = submit(server.url, "not-a-token", bundle_archives["oracle"].read_bytes())
    assert bad.status_code == 401 and "token" in bad.json()["error"]
    none = httpx.post(f"{server.url}/api/submissions", content=b"x", timeout=30)
    assert none.status_code == 401
    assert _rows(server.db, "SELECT COUNT(*) FROM submissions")[0][0] == before


def test_malformed_and_oversized_uploads_are_refused(server: Server, token: str) -> None:
    before = _rows(server.db, "SELECT COUNT(*) FROM submissions")[0][0]
    junk = submit(server.url, token, b"definitely not a gzip archive")
    assert junk.status_code == 400 and "Not a valid bundle" in junk.json()["error"]
    empty = submit(server.url, token, b"")
    assert empty.status_code == 400
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = json.dumps({"hello": 1}).encode()
        member = tarfile.TarInfo("manifest.json")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    not_manifest = submit(server.url, token, buffer.getvalue())
    assert not_manifest.status_code == 400 and "manifest" in not_manifest.json()["error"]
    huge = submit(server.url, token, b"\0" * (2 * 1024 * 1024))
    assert huge.status_code == 413

    def chunks() -> object:  # no Content-Length: the limit is enforced while streaming
        for _ in range(40):
            yield b"\0" * 65536

    streamed = httpx.post(f"{server.url}/api/submissions", content=chunks(), timeout=60,
                          headers={"Authorization": f"Bearer {token}"})
    assert streamed.status_code == 413
    assert _rows(server.db, "SELECT COUNT(*) FROM submissions")[0][0] == before
    leftovers = [p for p in (server.data_dir / "bundles").iterdir() if p.name.startswith(".upload")]
    assert leftovers == []


def test_a_tampered_bundle_is_rejected_with_its_reason(server: Server, token: str, bundle_archives: dict[str, Path],
                                                       tmp_path: Path) -> None:
    from rollgym.bundles.format import open_bundle, pack_bundle

    folder = tmp_path / "tampered"
    with open_bundle(bundle_archives["random"]) as bundle:
        import shutil

        shutil.copytree(bundle.root, folder)
    summary = json.loads((folder / "summary.json").read_text())
    summary["entries"]["countdown"]["accuracy"]["value"] = 0.9
    (folder / "summary.json").write_text(json.dumps(summary))
    sid = submit(server.url, token, pack_bundle(folder).read_bytes()).json()["id"]
    status = wait_for(server.url, sid, {"accepted", "rejected"})
    assert status["status"] == "rejected"
    assert "summary.json claims entries.countdown.accuracy.value = 0.9" in status["reasons"][0]
    board = httpx.get(f"{server.url}/api/leaderboard/quick@v4", timeout=30).json()
    assert sid not in {row["id"] for row in board}


def test_concurrent_submissions_are_all_kept(server: Server, token: str, bundle_archives: dict[str, Path]) -> None:
    data = bundle_archives["random"].read_bytes()
    results = submit_concurrently(server.url, token, data, 6, "random")
    assert sorted(r.status_code for r in results) == [202] * 6
    ids = {r.json()["id"] for r in results}
    assert len(ids) == 6
    for sid in ids:
        assert wait_for(server.url, sid, {"accepted", "rejected"})["status"] == "accepted"
    jobs = _rows(server.db, "SELECT submission_id, state, attempts FROM jobs")
    mine = [j for j in jobs if j[0] in ids]
    assert len(mine) == 6 and all(state == "done" and attempts == 1 for _, state, attempts in mine)
    labels = {row[0] for row in _rows(server.db, "SELECT label FROM submissions WHERE status = 'accepted'")}
    assert {f"random-{i}" for i in range(6)} <= labels


def test_a_restart_in_the_middle_of_verification_loses_nothing(server_factory: object, tmp_path: Path,
                                                                bundle_archives: dict[str, Path]) -> None:
    folder = tmp_path / "restart"
    first = server_factory("--worker-delay", "30", folder=folder)  # type: ignore[operator]
    token = add_submitter(first.db, "bob")
    sid = submit(first.url, token, bundle_archives["oracle"].read_bytes(), label="survivor").json()["id"]
    wait_for(first.url, sid, {"verifying"})
    first.kill()  # a crash: no clean shutdown, the job is left running
    assert _rows(first.db, f"SELECT state, attempts FROM jobs WHERE submission_id = '{sid}'") == [("running", 1)]
    second = server_factory(db=first.db, folder=folder)  # type: ignore[operator]
    status = wait_for(second.url, sid, {"accepted", "rejected"})
    assert status["status"] == "accepted" and status["attempts"] == 2
    assert _rows(second.db, "SELECT COUNT(*) FROM submissions")[0][0] == 1
    assert _rows(second.db, "SELECT COUNT(*) FROM jobs")[0][0] == 1
    assert _rows(second.db, "PRAGMA integrity_check")[0][0] == "ok"


def test_hidden_seeds_need_a_ticket_and_its_seed(server_factory: object, tmp_path: Path) -> None:
    from rollgym.benchmarks.runner import AgentSpec, run_suite
    from rollgym.benchmarks.suite import load_suite
    from rollgym.bundles.format import pack_bundle

    srv = server_factory("--secret", "s3cret")  # type: ignore[operator]
    token = add_submitter(srv.db, "carol")
    public = tmp_path / "public"
    run_suite(load_suite("quick"), AgentSpec(agent="oracle"), public, limit=1, only=["countdown"])
    refused = submit(srv.url, token, pack_bundle(public).read_bytes())
    assert refused.status_code == 400 and "tickets" in refused.json()["error"]
    ticket = httpx.post(f"{srv.url}/api/tickets", params={"suite": "quick"}, timeout=30,
                        headers={"Authorization": f"Bearer {token}"}).json()
    wrong_seed = submit(srv.url, token, pack_bundle(public).read_bytes(), ticket=ticket["submission_id"])
    assert wrong_seed.status_code == 202
    status = wait_for(srv.url, ticket["submission_id"], {"accepted", "rejected"})
    assert status["status"] == "rejected" and "seed" in status["reasons"][0]
    ticket2 = httpx.post(f"{srv.url}/api/tickets", params={"suite": "quick"}, timeout=30,
                         headers={"Authorization": f"Bearer {token}"}).json()
    hidden = tmp_path / "hidden"
    run_suite(load_suite("quick"), AgentSpec(agent="oracle"), hidden, seed=ticket2["seed"], limit=1, only=["countdown"])
    ok = submit(srv.url, token, pack_bundle(hidden).read_bytes(), ticket=ticket2["submission_id"])
    assert ok.status_code == 202
    assert wait_for(srv.url, ticket2["submission_id"], {"accepted", "rejected"})["status"] == "accepted"
    reused = submit(srv.url, token, pack_bundle(hidden).read_bytes(), ticket=ticket2["submission_id"])
    assert reused.status_code == 409 and "was used already" in reused.json()["error"]


def test_partial_runs_are_refused_unless_allowed(tmp_path: Path, bundle_archives: dict[str, Path]) -> None:
    from rollgym.leaderboard.db import Store
    from rollgym.leaderboard.worker import VerificationWorker

    store = Store(f"sqlite:///{tmp_path / 'lb.db'}")
    token = store.add_submitter("dave")
    submitter = store.authenticate(token)
    assert submitter is not None and store.authenticate("wrong") is None
    for sid in ("strict", "lenient"):
        store.enqueue(sid, submitter.id, {"suite": "quick@v4", "bundle_path": str(bundle_archives["oracle"])})
    assert VerificationWorker(store, allow_limit=False).run_once()
    assert VerificationWorker(store, allow_limit=True).run_once()
    assert not VerificationWorker(store).run_once()  # the queue is empty
    strict, lenient = store.get("strict"), store.get("lenient")
    assert strict is not None and strict.status == "rejected" and "needs the full suite" in strict.reasons[0]
    assert lenient is not None and lenient.status == "accepted" and lenient.score == ORACLE_SCORE

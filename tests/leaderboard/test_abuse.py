"""Abuse of the real leaderboard server over real HTTP on 127.0.0.1.

A server process gets malformed, truncated, oversized, bomb, traversal and link archives,
manifests that name files as suites, hostile query strings, bad tokens and concurrent
uploads. Every one must get a 4xx with one sentence (never a 500, never a byte of a server
file), nothing may be left behind, the submission accepted before the abuse must still be
there, and ``/api/health`` must keep answering meanwhile.

Responsiveness is checked two ways. Deterministically: an in-process server whose archive
check is held on a gate answers ``/api/health`` while the upload waits inside the check (the
check runs off the event loop) and while an upload's body is still arriving. And end to end:
a probe in its own process asks for ``/api/health`` again and again during the abuse, each
request with a 5 s client timeout, and every one must be answered (the blocking the issue
found held the server for ~10 s). No test here asserts how fast an answer came: the gate tests
above are the proof that nothing waits on an upload, and timings are left to the benches.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.benchmarks.archives import MIB, bundle_members, member, raw_header, tar_gz, with_manifest, zero_bomb
from tests.leaderboard.conftest import (
    Server,
    add_submitter,
    distinct_copy,
    free_port,
    submit,
    wait_for,
)

CANARY = "canary-5b1e07-do-not-echo"


_PROBE = """
import json, sys, time, httpx
url, stop_file, out_file = sys.argv[1:4]
latencies, failures = [], []
with httpx.Client(timeout=5) as client:
    while True:
        started = time.perf_counter()
        try:
            response = client.get(url + "/api/health")
            if response.status_code != 200 or response.json().get("ok") is not True:
                failures.append(f"{response.status_code} {response.text[:100]}")
        except httpx.HTTPError as exc:
            failures.append(repr(exc))
        latencies.append(time.perf_counter() - started)
        if len(latencies) == 1:
            open(out_file + ".started", "w").close()
        try:
            open(stop_file).close()
            break
        except FileNotFoundError:
            time.sleep(0.02)
json.dump({"latencies": latencies, "failures": failures}, open(out_file, "w"))
"""


class HealthProbe:
    """Polls /api/health from its own process (so the test's upload threads cannot delay it) and times it."""

    def __init__(self, url: str, folder: Path) -> None:
        self.url = url
        self.stop_file = folder / f"probe-{uuid.uuid4().hex}.stop"
        self.out_file = folder / f"probe-{uuid.uuid4().hex}.json"
        self.latencies: list[float] = []
        self.failures: list[str] = []

    def __enter__(self) -> HealthProbe:
        self.process = subprocess.Popen([sys.executable, "-c", _PROBE, self.url, str(self.stop_file),
                                         str(self.out_file)])
        deadline = time.monotonic() + 60
        while not Path(str(self.out_file) + ".started").exists():
            assert self.process.poll() is None and time.monotonic() < deadline, "the health probe did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_file.touch()
        self.process.wait(30)
        result = json.loads(self.out_file.read_text())
        self.latencies, self.failures = result["latencies"], result["failures"]

    def check(self) -> None:
        """Every probe was answered with 200 within its client timeout, and the probe ran through the abuse."""
        assert self.failures == [], self.failures[:3]
        assert len(self.latencies) >= 3


# the module's server (tests/leaderboard/conftest.py) takes 4 MiB uploads, so a 1 MB bomb gets through the door
UPLOAD_LIMIT_MB = 4
SUBMITTER = "mallory"


@pytest.fixture(scope="module")
def baseline(server: Server, token: str, bundle_archives: dict[str, Path]) -> dict[str, Any]:
    """A submission accepted before any abuse; it must survive all of it."""
    response = submit(server.url, token, bundle_archives["oracle"].read_bytes(), label="baseline", model_size_b=7)
    assert response.status_code == 202, response.text
    status = wait_for(server.url, response.json()["id"], {"accepted", "rejected"})
    assert status["status"] == "accepted"
    return status


def _folder(bundle_archives: dict[str, Path], agent: str = "oracle") -> Path:
    return bundle_archives[agent].with_name(bundle_archives[agent].name.removesuffix(".tar.gz"))


def _count(db: str, query: str = "SELECT COUNT(*) FROM submissions") -> int:
    with sqlite3.connect(db.removeprefix("sqlite:///")) as conn:
        return int(conn.execute(query).fetchone()[0])


def _leftovers(server: Server) -> list[str]:
    return [p.name for p in (server.data_dir / "bundles").iterdir() if p.name.startswith(".")]


def _secret_lines() -> list[str]:
    lines = []
    for name in ("/etc/shadow", "/etc/passwd"):
        path = Path(name)
        if path.is_file() and os.access(path, os.R_OK):
            lines += [line for line in path.read_text().splitlines() if len(line) > 8]
    return lines


def _hostile_archives(folder: Path, tmp_path: Path) -> dict[str, tuple[bytes, str]]:
    """Name -> (upload body, a phrase the refusal must contain)."""
    members = bundle_members(folder)
    manifest = members[0]
    transcripts = [m for m in members if m[0].name.startswith("transcripts/")]
    secret = tmp_path / "secret-suite.yaml"
    secret.write_text(f"{CANARY}: 1\nname: {CANARY}\n")
    genuine = tar_gz(members)
    noise = random.Random(0).randbytes(5000)

    def manifest_of(edit: Any) -> bytes:
        return with_manifest(folder, edit)

    return {
        "bomb-980MiB": (zero_bomb(980 * MIB, [manifest]), "unpacks to more than 512 MiB"),
        "bomb-ratio": (zero_bomb(400 * MIB, [manifest]), "expands more than 200 times"),
        "bomb-pax": (gzip.compress(raw_header("PaxHeader/x", b"x", 900 * MIB)) + gzip.compress(b"\0" * MIB) * 3,
                     "pax extended header"),
        "bomb-members": (tar_gz([manifest] + [member(f"transcripts/e{i}.jsonl", b"{}\n") for i in range(300)]),
                         "more than 256 members"),
        "random-bytes": (noise, "not gzip data"),
        "gzip-of-junk": (gzip.compress(noise), "corrupt header"),
        "truncated": (genuine[: len(genuine) // 2], "corrupt or truncated"),
        "truncated-tail": (genuine[:-4], "corrupt or truncated"),
        "traversal": (tar_gz([*members, member("../../escape.json", b"{}")]), "unsafe path"),
        "absolute": (tar_gz([*members, member("/tmp/rollgym-abuse-absolute.json", b"{}")]), "unsafe path"),
        "symlink": (tar_gz([manifest, member("transcripts/countdown.jsonl", kind=b"2", linkname="/etc/shadow")]),
                    "symbolic link"),
        "hardlink": (tar_gz([manifest, member("summary.json", kind=b"1", linkname="/etc/shadow")]), "hard link"),
        "device": (tar_gz([manifest, member("summary.json", kind=b"3")]), "character device"),
        "fifo": (tar_gz([manifest, member("summary.json", kind=b"6")]), "FIFO"),
        "foreign-file": (tar_gz([*members, member("run.py", b"import os")]), "not part of a bundle"),
        "no-manifest": (tar_gz(transcripts), "has no manifest.json"),
        "manifest-not-json": (tar_gz([member("manifest.json", b"{not json"), *transcripts]), "not valid JSON"),
        "manifest-deep": (tar_gz([member("manifest.json", b"[" * 200_000), *transcripts]), "not valid JSON"),
        "manifest-list": (tar_gz([member("manifest.json", b"[]"), *transcripts]), "not a rollgym bundle manifest"),
        "manifest-types": (manifest_of(lambda m: m.update(agent="oracle")), "agent must be an object"),
        "manifest-nan-size": (manifest_of(lambda m: m["agent"].update(model_size_b=1e309)), "model_size_b"),
        "incomplete": (manifest_of(lambda m: m.update(complete=False)), "did not finish"),
        "suite-shadow": (manifest_of(lambda m: m["suite"].update(name="/etc/shadow")), "Unknown suite"),
        "suite-passwd": (manifest_of(lambda m: m["suite"].update(name="../../../../etc/passwd")), "Unknown suite"),
        "suite-canary": (manifest_of(lambda m: m["suite"].update(name=str(secret))), "built-in suite"),
        "suite-yaml": (manifest_of(lambda m: m["suite"].update(name="quick.yaml")), "Unknown suite"),
        "suite-version": (manifest_of(lambda m: m["suite"].update(version=7)), "suite.version is 7"),
    }


def test_hostile_uploads_get_one_sentence_and_leave_nothing(server: Server, token: str, baseline: dict[str, Any],
                                                            bundle_archives: dict[str, Path], tmp_path: Path) -> None:
    before = _count(server.db)
    secrets = _secret_lines()
    with HealthProbe(server.url, tmp_path) as probe:
        for name, (body, phrase) in _hostile_archives(_folder(bundle_archives), tmp_path).items():
            response = submit(server.url, token, body)
            assert response.status_code == 400, (name, response.status_code, response.text[:300])
            error = response.json()["error"]
            assert phrase in error, (name, error)
            assert CANARY not in response.text and not any(line in response.text for line in secrets), name
            assert len(error) < 600 and "\n" not in error, (name, error)
    probe.check()
    assert _count(server.db) == before
    assert _leftovers(server) == []
    assert not Path("/tmp/rollgym-abuse-absolute.json").exists()
    assert not (server.data_dir.parent / "escape.json").exists()


def test_bombs_and_genuine_uploads_at_once(server: Server, token: str, baseline: dict[str, Any],
                                           bundle_archives: dict[str, Path], tmp_path: Path) -> None:
    manifest = bundle_members(_folder(bundle_archives))[0]
    bombs = [zero_bomb(980 * MIB, [manifest]), zero_bomb(400 * MIB, [manifest])] * 2  # 8 uploads: every slot
    genuine = bundle_archives["random"].read_bytes()
    results: dict[str, list[httpx.Response]] = {"bomb": [], "genuine": []}
    lock = threading.Lock()

    def send(kind: str, body: bytes, i: int) -> None:
        response = submit(server.url, token, body, label=f"{kind}-{i}")
        with lock:
            results[kind].append(response)

    threads = [threading.Thread(target=send, args=("bomb", b, i)) for i, b in enumerate(bombs)]
    threads += [threading.Thread(target=send, args=("genuine", distinct_copy(genuine, i), i)) for i in range(4)]
    with HealthProbe(server.url, tmp_path) as probe:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    probe.check()
    assert sorted(r.status_code for r in results["bomb"]) == [400] * 4
    assert sorted(r.status_code for r in results["genuine"]) == [202] * 4
    for response in results["genuine"]:
        assert wait_for(server.url, response.json()["id"], {"accepted", "rejected"})["status"] == "accepted"
    assert _leftovers(server) == []


def test_oversized_and_cut_off_uploads(server: Server, token: str, baseline: dict[str, Any]) -> None:
    before = _count(server.db)
    assert submit(server.url, token, b"\0" * (5 * MIB)).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit holds while streaming
        for _ in range(100):
            yield b"\0" * 65536

    streamed = httpx.post(f"{server.url}/api/submissions", content=chunks(), timeout=60,
                          headers={"Authorization": f"Bearer {token}"})
    assert streamed.status_code == 413
    assert submit(server.url, token, b"").status_code == 400
    # a client that announces a megabyte, sends half and hangs up
    port = int(server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"POST /api/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                     f"Content-Length: {MIB}\r\n\r\n".encode() + b"\x1f\x8b" + b"\0" * (MIB // 2))
    deadline = time.monotonic() + 30
    while httpx.get(f"{server.url}/api/health", timeout=5).json()["uploads_in_progress"]:
        assert time.monotonic() < deadline, "the cut-off upload never ended"
        time.sleep(0.05)
    assert httpx.get(f"{server.url}/api/health", timeout=5).json() == {"ok": True, "uploads_in_progress": 0}
    assert _count(server.db) == before and _leftovers(server) == []


@pytest.mark.parametrize("params", [
    {"label": "x" * 201}, {"label": "tab\there"}, {"model_size_b": "nan"}, {"model_size_b": "inf"},
    {"model_size_b": "-7"}, {"model_size_b": "1e308"}, {"ticket": "0" * 32},
])
def test_hostile_query_strings_are_refused(server: Server, token: str, bundle_archives: dict[str, Path],
                                           params: dict[str, str]) -> None:
    before = _count(server.db)
    response = submit(server.url, token, bundle_archives["oracle"].read_bytes(), **params)
    assert response.status_code == 400, response.text
    assert _count(server.db) == before
    board = httpx.get(f"{server.url}/api/leaderboard/quick@v4", timeout=30)
    assert board.status_code == 200  # no NaN reached the database to break the JSON


def test_not_found_pages_reflect_nothing(server: Server) -> None:
    evil = "%3Cscript%3Ealert(1)%3C%2Fscript%3E"
    for path in (f"/suite/{evil}", f"/suite/quick@v4/env/{evil}", f"/entry/{evil}", f"/submitter/{evil}"):
        response = httpx.get(f"{server.url}{path}", timeout=30)
        assert response.status_code == 404 and "<script>" not in response.text, path
    assert httpx.get(f"{server.url}/api/submitters/{evil}", timeout=30).status_code == 404


def _raw_request(url: str, path: str, header_lines: list[bytes], body: bytes) -> tuple[int, dict[str, Any]]:
    """Send one HTTP/1.1 POST with exactly these header bytes (clients refuse some of them); return status and JSON."""
    port = int(url.rsplit(":", 1)[1])
    head = b"POST " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    head += b"".join(line + b"\r\n" for line in header_lines)
    head += f"Content-Length: {len(body)}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + body)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    raw = b"".join(chunks)
    status = int(raw.split(b" ", 2)[1])
    payload = raw.split(b"\r\n\r\n", 1)[1]
    return status, json.loads(payload) if payload.startswith(b"{") else {}


@pytest.mark.parametrize("header", [
    None, b"", b"Bearer", b"Bearer ", b"Bearer    ", b"Basic bWFsbG9yeTpwdw==", b"Bearer wrong-token",
    b"bearer " + b"A" * 8000, "Bearer \u00e9\u00e8".encode(), b"Bearer \xff\xfe", b"Bearer ' OR 1=1 --",
])
def test_bad_tokens_are_refused(server: Server, token: str, bundle_archives: dict[str, Path],
                                header: bytes | None) -> None:
    before = _count(server.db)
    lines = [] if header is None else [b"Authorization: " + header]
    status, answer = _raw_request(server.url, "/api/submissions", lines, bundle_archives["oracle"].read_bytes())
    assert status == 401 and "token" in answer["error"], (status, answer)
    assert _raw_request(server.url, "/api/tickets", lines, b"")[0] == 401
    # the right token with one character changed is refused too
    altered = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert _raw_request(server.url, "/api/submissions", [b"Authorization: Bearer " + altered.encode()], b"x")[0] == 401
    assert _count(server.db) == before


def test_too_many_uploads_at_once_get_503(server: Server, token: str, baseline: dict[str, Any]) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    request = (f"POST /api/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
               f"Content-Length: 100000\r\n\r\n").encode() + b"\x1f\x8b"
    held = []
    try:
        for _ in range(8):  # eight slow uploads hold every upload slot
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(request)
            held.append(sock)
        deadline = time.monotonic() + 30
        while httpx.get(f"{server.url}/api/health", timeout=5).json()["uploads_in_progress"] < 8:
            assert time.monotonic() < deadline, "the slow uploads never reached the handler"
            time.sleep(0.05)
        refused = submit(server.url, token, b"\x1f\x8b")
        assert refused.status_code == 503 and refused.headers["retry-after"] == "60"
        assert httpx.get(f"{server.url}/api/health", timeout=5).status_code == 200
    finally:
        for sock in held:
            sock.close()


def test_a_bundle_is_ranked_once(server: Server, token: str, baseline: dict[str, Any],
                                  bundle_archives: dict[str, Path]) -> None:
    """The same archive again, from its submitter or anyone else, alone or four at once: 409, nothing written."""
    before = _count(server.db)
    again = submit(server.url, token, bundle_archives["oracle"].read_bytes(), label="baseline again")
    assert again.status_code == 409, again.text
    assert baseline["id"] in again.json()["error"] and "submitted already" in again.json()["error"]
    other = add_submitter(server.db, "copier")
    copied = submit(server.url, other, bundle_archives["oracle"].read_bytes(), label="my own run")
    assert copied.status_code == 409 and baseline["id"] in copied.json()["error"]
    assert _count(server.db) == before and _leftovers(server) == []
    # four identical uploads racing: one is queued, three are refused
    data = distinct_copy(bundle_archives["random"].read_bytes(), 7)
    racing = []
    lock = threading.Lock()

    def send(i: int) -> None:
        response = submit(server.url, token, data, label=f"race-{i}")
        with lock:
            racing.append(response)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(r.status_code for r in racing) == [202, 409, 409, 409], [r.text[:200] for r in racing]
    winner = next(r.json()["id"] for r in racing if r.status_code == 202)
    assert wait_for(server.url, winner, {"accepted", "rejected"})["status"] == "accepted"
    assert _count(server.db) == before + 1 and _leftovers(server) == []
    assert submit(server.url, token, data).status_code == 409  # still ranked once after verification


def test_a_rejected_bundle_may_be_uploaded_again_and_an_accepted_one_may_not(tmp_path: Path) -> None:
    """A rejection (say, an infrastructure failure during verification) leaves the bundle free to verify again."""
    from sqlalchemy import update

    from rollgym.leaderboard.db import DuplicateBundleError, Store, Submission

    store = Store(f"sqlite:///{tmp_path / 'lb.db'}")
    person = store.ensure_submitter("alice")
    fields = {"suite": "quick@v4", "bundle_sha256": "ab" * 32}
    first = store.enqueue("first", person, fields)
    with pytest.raises(DuplicateBundleError, match="submission first"):
        store.enqueue("second", person, fields)
    with store.session() as s:
        s.execute(update(Submission).where(Submission.id == first.id).values(status="rejected"))
    again = store.enqueue("again", person, fields)
    with store.session() as s:
        s.execute(update(Submission).where(Submission.id == again.id).values(status="accepted"))
    with pytest.raises(DuplicateBundleError, match=r"submission again \(accepted\)"):
        store.enqueue("third", person, fields)
    assert store.get("second") is None and store.get("third") is None and store.job_of("second") is None


def test_nothing_earlier_is_lost(server: Server, baseline: dict[str, Any]) -> None:
    status = httpx.get(f"{server.url}/api/submissions/{baseline['id']}", timeout=30).json()
    assert status["status"] == "accepted" and status["score"] == baseline["score"] and status["label"] == "baseline"
    board = httpx.get(f"{server.url}/api/leaderboard/quick@v4", timeout=30).json()
    assert baseline["id"] in {row["id"] for row in board}
    assert _count(server.db, "SELECT COUNT(*) FROM submissions WHERE status NOT IN ('accepted')") == 0
    with sqlite3.connect(server.db.removeprefix("sqlite:///")) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = {p.name.split(".")[0] for p in (server.data_dir / "bundles").iterdir() if not p.name.startswith(".")}
    assert stored == {row["id"] for row in httpx.get(f"{server.url}/api/submissions", timeout=30).json()}


# -- deterministic: the event loop answers while an upload is inside the archive check ------------


@pytest.fixture
def inproc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str, threading.Event,
                                                                               threading.Event]]:
    """An in-process server (real uvicorn, real HTTP) whose archive check waits on a gate."""
    import uvicorn

    from rollgym.leaderboard import ingest
    from rollgym.leaderboard.db import Store
    from rollgym.leaderboard.server import Settings, create_app

    entered, release = threading.Event(), threading.Event()
    real = ingest.check_bundle_archive

    def gated(path: Any, limits: Any) -> Any:
        entered.set()
        assert release.wait(60), "the test never released the check"
        return real(path, limits)

    monkeypatch.setattr(ingest, "check_bundle_archive", gated)
    db = f"sqlite:///{tmp_path / 'lb.db'}"
    token = Store(db).add_submitter("gatekeeper")
    port = free_port()
    app = create_app(Settings(db_url=db, data_dir=str(tmp_path / "data"), worker=False, allow_limit=True))
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not uv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    yield url, token, entered, release
    release.set()
    uv.should_exit = True
    thread.join(15)


def test_health_answers_while_an_upload_is_inside_the_check(inproc: tuple[str, str, threading.Event,
                                                                           threading.Event],
                                                             bundle_archives: dict[str, Path]) -> None:
    url, token, entered, release = inproc
    outcome: list[httpx.Response] = []
    upload = threading.Thread(target=lambda: outcome.append(submit(url, token, bundle_archives["oracle"].read_bytes())))
    upload.start()
    assert entered.wait(30), "the upload never reached the archive check"
    # the check is running (held) in a worker thread: the loop still answers everything else
    assert httpx.get(f"{url}/api/health", timeout=5).json() == {"ok": True, "uploads_in_progress": 1}
    assert httpx.get(f"{url}/api/leaderboard/quick@v4", timeout=5).status_code == 200
    assert httpx.get(f"{url}/", timeout=5).status_code == 200
    assert upload.is_alive() and outcome == []
    release.set()
    upload.join(60)
    assert outcome and outcome[0].status_code == 202, outcome


def test_health_answers_while_an_upload_body_is_arriving(inproc: tuple[str, str, threading.Event,
                                                                       threading.Event],
                                                         bundle_archives: dict[str, Path]) -> None:
    url, token, _entered, release = inproc
    release.set()
    data = bundle_archives["oracle"].read_bytes()
    first_sent, more = threading.Event(), threading.Event()

    def body() -> Iterator[bytes]:
        yield data[:1000]
        first_sent.set()
        assert more.wait(60)
        yield data[1000:]

    outcome: list[httpx.Response] = []
    upload = threading.Thread(target=lambda: outcome.append(httpx.post(
        f"{url}/api/submissions", content=body(), timeout=60, headers={"Authorization": f"Bearer {token}"})))
    upload.start()
    assert first_sent.wait(30)
    deadline = time.monotonic() + 30
    while httpx.get(f"{url}/api/health", timeout=5).json()["uploads_in_progress"] != 1:
        assert time.monotonic() < deadline, "the upload never reached the handler"
        time.sleep(0.02)
    assert outcome == [] and upload.is_alive()
    more.set()
    upload.join(60)
    assert outcome and outcome[0].status_code == 202, outcome

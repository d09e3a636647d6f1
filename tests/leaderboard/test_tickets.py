"""Hidden-seed tickets and self-reported identity, on a real server and a real SQLite file.

Seed shopping (asking for many seeds and uploading only the best run) cannot be prevented,
so it is made expensive and visible: tickets are single-use, expire, are limited per
submitter per day, and every ticket ever issued is listed on the submitter's public page.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from rollgym.benchmarks.runner import AgentSpec, run_suite
from rollgym.benchmarks.suite import load_suite
from rollgym.bundles.format import pack_bundle
from rollgym.leaderboard.verify import hidden_seed
from tests.leaderboard.conftest import Server, add_submitter, submit, wait_for

SECRET = "s3cret-for-tests"


def _ticket(srv: Server, token: str, suite: str = "quick") -> httpx.Response:
    return httpx.post(f"{srv.url}/api/tickets", params={"suite": suite}, timeout=30,
                      headers={"Authorization": f"Bearer {token}"})


def _run(tmp_path: Path, seed: int, name: str) -> bytes:
    folder = tmp_path / name
    run_suite(load_suite("quick"), AgentSpec(agent="oracle"), folder, seed=seed, limit=1, only=["countdown"])
    return pack_bundle(folder).read_bytes()


def test_tickets_are_single_use_limited_and_public(server_factory: Any, tmp_path: Path) -> None:
    srv = server_factory("--secret", SECRET, "--tickets-per-day", "3")
    alice, bob = add_submitter(srv.db, "alice"), add_submitter(srv.db, "bob")
    issued = [_ticket(srv, alice), _ticket(srv, alice), _ticket(srv, alice, "search")]
    assert [r.status_code for r in issued] == [201, 201, 201]
    t1, t2, t3 = (r.json() for r in issued)
    assert t3["suite"] == "search@v1" and all(t["seed"] == hidden_seed(SECRET, t["ticket"]) for t in (t1, t2, t3))
    assert dt.datetime.fromisoformat(t1["expires"]) - dt.datetime.fromisoformat(t1["issued"]) == dt.timedelta(hours=48)
    fourth = _ticket(srv, alice)
    assert fourth.status_code == 429 and "3 tickets in the last 24 hours" in fourth.json()["error"]
    assert _ticket(srv, bob).status_code == 201  # the limit is per submitter
    for suite, needle in (("/etc/shadow", "Unknown suite"), ("quick@vx", "version"),
                          ("quick@v7", "has no version 7; this rollgym ships quick@v2, quick@v3 and quick@v4")):
        refused = _ticket(srv, bob, suite)
        assert refused.status_code == 400 and needle in refused.json()["error"] and "root:" not in refused.text

    bundle1 = _run(tmp_path, t1["seed"], "t1")
    foreign = submit(srv.url, bob, bundle1, ticket=t1["ticket"])
    assert foreign.status_code == 403 and "another submitter" in foreign.json()["error"]
    wrong_suite = submit(srv.url, alice, bundle1, ticket=t3["ticket"])
    assert wrong_suite.status_code == 400 and "is for search@v1, but the bundle is for quick@v4" in \
        wrong_suite.json()["error"]
    junk = submit(srv.url, alice, bundle1, ticket="f" * 32)
    assert junk.status_code == 400 and "does not exist" in junk.json()["error"]
    first = submit(srv.url, alice, bundle1, ticket=t1["ticket"], label="alice-oracle")
    assert first.status_code == 202 and first.json()["id"] == t1["ticket"]
    assert wait_for(srv.url, t1["ticket"], {"accepted", "rejected"})["status"] == "accepted"
    again = submit(srv.url, alice, bundle1, ticket=t1["ticket"])
    assert again.status_code == 409 and "was used already" in again.json()["error"]

    # two uploads racing for one ticket: exactly one wins
    bundle2 = _run(tmp_path, t2["seed"], "t2")
    answers: list[httpx.Response] = []
    threads = [threading.Thread(target=lambda: answers.append(submit(srv.url, alice, bundle2, ticket=t2["ticket"])))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(r.status_code for r in answers) == [202, 409]
    wait_for(srv.url, t2["ticket"], {"accepted", "rejected"})

    # everything is public, without a token: all three tickets, the open one's seed hidden
    public = httpx.get(f"{srv.url}/api/submitters/alice", timeout=30).json()
    states = {t["ticket"]: (t["state"], t["seed"]) for t in public["tickets"]}
    assert states == {t1["ticket"]: ("used", t1["seed"]), t2["ticket"]: ("used", t2["seed"]),
                      t3["ticket"]: ("open", None)}
    page = httpx.get(f"{srv.url}/submitter/alice", timeout=30)
    assert page.status_code == 200 and "3 ticket(s) issued, 2 uploaded" in page.text
    assert all(t["ticket"] in page.text for t in (t1, t2, t3))
    assert httpx.get(f"{srv.url}/api/submissions/{t3['ticket']}", timeout=30).json()["status"] == "issued"
    board = httpx.get(f"{srv.url}/api/leaderboard/quick@v4", timeout=30).json()
    assert {row["tickets"]["issued"] for row in board} == {2} and {row["tickets"]["used"] for row in board} == {2}
    ranking = httpx.get(f"{srv.url}/suite/quick@v4", timeout=30).text
    assert "tickets used/issued" in ranking and ">2/2<" in ranking


def test_an_expired_ticket_is_refused_and_stays_listed(tmp_path: Path) -> None:
    from rollgym.leaderboard.db import Store, TicketError, utcnow
    from rollgym.leaderboard.ingest import IngestError, ingest_archive
    from rollgym.leaderboard.pages import Links
    from rollgym.leaderboard.site import submitter_page

    store = Store(f"sqlite:///{tmp_path / 'lb.db'}")
    person = store.ensure_submitter("carol")
    start = utcnow() - dt.timedelta(hours=3)
    ticket = store.issue_ticket(person, "quick@v4", lambda tid: hidden_seed(SECRET, tid), ttl=dt.timedelta(hours=1),
                                per_day=1, now=start)
    with pytest.raises(TicketError, match="in the last 24 hours"):
        store.issue_ticket(person, "quick@v4", lambda tid: 1, ttl=dt.timedelta(hours=1), per_day=1,
                           now=start + dt.timedelta(hours=23))
    archive = tmp_path / "data" / "bundles" / ".upload.tmp"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(_run(tmp_path, ticket.seed, "run"))
    expiry = f"expired at {start + dt.timedelta(hours=1):%Y-%m-%d %H:%M} UTC"
    with pytest.raises(IngestError, match=expiry) as info:
        ingest_archive(store, archive, person, data_dir=tmp_path / "data", ticket=ticket.id)
    assert info.value.status == 410 and not archive.exists()
    assert store.get(ticket.id) is None and list((tmp_path / "data" / "bundles").iterdir()) == []
    html = submitter_page(store, "carol", Links())
    assert html is not None and ticket.id in html and 'data-state="expired"' in html and str(ticket.seed) in html
    # a day after the first ticket, the next one can be issued
    store.issue_ticket(person, "quick@v4", lambda tid: 1, ttl=dt.timedelta(hours=1), per_day=1,
                       now=start + dt.timedelta(hours=25))
    assert len(store.tickets_of(person)) == 2


def test_identity_is_shown_as_self_reported(server_factory: Any, tmp_path: Path,
                                            bundle_archives: dict[str, Path]) -> None:
    """The oracle relabelled as a famous LLM verifies (replay cannot see who acted), and says so."""
    source = bundle_archives["oracle"].with_name("oracle")
    folder = tmp_path / "relabelled"
    shutil.copytree(source, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["agent"] = {"kind": "model", "agent": None, "model": "gpt-9-ultra", "sampling": {},
                         "label": "<script>alert(1)</script>GPT-9", "model_size_b": 1800}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    for path in (folder / "transcripts").glob("*.jsonl"):
        lines = path.read_text().splitlines()
        header = json.loads(lines[0])
        header["agent"] = "llm"
        path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    srv = server_factory()
    token = add_submitter(srv.db, "eve")
    sid = submit(srv.url, token, pack_bundle(folder).read_bytes()).json()["id"]
    assert wait_for(srv.url, sid, {"accepted", "rejected"})["status"] == "accepted"
    row = httpx.get(f"{srv.url}/api/leaderboard/quick@v4", timeout=30).json()[0]
    assert row["self_reported"] == {"label": "<script>alert(1)</script>GPT-9", "model_size_b": 1800,
                                    "agent_kind": "model", "agent": None, "model": "gpt-9-ultra"}
    status = httpx.get(f"{srv.url}/api/submissions/{sid}", timeout=30).json()
    assert status["self_reported"]["model"] == "gpt-9-ultra"
    for path in ("/suite/quick@v4", f"/entry/{sid}", "/submitter/eve", "/"):
        html = httpx.get(f"{srv.url}{path}", timeout=30).text
        assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;GPT-9" in html, path
    ranking = httpx.get(f"{srv.url}/suite/quick@v4", timeout=30).text
    assert "model †" in ranking and "size (B) †" in ranking and "Self-reported: the submitter names" in ranking
    entry = httpx.get(f"{srv.url}/entry/{sid}", timeout=30).text
    assert "(self-reported name)" in entry and "agent (self-reported)" in entry and "gpt-9-ultra" in entry
    assert "model size (self-reported)" in entry and "recomputed by replaying" in entry

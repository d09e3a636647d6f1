"""The generated app pool: its size, distinct schemas, held-out apps disjoint from train by content, the
schemas' constraints in SQLite, and determinism across processes."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys

import pytest

from rollgym.envs.tools.generated import catalog, stats
from rollgym.envs.tools.generated.domains import DOMAINS
from rollgym.envs.tools.generated.schema import generate_schema, renamed
from rollgym.envs.tools.generated.source import ToolGenTaskSource
from rollgym.envs.tools.generated.store import build_app
from rollgym.envs.tools.generated.tools import build_tools, tool_names
from tests.conftest import REPO


def test_the_pool_meets_the_counts():
    counts = stats()
    assert counts["generated_apps"] == 256 >= 200
    assert counts["tools"] >= 2000 and counts["templates"] >= 500
    assert counts["test_unseen_apps"] == 48 and counts["seen_apps"] == 208
    assert counts["template_kinds"] == 16 and counts["cross_app_kinds"] == 4
    assert all(n > 0 for n in counts["templates_per_kind"].values()), counts["templates_per_kind"]
    assert (counts["handwritten_apps"], counts["handwritten_tools"], counts["handwritten_templates"]) == (6, 53, 41)


def test_every_app_has_a_distinct_schema():
    digests = [s.digest() for s in catalog.pool().schemas.values()]
    assert len(digests) == len(set(digests)) == 256


def test_test_unseen_schemas_never_appear_in_train():
    """Disjoint by the content hash of the schema (the structure, not the app's name), and by domain."""
    pool = catalog.pool()
    train = {pool.schemas[a].digest() for a in catalog.app_ids("train")}
    unseen = {pool.schemas[a].digest() for a in catalog.app_ids("test_unseen")}
    assert train and unseen and not train & unseen
    assert {pool.schemas[a].domain for a in catalog.app_ids("test_unseen")} == set(pool.unseen_domains)
    assert not {pool.schemas[a].domain for a in catalog.app_ids("train")} & set(pool.unseen_domains)
    # the same structure under another name is the same schema: a renamed train app is no new app
    some = pool.schemas[catalog.app_ids("train")[0]]
    assert renamed(some, "other_name", "Other Name").digest() == some.digest()
    # validation and test use the train apps (same apps, new tasks)
    assert catalog.app_ids("test") == catalog.app_ids("validation") == catalog.app_ids("train")


def test_test_unseen_tasks_use_only_held_out_apps_and_train_tasks_none():
    unseen = set(catalog.app_ids("test_unseen"))
    source = ToolGenTaskSource()
    for index in range(40):
        assert set(source.task(index, "test_unseen").meta["world"]) <= unseen
        assert not set(source.task(index, "train").meta["world"]) & unseen


def test_train_and_test_tasks_are_disjoint_by_content():
    source = ToolGenTaskSource()

    def key(task):
        return json.dumps([task.meta["template"], task.meta["params"]], sort_keys=True)

    train = {key(source.task(i, "train")) for i in range(150)}
    test = {key(source.task(i, "test")) for i in range(60)}
    assert not train & test


def test_tool_names_are_valid_openai_names_and_counted_without_building():
    for s in list(catalog.pool().schemas.values())[::9]:
        built = build_tools(s)
        assert list(built) == tool_names(s)
        for name, spec in built.items():
            assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name), name
            assert spec.schema["function"]["name"] == name and spec.schema["function"]["description"]
            verbs = ("create", "update", "delete", *(a.verb for a in s.actions))
            assert spec.writes == any(name.endswith(f"_{v}") for v in verbs), name


def test_all_tool_names_fit_openai_limits():
    for s in catalog.pool().schemas.values():
        assert all(len(n) <= 64 for n in tool_names(s)), s.app_id


def test_the_database_enforces_the_schema_constraints():
    """Beyond the tools' own checks: NOT NULL, UNIQUE and enum CHECKs are in the SQLite schema."""
    s = generate_schema(DOMAINS[0], 0)
    app = build_app(s)
    conn = app.copy()
    party = s.party
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(f'INSERT INTO "{party.table}" (name, email) VALUES (?, ?)',
                     ("Someone New", app.table(party)[0]["email"]))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(f'UPDATE "{s.record.table}" SET status = ? WHERE id = 1', ("teleported",))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(f'INSERT INTO "{party.table}" (name) VALUES (?)', ("No Email",))


def test_every_status_and_both_kinds_of_party_and_item_rows_exist_in_every_app():
    """The population guarantees what the templates need: every status, a party and an item with no record."""
    for app_id in catalog.app_ids()[::7]:
        app = catalog.app(app_id)
        s = app.schema
        records = app.table(s.record)
        assert {r["status"] for r in records} == set(s.statuses), app_id
        held = {r[f"{s.party.name}_id"] for r in records}
        assert any(p["id"] not in held for p in app.table(s.party)), app_id


_PROBE = """
import json, hashlib
from rollgym.envs.tools.generated import catalog
from rollgym.envs.tools.generated.source import ToolGenTaskSource
source = ToolGenTaskSource()
out = {"digests": [s.digest() for s in catalog.pool().schemas.values()],
       "tasks": [[source.task(i, split).id, source.task(i, split).prompt] for split in ("train", "test", "test_unseen")
                 for i in range(8)],
       "db": [hashlib.sha256(repr(catalog.app(a).snapshot().rows).encode()).hexdigest()
              for a in catalog.app_ids()[::40]]}
print(json.dumps(out))
"""


def test_apps_and_tasks_are_the_same_in_every_process():
    """Schemas, databases and tasks depend on nothing but the code: two processes with different hash seeds agree."""
    runs = []
    for seed in ("1", "4242"):
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True,
                              env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}, cwd=REPO)
        runs.append(json.loads(done.stdout))
    assert runs[0] == runs[1]
    assert len(set(runs[0]["digests"])) == 256


def test_rollgym_list_stats_prints_the_counts():
    done = subprocess.run([sys.executable, "-m", "rollgym.cli", "list", "--stats"], capture_output=True, text=True,
                          check=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "COLUMNS": "200"})
    counts = stats()
    for key in ("generated_apps", "tools", "templates", "test_unseen_apps"):
        rows = [[c.strip() for c in x.split("│")] for x in done.stdout.split("generated worlds")[1].splitlines()]
        assert [r[3] for r in rows if len(r) > 3 and r[2] == key] == [f"{counts[key]:,}"], key


def test_the_domain_vocabulary_is_pinned_by_its_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    # the spec hash covers code only: a domains.json that no longer matches DATA_SHA256 must not load
    from rollgym.envs.tools.generated import domains

    assert domains._load() == DOMAINS and len(DOMAINS) == 32
    monkeypatch.setattr(domains, "DATA_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="does not match DATA_SHA256"):
        domains._load()

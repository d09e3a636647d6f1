"""ToolGen-v1, the 1,024-app pool: its size and variety, the held-out domains, the census of distinct tasks per
split (>= 10,000 each), the oracle on every split, constant answers, junk tool calls on the new apps, and one
new app's episode over MCP."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

import anyio
import gymnasium as gym
import pytest

import rollgym
from rollgym.agents.base import OracleAgent
from rollgym.envs.tools.api import Session
from rollgym.envs.tools.generated import catalog, census
from rollgym.envs.tools.generated.env import new_session
from rollgym.envs.tools.generated.grading import diff_apps, grade
from rollgym.envs.tools.generated.source import ToolGenTaskSource, expectation_of
from rollgym.envs.tools.generated.store import NOW
from rollgym.envs.tools.generated.tools import call
from rollgym.verifiers.tools import CONSTANT_ANSWERS
from tests.conftest import require_module
from tests.serve.conftest import play_oracle_over_mcp

from .helpers import play

REPO = Path(__file__).resolve().parents[3]
SPLITS = ("train", "validation", "test", "test_unseen")


def _new_apps() -> list[str]:
    """The apps v1 adds to v0's 256."""
    old = set(catalog.pool(0).schemas)
    return [a for a in catalog.pool(1).schemas if a not in old]


def test_the_pool_holds_1024_distinct_apps_with_whole_domains_held_out():
    p0, p1 = catalog.pool(0), catalog.pool(1)
    assert len(p1.schemas) == 1024 and len(p1.seen) == 832 and len(p1.unseen) == 192
    assert len({s.digest() for s in p1.schemas.values()}) == 1024  # no two apps share a structure
    assert all(p1.schemas[a] is s for a, s in p0.schemas.items())  # v0's apps are among them, unchanged
    assert len(p0.schemas) == 256 and p1.unseen_domains == p0.unseen_domains
    per_domain = Counter(s.domain for s in p1.schemas.values())
    assert set(per_domain.values()) == {32}
    unseen = {p1.schemas[a].domain for a in p1.unseen}
    assert unseen == set(p1.unseen_domains) and not unseen & {p1.schemas[a].domain for a in p1.seen}


def test_apps_vary_in_entities_tools_actions_and_templates_not_only_in_names():
    schemas = catalog.pool(1).schemas.values()
    shapes = Counter((tuple(e.role for e in s.entities), len(s.actions)) for s in schemas)
    toolsets = {tuple(sorted(n.split("_", 2)[-1] for n in catalog.tool_names(s))) for s in schemas}
    assert len(shapes) >= 6 and len(toolsets) >= 300, (len(shapes), len(toolsets))
    within = Counter(s.domain for s in schemas)
    for domain in list(within)[:4]:  # inside one domain too, the 32 apps differ in their tools
        mine = [s for s in schemas if s.domain == domain]
        assert len({tuple(sorted(n.split("_", 2)[-1] for n in catalog.tool_names(s))) for s in mine}) >= 12


def test_the_census_counts_at_least_10000_distinct_tasks_per_split():
    totals = census.totals()
    assert all(totals[split] >= 10_000 for split in SPLITS), totals
    assert set(census.stored()) == set(catalog.pool(1).schemas)
    stats = rollgym.envs.tools.generated.stats()
    assert stats["v1_generated_apps"] == 1024 and stats["v1_tasks_validation"] == totals["validation"]


def test_a_seeded_sample_of_apps_recounts_to_the_stored_census():
    stored = census.stored()
    unseen = catalog.pool(1).unseen
    for app_id in (_new_apps()[17], _new_apps()[401], unseen[-5]):
        assert census.count_app(app_id) == stored[app_id], app_id


@pytest.mark.parametrize("split", SPLITS)
def test_the_oracle_solves_a_seeded_sample_of_every_split_through_the_text_interface(split):
    env = gym.make("ToolGen-v1", split=split)
    pool = set(catalog.split_apps(split, 1))
    for index in range(5):
        reward, terminated, _, info = play(env, OracleAgent(), {"task_index": index})
        assert terminated and reward == 1.0 and info["correct"] is True, (split, index, info["details"])
        assert set(info["task_meta"]["world"]) <= pool
    env.close()


def test_v1_draws_from_the_new_apps_and_v0_does_not():
    new = set(_new_apps())
    v1, v0 = ToolGenTaskSource(generation=1), ToolGenTaskSource()
    worlds1 = [set(v1.task(i, "test").meta["world"]) for i in range(20)]
    worlds0 = [set(v0.task(i, "test").meta["world"]) for i in range(20)]
    assert sum(bool(w & new) for w in worlds1) >= 10 and not any(w & new for w in worlds0)


def _free_wins(split: str, n: int) -> Counter[str]:
    source = ToolGenTaskSource(generation=1)
    wins: Counter[str] = Counter()
    others = ("11", "20", "100", "-1", "0.5", "maybe", "done", "ok", "None", "True", "active", "pending", "gold")
    for index in range(n):
        task = source.task(index, split)
        session = new_session(task)
        diff = diff_apps(task.meta["world"], session.dbs, session.touched)
        expectation = expectation_of(task)
        for answer in (None, *CONSTANT_ANSWERS, *others):
            if grade(expectation, diff, answer).correct:
                wins[repr(answer)] += 1
    return wins


@pytest.mark.parametrize("split", ["validation", "test_unseen"])
def test_a_constant_answer_solves_under_one_percent_of_a_sample(split):
    wins = _free_wins(split, 200)
    assert max(wins.values(), default=0) < 2, (split, wins.most_common(3))


JUNK = [None, True, -(2**70), 1e308, "", "%", "'; DROP TABLE x;--", "2025-13-45", "x" * 400, [1, 2], {"a": 1}]


def test_junk_tool_calls_on_new_apps_never_raise():
    for app_id in _new_apps()[::97]:
        tools = catalog.tools(app_id)
        session = Session("operator@toolgen.example", NOW, {app_id: catalog.app(app_id).copy()})
        for k, name in enumerate([*tools, "no_such_tool", ""]):
            props = list(tools[name].schema["function"]["parameters"]["properties"]) if name in tools else ["x"]
            for j, junk in enumerate(JUNK):
                arguments = {p: JUNK[(j + i + k) % len(JUNK)] for i, p in enumerate(props)} | {"zz": junk}
                result = call(session, tools, name, arguments)
                json.dumps(result)
                if "error" in result:
                    assert result["error"]["type"] != "internal_error", (app_id, name, result)


def test_one_new_app_s_episode_over_mcp_stdio_is_solved_by_the_oracle(tmp_path):
    require_module("mcp")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    new = set(_new_apps())
    local = rollgym.make("ToolGen-v1", split="test_unseen")
    seed = next(s for s in range(40) if set(local.reset(seed=s)[1]["task_meta"]["apps"]) <= new)
    _, info = local.reset(seed=seed)
    result_file = tmp_path / "result.json"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rollgym.cli", "serve-env", "ToolGen-v1", "--mcp-stdio", "--seed", str(seed), "--split",
              "test_unseen", "--result", str(result_file)],
        env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=str(REPO))

    async def run() -> tuple[list[str], dict]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            _, after = await play_oracle_over_mcp(session, info)
            return [t.name for t in tools], after

    names, after = anyio.run(run)
    app_id = info["task_meta"]["apps"][0]
    assert any(n.startswith(f"{app_id}_") for n in names) and "complete_task" in names
    assert after["done"] and after["reward"] == 1.0
    assert json.loads(result_file.read_text())["task_id"] == info["task_id"]

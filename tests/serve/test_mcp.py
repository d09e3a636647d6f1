"""Tool envs as MCP servers: the official MCP SDK's client lists and calls ToolWorld's tools over stdio."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

import rollgym
from tests.conftest import require_module
from tests.serve.conftest import play_oracle_over_mcp

REPO = Path(__file__).resolve().parents[2]


def test_official_mcp_client_plays_a_toolworld_episode_over_stdio_and_reads_the_reward_after(tmp_path):
    require_module("mcp")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    result_file = tmp_path / "result.json"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rollgym.cli", "serve-env", "ToolWorld-v0", "--mcp-stdio", "--seed", "6", "--split", "test",
              "--result", str(result_file)],
        env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=str(REPO),
    )
    local = rollgym.make("ToolWorld-v0", split="test")
    _, info = local.reset(seed=6, options={"split": "test"})

    async def play() -> tuple[list[str], dict, dict, int]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            before = json.loads((await session.read_resource("rollgym://episode")).contents[0].text)
            calls, after = await play_oracle_over_mcp(session, info)
            return [t.name for t in tools], before, after, calls

    names, before, after, calls = anyio.run(play)
    assert {"contacts_search", "email_send", "complete_task"} <= set(names)
    assert before == {"env_id": "ToolWorld-v0", "task_id": info["task_id"], "done": False, "steps": 0}  # no reward
    assert after["done"] and after["reward"] == 1.0 and after["steps"] == calls
    written = json.loads(result_file.read_text())
    assert written["reward"] == 1.0 and written["task_id"] == info["task_id"]


def test_stdio_mcp_server_reports_bad_tool_calls_as_tool_errors_and_refuses_tool_free_envs(tmp_path):
    require_module("mcp")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "rollgym.cli", "serve-env", "ToolWorld-v0",
                                                                 "--mcp-stdio", "--seed", "1"],
                                   env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=str(REPO))

    async def probe() -> tuple[object, object]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            unknown = await session.call_tool("format_disk", {})
            wrong_type = await session.call_tool("contacts_search", {"query": 42})
            return unknown, wrong_type

    unknown, wrong_type = anyio.run(probe)
    assert unknown.is_error and "format_disk" in unknown.content[0].text
    assert wrong_type.is_error and "error" in json.loads(wrong_type.content[0].text.split("\n", 1)[1].rsplit(
        "\n", 1)[0])

    from rollgym.core.errors import ConfigError
    from rollgym.serve.mcp import StdioEpisode

    with pytest.raises(ConfigError, match="no tools to serve over MCP"):
        StdioEpisode("Countdown-v0", seed=0)

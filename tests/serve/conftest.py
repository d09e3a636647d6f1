"""Fixtures for the env server tests: a real server on 127.0.0.1, in a thread or a subprocess."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_module

REPO = Path(__file__).resolve().parents[2]


async def play_oracle_over_mcp(session: Any, info: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Play the oracle's episode for the task in ``info`` through an MCP client session, one tool call
    per oracle turn until ``complete_task``; the number of calls, and the episode resource read after.
    Every call must succeed."""
    from rollgym.agents import OracleAgent
    from rollgym.core.toolcalls import parse_tool_calls

    agent, text, state, calls = OracleAgent(), "", dict(info), 0
    while True:
        call = parse_tool_calls(agent.act(text, state)).calls[0]
        result = await session.call_tool(call.name, call.arguments)
        calls += 1
        assert not result.is_error, result
        text = result.content[0].text
        state = {**state, "turn": state["turn"] + 1}
        if call.name == "complete_task":
            break
    return calls, json.loads((await session.read_resource("rollgym://episode")).contents[0].text)


def serve_thread(*env_ids: str, **config):
    """An in-process server (a uvicorn thread); ``with serve_thread(...) as url``."""
    require_module("starlette")
    require_module("uvicorn")
    require_module("websockets")
    from rollgym.serve.server import EnvServer
    from rollgym.serve.sessions import ServeConfig

    nemo = config.pop("nemo_gym", False)
    return EnvServer(ServeConfig(env_ids=env_ids or ("*",), **config), nemo_gym=nemo).run_in_thread()


def wait_for(condition: Callable[[], bool], what: str, *, timeout_s: float = 180.0, poll_s: float = 0.1) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout_s`` (a bound against hanging)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(poll_s)


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """One server for a test module, hosting Countdown-v0 and ToolWorld-v0."""
    with serve_thread("Countdown-v0", "ToolWorld-v0", idle_timeout_s=60.0) as url:
        yield url

"""rollgym serve-env: OpenEnv's own clients drive it; bad input and faults get one clear error each."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

import rollgym
from rollgym.agents import OracleAgent
from tests.conftest import require_module
from tests.serve.conftest import serve_thread, wait_for

ENVS = ("Countdown-v0", "ToolWorld-v0")


def ws(url: str, path: str = "/envs/Countdown-v0/ws", **kwargs):
    from websockets.sync.client import connect

    return connect(url.replace("http", "ws", 1) + path, max_size=None, **kwargs).__enter__()


def ask(conn, message) -> dict:
    conn.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(conn.recv(timeout=30))


# -- OpenEnv's own client ---------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ENVS)
def test_openenv_generic_client_plays_an_oracle_episode_to_reward_one(server_url, env_id):
    require_module("openenv")
    from openenv import GenericEnvClient

    agent = OracleAgent()
    with GenericEnvClient(base_url=f"{server_url}/envs/{env_id}").sync() as env:
        result = env.reset(seed=11, split="test")
        observation, total, steps = result.observation, 0.0, 0
        assert observation["text"] and observation["info"]["env_id"] == env_id
        while not result.done:
            result = env.step({"text": agent.act(observation["text"], observation["info"])})
            observation, total, steps = result.observation, total + (result.reward or 0.0), steps + 1
            assert steps < 40
        state = env.state()
    assert total == 1.0
    assert state["done"] and state["episode_reward"] == 1.0 and state["step_count"] == steps


def test_openenv_mcp_tool_client_plays_toolworld_through_call_tool(server_url):
    require_module("openenv")
    from openenv.core.env_server.mcp_types import CallToolAction
    from openenv.core.mcp_client import MCPToolClient

    from rollgym.core.toolcalls import parse_tool_calls

    async def play() -> tuple[list[str], float, int]:
        agent = OracleAgent()
        async with MCPToolClient(base_url=f"{server_url}/envs/ToolWorld-v0") as env:
            # OpenEnv's reset() parses into a bare Observation; the raw reply has the task text and info
            raw = await env._send_and_receive({"type": "reset", "data": {"seed": 4, "split": "test"}})
            names = [t.name for t in await env.list_tools()]
            text, info = raw["data"]["observation"]["text"], raw["data"]["observation"]["info"]
            total, done = 0.0, False
            while not done:
                call = parse_tool_calls(agent.act(text, info)).calls[0]
                step = await env.step(CallToolAction(tool_name=call.name, arguments=call.arguments))
                assert step.observation.error is None
                total, done = total + (step.reward or 0.0), step.done
                text = f'<tool_response name="{call.name}">\n{json.dumps(step.observation.result)}\n</tool_response>'
                info = {**info, "turn": info["turn"] + 1}
            state = await env.state()
            return names, total, state.step_count

    names, total, steps = asyncio.run(play())
    assert "complete_task" in names and "contacts_search" in names
    assert total == 1.0 and steps >= 2


def test_openenv_http_mcp_production_mode_lists_and_calls_tools(server_url):
    import httpx

    base = f"{server_url}/envs/ToolWorld-v0/mcp"
    created = httpx.post(base, json={"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create",
                                     "params": {"seed": 2, "split": "test"}}).json()
    session_id = created["result"]["session_id"]
    tools = httpx.post(base, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                                   "params": {"session_id": session_id}}).json()["result"]["tools"]
    assert {"name", "description", "inputSchema"} <= set(tools[0])
    called = httpx.post(base, json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "session_id": session_id, "name": "contacts_search", "arguments": {"query": "a"}}}).json()["result"]
    assert "results" in called["data"] and called["isError"] is False and called["_meta"]["rollgym/done"] is False
    bad = httpx.post(base, json={"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "session_id": session_id, "name": "rm_rf", "arguments": {}}}).json()
    assert bad["error"]["code"] == -32602 and "Unknown tool" in bad["error"]["message"]
    closed = httpx.post(base, json={"jsonrpc": "2.0", "id": 5, "method": "openenv/session/close",
                                    "params": {"session_id": session_id}}).json()
    assert closed["result"]["closed"] is True


# -- HTTP ---------------------------------------------------------------------------------------------
def test_http_one_shot_evaluate_and_stateful_reset_step(server_url):
    import httpx

    env = rollgym.make("Countdown-v0", split="test")
    obs, info = env.reset(seed=9)
    answer = OracleAgent().act(obs, info)
    one_shot = httpx.post(f"{server_url}/envs/Countdown-v0/evaluate",
                          json={"seed": 9, "split": "test", "actions": [answer]}).json()
    assert one_shot["total_reward"] == 1.0 and one_shot["done"] and one_shot["actions_used"] == 1
    wrong = httpx.post(f"{server_url}/envs/Countdown-v0/evaluate",
                       json={"seed": 9, "split": "test", "actions": ["<answer>1+1</answer>"]}).json()
    assert wrong["total_reward"] == 0.0

    reset = httpx.post(f"{server_url}/envs/Countdown-v0/reset", json={"seed": 9, "split": "test"}).json()
    assert reset["observation"]["text"] == obs and reset["done"] is False
    step = httpx.post(f"{server_url}/envs/Countdown-v0/step",
                      json={"session_id": reset["session_id"], "action": {"text": answer}}).json()
    assert step["reward"] == 1.0 and step["done"] is True
    no_session = httpx.post(f"{server_url}/envs/Countdown-v0/step", json={"action": {"text": answer}})
    assert no_session.status_code == 400 and "session_id" in no_session.json()["detail"]
    assert httpx.get(f"{server_url}/health").json()["status"] == "healthy"
    envs = httpx.get(f"{server_url}/envs").json()["envs"]
    assert {e["id"] for e in envs} == set(ENVS)
    assert all(e["spec_hash"] == rollgym.env_info(e["id"]).content_hash for e in envs)


# -- bad input ------------------------------------------------------------------------------------------
def test_malformed_and_unexpected_messages_get_one_clear_error_and_the_session_survives(server_url):
    with ws(server_url) as conn:
        cases = [
            ("{not json", "INVALID_JSON"),
            ("[1, 2]", "INVALID_JSON"),
            ({"type": "dance"}, "UNKNOWN_TYPE"),
            ({"type": "step", "data": {"text": "x"}}, "EPISODE_NOT_STARTED"),
            ({"type": "reset", "data": {"seed": -1}}, "VALIDATION_ERROR"),
            ({"type": "reset", "data": {"colour": "red"}}, "VALIDATION_ERROR"),
            ({"type": "reset", "data": {"split": "nope"}}, "VALIDATION_ERROR"),  # the env refused it: a 4xx
            ({"type": "step", "data": "text"}, "VALIDATION_ERROR"),
        ]
        for message, code in cases:
            reply = ask(conn, message)
            assert reply["type"] == "error" and reply["data"]["code"] == code, (message, reply)
            assert reply["data"]["message"].endswith((".", ")")) and len(reply["data"]["message"]) < 400
        assert ask(conn, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        for message in ({"type": "step", "data": {}}, {"type": "step", "data": {"text": 5}},
                        {"type": "step", "data": {"text": "x", "extra": 1}}):
            assert ask(conn, message)["data"]["code"] == "VALIDATION_ERROR"
        done = ask(conn, {"type": "step", "data": {"text": "no answer here"}})
        assert done["type"] == "observation" and done["data"]["done"] and done["data"]["reward"] == 0.0
        after = ask(conn, {"type": "step", "data": {"text": "<answer>1</answer>"}})
        assert after["data"]["code"] == "EPISODE_OVER" and "send reset" in after["data"]["message"]


def test_model_output_of_any_kind_never_crashes_the_env_or_the_server(server_url):
    strings = ["", "\x00\x01", "<tool_call>{</tool_call>", "🙂" * 1000, '<tool_call>{"name": "x"}</tool_call>' * 50,
               "<answer>" + "9" * 5000 + "</answer>", "\ud800"]
    with ws(server_url, "/envs/ToolWorld-v0/ws") as conn:
        assert ask(conn, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        for text in strings:
            reply = ask(conn, {"type": "step", "data": {"text": text}})
            assert reply["type"] == "observation", reply


def test_unknown_env_ids_are_refused_with_the_closest_ids(server_url):
    with ws(server_url, "/envs/Countdwn-v0/ws") as conn:
        reply = json.loads(conn.recv(timeout=10))
    assert reply["data"]["code"] == "UNKNOWN_ENV" and "Countdown-v0" in reply["data"]["message"]
    with serve_thread() as url, ws(url, "/envs/Countdwn-v0/ws") as conn:  # serving every id: the registry's hint
        assert "Did you mean Countdown-v0" in json.loads(conn.recv(timeout=10))["data"]["message"]
    from rollgym.core.errors import UnknownEnvError
    from rollgym.serve.sessions import ServeConfig, SessionHub

    with pytest.raises(UnknownEnvError, match="Countdown-v0"):
        SessionHub(ServeConfig(env_ids=("Countdwn-v0",)))


def test_oversized_actions_are_refused_and_the_episode_goes_on():
    with serve_thread("Countdown-v0", max_action_chars=1000) as url, ws(url) as conn:
        assert ask(conn, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        reply = ask(conn, {"type": "step", "data": {"text": "x" * 1001}})
        assert reply["data"]["code"] == "ACTION_TOO_LARGE" and "--max-action-chars" in reply["data"]["message"]
        huge = ask(conn, json.dumps({"type": "step", "data": {"text": "y" * 50_000}}))
        assert huge["data"]["code"] == "ACTION_TOO_LARGE"
        assert ask(conn, {"type": "step", "data": {"text": "<answer>1</answer>"}})["type"] == "observation"


def test_token_is_required_on_every_route_but_health():
    import httpx
    from websockets.exceptions import InvalidStatus

    with serve_thread("Countdown-v0", token="s3cret") as url:
        assert httpx.get(f"{url}/health").status_code == 200
        assert httpx.get(f"{url}/envs").status_code == 401
        assert httpx.get(f"{url}/envs", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert httpx.get(f"{url}/t/s3cret/envs").status_code == 200
        assert httpx.get(f"{url}/envs", headers={"Authorization": "Bearer wrong"}).status_code == 401
        with pytest.raises(InvalidStatus):
            ws(url).__enter__()
        with ws(url, additional_headers={"Authorization": "Bearer s3cret"}) as conn:
            assert ask(conn, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        with ws(url, "/t/s3cret/envs/Countdown-v0/ws") as conn:  # for clients that cannot set headers
            assert ask(conn, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"


# -- capacity, expiry, vanished and slow clients ------------------------------------------------------
def test_session_cap_refuses_the_next_session_and_frees_a_slot_on_close():
    with serve_thread("Countdown-v0", max_sessions=2) as url:
        first, second = ws(url), ws(url)
        for conn in (first, second):
            assert ask(conn, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        with ws(url) as third:
            reply = json.loads(third.recv(timeout=10))
        assert reply["data"]["code"] == "CAPACITY_REACHED" and "--max-sessions" in reply["data"]["message"]
        first.send(json.dumps({"type": "close"}))
        first.close()
        deadline = time.monotonic() + 10
        while True:
            with ws(url) as fourth:
                reply = ask(fourth, {"type": "reset", "data": {"seed": 0}})
            if reply["type"] == "observation" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert reply["type"] == "observation"
        second.close()


def _gauge(url: str, name: str) -> float:
    import httpx

    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith(f"rollgym_{name} "):
            return float(line.split()[1])
    raise AssertionError(name)


def test_a_client_that_vanishes_mid_episode_is_reaped_and_others_are_unaffected():
    with serve_thread("Countdown-v0", reconnect_grace_s=0.5, idle_timeout_s=60.0) as url:
        steady = ws(url)
        assert ask(steady, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        ghost = ws(url)
        assert ask(ghost, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        ghost.socket.close()  # no close frame, no goodbye: the client process died
        wait_for(lambda: _gauge(url, "sessions_active") == 1, "one active session", timeout_s=15.0, poll_s=0.05)
        assert _gauge(url, "sessions_expired_total") == 1
        reply = ask(steady, {"type": "step", "data": {"text": "<answer>1</answer>"}})
        assert reply["type"] == "observation"
        steady.close()


def test_idle_sessions_expire_and_their_client_is_told(server_url):
    with serve_thread("Countdown-v0", idle_timeout_s=0.3) as url, ws(url) as conn:
        assert ask(conn, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        wait_for(lambda: _gauge(url, "sessions_active") == 0, "no active session", timeout_s=15.0, poll_s=0.05)
        reply = ask(conn, {"type": "step", "data": {"text": "<answer>1</answer>"}})
        assert reply["data"]["code"] == "SESSION_ERROR" and "--idle-timeout" in reply["data"]["message"]


def test_reconnecting_client_resumes_its_episode_without_stepping_twice():
    from rollgym.serve.client import RemoteEnv

    with serve_thread("ToolWorld-v0") as url:
        env = RemoteEnv(url, "ToolWorld-v0", split="test")
        obs, info = env.reset(seed=3)
        agent = OracleAgent()
        obs, _, _, _, info = env.step(agent.act(obs, info))
        env._sync.socket.close()  # the connection drops between two steps
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            total, done = total + reward, terminated or truncated
        assert total == 1.0 and env.state()["step_count"] == info["turn"]
        # a reply lost in flight: the same seq is answered from the record, not stepped again
        seq = env._seq
        again = env._exchange({"type": "state", "seq": seq})
        assert again["data"]["step_count"] == info["turn"]
        env.close()


def test_blocking_env_work_and_idle_clients_do_not_starve_other_sessions():
    from rollgym.core.registration import register_env
    from tests.serve import slow_env

    register_env("BlockingCountdown-v0", "tests.serve.slow_env:BlockingCountdownEnv",
                 description="Countdown whose step waits for the test", family="test",
                 components=["rollgym.core.task"])
    slow_env.RELEASE.clear()
    with serve_thread("Countdown-v0", "BlockingCountdown-v0") as url:
        blocked = ws(url, "/envs/BlockingCountdown-v0/ws")
        assert ask(blocked, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        idle = ws(url)  # connects, resets, then neither reads nor writes
        assert ask(idle, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        blocked.send(json.dumps({"type": "step", "data": {"text": "<answer>1</answer>"}}))
        # no timing: the blocked step is only released after 20 other episodes finished, so had it
        # held the event loop, these would never finish and RELEASE.wait would run out (60 s) first
        with ws(url) as conn:
            for seed in range(20):
                assert ask(conn, {"type": "reset", "data": {"seed": seed}})["type"] == "observation"
                assert ask(conn, {"type": "step", "data": {"text": "<answer>1</answer>"}})["type"] == "observation"
        assert not slow_env.RELEASE.is_set()
        slow_env.RELEASE.set()
        assert json.loads(blocked.recv(timeout=30))["type"] == "observation"
        for conn in (blocked, idle):
            conn.close()


def test_sigterm_shuts_down_gracefully_closing_sockets_and_sessions():
    from websockets.exceptions import ConnectionClosed

    from rollgym.serve.spawn import ServeEnvProcess

    server = ServeEnvProcess("Countdown-v0")
    try:
        conn = ws(server.url)
        assert ask(conn, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        server.process.terminate()
        with pytest.raises(ConnectionClosed) as closed:
            while True:  # a SHUTTING_DOWN notice may come first
                json.loads(conn.recv(timeout=30))
        assert closed.value.rcvd is not None and closed.value.rcvd.code in (1001, 1012)
        # uvicorn re-raises the signal after its graceful shutdown, so the exit status names it
        assert server.process.wait(timeout=30) in (0, -15)
    finally:
        server.close()


def test_a_served_child_that_cannot_start_says_why_with_its_exit_status_and_stderr():
    from rollgym.core.errors import RollgymError
    from rollgym.serve.spawn import ServeEnvProcess

    with pytest.raises(RollgymError, match=r"exited with status [1-9].*NoSuch-v0") as failed:
        ServeEnvProcess("NoSuch-v0", start_timeout_s=120)
    assert "rollgym serve-env" in str(failed.value)


def test_serve_env_refuses_unknown_ids_before_starting():
    import subprocess
    import sys

    from tests.serve.conftest import REPO

    out = subprocess.run([sys.executable, "-m", "rollgym.cli", "serve-env", "Countdwn-v0", "--port", "0"],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 2 and "Unknown env id 'Countdwn-v0'" in out.stderr and "Countdown-v0" in out.stderr


def test_tokens_of_any_text_are_refused_cleanly():
    import httpx

    with serve_thread("Countdown-v0", token="s3cret") as url:
        for bad in ("sécret", "\u2603", "s3cret!"):
            assert httpx.get(f"{url}/envs", headers={"X-Rollgym-Token": bad.encode()}).status_code == 401
            assert httpx.get(f"{url}/envs", params={"token": bad}).status_code == 401
            assert httpx.get(f"{url}/t/{bad}/envs").status_code == 401

"""rollgym serve-env under malformed requests (issue 28): every one gets a typed 4xx or protocol error.

A real server on 127.0.0.1 (every id, the NeMo Gym routes on) is sent deep nesting, wrong
types, huge numbers, missing fields and bad ids over HTTP, the WebSocket and MCP. No answer
may be a 500 or a dropped connection, and the server keeps serving afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.conftest import require_module
from tests.serve.conftest import serve_thread

DEEP = "[" * 50_000 + "]" * 50_000
DEEP_OBJECT = '{"a":' * 50_000 + "1" + "}" * 50_000
DEEP_FIELD = '{"seed": 1, "options": ' + "[" * 200 + "]" * 200 + "}"
HUGE_INT = '{"seed": ' + "9" * 5000 + "}"
BODIES: list[str | bytes] = [
    DEEP, DEEP_OBJECT, DEEP_FIELD, HUGE_INT, "{not json", "[1, 2]", '"text"', "5", "null", "NaN", "{}",
    b"\xff\xfe\x00", '{"seed": 1e999}', '{"seed": -1}', '{"seed": 1.5}', '{"seed": true}', '{"seed": "3"}',
    '{"seed": 1180591620717411303424}', '{"task_index": -1}', '{"task_index": 1000000000000000000000000000000}',
    '{"task_index": "0"}', '{"task_index": [0]}', '{"task_index": 99999999}', '{"split": 5}', '{"split": "nope"}',
    '{"options": "x"}', '{"options": {"task_index": "x"}}', '{"options": {"colour": 1}}', '{"make": []}',
    '{"make": {"no_such_argument": 1}}', '{"compact": "yes"}', '{"episode_id": {}}', '{"colour": "red"}',
    '{"session_id": 5}', '{"session_id": [1]}', '{"session_id": {"a": 1}}', '{"session_id": "nope"}',
    '{"session_id": "nope", "action": {"text": "x"}}', '{"action": "x"}', '{"action": {"text": 5}}',
    '{"actions": "x"}', '{"actions": [1, 2]}', '{"actions": ["x"], "task_index": -5}',
]
ROUTES = ["/reset", "/step", "/close", "/evaluate", "/envs/Countdown-v0/reset", "/envs/Countdown-v0/step",
          "/envs/Countdown-v0/close", "/envs/Countdown-v0/evaluate", "/envs/No-Such-v9/reset",
          "/nemo-gym/Countdown-v0/reset", "/nemo-gym/Countdown-v0/seed_session", "/nemo-gym/Countdown-v0/step",
          "/nemo-gym/Countdown-v0/verify", "/nemo-gym/Countdown-v0/aggregate_metrics", "/nemo-gym/Nope-v0/reset"]
NEMO_METRICS = ['{"verify_responses": 5}', '{"verify_responses": [{"reward": "x"}]}',
                '{"verify_responses": [{"reward": 1, "_ng_task_index": [1]}]}',
                '{"verify_responses": [{"reward": 1e999}]}']


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_thread(nemo_gym=True, idle_timeout_s=60.0) as base:  # every registered id
        yield base


def _healthy(url: str) -> None:
    import httpx

    assert httpx.get(f"{url}/health").json()["status"] == "healthy"
    reset = httpx.post(f"{url}/envs/Countdown-v0/reset", json={"seed": 1}, timeout=60)
    assert reset.status_code == 200 and reset.json()["observation"]["text"]


def test_every_malformed_http_request_gets_a_typed_4xx(url: str) -> None:
    import httpx

    with httpx.Client(base_url=url, timeout=60) as client:
        for route in ROUTES:
            for body in BODIES + (NEMO_METRICS if route.endswith("aggregate_metrics") else []):
                reply = client.post(route, content=body, headers={"content-type": "application/json"})
                shown = (route, body[:60])
                assert 400 <= reply.status_code < 500 or reply.status_code == 200, (shown, reply.status_code,
                                                                                     reply.text[:300])
                payload = reply.json()
                if reply.status_code >= 400:
                    assert payload["code"] and payload["detail"], (shown, payload)
        for query in ("", "?session_id=", "?session_id=nope", "?session_id=" + "x" * 5000):
            reply = client.get(f"/envs/Countdown-v0/state{query}")
            assert 400 <= reply.status_code < 500 and reply.json()["code"], (query, reply.text[:200])
        # the two: 50,000-deep JSON is INVALID_JSON, a bad task_index a VALIDATION_ERROR
        deep = client.post("/envs/Countdown-v0/reset", content=DEEP)
        assert deep.status_code == 400 and deep.json()["code"] == "INVALID_JSON"
        for index in (-1, 10**30, "0", 1.5, True):
            bad = client.post("/envs/Countdown-v0/reset", json={"task_index": index})
            assert bad.status_code == 400 and bad.json()["code"] == "VALIDATION_ERROR", (index, bad.text)
    _healthy(url)


def test_every_malformed_websocket_message_gets_a_protocol_error_and_the_connection_stays(url: str) -> None:
    require_module("websockets")
    from websockets.sync.client import connect

    messages = [DEEP, DEEP_OBJECT, '{"type": "reset", "data": ' + "[" * 5000 + "]" * 5000 + "}",
                '{"type": ' + "9" * 5000 + "}", '{"type": "reset", "data": {"seed": 1e999}}',
                '{"type": "reset", "data": {"task_index": -1}}', '{"type": "reset", "data": {"task_index": 10e30}}',
                '{"type": "reset", "data": {"split": []}}',
                '{"type": "reset", "data": {"make": {"no_such_argument": 1}}}', '{"type": "step", "data": []}',
                '{"type": "step", "data": {"type": "call_tool", "tool_name": 5}}', '{"type": 5}', '{"seq": "x"}',
                '{"type": "mcp", "data": {"jsonrpc": "2.0", "method": 5}}', b"\xff\xfe{", "", "{}"]
    with connect(url.replace("http", "ws", 1) + "/envs/Countdown-v0/ws", max_size=None) as conn:
        for message in messages:
            conn.send(message)
            reply = json.loads(conn.recv(timeout=60))
            assert reply["type"] in ("error", "mcp"), (message[:60], reply)
            if reply["type"] == "error":
                assert reply["data"]["code"] != "EXECUTION_ERROR", (message[:60], reply)
        conn.send(DEEP)
        assert json.loads(conn.recv(timeout=60))["data"]["code"] == "INVALID_JSON"
        conn.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        assert json.loads(conn.recv(timeout=60))["type"] == "observation"  # the same connection still plays
    _healthy(url)


def test_every_malformed_mcp_request_gets_a_jsonrpc_error(url: str) -> None:
    import httpx

    requests = [
        DEEP, "{not json", "[1]",
        {"jsonrpc": "1.0", "method": "tools/list"}, {"jsonrpc": "2.0", "method": 5},
        {"jsonrpc": "2.0", "method": "tools/list", "params": [1]},
        {"jsonrpc": "2.0", "method": "tools/list", "params": {"session_id": 5}},
        {"jsonrpc": "2.0", "method": "tools/list", "params": {"session_id": ["x"]}},
        {"jsonrpc": "2.0", "method": "tools/list", "params": {"session_id": "nope"}},
        {"jsonrpc": "2.0", "id": {"a": [1]}, "method": "openenv/session/create", "params": {"task_index": "x"}},
        {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {"task_index": 10**30}},
        {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {"seed": -3}},
        {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {"make": {"bogus": 1}}},
    ]
    with httpx.Client(base_url=url, timeout=60) as client:
        created = client.post("/envs/ToolWorld-v0/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                              "method": "openenv/session/create",
                                                              "params": {"seed": 1}}).json()
        session = created["result"]["session_id"]
        requests += [
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"session_id": session, "name": 5}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"session_id": session, "name": "nope"}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"session_id": session, "name": "search_products", "arguments": "x"}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"session_id": session, "name": "search_products", "arguments": [[[[1]]]]}},
            {"jsonrpc": "2.0", "id": 2, "method": "no/such", "params": {"session_id": session}},
        ]
        for request in requests:
            for route in ("/envs/ToolWorld-v0/mcp", "/mcp"):
                body = request if isinstance(request, str) else json.dumps(request)
                reply = client.post(route, content=body)
                assert reply.status_code == 200, (route, body[:80], reply.status_code, reply.text[:300])
                error = reply.json()["error"]
                assert isinstance(error["code"], int) and error["message"], (body[:80], error)
    _healthy(url)


def test_make_errors_do_not_reveal_whether_a_server_path_exists(url: str, tmp_path) -> None:
    import httpx

    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json\n")
    details = set()
    for path in ("/etc/passwd", "/no/such/file.jsonl", str(junk), str(tmp_path)):
        reply = httpx.post(f"{url}/envs/MATH-v1/reset", json={"make": {"path": path}}, timeout=60)
        assert reply.status_code == 400 and reply.json()["code"] == "FACTORY_ERROR", reply.text
        details.add(reply.json()["detail"])
    assert len(details) == 1, details  # one sentence whatever is (or is not) at the path
    assert "/" not in details.pop()

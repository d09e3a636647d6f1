"""Tool envs as MCP servers: JSON-RPC on ``rollgym serve-env``, and a stdio server per session.

Every env whose ``info["tools"]`` lists tools (ToolWorld, Search, MATH*Tool) exposes them
through the Model Context Protocol in two ways:

* On ``rollgym serve-env``: ``POST /mcp`` and the WebSocket's ``{"type": "mcp"}`` messages take
  JSON-RPC 2.0 ``tools/list`` and ``tools/call`` for a session, plus OpenEnv's
  ``openenv/session/create`` (which also resets the new session with the given ``seed``,
  ``task_index``, ``split``) and ``openenv/session/close``. This is OpenEnv's production-mode
  MCP, so OpenEnv's ``MCPToolClient`` works against it.
* Over stdio, with the official ``mcp`` SDK (:func:`run_stdio`, ``rollgym serve-env ENV --mcp-stdio``):
  one process is one session; any MCP client lists and calls the env's tools.

A tool call is one env step with one Hermes ``<tool_call>``; its result is the tool's JSON
(``structuredContent``) and the observation text. The reward is never a tool: the host reads
it after the episode, from ``state`` (``episode_reward``, ``done``), from the stdio server's
``rollgym://episode`` resource, or from its ``--result`` file, both of which say
``"done": false`` and carry no reward until the episode is over (a tool that reported the live
reward would let the agent probe the grader).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from rollgym.serve import protocol as wire

if TYPE_CHECKING:
    from collections.abc import Callable



class McpSession(Protocol):
    """What MCP reads of a session (:class:`rollgym.serve.sessions.Session` is one)."""

    @property
    def id(self) -> str: ...
    @property
    def started(self) -> bool: ...
    @property
    def base_info(self) -> dict[str, Any]: ...


S = TypeVar("S", bound=McpSession)


class McpHub(Protocol[S]):
    """What MCP asks of the session hub (:class:`rollgym.serve.sessions.SessionHub` is one).

    Described here rather than imported, so that ``sessions`` (which dispatches MCP messages to this
    module) is the only one of the two that imports the other.
    """

    def open(self, env_id: str) -> S: ...
    def get(self, session_id: str, env_id: str | None = None) -> S: ...
    async def close(self, session: S, *, reason: str = "closed") -> None: ...
    async def handle(self, session: S, message: dict[str, Any]) -> dict[str, Any] | None: ...
    async def _reset(self, session: S, data: dict[str, Any]) -> dict[str, Any]: ...
    async def _step(self, session: S, data: dict[str, Any]) -> dict[str, Any]: ...


PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
SERVER_ERROR = -32000
EPISODE_URI = "rollgym://episode"


def _rpc_error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _rpc_result(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def mcp_tools(info: dict[str, Any]) -> list[dict[str, Any]]:
    """The env's tools in MCP's ``tools/list`` shape (``inputSchema``)."""
    return [{"name": t["name"], "description": t["description"], "inputSchema": t["input_schema"]}
            for t in wire.tool_specs(info)]


def call_result(reply: dict[str, Any]) -> dict[str, Any]:
    """An MCP ``CallToolResult`` from a step reply; ``_meta`` says whether the episode ended."""
    obs = reply["data"]["observation"]
    result = obs.get("result")
    is_error = isinstance(result, dict) and "error" in result and len(result) == 1
    out: dict[str, Any] = {"content": [{"type": "text", "text": obs["text"]}], "isError": is_error,
                           "_meta": {"rollgym/done": reply["data"]["done"]}}
    if isinstance(result, dict):
        out["structuredContent"] = result
        out["data"] = result  # what OpenEnv's MCPToolClient returns from call_tool
    return out


async def handle_jsonrpc(hub: McpHub[S], session: S, request: dict[str, Any]) -> dict[str, Any]:
    """Answer one JSON-RPC request (``tools/list``, ``tools/call``) for ``session``.

    Called with the session's lock held (from :meth:`SessionHub.handle`), so it steps the env
    through the hub's internals rather than through ``handle``.
    """
    request_id = request.get("id")
    if request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        return _rpc_error(request_id, INVALID_REQUEST, "A JSON-RPC 2.0 request needs jsonrpc='2.0' and a method.")
    params = request.get("params") or {}
    if not isinstance(params, dict):
        return _rpc_error(request_id, INVALID_PARAMS, "params must be an object.")
    method = request["method"]
    try:
        if method == "tools/list":
            if not session.started:
                await hub._reset(session, {})
            return _rpc_result(request_id, {"tools": mcp_tools(session.base_info)})
        if method == "tools/call":
            name = params.get("name")
            if not isinstance(name, str) or not name:
                return _rpc_error(request_id, INVALID_PARAMS, "tools/call needs 'name'.")
            if not session.started:
                await hub._reset(session, {})
            known = {t["name"] for t in wire.tool_specs(session.base_info)}
            if name not in known:
                return _rpc_error(request_id, INVALID_PARAMS, f"Unknown tool {name!r}; tools/list names them.")
            reply = await hub._step(session, {"type": "call_tool", "tool_name": name,
                                              "arguments": params.get("arguments") or {}})
            return _rpc_result(request_id, call_result(reply))
        return _rpc_error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}; use tools/list or tools/call.")
    except (wire.ProtocolError, Exception) as exc:
        code = getattr(exc, "code", None)
        return _rpc_error(request_id, INVALID_PARAMS if code else INTERNAL_ERROR, str(exc))


async def handle_http_jsonrpc(hub: McpHub[Any], env_id: Callable[[], str], body: dict[str, Any]) -> dict[str, Any]:
    """``POST /mcp``: OpenEnv's session methods plus ``tools/*`` on the session named in params.

    ``env_id`` names the env of the request's path (it raises ``SessionError`` when the path names none).
    """
    from rollgym.serve.protocol import SessionError

    request_id = body.get("id")
    method = body.get("method")
    params = body.get("params") or {}
    if body.get("jsonrpc") != "2.0" or not isinstance(method, str) or not isinstance(params, dict):
        return _rpc_error(request_id, INVALID_REQUEST, "A JSON-RPC 2.0 request needs jsonrpc='2.0', a method and "
                                                       "object params.")
    try:
        if method == "openenv/session/create":
            session = hub.open(env_id())
            data = {k: params[k] for k in ("seed", "task_index", "split", "options", "make") if k in params}
            reply = await hub.handle(session, {"type": "reset", "data": data})
            if reply is None or reply["type"] == "error":
                await hub.close(session)
                return _rpc_error(request_id, SERVER_ERROR, reply["data"]["message"] if reply else "reset failed")
            return _rpc_result(request_id, {"session_id": session.id})
        session_id = params.get("session_id")
        if not session_id or not isinstance(session_id, str):
            return _rpc_error(request_id, INVALID_PARAMS,
                              "Pass params.session_id (a string) from openenv/session/create (sessions keep the "
                              "episode).")
        session = hub.get(session_id)
        if method == "openenv/session/close":
            await hub.close(session)
            return _rpc_result(request_id, {"session_id": session.id, "closed": True})
        reply = await hub.handle(session, {"type": "mcp", "data": {**body, "params": {
            k: v for k, v in params.items() if k != "session_id"}}})
        assert reply is not None
        if reply["type"] == "error":
            return _rpc_error(request_id, SERVER_ERROR, reply["data"]["message"])
        return reply["data"]  # type: ignore[no-any-return]
    except SessionError as exc:
        return _rpc_error(request_id, SERVER_ERROR, str(exc))


# -- stdio: the official MCP SDK ------------------------------------------------------------------
class StdioEpisode:
    """One env episode behind an MCP stdio server: tools step it, the result is read after it ends."""

    def __init__(self, env_id: str, *, seed: int | None = None, options: dict[str, Any] | None = None,
                 result_path: str | None = None, **env_kwargs: Any) -> None:
        import rollgym

        self.env = rollgym.make(env_id, **env_kwargs)
        self.observation, self.info = self.env.reset(seed=seed, options=options)
        self.tools = mcp_tools(self.info)
        if not self.tools:
            raise rollgym.ConfigError(f"{env_id} has no tools to serve over MCP; pick a tool env (ToolWorld, Search, "
                                      "MATH*Tool).")
        self.env_id = env_id
        self.result_path = Path(result_path) if result_path else None
        self.done = False
        self.reward = 0.0
        self.steps = 0
        self.final_info: dict[str, Any] = {}

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, Any]:
        """Step the env with one tool call; return the observation text and the tool's JSON result."""
        if self.done:
            return "The episode is over; no more tool calls are accepted.", {"error": {
                "type": "episode_over", "message": "The episode is over."}}
        from rollgym.core.toolcalls import ToolCall

        obs, reward, terminated, truncated, info = self.env.step(ToolCall(name, arguments).to_hermes())
        self.steps += 1
        self.reward += float(reward)
        if terminated or truncated:
            self.done = True
            self.final_info = {k: v for k, v in info.items() if k not in ("tools", "system_prompt")}
            self.write_result()
        return str(obs), wire.tool_result(str(obs))

    def result(self) -> dict[str, Any]:
        """The episode's outcome; the reward only once it is over."""
        out: dict[str, Any] = {"env_id": self.env_id, "task_id": self.info.get("task_id"), "done": self.done,
                               "steps": self.steps}
        if self.done:
            out.update(reward=self.reward, correct=self.final_info.get("correct",
                                                                       self.final_info.get("verdict", {}).get(
                                                                           "success")),
                       info=self.final_info)
        return out

    def write_result(self) -> None:
        """Write :meth:`result` to ``--result`` (atomically), if one was given."""
        if self.result_path is None:
            return
        tmp = self.result_path.with_name(self.result_path.name + ".tmp")
        tmp.write_text(json.dumps(self.result(), default=repr, sort_keys=True))
        tmp.replace(self.result_path)


def build_stdio_server(episode: StdioEpisode) -> Any:
    """An official-SDK MCP ``Server`` over ``episode``: its tools, and the ``rollgym://episode`` resource."""
    from mcp.server.lowlevel import Server
    from mcp_types import (
        CallToolResult,
        ListResourcesResult,
        ListToolsResult,
        ReadResourceResult,
        Resource,
        TextContent,
        TextResourceContents,
        Tool,
    )

    tools = [Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
             for t in episode.tools]
    names = {t.name for t in tools}

    async def list_tools(_ctx: Any, _params: Any) -> Any:
        return ListToolsResult(tools=tools)

    async def call_tool(_ctx: Any, params: Any) -> Any:
        if params.name not in names:
            text = json.dumps({"error": {"type": "unknown_tool", "message": f"No tool named {params.name!r}."}})
            return CallToolResult(content=[TextContent(text=text)], is_error=True)
        text, result = episode.call(params.name, dict(params.arguments or {}))
        is_error = isinstance(result, dict) and set(result) == {"error"}
        structured = result if isinstance(result, dict) else None
        return CallToolResult(content=[TextContent(text=text)], structured_content=structured, is_error=is_error)

    async def list_resources(_ctx: Any, _params: Any) -> Any:
        return ListResourcesResult(resources=[Resource(uri=EPISODE_URI, name="episode",
                                                       description="The episode's outcome; the reward once it ends.",
                                                       mime_type="application/json")])

    async def read_resource(_ctx: Any, params: Any) -> Any:
        if str(params.uri) != EPISODE_URI:
            raise ValueError(f"Unknown resource {params.uri}; read {EPISODE_URI}.")
        return ReadResourceResult(contents=[TextResourceContents(uri=EPISODE_URI, mime_type="application/json",
                                                                 text=json.dumps(episode.result(), default=repr))])

    return Server(f"rollgym-{episode.env_id}", instructions=episode.observation, on_list_tools=list_tools,
                  on_call_tool=call_tool, on_list_resources=list_resources, on_read_resource=read_resource)


def run_stdio(episode: StdioEpisode) -> None:
    """Serve ``episode`` over stdin/stdout until the client disconnects; write the result on the way out."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_stdio_server(episode)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        episode.write_result()
        episode.env.close()

"""The wire format of ``rollgym serve-env``: OpenEnv's messages, with rollgym's text env inside them.

The server speaks the protocol of OpenEnv (``openenv-core`` 0.3.0,
``openenv/core/env_server/http_server.py`` and ``types.py``), so OpenEnv's own
clients drive rollgym envs. Over the WebSocket ``/ws`` a client sends

* ``{"type": "reset", "data": {"seed": 3, "task_index": 0, "split": "test", "options": {...}}}``
* ``{"type": "step", "data": {"text": "<answer>...</answer>"}}`` (a text action), or OpenEnv's MCP
  actions ``{"type": "step", "data": {"type": "list_tools"}}`` and
  ``{"type": "step", "data": {"type": "call_tool", "tool_name": ..., "arguments": {...}}}``
* ``{"type": "state"}``, ``{"type": "close"}``, and ``{"type": "mcp", "data": <JSON-RPC 2.0 request>}``

and gets back ``{"type": "observation", "data": {"observation": {...}, "reward": r, "done": d}}``,
``{"type": "state", "data": {...}}``, ``{"type": "mcp", "data": <JSON-RPC response>}`` or
``{"type": "error", "data": {"message": ..., "code": ...}}``. The observation of a text env is
``{"text", "info", "terminated", "truncated"}``; a tool call's adds ``tool_name``, ``result`` and
``error`` (what OpenEnv's ``MCPToolClient`` reads).

rollgym's own client adds two optional fields that OpenEnv clients never send: ``seq`` (a message
number; a repeated ``seq`` after a reconnect gets the stored reply instead of stepping twice) and, in
reset data, ``make`` (the env's constructor arguments, e.g. ``{"split": "test"}``) and ``compact``
(leave ``info`` keys that equal the reset's out of step replies; the client puts them back).

This module is pure: no server or client library is imported.
"""

from __future__ import annotations

import json
import math
from typing import Any

from rollgym.core.errors import RollgymError
from rollgym.core.toolcalls import ToolCall

_orjson: Any
try:  # orjson is several times faster on the large infos of tool envs; json is the fallback
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is optional
    _orjson = None

#: Error codes: OpenEnv's ``WSErrorCode`` values, plus rollgym's for episode state and size limits.
INVALID_JSON = "INVALID_JSON"
UNKNOWN_TYPE = "UNKNOWN_TYPE"
VALIDATION_ERROR = "VALIDATION_ERROR"
EXECUTION_ERROR = "EXECUTION_ERROR"
CAPACITY_REACHED = "CAPACITY_REACHED"
FACTORY_ERROR = "FACTORY_ERROR"
SESSION_ERROR = "SESSION_ERROR"
EPISODE_NOT_STARTED = "EPISODE_NOT_STARTED"
EPISODE_OVER = "EPISODE_OVER"
ACTION_TOO_LARGE = "ACTION_TOO_LARGE"
UNKNOWN_ENV = "UNKNOWN_ENV"
UNAUTHORIZED = "UNAUTHORIZED"
SHUTTING_DOWN = "SHUTTING_DOWN"
#: The replica process that held the session stopped (``serve-env --replicas``): its episode is lost.
REPLICA_LOST = "REPLICA_LOST"

#: Reset fields the server reads; OpenEnv sends ``seed`` and ``episode_id``.
RESET_FIELDS = frozenset({"seed", "episode_id", "task_index", "split", "options", "make", "compact"})

#: Tool names OpenEnv reserves for orchestration (``RESERVED_TOOL_NAMES``); rollgym envs use none of them.
RESERVED_TOOL_NAMES = frozenset({"reset", "step", "state", "close"})


class ProtocolError(ValueError):
    """A message that breaks the protocol; ``code`` is the error code sent back."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def dumps(obj: Any) -> str:
    """Encode a message as JSON text (non-finite floats become ``null``, as JSON has none)."""
    if _orjson is not None:
        try:
            return _orjson.dumps(obj, default=_default).decode()
        except TypeError:
            pass  # an int beyond 64 bits, or a lone surrogate in model text: the stdlib escapes both
    return json.dumps(_finite(obj), default=_default)


def loads(text: str | bytes, max_depth: int | None = None) -> Any:
    """Decode JSON text; raise :class:`ProtocolError` (``INVALID_JSON``) when it is not JSON.

    With ``max_depth``, a message nested deeper than that (arrays and objects) is refused too, as is
    one too deep for the parser itself, whatever ``max_depth`` says.
    """
    value: Any = _NOTHING
    if _orjson is not None:
        try:
            value = _orjson.loads(text)
        except ValueError:
            pass  # orjson refuses escaped lone surrogates ("\ud800") and deep nesting; json decides
    if value is _NOTHING:
        try:
            value = json.loads(text)
        except RecursionError:
            raise ProtocolError(INVALID_JSON, "The message is nested too deeply to read; send a flatter JSON "
                                              "object.") from None
        except (ValueError, TypeError) as exc:
            raise ProtocolError(INVALID_JSON, f"The message is not valid JSON ({exc}); send one JSON object.") from None
    if max_depth is not None and _depth_over(value, max_depth):
        raise ProtocolError(INVALID_JSON, f"The message is nested more than {max_depth} levels deep; send a flatter "
                                          "JSON object.")
    return value


_NOTHING = object()
#: How deep a client's message may nest (actions, options and tool arguments are far shallower).
MAX_DEPTH = 64


def _depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and dicts more than ``limit`` deep (iterative: no recursion to exhaust)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _default(obj: Any) -> Any:
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return repr(obj)


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def error(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """An ``{"type": "error"}`` message."""
    return {"type": "error", "data": {"message": message, "code": code, **extra}}


def parse_message(raw: str | bytes, max_chars: int) -> dict[str, Any]:
    """Decode one client message and check its envelope.

    Raises:
        ProtocolError: for text that is not a JSON object, a missing or unknown ``type``, or a
            message longer than ``max_chars`` characters.
    """
    if len(raw) > max_chars:
        raise ProtocolError(
            ACTION_TOO_LARGE,
            f"The message is {len(raw):,} characters; this server accepts at most {max_chars:,}. "
            "Shorten the action, or start the server with a larger --max-action-chars.",
        )
    message = loads(raw, MAX_DEPTH)
    if not isinstance(message, dict):
        raise ProtocolError(INVALID_JSON, f"A message is a JSON object, got {type(message).__name__}.")
    kind = message.get("type")
    if kind not in {"reset", "step", "state", "close", "mcp"}:
        raise ProtocolError(
            UNKNOWN_TYPE,
            f"Unknown message type {_short(kind)}; use one of reset, step, state, close, mcp.",
        )
    data = message.get("data", {})
    if not isinstance(data, dict):
        raise ProtocolError(VALIDATION_ERROR, f"'data' must be a JSON object, got {type(data).__name__}.")
    seq = message.get("seq")
    if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool)):
        raise ProtocolError(VALIDATION_ERROR, f"'seq' must be an integer, got {_short(seq)}.")
    return message


def check_reset(data: dict[str, Any]) -> dict[str, Any]:
    """Validate reset data; return it. Unknown fields are refused with the list of known ones."""
    unknown = sorted(set(data) - RESET_FIELDS)
    if unknown:
        raise ProtocolError(
            VALIDATION_ERROR,
            f"Unknown reset field(s) {unknown}; use {', '.join(sorted(RESET_FIELDS))}.",
        )
    for name in ("seed", "task_index"):
        value = data.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**64):
            raise ProtocolError(VALIDATION_ERROR,
                                f"{name} must be a non-negative integer below 2**64 or null, got {_short(value)}.")
    for name in ("split", "episode_id"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise ProtocolError(VALIDATION_ERROR, f"{name} must be a string or null, got {_short(data[name])}.")
    if data.get("compact") is not None and not isinstance(data["compact"], bool):
        raise ProtocolError(VALIDATION_ERROR, f"compact must be true or false, got {_short(data['compact'])}.")
    for name in ("options", "make"):
        if data.get(name) is not None and not isinstance(data[name], dict):
            raise ProtocolError(VALIDATION_ERROR, f"{name} must be a JSON object, got {_short(data[name])}.")
    return data


def _short(value: Any) -> str:
    """A value for an error message, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def reset_options(data: dict[str, Any]) -> dict[str, Any] | None:
    """The ``reset(options=...)`` of reset data: ``options`` plus the ``task_index`` and ``split`` shortcuts."""
    options = dict(data.get("options") or {})
    for name in ("task_index", "split"):
        if data.get(name) is not None:
            options[name] = data[name]
    return options or None


def action_text(data: dict[str, Any], max_chars: int) -> str:
    """The text action of step data: ``{"text": ...}`` or an MCP ``call_tool`` as a Hermes tool call.

    Raises:
        ProtocolError: for a missing or non-string ``text``, unknown fields, or an action longer
            than ``max_chars`` characters.
    """
    kind = data.get("type")
    if kind == "call_tool":
        name = data.get("tool_name")
        arguments = data.get("arguments", {})
        if not isinstance(name, str) or not name:
            raise ProtocolError(VALIDATION_ERROR, "call_tool needs 'tool_name', a non-empty string.")
        if not isinstance(arguments, dict):
            raise ProtocolError(VALIDATION_ERROR, f"call_tool 'arguments' must be an object, got {_short(arguments)}.")
        text = ToolCall(name, arguments).to_hermes()
    else:
        unknown = sorted(set(data) - {"text", "metadata"})
        if unknown or "text" not in data:
            raise ProtocolError(
                VALIDATION_ERROR,
                "A step's data is {\"text\": \"...\"} (the agent's text) or an MCP action "
                f"{{\"type\": \"call_tool\", \"tool_name\": ..., \"arguments\": {{...}}}}; got fields {sorted(data)}.",
            )
        text = data["text"]
        if not isinstance(text, str):
            raise ProtocolError(VALIDATION_ERROR, f"'text' must be a string, got {type(text).__name__}.")
    if len(text) > max_chars:
        raise ProtocolError(
            ACTION_TOO_LARGE,
            f"The action is {len(text):,} characters; this server accepts at most {max_chars:,}. "
            "Shorten the action, or start the server with a larger --max-action-chars.",
        )
    return text


def observation(text: str, reward: float | None, terminated: bool, truncated: bool, info: dict[str, Any],
                **extra: Any) -> dict[str, Any]:
    """An ``{"type": "observation"}`` message in OpenEnv's ``serialize_observation`` shape."""
    obs = {"text": text, "info": info, "terminated": terminated, "truncated": truncated, **extra}
    return {"type": "observation", "data": {"observation": obs, "reward": reward, "done": terminated or truncated}}


def tool_specs(info: dict[str, Any]) -> list[dict[str, Any]]:
    """The env's tools as OpenEnv/MCP tool specs ``{"name", "description", "input_schema"}``."""
    specs = []
    for tool in info.get("tools") or []:
        function = tool.get("function", tool)
        specs.append({
            "name": str(function.get("name", "")),
            "description": str(function.get("description") or ""),
            "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
        })
    return specs


def tool_result(observation_text: str) -> Any:
    """The JSON result inside the first ``<tool_response>`` block of an observation, else the text."""
    start = observation_text.find("<tool_response")
    if start < 0:
        return observation_text
    body_start = observation_text.find(">", start) + 1
    end = observation_text.find("</tool_response>", body_start)
    body = observation_text[body_start:end if end >= 0 else None].strip()
    try:
        return json.loads(body)
    except ValueError:
        return body


def compact_info(info: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """``info`` without the keys whose values equal ``base``'s, plus ``_same`` naming them."""
    same = [k for k in ("tools", "system_prompt", "task_meta") if k in info and k in base and info[k] == base[k]]
    if not same:
        return info
    out = {k: v for k, v in info.items() if k not in same}
    out["_same"] = same
    return out


def expand_info(info: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """Undo :func:`compact_info` with the reset's ``base`` info (fresh copies, as the env gives)."""
    same = info.get("_same")
    if not same:
        return info
    out = {k: v for k, v in info.items() if k != "_same"}
    for key in same:
        out[key] = json.loads(json.dumps(base[key]))
    return out


class SessionError(RollgymError):
    """A request the hub refuses; ``code`` is the protocol error code sent back."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code

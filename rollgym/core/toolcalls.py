"""Parsing tool calls out of model text.

The canonical form is the Hermes one that open models emit::

    <tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>

An action may hold several such blocks (parallel calls). A JSON list of
OpenAI-style calls is accepted too, either ``{"name", "arguments"}`` objects or
``{"type": "function", "function": {"name", "arguments": "<json string>"}}``.
Parsing never raises: each malformed block becomes a :class:`ToolCallError`
that an env turns into an error observation. JSON that Python's ``json`` would
accept but that breaks code further on is refused the same way, with a
labelled error: integers longer than ``MAX_INT_DIGITS`` digits (Python refuses
to convert 4,301+ digits, and SQLite anything past 64 bits), ``NaN`` and
``Infinity`` (not JSON) and numbers that overflow a float, nesting deeper than
``MAX_DEPTH``, and strings holding lone UTF-16 surrogates (``"\\ud800"``,
which cannot be encoded as UTF-8).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

_BLOCK_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL | re.IGNORECASE)
MAX_CALLS = 64
MAX_CALL_CHARS = 100_000
MAX_INT_DIGITS = 100
MAX_DEPTH = 64


class _Refused(ValueError):
    """JSON that parses but is refused; the message says why, in words for the model."""


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer has more than {MAX_INT_DIGITS} digits; send big numbers as strings")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:20]}... is too large for a float; send it as a string")
    return value


def _parse_constant(name: str) -> Any:
    raise _Refused(f"{name} is not valid JSON; send numbers as finite values or strings")


def _check_tree(value: Any) -> None:
    """Refuse nesting deeper than MAX_DEPTH and strings that cannot be encoded as UTF-8 (iteratively)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise _Refused("a string holds a lone UTF-16 surrogate; send valid Unicode text") from None
        elif isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                raise _Refused(f"the JSON is nested more than {MAX_DEPTH} levels deep")
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def loads_json(text: str) -> Any:
    """``json.loads`` for model output: every problem is a ``ValueError`` whose message says what to fix.

    Refuses what ``json`` accepts but later code cannot use (see the module docstring).

    Example:
        >>> loads_json('{"a": [1, 2.5, "x"]}')
        {'a': [1, 2.5, 'x']}
        >>> try:
        ...     loads_json('{"a": NaN}')
        ... except ValueError as exc:
        ...     print(exc)
        NaN is not valid JSON; send numbers as finite values or strings
    """
    try:
        value = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except _Refused:
        raise
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None
    except RecursionError:  # json raises this, not JSONDecodeError, for very deep nesting
        raise ValueError(f"the JSON is nested more than {MAX_DEPTH} levels deep") from None
    except (ValueError, OverflowError) as exc:  # anything else the decoder refuses
        raise ValueError(f"not valid JSON ({str(exc)[:80]})") from None
    _check_tree(value)
    return value


@dataclass(frozen=True)
class ToolCall:
    """One parsed call: a tool name and its JSON arguments."""

    name: str
    arguments: dict[str, Any]
    id: str = ""

    def to_hermes(self) -> str:
        """The call in the Hermes ``<tool_call>`` form."""
        return "<tool_call>" + json.dumps({"name": self.name, "arguments": self.arguments}) + "</tool_call>"


@dataclass(frozen=True)
class ToolCallError:
    """A block that looked like a tool call but could not be used, and why."""

    message: str
    raw: str = ""


@dataclass(frozen=True)
class ParsedToolCalls:
    """Everything found in one action: usable calls, errors, and the text around them."""

    calls: list[ToolCall] = field(default_factory=list)
    errors: list[ToolCallError] = field(default_factory=list)
    text: str = ""

    @property
    def found(self) -> bool:
        """Whether the action tried to call any tool at all."""
        return bool(self.calls or self.errors)


def _as_reason(exc: ValueError) -> str:
    message = str(exc)
    return message if message.startswith("not valid JSON") else f"refused: {message}"


def _printable(text: str) -> str:
    """``text`` with lone surrogates replaced, so that an error's ``raw`` can always be encoded."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _call_from_obj(obj: Any, index: int) -> ToolCall | ToolCallError:
    if not isinstance(obj, dict):
        return ToolCallError(f"call {index}: expected a JSON object with 'name' and 'arguments'")
    call_id = str(obj.get("id", ""))
    if obj.get("type") == "function" and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return ToolCallError(f"call {index}: missing the tool 'name'")
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = loads_json(args) if args.strip() else {}
        except ValueError as exc:
            return ToolCallError(f"call {index} to {name!r}: arguments are {_as_reason(exc)}")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return ToolCallError(f"call {index} to {name!r}: 'arguments' must be a JSON object")
    return ToolCall(name=name, arguments=args, id=call_id)


def parse_tool_calls(text: str) -> ParsedToolCalls:
    """Extract every tool call from ``text``.

    Example:
        >>> p = parse_tool_calls('<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>')
        >>> p.calls[0].name, p.calls[0].arguments
        ('f', {'x': 1})
        >>> parse_tool_calls('<tool_call>{oops}</tool_call>').errors[0].message[:27]
        'call 1: not valid JSON (Exp'
    """
    if not isinstance(text, str):
        return ParsedToolCalls(errors=[ToolCallError("the action is not text")])
    calls: list[ToolCall] = []
    errors: list[ToolCallError] = []
    blocks = _BLOCK_RE.findall(text)
    if blocks:
        remaining = _BLOCK_RE.sub("", text).strip()
        for i, raw in enumerate(blocks, start=1):
            if len(calls) + len(errors) >= MAX_CALLS:
                errors.append(ToolCallError(f"too many tool calls in one action (limit {MAX_CALLS})"))
                break
            if len(raw) > MAX_CALL_CHARS:
                errors.append(ToolCallError(f"call {i}: longer than {MAX_CALL_CHARS} characters"))
                continue
            try:
                obj = loads_json(raw.strip())
            except ValueError as exc:
                errors.append(ToolCallError(f"call {i}: {exc}", _printable(raw[:200])))
                continue
            result = _call_from_obj(obj, i)
            (calls if isinstance(result, ToolCall) else errors).append(result)  # type: ignore[arg-type]
        if "<tool_call>" in remaining.lower():
            errors.append(ToolCallError("a <tool_call> block is not closed with </tool_call>"))
        return ParsedToolCalls(calls, errors, remaining)
    stripped = text.strip()
    if "<tool_call>" in stripped.lower():
        return ParsedToolCalls([], [ToolCallError("a <tool_call> block is not closed with </tool_call>")], text)
    if stripped.startswith("[") and stripped.endswith("]") and len(stripped) <= MAX_CALL_CHARS:
        try:
            items = loads_json(stripped)
        except ValueError:  # not a call list: plain text that happens to be bracketed
            return ParsedToolCalls(text=text)
        looks_like_calls = all(isinstance(x, dict) and ("name" in x or "function" in x) for x in items or [0])
        if isinstance(items, list) and items and looks_like_calls:
            for i, obj in enumerate(items[:MAX_CALLS], start=1):
                result = _call_from_obj(obj, i)
                (calls if isinstance(result, ToolCall) else errors).append(result)  # type: ignore[arg-type]
            return ParsedToolCalls(calls, errors, "")
    return ParsedToolCalls(text=text)


def format_tool_response(name: str, result: Any) -> str:
    """Render one tool result as observation text, in the Hermes ``<tool_response>`` form."""
    body = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    return f'<tool_response name="{name}">\n{body}\n</tool_response>'


_TOOL_RESPONSE = re.compile(r'<tool_response name="[^"]*">\n(.*?)\n</tool_response>', re.DOTALL)


def tool_response_bodies(observation: str) -> list[str]:
    """The bodies of the :func:`format_tool_response` blocks in an observation, in order.

    Example:
        >>> tool_response_bodies(format_tool_response("add", {"sum": 3}) + format_tool_response("f", "ok"))
        ['{"sum": 3}', 'ok']
    """
    return _TOOL_RESPONSE.findall(observation)

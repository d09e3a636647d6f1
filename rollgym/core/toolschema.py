"""JSON schemas for tools, derived from typed Python functions.

One definition is the source of truth: a function's signature gives the
parameter types and defaults, its docstring gives the description (the text
before ``Args:``) and one line per parameter (the ``Args:`` section, Google
style). :func:`function_schema` turns that into an OpenAI function schema and
:func:`check_arguments` validates a call's JSON arguments against it, so that
a tool never runs with arguments of the wrong type.

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``list[X]`` of
those, ``Literal[...]`` of strings or ints, and ``X | None`` (nullable: ``{"type": [X, "null"]}``).

Example:
    >>> def greet(name: str, times: int = 1) -> str:
    ...     '''Say hello.
    ...
    ...     Args:
    ...         name: Who to greet.
    ...         times: How often.
    ...     '''
    ...     return "hi " * times + name
    >>> schema = function_schema(greet)
    >>> schema["function"]["parameters"]["required"]
    ['name']
    >>> check_arguments(schema, {"name": 3})
    "argument 'name' must be a string, got 3"
"""

from __future__ import annotations

import inspect
import math
import re
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, Literal, Union

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def _type_schema(annotation: Any, where: str) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    if origin is Literal:
        kinds = {type(a) for a in args}
        if kinds <= {str}:
            return {"type": "string", "enum": list(args)}
        if kinds <= {int}:
            return {"type": "integer", "enum": list(args)}
    if origin is list and len(args) == 1:
        return {"type": "array", "items": _type_schema(args[0], where)}
    if origin in (Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            inner = _type_schema(rest[0], where)
            nullable = {**inner, "type": [inner["type"], "null"]}
            if "enum" in inner:
                nullable["enum"] = [*inner["enum"], None]
            return nullable
    raise TypeError(f"{where}: unsupported annotation {annotation!r} for a tool parameter")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and per-argument text."""
    lines = inspect.cleandoc(doc or "").splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section = "description"
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        if stripped in {"Args:", "Arguments:", "Parameters:"}:
            section, current = "args", None
            continue
        if re.fullmatch(r"[A-Z][A-Za-z ]*:", stripped):  # Returns:, Raises:, Example:
            section, current = "other", None
            continue
        if section == "description":
            description.append(line)
        elif section == "args":
            match = _ARG_LINE.match("  " + line if not line.startswith(" ") else line)
            if match and not line.startswith("        "):
                current = match.group(1)
                params[current] = match.group(2).strip()
            elif current and stripped:
                params[current] = f"{params[current]} {stripped}"
    return " ".join(" ".join(description).split()), params


def function_schema(fn: Callable[..., Any], *, name: str | None = None, skip: Iterable[str] = ()) -> dict[str, Any]:
    """The OpenAI function-calling schema of ``fn`` (``{"type": "function", "function": {...}}``).

    Parameters named in ``skip`` (e.g. an injected context) are left out. A
    parameter without a default is required; every parameter must be annotated
    and documented, so that a tool can never ship without a description.
    """
    fname = name or fn.__name__
    hints = typing.get_type_hints(fn)
    description, arg_docs = parse_docstring(fn.__doc__)
    if not description:
        raise TypeError(f"{fname}: a tool needs a docstring description")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.name in set(skip):
            continue
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise TypeError(f"{fname}: *args and **kwargs are not allowed in tools")
        if param.name not in hints:
            raise TypeError(f"{fname}: parameter {param.name!r} has no type annotation")
        if param.name not in arg_docs:
            raise TypeError(f"{fname}: parameter {param.name!r} is not documented under Args:")
        prop = _type_schema(hints[param.name], f"{fname}.{param.name}")
        prop["description"] = arg_docs[param.name]
        if param.default is param.empty:
            required.append(param.name)
        elif param.default is not None:
            prop["default"] = param.default
        properties[param.name] = prop
    return {
        "type": "function",
        "function": {
            "name": fname,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


def _check_value(value: Any, prop: dict[str, Any], where: str) -> str | None:
    kinds = prop["type"] if isinstance(prop.get("type"), list) else [prop.get("type")]
    if value is None:
        return None if "null" in kinds else f"{where} must not be null"
    kind = kinds[0]
    if kind == "string" and not isinstance(value, str):
        return f"{where} must be a string, got {value!r}"[:200]
    if kind == "boolean" and not isinstance(value, bool):
        return f"{where} must be true or false, got {value!r}"[:200]
    if kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
        if not (isinstance(value, float) and value.is_integer()):
            return f"{where} must be an integer, got {value!r}"[:200]
    if kind == "integer" and not -(2**63) <= value < 2**63:
        return f"{where} is out of range"
    if kind == "number" and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return f"{where} must be a number, got {value!r}"[:200]
    if kind == "number" and not math.isfinite(value):
        return f"{where} must be a finite number"
    if kind == "array":
        if not isinstance(value, list):
            return f"{where} must be a JSON list, got {value!r}"[:200]
        for i, item in enumerate(value):
            error = _check_value(item, prop["items"], f"{where}[{i}]")
            if error:
                return error
    if "enum" in prop and value not in prop["enum"]:
        return f"{where} must be one of {prop['enum']}, got {value!r}"[:200]
    return None


def check_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` do not fit ``schema`` (one sentence), or ``None`` when they do."""
    params = schema["function"]["parameters"]
    props: dict[str, Any] = params["properties"]
    unknown = sorted(set(arguments) - set(props))
    if unknown:
        allowed = ", ".join(props) or "none"
        return f"unknown argument(s) {', '.join(map(repr, unknown))}; allowed: {allowed}"[:300]
    missing = [p for p in params["required"] if p not in arguments]
    if missing:
        return f"missing required argument(s) {', '.join(map(repr, missing))}"
    for key, value in arguments.items():
        error = _check_value(value, props[key], f"argument {key!r}")
        if error:
            return error
    return None


def coerce_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments after :func:`check_arguments` passed, with integral floats made ints."""
    props = schema["function"]["parameters"]["properties"]
    return {
        k: int(v) if props[k].get("type") == "integer" and isinstance(v, float) else v for k, v in arguments.items()
    }


def _one_line(text: Any, limit: int = 160) -> str:
    """The first sentence of ``text`` on one line, at most ``limit`` characters."""
    words = " ".join(str(text or "").split())
    sentence = re.split(r"(?<=[.!?])\s", words, maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 3].rstrip() + "..."


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's OpenAI schema cut to what a small model needs: the name, a one-line description, each parameter's
    type (with ``enum`` and ``items``) and the required list; no parameter descriptions, defaults or
    ``additionalProperties``. Still a valid OpenAI function schema.

    Example:
        >>> def greet(name: str, times: int = 1) -> str:
        ...     '''Say hello. Twice if asked.
        ...
        ...     Args:
        ...         name: Who to greet.
        ...         times: How often.
        ...     '''
        ...     return name
        >>> compact = compact_schema(function_schema(greet))["function"]
        >>> compact["description"], compact["parameters"]["properties"], compact["parameters"]["required"]
        ('Say hello.', {'name': {'type': 'string'}, 'times': {'type': 'integer'}}, ['name'])
    """
    function = schema.get("function") or {}
    parameters = function.get("parameters") or {}
    properties = {name: {k: v for k, v in dict(spec).items() if k in ("type", "enum", "items")}
                  for name, spec in (parameters.get("properties") or {}).items()}
    compact: dict[str, Any] = {"name": function.get("name", "")}
    description = _one_line(function.get("description"))
    if description:
        compact["description"] = description
    compact["parameters"] = {"type": "object", "properties": properties,
                             "required": list(parameters.get("required") or [])}
    return {"type": "function", "function": compact}


def _type_text(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return "|".join(json_text(v) for v in prop["enum"])
    kinds = prop.get("type", "any")
    if isinstance(kinds, list):
        return "|".join(_type_text({**prop, "type": k}) for k in kinds)
    if kinds == "array":
        return _type_text(dict(prop.get("items") or {})) + "[]"
    return str(kinds)


def json_text(value: Any) -> str:
    """``value`` as JSON text (``"a"``, ``3``, ``null``)."""
    import json

    return json.dumps(value)


def tool_signature(schema: dict[str, Any]) -> str:
    """One line for a tool: ``name(param: type, optional?: type) - description``.

    Example:
        >>> tool_signature({"type": "function", "function": {"name": "search", "description": "Find pages.",
        ...     "parameters": {"properties": {"query": {"type": "string"}, "page": {"type": "integer"}},
        ...                    "required": ["query"]}}})
        'search(query: string, page?: integer) - Find pages.'
    """
    function = schema.get("function") or {}
    parameters = function.get("parameters") or {}
    required = set(parameters.get("required") or [])
    params = ", ".join(f"{name}{'' if name in required else '?'}: {_type_text(dict(spec))}"
                       for name, spec in (parameters.get("properties") or {}).items())
    description = _one_line(function.get("description"))
    return f"{function.get('name', '')}({params})" + (f" - {description}" if description else "")


def tool_listing(schemas: Iterable[dict[str, Any]]) -> str:
    """A compact text listing of tools for a system prompt, for chat templates that do not render ``tools``.

    One line per tool (:func:`tool_signature`; a ``?`` marks an optional parameter), after one line that says
    how to call them in the Hermes form that rollgym's envs read.
    """
    lines = [tool_signature(s) for s in schemas]
    return ("# Tools\nCall a tool by writing <tool_call>{\"name\": <tool name>, \"arguments\": {<JSON object>}}"
            "</tool_call>. The tools (a ? marks an optional parameter):\n" + "\n".join(f"- {line}" for line in lines))

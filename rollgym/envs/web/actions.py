"""The web action language: a fixed allowlist of browser verbs, parsed, never executed as code.

An action is one call such as ``click(12)``, ``fill(7, "blue kettle")``,
``select(9, "Price: low to high")``, ``check(4)``, ``press("Enter")``,
``scroll("down")``, ``goto("/search?q=lamp")``, ``go_back()`` or
``answer("Lumina Pro Kettle")``. The call may sit anywhere in the model's text
(the last one counts) or come as a Hermes tool call
(``<tool_call>{"name": "click", "arguments": {"id": 12}}</tool_call>``).

The text is read with :func:`ast.parse` in ``eval`` mode and only a call of an
allowed verb with literal string or integer arguments is accepted: nothing is
evaluated, so ``goto("javascript:...")``, other hosts and injected script
are rejected with an :class:`ActionError` that the env shows to the agent.

With ``coordinates=True`` (the screenshot observation modes) three more verbs work
on the screenshot's pixels: ``click_at(x, y)``, ``type("text")`` (into whatever has
the focus) and ``scroll_at(x, y, "down")``. Without it they are not actions at all,
so text-mode parsing is exactly as it always was.

Example:
    >>> parse_action('I will search now: fill(3, "kettle")')
    Action(verb='fill', args=(3, 'kettle'))
    >>> parse_action("goto('javascript:alert(1)')")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rollgym.envs.web.actions.ActionError: goto only accepts a path on this site ...
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from rollgym.core.toolcalls import parse_tool_calls

MAX_TEXT = 2000
KEYS = frozenset(
    {
        "Enter",
        "Tab",
        "Escape",
        "Backspace",
        "Delete",
        "ArrowUp",
        "ArrowDown",
        "ArrowLeft",
        "ArrowRight",
        "PageUp",
        "PageDown",
        "Home",
        "End",
        "Space",
    }
)

# verb -> (argument names, argument kinds); "id" is an element id, "text" a string.
SIGNATURES: dict[str, tuple[tuple[str, str], ...]] = {
    "click": (("id", "id"),),
    "fill": (("id", "id"), ("text", "text")),
    "select": (("id", "id"), ("option", "text")),
    "check": (("id", "id"),),
    "press": (("key", "text"),),
    "scroll": (("direction", "text"),),
    "goto": (("path", "text"),),
    "go_back": (),
    "answer": (("text", "text"),),
}
COORDINATE_SIGNATURES: dict[str, tuple[tuple[str, str], ...]] = {
    "click_at": (("x", "coord"), ("y", "coord")),
    "type": (("text", "text"),),
    "scroll_at": (("x", "coord"), ("y", "coord"), ("direction", "text")),
}
"""Verbs on screenshot pixels, accepted with ``coordinates=True``; ``x`` and ``y`` are CSS pixels of the page's
visible area, the same as the screenshot's pixels."""
MAX_COORD = 10_000

ACTION_HELP = """Actions (one per turn; element ids are the [numbers] in the page text):
  click(id)              click a link, button or checkbox
  fill(id, "text")       replace the text in a text box
  select(id, "option")   choose an option of a drop-down by its label
  check(id)              tick a checkbox or radio button
  press("Enter")         press a key (Enter, Tab, Escape, Backspace, arrows, PageUp, PageDown)
  scroll("down")         scroll the page up or down
  goto("/path")          open a page of this site by its path
  go_back()              go back to the previous page
  answer("text")         finish the task; give the requested information, or "done" for tasks that change something"""

COORDINATE_HELP = """Screen actions (x, y are pixels of the screenshot, from its top-left corner):
  click_at(x, y)              click whatever is at that point
  type("text")                type into the focused field, replacing its text (or choose a drop-down option)
  scroll_at(x, y, "down")     scroll the area under that point up or down"""

_VERB_RE = re.compile(r"\b(" + "|".join(SIGNATURES) + r")\s*\(")
_ALL_VERB_RE = re.compile(r"\b(" + "|".join([*SIGNATURES, *COORDINATE_SIGNATURES]) + r")\s*\(")


def _signatures(coordinates: bool) -> dict[str, tuple[tuple[str, str], ...]]:
    return {**SIGNATURES, **COORDINATE_SIGNATURES} if coordinates else SIGNATURES


class ActionError(ValueError):
    """An action that is not in the allowlist or has bad arguments; the message tells the agent how to fix it."""


@dataclass(frozen=True)
class Action:
    """One parsed action: a verb from :data:`SIGNATURES` and its checked arguments."""

    verb: str
    args: tuple[Any, ...]

    def __str__(self) -> str:
        return f"{self.verb}({', '.join(repr(a) for a in self.args)})"


def _call_text(text: str, start: int) -> str | None:
    """The text of the call starting at ``start`` up to its matching parenthesis, honouring quotes."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
        i += 1
    return None


def _element_id(value: Any, verb: str) -> int:
    if isinstance(value, str):
        value = value.strip().strip("[]")
        if value.isdigit():
            value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 100_000:
        raise ActionError(
            f"{verb} needs an element id, a number shown in [brackets] in the page text, e.g. {verb}(12)."
        )
    return value


def check_path(path: str) -> str:
    """Accept a same-site path such as ``/search?q=lamp``; reject schemes, hosts and odd characters."""
    bad = ActionError('goto only accepts a path on this site that starts with "/", such as goto("/search?q=lamp").')
    if not path.startswith("/") or path.startswith("//") or "\\" in path or len(path) > MAX_TEXT:
        raise bad
    if any(ord(ch) < 32 or ch.isspace() for ch in path):
        raise bad
    parts = urlsplit(path)
    if parts.scheme or parts.netloc or unquote(parts.path).startswith("//"):
        raise bad
    return path


def _coordinate(value: Any, verb: str) -> int:
    if isinstance(value, str) and value.strip().lstrip("-").replace(".", "", 1).isdigit():
        value = float(value.strip())
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or not 0 <= value < MAX_COORD:
        raise ActionError(f"{verb} needs pixel coordinates as numbers, e.g. {verb}(640, 120).")
    return round(value)


def _check_args(verb: str, values: list[Any], coordinates: bool = False) -> Action:
    spec = _signatures(coordinates)[verb]
    if len(values) != len(spec):
        names = ", ".join(name for name, _ in spec)
        raise ActionError(f"{verb} takes {len(spec)} argument(s) ({names}); got {len(values)}.")
    out: list[Any] = []
    for (name, kind), value in zip(spec, values):
        if kind == "id":
            out.append(_element_id(value, verb))
            continue
        if kind == "coord":
            out.append(_coordinate(value, verb))
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise ActionError(f"The {name} of {verb} must be a quoted string.")
        if len(value) > MAX_TEXT:
            raise ActionError(f"The {name} of {verb} is longer than {MAX_TEXT} characters; shorten it.")
        out.append(value)
    action = Action(verb, tuple(out))
    if verb == "press" and action.args[0] not in KEYS:
        raise ActionError(f"press accepts one of: {', '.join(sorted(KEYS))}.")
    if verb == "scroll" and action.args[0] not in {"up", "down"}:
        raise ActionError('scroll takes "up" or "down".')
    if verb == "scroll_at" and action.args[2] not in {"up", "down"}:
        raise ActionError('scroll_at takes x, y and "up" or "down".')
    if verb == "goto":
        check_path(action.args[0])
    return action


def _from_tool_call(text: str, coordinates: bool = False) -> Action | None:
    parsed = parse_tool_calls(text)
    if not parsed.found:
        return None
    if parsed.errors and not parsed.calls:
        raise ActionError(f"Could not read the tool call: {parsed.errors[0].message}")
    call = parsed.calls[-1]
    signatures = _signatures(coordinates)
    if call.name not in signatures:
        raise ActionError(f"Unknown action {call.name!r}. " + ACTION_HELP.splitlines()[0])
    names = [name for name, _ in signatures[call.name]]
    unknown = set(call.arguments) - set(names)
    if unknown:
        raise ActionError(f"{call.name} takes arguments {names}; unknown {sorted(unknown)}.")
    missing = [n for n in names if n not in call.arguments]
    if missing:
        raise ActionError(f"{call.name} is missing argument(s) {missing}.")
    return _check_args(call.name, [call.arguments[n] for n in names], coordinates)


def parse_action(text: str, *, coordinates: bool = False) -> Action:
    """Parse the last allowed action call in ``text`` (with ``coordinates``, the screen verbs too).

    Raises:
        ActionError: with one sentence saying what is wrong and how to write the action.
    """
    if not isinstance(text, str):
        raise ActionError("Actions are text, e.g. click(12).")
    from_tool = _from_tool_call(text, coordinates)
    if from_tool is not None:
        return from_tool
    found: Action | None = None
    error: ActionError | None = None
    pos = 0
    verbs = _ALL_VERB_RE if coordinates else _VERB_RE
    while (match := verbs.search(text, pos)) is not None:
        call = _call_text(text, match.start())
        if call is None:
            error = ActionError(f"The {match[1]}(...) call is not closed; check its parentheses and quotes.")
            pos = match.end()
            continue
        try:
            found, error = _parse_call(match[1], call, coordinates), None
            pos = match.start() + len(call)  # skip calls quoted inside this one's arguments
        except ActionError as exc:
            error = exc
            pos = match.end()
    if error is not None:
        raise error
    if found is None:
        raise ActionError('No action found; write exactly one action such as click(12) or answer("...").')
    return found


def _parse_call(verb: str, call: str, coordinates: bool = False) -> Action:
    try:
        node = ast.parse(call, mode="eval").body
    except SyntaxError:
        raise ActionError(f'Could not read {verb}(...); quote text arguments, e.g. fill(3, "kettle").') from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.keywords:
        raise ActionError(f"Write {verb} with positional arguments only, e.g. {verb}(...).")
    values: list[Any] = []
    for arg in node.args:
        if not isinstance(arg, ast.Constant) or not isinstance(arg.value, (str, int, float)):
            raise ActionError(f"Arguments of {verb} must be literal numbers or quoted strings.")
        values.append(arg.value)
    return _check_args(node.func.id, values, coordinates)


_TOOL_DOCS = {
    "click": "Click a link, button or checkbox by its element id.",
    "fill": "Replace the text of a text box.",
    "select": "Choose an option of a drop-down by its label.",
    "check": "Tick a checkbox or radio button.",
    "press": "Press one key, e.g. Enter.",
    "scroll": "Scroll the page up or down.",
    "goto": "Open a page of this site by its path, e.g. /search?q=lamp.",
    "go_back": "Go back to the previous page.",
    "answer": 'Finish the task with the requested information, or "done" for tasks that change something.',
    "click_at": "Click at a point of the screenshot (pixels from its top-left corner).",
    "type": "Type text into the focused field, replacing what it holds (or choose a drop-down option).",
    "scroll_at": "Scroll the area under a point of the screenshot up or down.",
}
_KIND_SCHEMAS = {"id": {"type": "integer", "description": "element id from the page text"},
                 "coord": {"type": "integer", "description": "pixels from the screenshot's top-left corner"},
                 "text": {"type": "string"}}


def tool_schemas(coordinates: bool = False) -> list[dict[str, Any]]:
    """OpenAI function schemas of the actions (with ``coordinates``, the screen verbs too)."""
    out = []
    for verb, spec in _signatures(coordinates).items():
        props = {name: dict(_KIND_SCHEMAS[kind]) for name, kind in spec}
        out.append(
            {
                "type": "function",
                "function": {
                    "name": verb,
                    "description": _TOOL_DOCS[verb],
                    "parameters": {"type": "object", "properties": props, "required": [n for n, _ in spec]},
                },
            }
        )
    return out

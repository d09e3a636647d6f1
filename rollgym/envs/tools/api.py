"""The app model of every tool env: apps (tables, seeded rows, typed tools), the episode session, the tool calls.

ToolWorld's six hand-written apps and ToolGen's 256 generated apps are both :class:`App` s: the
``CREATE TABLE`` statements of their tables, a ``populate`` function that draws their rows from a
seed, and their tools, each a :class:`ToolSpec` (a typed function and its OpenAI schema).
:meth:`App.build` makes the base database, :func:`copy_db` one episode's copy of it and
:func:`base_snapshot` the state-diff grader's "before" state.

An operation is a plain function whose first parameter is the episode's
:class:`Session` (which user is acting, the clock, the app databases); the
remaining parameters are what the agent passes. :func:`tool` registers it, and
its OpenAI schema, documentation and read/write marking all come from that one
definition (see :mod:`rollgym.core.toolschema`). :func:`call_tool` is the only
way in from an agent: it validates the arguments, runs the operation and turns
every failure into ``{"error": {"type", "message"}}`` without internals.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rollgym.core.toolcalls import format_tool_response, parse_tool_calls
from rollgym.core.toolschema import check_arguments, coerce_arguments, function_schema
from rollgym.verifiers.statediff import Snapshot, snapshot

MAX_PAGE_SIZE = 50
TIME_FORMAT = "%Y-%m-%d %H:%M"


class ToolError(Exception):
    """A failure the agent should see: ``type`` is a short code, ``message`` one sentence."""

    def __init__(self, type: str, message: str) -> None:
        super().__init__(message)
        self.type = type
        self.message = message


@dataclass
class Session:
    """One episode's view of the world: the acting user, the frozen clock and the app databases."""

    user: str
    now: datetime
    dbs: dict[str, sqlite3.Connection]
    completed: bool = False
    answer: str | None = None
    calls: int = 0
    touched: set[tuple[str, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        for app, conn in self.dbs.items():
            conn.set_authorizer(_authorizer(app, self.touched))

    def db(self, app: str) -> sqlite3.Connection:
        """The connection of one app's database."""
        return self.dbs[app]

    def close(self) -> None:
        """Close every app's database (the episode is over)."""
        for conn in self.dbs.values():
            conn.close()


@dataclass(frozen=True)
class ToolSpec:
    """A registered operation: its app, whether it writes, the function and its schema."""

    name: str
    app: str
    writes: bool
    fn: Callable[..., Any]
    schema: dict[str, Any] = field(repr=False)

    @property
    def description(self) -> str:
        """The one-paragraph documentation shown to agents."""
        return str(self.schema["function"]["description"])


REGISTRY: dict[str, ToolSpec] = {}

_WRITES = {sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE}
_FORBIDDEN = {
    sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, sqlite3.SQLITE_PRAGMA, sqlite3.SQLITE_ALTER_TABLE,
    sqlite3.SQLITE_CREATE_TABLE, sqlite3.SQLITE_CREATE_INDEX, sqlite3.SQLITE_CREATE_TRIGGER,
    sqlite3.SQLITE_CREATE_VIEW, sqlite3.SQLITE_CREATE_TEMP_TABLE, sqlite3.SQLITE_CREATE_TEMP_TRIGGER,
    sqlite3.SQLITE_CREATE_TEMP_VIEW, sqlite3.SQLITE_CREATE_TEMP_INDEX, sqlite3.SQLITE_CREATE_VTABLE,
    sqlite3.SQLITE_DROP_TABLE, sqlite3.SQLITE_DROP_INDEX, sqlite3.SQLITE_DROP_TRIGGER, sqlite3.SQLITE_DROP_VIEW,
    sqlite3.SQLITE_DROP_TEMP_TABLE, sqlite3.SQLITE_DROP_TEMP_TRIGGER, sqlite3.SQLITE_DROP_TEMP_VIEW,
    sqlite3.SQLITE_DROP_TEMP_INDEX, sqlite3.SQLITE_DROP_VTABLE,
}


def _authorizer(app: str, touched: set[tuple[str, str]]) -> Callable[..., int]:
    """An SQLite authorizer for an episode's database: no schema changes, attachments or pragmas (defence in
    depth behind parameterised queries), and a record of every table a statement may write, so that grading
    diffs only those tables."""

    def authorize(action: int, arg1: str | None, arg2: str | None, dbname: str | None, source: str | None) -> int:
        if action in _FORBIDDEN:
            return sqlite3.SQLITE_DENY
        if action in _WRITES and arg1:
            touched.add((app, arg1))
        return sqlite3.SQLITE_OK

    return authorize


def tool(app: str, *, writes: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a function as an operation of ``app``; ``writes`` marks state-changing ones."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        schema = function_schema(fn, skip=("session",))
        REGISTRY[fn.__name__] = ToolSpec(fn.__name__, app, writes, fn, schema)
        return fn

    return register


def tools_of(app: str) -> dict[str, ToolSpec]:
    """The registered operations of one hand-written app, by name, in registration order."""
    return {name: spec for name, spec in REGISTRY.items() if spec.app == app}


@dataclass(frozen=True)
class App:
    """One app of a tool world: its tables, how its rows are drawn, and its tools.

    Attributes:
        name: The app's id; its tables are named ``<name>.<table>`` in a state diff.
        tables: The ``CREATE TABLE`` statements (an SQL script).
        populate: ``populate(conn, source)`` fills the new tables from a seeded ``source`` (the hand-written
            apps take a :class:`~rollgym.envs.tools.people.WorldGen`, the generated ones an RNG).
        tools: The app's operations by name.
    """

    name: str
    tables: str = field(repr=False)
    populate: Callable[[sqlite3.Connection, Any], None] = field(repr=False)
    tools: Mapping[str, ToolSpec] = field(repr=False)

    def build(self, source: Any) -> sqlite3.Connection:
        """A new in-memory base database: the tables, filled by ``populate`` from ``source``."""
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.executescript(self.tables)
        self.populate(conn, source)
        conn.commit()
        return conn


def copy_db(base: sqlite3.Connection) -> sqlite3.Connection:
    """A fresh in-memory copy of a base database, for one episode (SQLite's online backup)."""
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    base.backup(conn)
    return conn


def base_snapshot(base: sqlite3.Connection) -> Snapshot:
    """The state-diff grader's snapshot of a base database (its "before" state)."""
    return snapshot(lambda sql, params=(): base.execute(sql, params).fetchall())


def tool_schemas(apps: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The OpenAI schemas of every operation (of ``apps`` when given, plus the supervisor's)."""
    wanted = None if apps is None else {*apps, "supervisor"}
    return [spec.schema for spec in REGISTRY.values() if wanted is None or spec.app in wanted]


def error(type: str, message: str) -> dict[str, Any]:
    """The one error shape every operation returns."""
    return {"error": {"type": type, "message": message}}


def call_tool(session: Session, name: str, arguments: dict[str, Any],
              tools: Mapping[str, ToolSpec] | None = None) -> dict[str, Any]:
    """Run one operation of ``tools`` (default: the hand-written apps' ``REGISTRY``) for the agent.

    Never raises and never leaks internals: an unknown name gets close matches (for names of
    at most 100 characters, so a huge name costs nothing), bad arguments a one-line reason, a
    bug in an operation a generic ``internal_error``.
    """
    tools = REGISTRY if tools is None else tools
    spec = tools.get(name)
    if spec is None:
        import difflib

        close = difflib.get_close_matches(name, list(tools), n=3, cutoff=0.6) if len(name) <= 100 else []
        hint = f" Did you mean {', '.join(close)}?" if close else " See info['tools'] for the list."
        return error("unknown_tool", f"There is no tool named {name[:80]!r}.{hint}")
    problem = check_arguments(spec.schema, arguments)
    if problem:
        return error("invalid_arguments", f"{name}: {problem}.")
    session.calls += 1
    try:
        result = spec.fn(session, **coerce_arguments(spec.schema, arguments))
    except ToolError as exc:
        return error(exc.type, exc.message)
    except Exception:  # a bug must not show a traceback or SQL to the agent
        return error("internal_error", f"{name} failed unexpectedly; try different arguments.")
    return result if isinstance(result, dict) else {"result": result}


def run_turn(action: str, session: Session, run: Callable[[str, dict[str, Any]], dict[str, Any]], *, attempts: int,
             max_calls_per_turn: int, max_calls: int, max_observation: int) -> tuple[str, int]:
    """One agent turn of a tool env: parse ``action``'s tool calls and run them with ``run(name, arguments)``.

    Calls beyond ``max_calls_per_turn`` in this turn, or beyond ``max_calls`` in the episode
    (``attempts`` so far), are skipped with a ``call_limit`` error; a call that completes the
    task ends the turn. Returns the observation (one response per call, malformed calls
    labelled, cut to ``max_observation`` characters with a note) and the new ``attempts``.
    """
    parsed = parse_tool_calls(action)
    parts = [format_tool_response("error", {"error": {"type": "malformed_call", "message": e.message}})
             for e in parsed.errors]
    if not parsed.found:
        parts.append("No tool call found. Write <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>; "
                     "call complete_task when you are done.")
    for index, tool_call in enumerate(parsed.calls):
        if index >= max_calls_per_turn or attempts >= max_calls:
            parts.append(format_tool_response(tool_call.name, {"error": {
                "type": "call_limit", "message": f"Skipped: at most {max_calls_per_turn} calls per turn "
                                                 f"and {max_calls} per episode."}}))
            continue
        attempts += 1
        parts.append(format_tool_response(tool_call.name, run(tool_call.name, tool_call.arguments)))
        if session.completed:
            break
    observation = "\n".join(parts)
    if len(observation) > max_observation:  # keep observations inside the space; say so rather than cut silently
        note = "\n[output cut: ask for fewer results per call]"
        observation = observation[: max_observation - len(note)] + note
    return observation, attempts


# -- helpers shared by the apps ---------------------------------------------------


def page_of(
    conn: sqlite3.Connection, sql: str, params: list[Any], page: int, page_size: int, row: Callable[[Any], Any]
) -> dict[str, Any]:
    """Run a parameterised SELECT and return one page of it with the total count."""
    if page < 1:
        raise ToolError("invalid_arguments", "page starts at 1.")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ToolError("invalid_arguments", f"page_size must be between 1 and {MAX_PAGE_SIZE}.")
    total = conn.execute(f"SELECT COUNT(*) FROM ({sql})", params).fetchone()[0]
    rows = conn.execute(f"{sql} LIMIT ? OFFSET ?", [*params, page_size, (page - 1) * page_size]).fetchall()
    return {
        "results": [row(r) for r in rows],
        "page": page,
        "page_size": page_size,
        "total": total,
        "has_more": page * page_size < total,
    }


def like(text: str) -> str:
    """A LIKE pattern that matches ``text`` literally anywhere (``%`` and ``_`` escaped with ``\\``)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def parse_time(value: str, name: str) -> str:
    """Normalise a ``YYYY-MM-DD HH:MM`` (or ``YYYY-MM-DD``) argument, or raise a clear ToolError."""
    text = value.strip().replace("T", " ")
    for fmt in (TIME_FORMAT, "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, fmt).strftime(TIME_FORMAT)
        except ValueError:
            continue
    raise ToolError("invalid_arguments", f"{name} must look like 2025-03-14 09:30, got {value[:40]!r}.")


def time_window(column: str, **bounds: str | None) -> tuple[str, list[Any]]:
    """The SQL conditions and parameters of an optional time window on ``column``.

    ``bounds`` are the agent's arguments by name, at most one lower bound (inclusive) first, then at most one upper
    bound (exclusive), e.g. ``time_window("start", start_after=a, start_before=b)``; ``None`` leaves a side open.
    Each value is checked with :func:`parse_time`.
    """
    sql, params = "", []
    for (name, value), op in zip(bounds.items(), (">=", "<")):
        if value is not None:
            sql += f" AND {column} {op} ?"
            params.append(parse_time(value, name))
    return sql, params


def to_cents(amount: float, name: str = "amount") -> int:
    """Dollars to whole cents; amounts must be positive with at most two decimals."""
    if not 0 < amount <= 10**7:
        raise ToolError("invalid_arguments", f"{name} must be a positive amount in dollars, at most 10000000.")
    cents = round(amount * 100)
    if abs(cents - amount * 100) > 1e-6:
        raise ToolError("invalid_arguments", f"{name} must be a positive amount in dollars with at most 2 decimals.")
    return int(cents)


def dollars(cents: int) -> float:
    """Cents as a dollar float rounded to two decimals."""
    return round(cents / 100, 2)

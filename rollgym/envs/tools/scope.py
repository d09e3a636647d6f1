"""Which tools an episode shows: every tool, or only those the task's reference solution calls.

A small model cannot read 6,700 tokens of tool schemas: ToolWorld's 53 tools, a ToolGen world's 37 or
UserSim's 52. With ``tool_scope="task"`` an env lists only the tools its task's reference solution calls
(found by running that solution on a scratch copy of the episode's databases) and ``complete_task``, each
as a compact schema (:func:`~rollgym.core.toolschema.compact_schema`). ``"auto"``, the default, does so for
episodes drawn at the easiest difficulty level (``reset(options={"difficulty": 0})``) and shows every tool
otherwise, so an id's default tasks are unchanged. The listing is a hint, not a wall: a call to a tool
it leaves out still runs, as in the full world.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.core.toolschema import compact_schema
from rollgym.envs.tools.api import Session
from rollgym.envs.tools.policies import drive_reference

TOOL_SCOPES = ("auto", "all", "task")
"""The ``tool_scope`` values: ``auto`` (``task`` at the easiest level, else ``all``), ``all``, ``task``."""

FINISH_TOOL = "complete_task"


def check_tool_scope(value: Any) -> str:
    """``value`` when it is one of :data:`TOOL_SCOPES`; else a ConfigError in one sentence."""
    if value not in TOOL_SCOPES:
        raise ConfigError(f"tool_scope must be one of {', '.join(TOOL_SCOPES)}, got {value!r}.")
    return str(value)


def scope_is_task(tool_scope: str, difficulty: int | None) -> bool:
    """Whether an episode drawn at level ``difficulty`` (``None``: a default draw) shows only the task's tools."""
    return tool_scope == "task" or (tool_scope == "auto" and difficulty == 0)


def solution_tools(solution: Generator[Any, Any, Any], session: Session,
                   call: Callable[[Session, str, dict[str, Any]], dict[str, Any]]) -> list[str] | None:
    """The names of the tools ``solution`` calls on ``session`` (closed afterwards), in order of first call;
    ``None`` when the solution fails (then the env shows every tool)."""
    names: list[str] = []

    def run(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if name not in names:
            names.append(name)
        return call(session, name, arguments)

    try:
        drive_reference(solution, run)
    except Exception:  # a reference that breaks must not break the episode
        return None
    finally:
        session.close()
    return names


def scoped_schemas(schemas: list[dict[str, Any]], names: list[str] | None) -> list[dict[str, Any]]:
    """Compact schemas of the tools named in ``names`` and ``complete_task``, in the order of ``schemas``;
    every schema unchanged when ``names`` is ``None``."""
    if names is None:
        return schemas
    wanted = {*names, FINISH_TOOL}
    return [compact_schema(s) for s in schemas if s["function"]["name"] in wanted]

"""Shared helpers of the tool-world tests: running solutions and damaging a world through the API."""

from __future__ import annotations

from typing import Any

from rollgym.core.task import Task
from rollgym.envs.tools.api import Session, call_tool
from rollgym.envs.tools.env import new_session
from rollgym.envs.tools.tasks import TEMPLATES, task_world
from rollgym.verifiers.tools import Expectation


def expectation(task: Task) -> Expectation:
    """The hidden expectation of a task (tests only)."""
    return TEMPLATES[task.meta["template"]].expect(task_world(task), task.meta["params"])


def touched_keys(exp: Expectation) -> set[tuple[str, str, int]]:
    """Rows the task is allowed or required to change."""
    return set(exp.updates) | set(exp.deletes)


def _first(results: list[dict[str, Any]], id_field: str, avoid: set[int]) -> int | None:
    return next((r[id_field] for r in results if r[id_field] not in avoid), None)


def damage(session: Session, task: Task, kind: str) -> bool:
    """Make one unrelated change through the tools; returns whether it went through."""
    exp = expectation(task)
    avoid = {k[2] for k in touched_keys(exp)}
    if kind == "delete_contact":
        found = call_tool(session, "contacts_search", {"page_size": 50})["results"]
        cid = _first(found, "contact_id", avoid)
        return cid is not None and "error" not in call_tool(session, "contacts_delete", {"contact_id": cid})
    if kind == "trash_email":
        found = call_tool(session, "email_search", {"folder": "inbox", "page_size": 50})["results"]
        eid = _first(list(reversed(found)), "email_id", avoid)
        return eid is not None and "error" not in call_tool(session, "email_move", {"email_id": eid, "folder": "trash"})
    if kind == "stray_transfer":
        found = call_tool(session, "contacts_search", {"page_size": 50})["results"]
        result = call_tool(session, "payments_send", {"to": found[-1]["email"], "amount": 1.0, "note": "oops"})
        return "error" not in result
    if kind == "stray_note":
        return "error" not in call_tool(session, "notes_create", {"title": "Scratch", "body": "tmp"})
    if kind == "retitle_event":
        me = call_tool(session, "whoami", {})["email"]
        found = call_tool(session, "calendar_search", {"page_size": 50})["results"]
        eid = _first([e for e in found if e["owner"] == me], "event_id", avoid)
        return eid is not None and "error" not in call_tool(session, "calendar_update",
                                                            {"event_id": eid, "title": "Renamed"})
    raise ValueError(kind)


DAMAGES = ["delete_contact", "trash_email", "stray_transfer", "stray_note", "retitle_event"]


def fresh(task: Task) -> Session:
    """A new episode state for a task."""
    return new_session(task)


def play(env: Any, agent: Any, options: dict[str, Any] | None = None, seed: int = 0,
         max_steps: int = 200) -> tuple[float, bool, bool, dict[str, Any]]:
    """Play one episode of ``env`` with ``agent`` to its end: ``(reward, terminated, truncated, info)``."""
    obs, info = env.reset(seed=seed, options=options)
    agent.reset(seed)
    for _ in range(max_steps):
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        if terminated or truncated:
            return reward, terminated, truncated, info
    raise AssertionError("the episode did not end")

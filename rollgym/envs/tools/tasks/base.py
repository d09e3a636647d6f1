"""Task templates: the base class, the registry, and helpers for reference solutions.

A :class:`TaskTemplate` turns a base world and an RNG into task parameters
(``sample``), words them as the user's request (``prompt``), solves them
through the same tool calls an agent makes (``solve``, a generator that yields
``(tool, arguments)`` and receives each result), and states the required end
state from the hidden base world (``expect``). ``solve`` sees only the public
parameters, so the oracle agent can run it from ``info["task_meta"]``.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from rollgym.envs.tools.world import World
from rollgym.verifiers.tools import AnswerKind, Expectation

Call = tuple[str, dict[str, Any]]
Solution = Generator[Call, Any, str | None]
Step = Generator[Call, Any, Any]
Params = dict[str, Any]
W = TypeVar("W")

TEMPLATES: dict[str, TaskTemplate] = {}
VERSIONS = (0, 1)
"""The ToolWorld task versions (``ToolWorld-v0``, ``ToolWorld-v1``)."""


class Template(Generic[W]):
    """The model of every tool-env task template, hand-written or generated: four methods over the base state
    ``W`` (ToolWorld's :class:`~rollgym.envs.tools.world.World`, ToolGen's built apps by id)."""

    answer_kind: ClassVar[AnswerKind] = "none"

    def sample(self, world: W, rng: np.random.Generator) -> Params | None:
        """Parameters for one task in ``world``, or ``None`` when the world offers no instance."""
        raise NotImplementedError

    def prompt(self, p: Params) -> str:
        """The user's request."""
        raise NotImplementedError

    def solve(self, p: Params) -> Solution:
        """The reference solution, through tool calls; returns the answer (or ``None``)."""
        raise NotImplementedError

    def expect(self, world: W, p: Params) -> Expectation:
        """The required end state and answer, computed from the base state."""
        raise NotImplementedError


class TaskTemplate(Template[World]):
    """One kind of ToolWorld task; a subclass declares itself in its class line and writes the four methods.

    A subclass that passes ``name`` is added to :data:`TEMPLATES`; one without (a shared base) is not::

        class CalendarCancel(TaskTemplate, name="calendar_cancel", scenario="calendar", apps=("calendar",)):
            ...

    ``versions`` lists the ToolWorld versions whose task sources draw from the template: the v0 counting
    questions (a small count is easy to guess) were replaced in v1 by questions that ask for the items.
    """

    name: ClassVar[str]
    scenario: ClassVar[str]
    apps: ClassVar[tuple[str, ...]]
    versions: ClassVar[tuple[int, ...]] = (0, 1)

    def __init_subclass__(cls, *, name: str | None = None, scenario: str | None = None,
                          apps: tuple[str, ...] | None = None, answer_kind: AnswerKind | None = None,
                          versions: tuple[int, ...] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = {"scenario": scenario, "apps": apps, "answer_kind": answer_kind, "versions": versions}
        for attribute, value in declared.items():
            if value is not None:
                setattr(cls, attribute, value)
        if name is not None:
            cls.name = name
            TEMPLATES[name] = cls()


def templates_of(version: int) -> list[str]:
    """Names of the templates that ToolWorld version ``version`` draws from, sorted."""
    return sorted(n for n, t in TEMPLATES.items() if version in t.versions)


# -- reading the base world (expectations and sampling) ---------------------------


def rows(world: World, app: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run a read-only query on a base database."""
    return [tuple(r) for r in world.dbs[app].execute(sql, params).fetchall()]


def choose(rng: np.random.Generator, items: list[Any]) -> Any:
    """One item drawn uniformly, or ``None`` from an empty list."""
    return items[int(rng.integers(len(items)))] if items else None


def day_text(day: str) -> str:
    """``2025-03-14`` as ``Friday 2025-03-14``."""
    return f"{datetime.strptime(day[:10], '%Y-%m-%d'):%A} {day[:10]}"


def contact_names(world: World) -> list[str]:
    """Names in the user's address book (the people a prompt may name)."""
    return [r[0] for r in rows(world, "contacts", "SELECT name FROM contacts WHERE owner = ? ORDER BY name",
                               world.me.email)]


def email_of(world: World, name: str) -> str:
    """A person's email address by full name."""
    return next(p.email for p in world.people if p.name == name)


# -- building blocks of reference solutions ---------------------------------------


def call(tool: str, **arguments: Any) -> Step:
    """Make one call and return its result (``yield from call(...)``)."""
    result = yield tool, arguments
    return result


def every(tool: str, **arguments: Any) -> Generator[Call, Any, list[dict[str, Any]]]:
    """Fetch every page of a paginated search and return all results."""
    found: list[dict[str, Any]] = []
    page = 1
    while True:
        result = yield tool, {**arguments, "page": page, "page_size": 50}
        found += result.get("results", [])
        if not result.get("has_more"):
            return found
        page += 1


def named(tool: str, name: str) -> Step:
    """Search with ``tool`` for ``name`` and return the first result called exactly that (a contact, a product)."""
    found = yield from call(tool, query=name)
    return next(r for r in found["results"] if r["name"] == name)


def contact_email(name: str) -> Generator[Call, Any, str]:
    """Look a person up in the address book and return their email address."""
    result = yield "contacts_search", {"query": name}
    exact = [c for c in result.get("results", []) if c["name"] == name]
    return str(exact[0]["email"]) if exact else ""

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
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from rollgym.envs.tools.tasks.reads import choose, contact_names, day_text, email_of, rows
from rollgym.envs.tools.tasks.steps import Call, Step, call, contact_email, every, named
from rollgym.envs.tools.world import World
from rollgym.verifiers.tools import AnswerKind, Expectation

#: The reads and steps are re-exported here: the generated templates import them from this module.
__all__ = [
    "TEMPLATES", "VERSIONS", "Call", "Params", "Solution", "Step", "TaskTemplate", "Template", "call", "choose",
    "contact_email", "contact_names", "day_text", "email_of", "every", "named", "rows", "templates_of",
]

Solution = Generator[Call, Any, str | None]
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

"""Task templates: how a family of web tasks is sampled, phrased, graded and solved.

A :class:`TaskTemplate` draws public parameters and a hidden answer from the
site's seeded database with a per-task RNG, words the goal, builds the
:class:`~.rubric.Rubric`, states which changes of the site's database the task
allows (:meth:`TaskTemplate.allowed`, checked over every table by the gate
``site_unchanged_beyond_task``), and provides a reference solution. The reference
solution is a generator that receives the parsed page (:class:`PageView`)
after each action and yields the next action string, so it goes through the
same action interface, parser and browser as any agent.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator
from typing import Any

import numpy as np

from rollgym.envs.web.observation import Element, PageView
from rollgym.envs.web.server import query_base
from rollgym.envs.web.sites import SITES
from rollgym.verifiers.rubric import Criterion, GradeContext, Rubric, collateral_gate
from rollgym.verifiers.statediff import Rule, added, deleted
from rollgym.verifiers.web import changed_ids, new_rows

SITE_GATE = "site_unchanged_beyond_task"
"""The whole-site gate: no row of any table of the site changed beyond what the task allows."""

Solution = Generator[str, PageView, None]


class TaskTemplate(ABC):
    """One family of tasks on one site.

    Attributes:
        name: Stable template name, part of every task id, e.g. ``"shop_purchase"``.
        site: Site key, ``"shop"``, ``"forum"`` or ``"travel"``.
        kind: ``"info"`` (answer a question) or ``"transaction"`` (change the site's state).
    """

    name: str = ""
    site: str = ""
    kind: str = "info"

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Query the site's seeded database."""
        return query_base(self.site, sql, params)

    @staticmethod
    def pick(rng: np.random.Generator, items: list[Any]) -> Any:
        """One item of a non-empty list, drawn with ``rng``."""
        return items[int(rng.integers(len(items)))]

    @abstractmethod
    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        """Draw ``(params, answer)``: public parameters (all stated in the goal) and the hidden answer."""

    @abstractmethod
    def goal(self, params: dict[str, Any]) -> str:
        """The goal text shown to the agent."""

    @abstractmethod
    def criteria(self, params: dict[str, Any], answer: Any) -> list[Criterion]:
        """The rubric's criteria for one task."""

    @abstractmethod
    def solve(self, params: dict[str, Any], view: PageView) -> Solution:
        """The reference solution: yields actions, receives the page after each one."""

    @staticmethod
    def credentials(username: str) -> dict[str, str]:
        """A seeded user's sign-in parameters (every seeded password is ``<username>123``)."""
        return {"username": username, "password": username + "123"}

    def sign_in_goal(self, p: dict[str, Any], role: str = "") -> str:
        """The start of a goal that needs the task's user signed in, e.g. ``"Sign in to Northwind Market as alice
        (password alice123)"``; ``role`` goes before the name (``"the moderator "``)."""
        return f"Sign in to {SITES[self.site].name} as {role}{p['username']} (password {p['password']})"

    @staticmethod
    def status_is(table: str, row_id: Any, status: str) -> Callable[[GradeContext], bool]:
        """A check that row ``row_id`` of ``table`` has ``status`` in the episode's database."""
        return lambda ctx: bool(ctx.db(f"SELECT 1 FROM {table} WHERE id = ? AND status = ?", (row_id, status)))

    @staticmethod
    def only_that_one_changed(name: str, weight: float, table: str, row_id: Any, reason: str) -> Criterion:
        """The gate of a cancelling task: of ``table``'s rows only ``row_id`` changed its status, and none is new."""
        return Criterion(name, weight,
                         lambda ctx: changed_ids(ctx, table, "status") == {row_id} and not new_rows(ctx, table),
                         reason, gate=True)

    def user_id(self, username: str) -> int:
        """The id of a user of the site, from the seeded database."""
        return int(self.rows("SELECT id FROM users WHERE username = ?", (username,))[0]["id"])

    def allowed(self, params: dict[str, Any], answer: Any) -> list[Rule]:
        """Every change of the site's database the task allows, in any table (the allow-list of the site gate).

        The default allows signing in and out as the task's own user (``params["username"]``), if it names one,
        and nothing else; transaction templates add the changes their goal needs.
        """
        if "username" not in params:
            return []
        uid = self.user_id(params["username"])
        return [added("sessions", {"user_id": uid}, note=f"sign-ins of {params['username']}"),
                deleted("sessions", {"user_id": uid}, note=f"sign-outs of {params['username']}")]

    def rubric(self, params: dict[str, Any], answer: Any, *, site_gate: bool = False) -> Rubric:
        """The task's rubric; with ``site_gate`` (the ``-v2`` ids) it ends with the whole-site gate."""
        criteria = list(self.criteria(params, answer))
        if site_gate:
            criteria.append(collateral_gate(SITE_GATE, self.allowed(params, answer),
                                            "no row of any table of the site changed beyond what the task allows"))
        return Rubric(criteria)


# -- small helpers used by reference solutions ---------------------------------
def q(text: str) -> str:
    """A string literal for an action argument."""
    return json.dumps(text, ensure_ascii=False)


def click(el: Element) -> str:
    """``click(id)`` of an element."""
    return f"click({el.id})"


def fill(el: Element, text: str) -> str:
    """``fill(id, "text")`` of an element."""
    return f"fill({el.id}, {q(text)})"


def select(el: Element, option: str) -> str:
    """``select(id, "option")`` of an element."""
    return f"select({el.id}, {q(option)})"


def goto(path: str) -> str:
    """``goto("/path")``."""
    return f"goto({q(path)})"


def answer(text: str) -> str:
    """``answer("text")``."""
    return f"answer({q(text)})"


def sign_in(view: PageView, username: str, password: str) -> Generator[str, PageView, PageView]:
    """Open the sign-in page and log in; returns the page after logging in."""
    view = yield goto("/login")
    view = yield fill(view.find("textbox", "Username"), username)
    view = yield fill(view.find("textbox", "Password"), password)
    view = yield click(view.find("button", "Sign in"))
    return view


def click_through_pages(view: PageView, role: str, name: str) -> Generator[str, PageView, tuple[PageView, Element]]:
    """Follow "Next" links until an element appears; returns the page and the element."""
    for _ in range(30):
        try:
            return view, view.find(role, name)
        except LookupError:
            view = yield click(view.find("link", "Next →"))
    raise LookupError(f"{role} {name!r} not found on any page")

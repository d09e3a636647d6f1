"""Task mechanisms of the generated sites: how one kind of task is sampled, worded, graded and solved.

A mechanism works on any kind: a template (:class:`~.kinds.TemplateSpec`) names a
mechanism and its options (``extreme`` over ``price``, ascending), and the kind
supplies the words. Each mechanism

* draws public parameters and the hidden answer from the site's seeded database
  (``None`` when this site offers no fitting instance: the source draws again);
* words the goal;
* for questions, says what type the answer has (``money``, ``int``, ``date``, ``name``);
* for changes, states the rows the task *requires* and those it *tolerates*
  (:class:`~rollgym.verifiers.statediff.Rule`), which feed the shared state-diff grader;
* solves it through the pages with a :class:`~.driver.Driver` (the reference solution).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from typing import Any

import numpy as np

from rollgym.envs.genworld import templates as core
from rollgym.envs.genworld.schema import money_input, money_text
from rollgym.envs.genworld.templates import TemplateKind
from rollgym.envs.web.gen.domain import TODAY
from rollgym.envs.web.gen.driver import Driver
from rollgym.envs.web.gen.kinds import FieldSpec, Kind
from rollgym.envs.web.gen.site import GeneratedSite
from rollgym.envs.web.observation import PageView
from rollgym.envs.web.server import query_base
from rollgym.envs.web.tasks.base import Solution, answer, click
from rollgym.verifiers.statediff import Rule, added, deleted
from rollgym.verifiers.web import guessable

Drawn = tuple[dict[str, Any], Any] | None
_PHRASES = ("Thanks for the clear write-up", "Please double-check the details", "Following up on this today",
            "This worked well for our team", "Could you confirm the schedule", "Adding a note for the record",
            "Looks good to me after testing", "Updated after a second look")


@lru_cache(maxsize=100_000)
def _seeded_rows(site_key: str, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(query_base(site_key, sql, params))


@dataclass(frozen=True)
class Ctx:
    """A site and its seeded database, as mechanisms see them."""

    site: GeneratedSite

    @property
    def kind(self) -> Kind:
        """The site's kind."""
        return self.site.kind

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Query the site's seeded database (it never changes, so answers are cached)."""
        return list(_seeded_rows(self.site.key, sql, tuple(params)))

    def user(self, rng: np.random.Generator, editor: bool = False) -> Any:
        """A random user (an editor when ``editor``)."""
        where = " WHERE role = ?" if editor else ""
        users = self.rows(f"SELECT * FROM users{where} ORDER BY id", (self.kind.roles[1],) if editor else ())
        return users[int(rng.integers(len(users)))]

    def enum_values(self, key: str) -> list[str]:
        """The values an enum field takes on the site (as its forms offer them)."""
        f = self.kind.field(key)
        if f.choices and not f.choices[0].startswith("{"):
            return list(f.choices)
        return [r[0] for r in self.rows(f"SELECT DISTINCT {f.key} FROM items ORDER BY {f.key}")]

    def sign_in_text(self, p: dict[str, Any]) -> str:
        """``Sign in to <site> as <user> (password <password>)``."""
        return f"Sign in to {self.site.name} as {p['username']} (password {p['password']})"


def pick(rng: np.random.Generator, items: list[Any]) -> Any:
    """One item of a non-empty list."""
    return items[int(rng.integers(len(items)))]


def creds(user: Any) -> dict[str, str]:
    """Public parameters naming a user and their password."""
    return {"username": user["username"], "password": user["username"] + "123"}


def sessions(uid: int) -> list[Rule]:
    """Signing in and out as the task's own user."""
    return [added("sessions", {"user_id": uid}, note="the user's sign-ins"),
            deleted("sessions", {"user_id": uid}, note="the user's sign-outs")]


def shown(site: GeneratedSite, f: FieldSpec, value: Any) -> str:
    """A value as a goal states it (money in dollars, dates in ISO, text quoted)."""
    if f.type == "money":
        return money_text(value, grouped=True)
    if f.type == "text":
        return json.dumps(value, ensure_ascii=False)
    return f"{value}" + (f" {f.unit}" if f.unit and f.type == "int" else "")


def typed(f: FieldSpec, value: Any) -> str:
    """A value as a form takes it (dollars for money)."""
    return money_input(value) if f.type == "money" else str(value)


def answer_type(f: FieldSpec) -> str:
    """How an answer of a field's value is read."""
    return {"money": "money", "int": "int", "date": "date"}.get(f.type, "name")


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``13th``, ..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def new_value(ctx: Ctx, f: FieldSpec, rng: np.random.Generator, current: Any, record: bool) -> Any:
    """A value of ``f`` different from ``current`` (new text is a fresh sentence)."""
    value: Any = None
    for _ in range(50):
        if f.type == "money":  # salaries and rents in whole dollars
            cents = 0 if f.hi > 1000 else int(pick(rng, [0, 25, 50, 75, 99]))
            value = int(rng.integers(f.lo, f.hi)) * 100 + cents
        elif f.type == "int":
            value = int(rng.integers(f.lo, f.hi + 1))
        elif f.type == "date":
            lo, hi = (f.lo, f.hi) if record or f.lo > 0 else (5, 200)
            value = (TODAY + timedelta(days=int(rng.integers(lo, hi + 1)))).isoformat()
        elif f.type == "enum":
            value = pick(rng, ctx.enum_values(f.key))
        else:
            value = f"{pick(rng, list(_PHRASES))} (note {int(rng.integers(1000, 10000))})"
        if value != current:
            return value
    return None


class Mechanism(TemplateKind):
    """Base of every mechanism: a template kind of the generated-world core
    (:class:`~rollgym.envs.genworld.templates.TemplateKind`) named by its ``operation``; it ``asks`` a question
    (an ``info`` task) unless it changes the site (a ``transaction``)."""

    asks = True

    @property
    def kind(self) -> str:
        """``"info"`` (it asks) or ``"transaction"`` (it changes the site)."""
        return "info" if self.asks else "transaction"

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        """Draw ``(params, answer)``, or ``None`` when the site has no fitting instance."""
        raise NotImplementedError

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        """The goal text."""
        raise NotImplementedError

    def answer_type(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> tuple[str, str]:
        """``(type, unit)`` of a question's answer."""
        return "name", ""

    def required(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        """The changes the task asks for."""
        return []

    def tolerated(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        """Changes the task allows besides (its user's sign-ins are added by the caller)."""
        return []

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        """The reference solution."""
        raise NotImplementedError


# -- questions ------------------------------------------------------------------------------------------------------


def draw_extreme(ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> tuple[dict[str, Any], Any] | None:
    """A scope of the listing and the item it ranks first by a field.

    The scope is a category, a category and a value of an enum field, or such a value across the whole site.
    Returns ``(public parameters, item row)``, or ``None`` when the first two items tie.
    """
    f = ctx.kind.field(opt["field"])
    enums = [e for e in ctx.kind.fields if e.filter]
    scope = int(rng.integers(3)) if enums else 0
    where, params, out = "archived = 0", [], {}
    if scope < 2:
        cat = pick(rng, ctx.rows("SELECT * FROM categories ORDER BY id"))
        where += " AND category_id = ?"
        params.append(cat["id"])
        out["category"] = cat["name"]
    if scope > 0:
        e = pick(rng, enums)
        values = [r[0] for r in ctx.rows(f"SELECT {e.key} FROM items WHERE {where} GROUP BY {e.key} HAVING "
                                         f"COUNT(*) >= 2 ORDER BY {e.key}", tuple(params))]
        if not values:
            return None
        value = pick(rng, values)
        where += f" AND {e.key} = ?"
        params.append(value)
        out["filter"] = [e.key, value]
    order = "ASC" if opt["order"] == "asc" else "DESC"
    found = ctx.rows(f"SELECT * FROM items WHERE {where} ORDER BY {f.key} {order}, name", tuple(params))
    if len(found) < 2 or found[0][f.key] == found[1][f.key]:
        return None
    return out, found[0]


def _superlative(ctx: Ctx, opt: dict[str, Any]) -> str:
    return ctx.kind.field(opt["field"]).words[0 if opt["order"] == "asc" else 1]


def extreme_phrase(ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
    """``the cheapest product [in the Kitchen department] [whose brand is Hoford]``."""
    k = ctx.kind
    text = f"the {_superlative(ctx, opt)} {k.singular}"
    if "category" in p:
        text += f" in the {p['category']} {k.category_label.lower()}"
    if "filter" in p:
        text += f" whose {k.field(p['filter'][0]).label.lower()} is {p['filter'][1]}"
    return text + ("" if "category" in p else " on the whole site")


def open_extreme(drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Any:
    """Open the listing that ranks the item of :func:`draw_extreme` first."""
    filters = dict([p["filter"]]) if "filter" in p else None
    view = yield from drv.open_listing(view, category=p.get("category"), sort=(opt["field"], opt["order"]),
                                       filters=filters)
    return view


class Extreme(Mechanism):
    """The item of a category with the lowest or highest value of a field; answered by name."""

    operation = "extreme"
    reads = "name"  # the column of the item that answers

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        found = draw_extreme(ctx, opt, rng)
        return None if found is None else (found[0], found[1][self.reads])

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        return f"On {ctx.site.name}, find {extreme_phrase(ctx, opt, p)}. Answer with the {ctx.kind.singular}'s name."

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from open_extreme(drv, opt, p, view)
        yield answer(drv.results(view)[0].name)


class Kth(Mechanism):
    """The item at a given position of the whole listing sorted by a field (past the first page)."""

    operation = "kth"

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        f = ctx.kind.field(opt["field"])
        order = "ASC" if opt["order"] == "asc" else "DESC"
        found = ctx.rows(f"SELECT name, {f.key} AS v FROM items WHERE archived = 0 ORDER BY {f.key} {order}, name")
        size = ctx.site.theme.page_size
        lo, hi = size + 1, min(len(found), 3 * size)
        if lo > hi:
            return None
        k = int(rng.integers(lo, hi + 1))
        values = [r["v"] for r in found]
        if values[k - 1] == values[k - 2] or (k < len(values) and values[k - 1] == values[k]):
            return None
        return {"position": k}, found[k - 1]["name"]

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        f = ctx.kind.field(opt["field"])
        first = ("earliest" if opt["order"] == "asc" else "latest") if f.type == "date" else \
            ("lowest" if opt["order"] == "asc" else "highest")
        return (f"On {ctx.site.name}, put all the {ctx.kind.plural} in order of {f.label.lower()}, {first} first. "
                f"Which {ctx.kind.singular} comes {ordinal(p['position'])}? Answer with its name.")

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from drv.open_listing(view, sort=(opt["field"], opt["order"]))
        view, found = yield from drv.nth_result(view, p["position"])
        yield answer(found.name)


class Lookup(Mechanism, core.Lookup):
    """One field of a named item."""

    operation = "lookup"

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        f = ctx.kind.field(opt["field"])
        item = pick(rng, ctx.rows("SELECT * FROM items WHERE archived = 0 ORDER BY id"))
        if guessable(answer_type(f), item[f.key], f.unit):
            return None
        return {"item": item["name"]}, item[f.key]

    def answer_type(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> tuple[str, str]:
        f = ctx.kind.field(opt["field"])
        return answer_type(f), f.unit

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        f = ctx.kind.field(opt["field"])
        return (f"On {ctx.site.name}, what is the {f.label.lower()} of the {ctx.kind.singular} \"{p['item']}\"? "
                "Answer with the value only.")

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from drv.open_item(view, p["item"])
        yield answer(drv.read(view, drv.site.kind.field(opt["field"]).label))


class FindByCode(Mechanism):
    """The item that has a given code."""

    operation = "find_by_code"

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        item = pick(rng, ctx.rows("SELECT * FROM items WHERE archived = 0 ORDER BY id"))
        return {"code": item["code"]}, item["name"]

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        k = ctx.kind
        return f"On {ctx.site.name}, which {k.singular} has the {k.code_label} {p['code']}? Answer with its name."

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from drv.search(view, p["code"])
        yield answer(drv.results(view)[0].name)


class ChainCode(Extreme):
    """The code of the extreme item of a category: find it, open it, read its code."""

    operation, reads = "chain_code", "code"

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        code = ctx.kind.code_label
        return f"On {ctx.site.name}, what is the {code} of {extreme_phrase(ctx, opt, p)}? Answer with the {code} only."

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from open_extreme(drv, opt, p, view)
        view = yield click(drv.results(view)[0])
        yield answer(drv.read(view, drv.site.kind.code_label))


class MyRecordValue(Mechanism):
    """A value of one of the user's own records (its date, total, or a field): sign in, find it, read it."""

    operation = "my_record_value"

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        user = ctx.user(rng)
        found = ctx.rows("SELECT r.*, i.name FROM records r JOIN items i ON i.id = r.item_id WHERE r.user_id = ? "
                         "ORDER BY r.id", (user["id"],))
        once = [r for r in found if sum(x["item_id"] == r["item_id"] for x in found) == 1]
        if not once or (opt["value"] == "total" and ctx.kind.record.total is None):
            return None
        rec = pick(rng, once)
        value = rec[opt["value"]]
        kind, unit = self._type(ctx, opt)
        if value is None or guessable(kind, value, unit):
            return None
        return {**creds(user), "item": rec["name"]}, value

    def _type(self, ctx: Ctx, opt: dict[str, Any]) -> tuple[str, str]:
        if opt["value"] == "created":
            return "date", ""
        if opt["value"] == "total":
            return "money", ""
        f = ctx.kind.record_field(opt["value"])
        return answer_type(f), f.unit

    def answer_type(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> tuple[str, str]:
        return self._type(ctx, opt)

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        record = ctx.kind.record.table_label[0]
        head = f"{ctx.sign_in_text(p)}. "
        if opt["value"] == "created":
            return head + f"On what date was your {record} for \"{p['item']}\" created? Answer with the date."
        if opt["value"] == "total":
            return head + f"What is the total of your {record} for \"{p['item']}\"? Answer with the amount."
        label = ctx.kind.record_field(opt["value"]).label.lower()
        return head + f"What is the {label} of your {record} for \"{p['item']}\"? Answer with the value only."

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from drv.sign_in(view, p["username"], p["password"])
        view = yield from drv.nav(view, "nav_mine")
        view = yield click(drv.record_link(view, p["item"]))
        label = {"created": "Created", "total": "Total"}.get(opt["value"]) or \
            drv.site.kind.record_field(opt["value"]).label
        yield answer(drv.read(view, label))

"""Task templates generated per schema: lookups that ask for evidence, edits, domain actions and chains.

A template kind (a :class:`GenTemplate` subclass) lists the *targets* it can take in a
schema (``lookup`` takes a field of an entity, ``action`` a domain action, ...); one
template is one kind on one target of one app, named ``<app>:<kind>:<target>``. Like
ToolWorld's hand-written templates, each has four short methods: ``sample`` draws public
parameters from the app's base database, ``prompt`` words them, ``solve`` is the reference
solution through the same tools an agent calls (it sees only the parameters and the tool
results), and ``expect`` states the required end state from the base database, graded by
the shared state-diff grader with the whole-world gate.

Questions ask for a value, a name or a list of names, never a bare count, and the task
source redraws any instance that a constant answer would solve.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from rollgym.envs.tools.checker import AnswerKind, Expectation
from rollgym.envs.tools.generated.domains import DOMAINS, PHRASES
from rollgym.envs.tools.generated.schema import Action, AppSchema, Entity, Field
from rollgym.envs.tools.generated.store import TODAY, GenApp, day, people
from rollgym.envs.tools.tasks.base import Call, Params, Solution, call, choose, every

Apps = dict[str, GenApp]
Row = dict[str, Any]
Step = Generator[Call, Any, Any]

GROUPS = ("lookup", "edit", "action", "chain", "cross_app")
"""Scenario groups of templates (one env id each)."""


class GenTemplate:
    """One kind of generated task on one target; subclasses set ``kind``, ``group`` and the four methods."""

    kind: ClassVar[str]
    group: ClassVar[str]
    answer_kind: ClassVar[AnswerKind] = "none"

    def __init__(self, name: str, apps: tuple[str, ...], target: str) -> None:
        self.name = name
        self.apps = apps
        self.target = target

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        """Public parameters of one task, or ``None`` when the apps offer no instance."""
        raise NotImplementedError

    def prompt(self, p: Params) -> str:
        """The request, in words."""
        raise NotImplementedError

    def solve(self, p: Params) -> Solution:
        """The reference solution through tool calls; returns the answer or ``None``."""
        raise NotImplementedError

    def expect(self, apps: Apps, p: Params) -> Expectation:
        """The required end state and answer, from the base databases."""
        raise NotImplementedError


# -- words and values ------------------------------------------------------------------------------------


def shown(f: Field, value: Any) -> str:
    """A stored value as a prompt states it."""
    if f.kind == "money":
        return f"${value / 100:.2f}"
    if f.kind == "bool":
        return "true" if value else "false"
    return str(value)


def answer_of(f: Field, value: Any) -> tuple[Any, AnswerKind]:
    """The expected answer of a question about a stored value, and its kind."""
    if f.kind == "money":
        return round(value / 100, 2), "number"
    if f.kind == "int":
        return int(value), "number"
    return str(value), "text"


def fresh_value(f: Field, old: Any, rng: np.random.Generator) -> Any:
    """A stored value for ``f`` different from ``old``, drawn from the field's spread."""
    for _ in range(20):
        low, high = f.spread
        if f.kind == "enum":
            value: Any = f.values[int(rng.integers(len(f.values)))]
        elif f.kind == "bool":
            value = 0 if old else 1
        elif f.kind == "int":
            value = int(rng.integers(low, high + 1))
        elif f.kind == "money":
            value = int(rng.integers(low, high + 1)) * 100 + int(rng.choice([0, 25, 50, 75, 90]))
        elif f.kind == "date":
            value = day(int(rng.integers(1, 60)))
        elif f.kind == "email":
            value = f"contact{int(rng.integers(100, 1000))}@mail.example.org"
        elif f.name == "phone":
            value = f"+1-555-{int(rng.integers(100, 1000))}-{int(rng.integers(1000, 10000))}"
        else:
            a, b = (PHRASES[int(i)] for i in rng.choice(len(PHRASES), size=2, replace=False))
            value = f"{a}, {b} #{int(rng.integers(100, 1000))}"
        if value != old:
            return value
    return None


def as_argument(f: Field, value: Any) -> Any:
    """A stored value as a tool argument (money in dollars, flags as booleans)."""
    if f.kind == "money":
        return round(value / 100, 2)
    if f.kind == "bool":
        return bool(value)
    return value


def listable(labels: list[str]) -> bool:
    """Whether names can be answered as a comma-separated list (no commas, semicolons or 'and' inside)."""
    return all("," not in x and ";" not in x and " and " not in f" {x.lower()} " for x in labels)


# -- reading the base database ---------------------------------------------------------------------------


def handle(entity: Entity, row: Row) -> str:
    """How a prompt names a row: the record's code, the item's or party's label."""
    return str(row[entity.label])


def ref_of(schema: AppSchema, role: str) -> str:
    """The record's reference field to its party or item (``member_id``)."""
    target = schema.party if role == "party" else schema.item
    assert target is not None
    return f"{target.name}_id"


def tool(schema: AppSchema, entity: Entity, op: str) -> str:
    """A tool's name."""
    return f"{schema.app_id}_{entity.name}_{op}"


def eligible(app: GenApp, action: Action, rows: list[Row], stock: dict[int, int] | None = None,
             ignore_flag: bool = False) -> bool:
    """Whether ``action`` succeeds on every one of ``rows`` in turn (stock drawn down as it goes)."""
    schema = app.schema
    parties = {r["id"]: r for r in app.table(schema.party)}
    item = schema.item
    left = dict(stock) if stock is not None else (
        {r["id"]: r[schema.counter] for r in app.table(item)} if item is not None and schema.counter else {})
    quantity = next((f.name for f in schema.record.fields if f.role == "quantity"), None)
    for row in rows:
        if row["status"] not in action.sources:
            return False
        if action.flag and not row.get(action.flag) and not ignore_flag:
            return False
        if action.party_flag and not parties[row[ref_of(schema, "party")]].get(action.party_flag):
            return False
        if action.counter and row["status"] in action.counted and item is not None and quantity:
            key = row[ref_of(schema, "item")]
            left[key] += action.counter * row[quantity]
            if left[key] < 0:
                return False
    return True


def action_changes(app: GenApp, action: Action, rows: list[Row], extra: Row | None = None
                   ) -> dict[tuple[str, str, int], Row]:
    """The updates ``action`` makes on ``rows`` (status and stamp, item counters), as Expectation updates."""
    schema = app.schema
    out: dict[tuple[str, str, int], Row] = {}
    item = schema.item
    stock = {r["id"]: r[schema.counter] for r in app.table(item)} if item is not None and schema.counter else {}
    quantity = next((f.name for f in schema.record.fields if f.role == "quantity"), None)
    for row in rows:
        out[(schema.app_id, schema.record.table, row["id"])] = {**(extra or {}), "status": action.target,
                                                                action.stamp: TODAY}
        if action.counter and row["status"] in action.counted and item is not None and quantity and schema.counter:
            key = row[ref_of(schema, "item")]
            stock[key] += action.counter * row[quantity]
            out[(schema.app_id, item.table, key)] = {schema.counter: stock[key]}
    return out


# -- reference-solution steps ----------------------------------------------------------------------------


def find(schema: AppSchema, entity: Entity, label: str) -> Step:
    """Look a row up by its label through the search tool and return it."""
    found = yield from every(tool(schema, entity, "search"), query=label)
    return next(r for r in found if str(r.get(entity.label)) == label)


def get(schema: AppSchema, entity: Entity, row_id: int) -> Step:
    """Fetch one row by id."""
    result = yield from call(tool(schema, entity, "get"), **{f"{entity.name}_id": row_id})
    return result


def owner_of(schema: AppSchema, code: str) -> Step:
    """The party row that holds the record with this code."""
    record = yield from find(schema, schema.record, code)
    party = yield from get(schema, schema.party, record[ref_of(schema, "party")])
    return party


# -- lookups -------------------------------------------------------------------------------------------


class AppTemplate(GenTemplate):
    """A template over one app; ``self.schema`` is public (the tools document it)."""

    def __init__(self, schema: AppSchema, target: str) -> None:
        super().__init__(f"{schema.app_id}:{self.kind}:{target}", (schema.app_id,), target)
        self.schema = schema

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        """The targets this kind can take in ``schema`` (empty: the kind does not apply)."""
        raise NotImplementedError

    def app(self, apps: Apps) -> GenApp:
        """The template's app."""
        return apps[self.schema.app_id]

    def entity_field(self) -> tuple[Entity, Field]:
        """The ``entity.field`` target."""
        entity, name = self.target.split(".")
        e = self.schema.entity(entity)
        return e, e.field(name)


class Lookup(AppTemplate):
    """What is a field of one row (named by its label)?"""

    kind, group = "lookup", "lookup"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        out = []
        for e in (schema.party, schema.item, schema.record):
            if e is None:
                continue
            for f in e.fields:
                wide = f.kind != "int" or f.spread[1] - f.spread[0] >= 30
                if f.name != e.label and f.kind in ("text", "email", "money", "int", "date") and f.role != "stamp" \
                        and wide:
                    out.append(f"{e.name}.{f.name}")
        return out

    @property
    def answer_kind(self) -> AnswerKind:  # type: ignore[override]
        return answer_of(self.entity_field()[1], 0)[1]

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        e, f = self.entity_field()
        row = choose(rng, [r for r in self.app(apps).table(e) if r[f.name] is not None])
        return None if row is None else {"label": handle(e, row)}

    def prompt(self, p: Params) -> str:
        e, f = self.entity_field()
        unit = " Answer with the amount in dollars." if f.kind == "money" else ""
        return f"In {self.schema.title}, what is the {f.words} of the {e.words} {p['label']}?{unit}"

    def solve(self, p: Params) -> Solution:
        e, f = self.entity_field()
        row = yield from find(self.schema, e, p["label"])
        return f"{row[f.name]:.2f}" if f.kind == "money" else str(row[f.name])

    def expect(self, apps: Apps, p: Params) -> Expectation:
        e, f = self.entity_field()
        row = next(r for r in self.app(apps).table(e) if handle(e, r) == p["label"])
        answer, kind = answer_of(f, row[f.name])
        return Expectation(answer=answer, answer_kind=kind)


class FilterList(AppTemplate):
    """Which rows have an enum value (and a number at least a threshold)? Answer with their labels."""

    kind, group, answer_kind = "filter_list", "lookup", "list"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [f"{e.name}.{f.name}" for e in (schema.party, schema.item, schema.record) if e is not None
                for f in e.fields if f.kind == "enum"]

    def _matches(self, app: GenApp, p: Params) -> list[Row]:
        e, f = self.entity_field()
        rows = [r for r in app.table(e) if r[f.name] == p["value"]]
        if p.get("number"):
            n = e.field(p["number"])
            scale = 100 if n.kind == "money" else 1
            rows = [r for r in rows if r[n.name] is not None and r[n.name] >= p["at_least"] * scale]
        return rows

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        e, f = self.entity_field()
        app = self.app(apps)
        p: Params = {"value": choose(rng, list(f.values))}
        numbers = [n for n in e.fields if n.kind in ("money", "int") and n.role not in ("quantity",)]
        if numbers and rng.random() < 0.5:
            n = choose(rng, numbers)
            values = sorted(r[n.name] for r in app.table(e) if r[n.name] is not None and r[f.name] == p["value"])
            if values:
                cut = values[int(rng.integers(len(values)))]
                p.update(number=n.name, at_least=cut // 100 if n.kind == "money" else cut)
        labels = [handle(e, r) for r in self._matches(app, p)]
        return p if 1 <= len(labels) <= 8 and listable(labels) else None

    def prompt(self, p: Params) -> str:
        e, f = self.entity_field()
        extra = ""
        if p.get("number"):
            n = e.field(p["number"])
            extra = f" and a {n.words} of at least {'$' if n.kind == 'money' else ''}{p['at_least']}"
        return (f"In {self.schema.title}, which {e.plural_words} have {f.words} {p['value']}{extra}? Answer with "
                f"their {e.field(e.label).words}s, separated by commas.")

    def solve(self, p: Params) -> Solution:
        e, f = self.entity_field()
        filters: dict[str, Any] = {f.name: p["value"]}
        if p.get("number"):
            filters[f"min_{p['number']}"] = p["at_least"]
        found = yield from every(tool(self.schema, e, "search"), **filters)
        return ", ".join(str(r[e.label]) for r in found)

    def expect(self, apps: Apps, p: Params) -> Expectation:
        e, _ = self.entity_field()
        return Expectation(answer=[handle(e, r) for r in self._matches(self.app(apps), p)], answer_kind="list")


class Total(AppTemplate):
    """What is the total of a money field over the records with one status (of one party)?"""

    kind, group, answer_kind = "total", "lookup", "number"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [f"{schema.record.name}.{f.name}" for f in schema.record.fields if f.kind == "money"]

    def _rows(self, app: GenApp, p: Params) -> list[Row]:
        e, f = self.entity_field()
        rows = [r for r in app.table(e) if r["status"] == p["status"] and r[f.name] is not None]
        if p.get("party"):
            pid = next(r["id"] for r in app.table(self.schema.party) if r["name"] == p["party"])
            rows = [r for r in rows if r[ref_of(self.schema, "party")] == pid]
        return rows

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        app = self.app(apps)
        p: Params = {"status": choose(rng, list(self.schema.statuses))}
        if rng.random() < 0.5:
            p["party"] = choose(rng, [r["name"] for r in app.table(self.schema.party)])
        return p if len(self._rows(app, p)) >= 2 else None

    def prompt(self, p: Params) -> str:
        e, f = self.entity_field()
        whose = f" of {self.schema.party.words} {p['party']}" if p.get("party") else ""
        return (f"In {self.schema.title}, what is the total {f.words} of all {p['status']} {e.plural_words}{whose}? "
                "Answer with the amount in dollars.")

    def solve(self, p: Params) -> Solution:
        e, f = self.entity_field()
        filters: dict[str, Any] = {"status": p["status"]}
        if p.get("party"):
            party = yield from find(self.schema, self.schema.party, p["party"])
            filters[ref_of(self.schema, "party")] = party[f"{self.schema.party.name}_id"]
        found = yield from every(tool(self.schema, e, "search"), **filters)
        return f"{sum(r[f.name] or 0 for r in found):.2f}"

    def expect(self, apps: Apps, p: Params) -> Expectation:
        _, f = self.entity_field()
        total = sum(r[f.name] for r in self._rows(self.app(apps), p))
        return Expectation(answer=round(total / 100, 2), answer_kind="number")


class TopParty(AppTemplate):
    """Which party has the largest total of a money field over their records with one status?"""

    kind, group, answer_kind = "top_party", "lookup", "text"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [f"{schema.record.name}.{f.name}" for f in schema.record.fields if f.role == "amount"]

    def _totals(self, app: GenApp, status: str) -> dict[int, int]:
        _, f = self.entity_field()
        totals: dict[int, int] = defaultdict(int)
        for r in app.table(self.schema.record):
            if r["status"] == status and r[f.name] is not None:
                totals[r[ref_of(self.schema, "party")]] += r[f.name]
        return totals

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        status = choose(rng, list(self.schema.statuses))
        ranked = sorted(self._totals(self.app(apps), status).values(), reverse=True)
        return {"status": status} if len(ranked) >= 2 and ranked[0] > ranked[1] else None

    def prompt(self, p: Params) -> str:
        _, f = self.entity_field()
        return (f"In {self.schema.title}, which {self.schema.party.words} has the largest total {f.words} over their "
                f"{p['status']} {self.schema.record.plural_words}? Answer with their name.")

    def solve(self, p: Params) -> Solution:
        _, f = self.entity_field()
        found = yield from every(tool(self.schema, self.schema.record, "search"), status=p["status"])
        totals: dict[int, float] = defaultdict(float)
        for r in found:
            totals[r[ref_of(self.schema, "party")]] += r[f.name] or 0
        best = max(totals, key=lambda k: totals[k])
        party = yield from get(self.schema, self.schema.party, best)
        return str(party["name"])

    def expect(self, apps: Apps, p: Params) -> Expectation:
        totals = self._totals(self.app(apps), p["status"])
        best = max(totals, key=lambda k: totals[k])
        name = next(r["name"] for r in self.app(apps).table(self.schema.party) if r["id"] == best)
        return Expectation(answer=name, answer_kind="text")


# -- edits ---------------------------------------------------------------------------------------------


class Update(AppTemplate):
    """Change one field of one row."""

    kind, group = "update", "edit"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [f"{e.name}.{f.name}" for e in (schema.party, schema.item, schema.record)
                if e is not None and "update" in e.ops
                for f in e.fields if f.editable and f.kind != "ref" and f.name != e.label
                and f.role not in ("code", "status", "stamp")]

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        e, f = self.entity_field()
        row = choose(rng, self.app(apps).table(e))
        value = fresh_value(f, row[f.name], rng)
        return None if value is None else {"label": handle(e, row), "value": value}

    def prompt(self, p: Params) -> str:
        e, f = self.entity_field()
        if f.kind == "bool":
            negation = "" if p["value"] else "not "
            return f"In {self.schema.title}, mark the {e.words} {p['label']} as {negation}{f.words}."
        return f"In {self.schema.title}, change the {f.words} of the {e.words} {p['label']} to {shown(f, p['value'])}."

    def solve(self, p: Params) -> Solution:
        e, f = self.entity_field()
        row = yield from find(self.schema, e, p["label"])
        yield from call(tool(self.schema, e, "update"), **{f"{e.name}_id": row[f"{e.name}_id"],
                                                            f.name: as_argument(f, p["value"])})
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        e, f = self.entity_field()
        row = next(r for r in self.app(apps).table(e) if handle(e, r) == p["label"])
        return Expectation(updates={(self.schema.app_id, e.table, row["id"]): {f.name: p["value"]}})


def _record_values(schema: AppSchema, rng: np.random.Generator) -> dict[str, Any]:
    """Values of the record's required plain fields for a new record."""
    values: dict[str, Any] = {}
    for f in schema.record.fields:
        if f.required and f.kind in ("money", "int", "date", "text") and f.role not in ("code", "status", "stamp"):
            values[f.name] = 1 if f.role == "quantity" else fresh_value(f, None, rng)
    return values


def _values_text(entity: Entity, values: dict[str, Any]) -> str:
    parts = [f"{entity.field(k).words} {shown(entity.field(k), v)}" for k, v in values.items()]
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1] if parts else ""


def _create_record(schema: AppSchema, party: str, item: str | None, values: dict[str, Any]) -> Step:
    """Reference step: look up the party (and item) and create the record."""
    owner = yield from find(schema, schema.party, party)
    arguments = {ref_of(schema, "party"): owner[f"{schema.party.name}_id"]}
    if item is not None and schema.item is not None:
        found = yield from find(schema, schema.item, item)
        arguments[ref_of(schema, "item")] = found[f"{schema.item.name}_id"]
    for k, v in values.items():
        arguments[k] = as_argument(schema.record.field(k), v)
    created = yield from call(tool(schema, schema.record, "create"), **arguments)
    return created


def _record_insert(app: GenApp, party: str, item: str | None, values: dict[str, Any]) -> dict[str, Any]:
    schema = app.schema
    row: dict[str, Any] = {ref_of(schema, "party"): next(r["id"] for r in app.table(schema.party)
                                                         if r["name"] == party),
                           "status": schema.statuses[0], **values}
    if item is not None and schema.item is not None:
        row[ref_of(schema, "item")] = next(r["id"] for r in app.table(schema.item) if handle(schema.item, r) == item)
    return row


class CreateRecord(AppTemplate):
    """Create a record for a party (and an item) with given values."""

    kind, group = "create_record", "edit"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [schema.record.name]

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        app = self.app(apps)
        item = self.schema.item
        return {"party": choose(rng, [r["name"] for r in app.table(self.schema.party)]),
                "item": choose(rng, [handle(item, r) for r in app.table(item)]) if item else None,
                "values": _record_values(self.schema, rng)}

    def prompt(self, p: Params) -> str:
        r, item = self.schema.record, self.schema.item
        what = f" for the {item.words} {p['item']}" if item is not None else ""
        return (f"In {self.schema.title}, create a new {r.words} for {self.schema.party.words} {p['party']}{what} "
                f"with {_values_text(r, p['values'])}.")

    def solve(self, p: Params) -> Solution:
        yield from _create_record(self.schema, p["party"], p["item"], p["values"])
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        row = _record_insert(self.app(apps), p["party"], p["item"], p["values"])
        return Expectation(inserts=[(self.schema.app_id, self.schema.record.table, row)])


class CreateParty(AppTemplate):
    """Add a person from the shared pool as a new party."""

    kind, group = "create_party", "edit"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [schema.party.name]

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        app = self.app(apps)
        taken = {r["email"] for r in app.table(self.schema.party)}
        person = choose(rng, [x for x in people() if x.email not in taken])
        extras = [f for f in self.schema.party.fields[2:] if f.kind in ("enum", "money", "int", "text")]
        p: Params = {"name": person.name, "email": person.email, "values": {}}
        if extras:
            f = choose(rng, extras)
            p["values"] = {f.name: fresh_value(f, None, rng)}
        return p

    def prompt(self, p: Params) -> str:
        party = self.schema.party
        extra = f" with {_values_text(party, p['values'])}" if p["values"] else ""
        return f"In {self.schema.title}, add {p['name']} ({p['email']}) as a new {party.words}{extra}."

    def solve(self, p: Params) -> Solution:
        party = self.schema.party
        values = {k: as_argument(party.field(k), v) for k, v in p["values"].items()}
        yield from call(tool(self.schema, party, "create"), name=p["name"], email=p["email"], **values)
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        row = {"name": p["name"], "email": p["email"], **p["values"]}
        return Expectation(inserts=[(self.schema.app_id, self.schema.party.table, row)])


class CreateItem(AppTemplate):
    """Add a new catalogue item with its category and numbers."""

    kind, group = "create_item", "edit"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [schema.item.name] if schema.item is not None and "create" in schema.item.ops else []

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        item = self.schema.item
        assert item is not None
        taken = {handle(item, r) for r in self.app(apps).table(item)}
        names = next(d for d in DOMAINS if d.key == self.schema.domain).item_names
        name = choose(rng, [n for n in names if n not in taken])
        values = {f.name: fresh_value(f, None, rng) for f in item.fields[1:] if f.required}
        return {"label": name, "values": values}

    def prompt(self, p: Params) -> str:
        item = self.schema.item
        assert item is not None
        return (f"In {self.schema.title}, add a new {item.words} with {item.field(item.label).words} "
                f"'{p['label']}', {_values_text(item, p['values'])}.")

    def solve(self, p: Params) -> Solution:
        item = self.schema.item
        assert item is not None
        values = {k: as_argument(item.field(k), v) for k, v in p["values"].items()}
        yield from call(tool(self.schema, item, "create"), **{item.label: p["label"]}, **values)
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        item = self.schema.item
        assert item is not None
        return Expectation(inserts=[(self.schema.app_id, item.table, {item.label: p["label"], **p["values"]})])


def _children(app: GenApp, entity: Entity, row_id: int) -> int:
    """How many rows of other entities refer to a row."""
    schema = app.schema
    return sum(1 for e in schema.entities for f in e.fields if f.kind == "ref" and f.ref == entity.name
               for r in app.table(e) if r[f.name] == row_id)


class Delete(AppTemplate):
    """Delete one row that nothing refers to."""

    kind, group = "delete", "edit"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [e.name for e in (schema.party, schema.item, schema.record) if e is not None and "delete" in e.ops]

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        app = self.app(apps)
        e = self.schema.entity(self.target)
        row = choose(rng, [r for r in app.table(e) if not _children(app, e, r["id"])])
        return None if row is None else {"label": handle(e, row)}

    def prompt(self, p: Params) -> str:
        return f"In {self.schema.title}, delete the {self.schema.entity(self.target).words} {p['label']}."

    def solve(self, p: Params) -> Solution:
        e = self.schema.entity(self.target)
        row = yield from find(self.schema, e, p["label"])
        yield from call(tool(self.schema, e, "delete"), **{f"{e.name}_id": row[f"{e.name}_id"]})
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        e = self.schema.entity(self.target)
        row = next(r for r in self.app(apps).table(e) if handle(e, r) == p["label"])
        return Expectation(deletes={(self.schema.app_id, e.table, row["id"])})


class CreateChild(AppTemplate):
    """Add a payment or comment to a record."""

    kind, group = "create_child", "edit"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [schema.child.name] if schema.child is not None else []

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        child = self.schema.child
        assert child is not None
        code = choose(rng, [r["code"] for r in self.app(apps).table(self.schema.record)])
        values = {f.name: fresh_value(f, None, rng) for f in child.fields[1:]}
        return {"code": code, "values": values}

    def prompt(self, p: Params) -> str:
        child = self.schema.child
        assert child is not None
        return (f"In {self.schema.title}, add a {child.words} to {self.schema.record.words} {p['code']} with "
                f"{_values_text(child, p['values'])}.")

    def solve(self, p: Params) -> Solution:
        child = self.schema.child
        assert child is not None
        record = yield from find(self.schema, self.schema.record, p["code"])
        values = {k: as_argument(child.field(k), v) for k, v in p["values"].items()}
        key = f"{self.schema.record.name}_id"
        yield from call(tool(self.schema, child, "create"), **{key: record[key]}, **values)
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        child = self.schema.child
        assert child is not None
        rid = next(r["id"] for r in self.app(apps).table(self.schema.record) if r["code"] == p["code"])
        row = {f"{self.schema.record.name}_id": rid, **p["values"]}
        return Expectation(inserts=[(self.schema.app_id, child.table, row)])


# -- domain actions ------------------------------------------------------------------------------------


class DoAction(AppTemplate):
    """Apply a domain action to one record whose preconditions hold."""

    kind, group = "action", "action"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [a.verb for a in schema.actions]

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        app = self.app(apps)
        action = self.schema.action(self.target)
        row = choose(rng, [r for r in app.table(self.schema.record) if eligible(app, action, [r])])
        return None if row is None else {"code": row["code"]}

    def prompt(self, p: Params) -> str:
        action = self.schema.action(self.target)
        return f"In {self.schema.title}, {action.words} the {self.schema.record.words} {p['code']}."

    def solve(self, p: Params) -> Solution:
        r = self.schema.record
        row = yield from find(self.schema, r, p["code"])
        yield from call(f"{self.schema.app_id}_{r.name}_{self.target}", **{f"{r.name}_id": row[f"{r.name}_id"]})
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        app = self.app(apps)
        row = next(r for r in app.table(self.schema.record) if r["code"] == p["code"])
        return Expectation(updates=action_changes(app, self.schema.action(self.target), [row]))


class FixThenAct(AppTemplate):
    """Set the flag an action needs (the user confirms it), then apply the action."""

    kind, group = "action_fix", "action"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [a.verb for a in schema.actions if a.flag and "update" in schema.record.ops
                and schema.record.field(a.flag).editable]

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        app = self.app(apps)
        action = self.schema.action(self.target)
        assert action.flag is not None
        rows = [r for r in app.table(self.schema.record)
                if not r[action.flag] and eligible(app, action, [r], ignore_flag=True)]
        row = choose(rng, rows)
        return None if row is None else {"code": row["code"]}

    def prompt(self, p: Params) -> str:
        action = self.schema.action(self.target)
        assert action.flag is not None
        r = self.schema.record.words
        return (f"In {self.schema.title}, {action.words} the {r} {p['code']}. Its {action.flag.replace('_', ' ')} "
                f"has just been confirmed, so record that on the {r} first.")

    def solve(self, p: Params) -> Solution:
        action = self.schema.action(self.target)
        assert action.flag is not None
        r = self.schema.record
        row = yield from find(self.schema, r, p["code"])
        key = f"{r.name}_id"
        yield from call(tool(self.schema, r, "update"), **{key: row[key], action.flag: True})
        yield from call(f"{self.schema.app_id}_{r.name}_{self.target}", **{key: row[key]})
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        app = self.app(apps)
        action = self.schema.action(self.target)
        assert action.flag is not None
        row = next(r for r in app.table(self.schema.record) if r["code"] == p["code"])
        return Expectation(updates=action_changes(app, action, [row], extra={action.flag: 1}))


class ActionBatch(AppTemplate):
    """Apply an action to every record of one party in its source statuses at or under an amount."""

    kind, group = "action_batch", "action"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [a.verb for a in schema.actions]

    def _rows(self, app: GenApp, p: Params) -> list[Row]:
        action = self.schema.action(self.target)
        amount = self.schema.record.with_role("amount")[0].name
        pid = next(r["id"] for r in app.table(self.schema.party) if r["name"] == p["party"])
        return [r for r in app.table(self.schema.record) if r[ref_of(self.schema, "party")] == pid
                and r["status"] in action.sources and r[amount] is not None and r[amount] <= p["at_most"] * 100]

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        app = self.app(apps)
        action = self.schema.action(self.target)
        amount = self.schema.record.with_role("amount")[0].name
        row = choose(rng, [r for r in app.table(self.schema.record) if r["status"] in action.sources
                           and r[amount] is not None])
        if row is None:
            return None
        party = next(r["name"] for r in app.table(self.schema.party) if r["id"] == row[ref_of(self.schema, "party")])
        p = {"party": party, "at_most": -(-row[amount] // 100) + int(rng.integers(0, 40))}
        rows = self._rows(app, p)
        return p if 1 <= len(rows) <= 5 and eligible(app, action, rows) else None

    def prompt(self, p: Params) -> str:
        action = self.schema.action(self.target)
        r = self.schema.record
        amount = r.with_role("amount")[0].words
        return (f"In {self.schema.title}, {action.words} every {' or '.join(action.sources)} {r.words} of "
                f"{self.schema.party.words} {p['party']} whose {amount} is at most ${p['at_most']}.")

    def solve(self, p: Params) -> Solution:
        action = self.schema.action(self.target)
        r = self.schema.record
        amount = r.with_role("amount")[0].name
        party = yield from find(self.schema, self.schema.party, p["party"])
        key = f"{r.name}_id"
        for status in action.sources:
            found = yield from every(tool(self.schema, r, "search"), status=status, **{
                ref_of(self.schema, "party"): party[f"{self.schema.party.name}_id"], f"max_{amount}": p["at_most"]})
            for row in found:
                yield from call(f"{self.schema.app_id}_{r.name}_{self.target}", **{key: row[key]})
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        app = self.app(apps)
        action = self.schema.action(self.target)
        rows = self._rows(app, p)
        rows.sort(key=lambda r: (action.sources.index(r["status"]), r["id"]))
        return Expectation(updates=action_changes(app, action, rows))


# -- chains within one app -------------------------------------------------------------------------------


class Owner(AppTemplate):
    """Who is the party of a record? (record -> its party -> their name)"""

    kind, group, answer_kind = "owner", "chain", "text"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [schema.record.name]

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        return {"code": choose(rng, [r["code"] for r in self.app(apps).table(self.schema.record)])}

    def prompt(self, p: Params) -> str:
        return (f"In {self.schema.title}, who is the {self.schema.party.words} of {self.schema.record.words} "
                f"{p['code']}? Answer with their name.")

    def solve(self, p: Params) -> Solution:
        party = yield from owner_of(self.schema, p["code"])
        return str(party["name"])

    def expect(self, apps: Apps, p: Params) -> Expectation:
        app = self.app(apps)
        row = next(r for r in app.table(self.schema.record) if r["code"] == p["code"])
        name = next(r["name"] for r in app.table(self.schema.party) if r["id"] == row[ref_of(self.schema, "party")])
        return Expectation(answer=name, answer_kind="text")


class UpdateOwner(AppTemplate):
    """The party of a record has a new value of a field: update the party (record -> party -> update)."""

    kind, group = "update_owner", "chain"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        if "update" not in schema.party.ops:
            return []
        return [f"{schema.party.name}.{f.name}" for f in schema.party.fields[1:] if f.editable]

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        app = self.app(apps)
        _, f = self.entity_field()
        record = choose(rng, app.table(self.schema.record))
        party = next(r for r in app.table(self.schema.party) if r["id"] == record[ref_of(self.schema, "party")])
        value = fresh_value(f, party[f.name], rng)
        return None if value is None else {"code": record["code"], "value": value}

    def prompt(self, p: Params) -> str:
        e, f = self.entity_field()
        return (f"In {self.schema.title}, the {e.words} of {self.schema.record.words} {p['code']} has a new "
                f"{f.words}: {shown(f, p['value'])}. Update it on their {e.words} record.")

    def solve(self, p: Params) -> Solution:
        e, f = self.entity_field()
        party = yield from owner_of(self.schema, p["code"])
        key = f"{e.name}_id"
        yield from call(tool(self.schema, e, "update"), **{key: party[key], f.name: as_argument(f, p["value"])})
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        e, f = self.entity_field()
        record = next(r for r in self.app(apps).table(self.schema.record) if r["code"] == p["code"])
        return Expectation(updates={(self.schema.app_id, e.table, record[ref_of(self.schema, "party")]):
                                    {f.name: p["value"]}})


class RemoveParty(AppTemplate):
    """Remove a party with every record of theirs (and the records' children): several deletes in order."""

    kind, group = "remove_party", "chain"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        child_ok = schema.child is None or "delete" in schema.child.ops
        ok = "delete" in schema.party.ops and "delete" in schema.record.ops and child_ok
        return [schema.party.name] if ok else []

    def _doomed(self, app: GenApp, name: str) -> tuple[int, list[int], list[int]]:
        pid = next(r["id"] for r in app.table(self.schema.party) if r["name"] == name)
        records = [r["id"] for r in app.table(self.schema.record) if r[ref_of(self.schema, "party")] == pid]
        child = self.schema.child
        children = [] if child is None else [r["id"] for r in app.table(child)
                                             if r[f"{self.schema.record.name}_id"] in records]
        return pid, records, children

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        app = self.app(apps)
        name = choose(rng, [r["name"] for r in app.table(self.schema.party)])
        return {"party": name} if 1 <= len(self._doomed(app, name)[1]) <= 4 else None

    def prompt(self, p: Params) -> str:
        child = self.schema.child
        also = f" (and their {child.plural_words})" if child is not None else ""
        return (f"In {self.schema.title}, remove the {self.schema.party.words} {p['party']} together with every "
                f"{self.schema.record.words} of theirs{also}.")

    def solve(self, p: Params) -> Solution:
        s, r, child = self.schema, self.schema.record, self.schema.child
        party = yield from find(s, s.party, p["party"])
        found = yield from every(tool(s, r, "search"), **{ref_of(s, "party"): party[f"{s.party.name}_id"]})
        for row in found:
            if child is not None:
                kids = yield from every(tool(s, child, "search"), **{f"{r.name}_id": row[f"{r.name}_id"]})
                for kid in kids:
                    yield from call(tool(s, child, "delete"), **{f"{child.name}_id": kid[f"{child.name}_id"]})
            yield from call(tool(s, r, "delete"), **{f"{r.name}_id": row[f"{r.name}_id"]})
        yield from call(tool(s, s.party, "delete"), **{f"{s.party.name}_id": party[f"{s.party.name}_id"]})
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        pid, records, children = self._doomed(self.app(apps), p["party"])
        a, s = self.schema.app_id, self.schema
        deletes = {(a, s.party.table, pid)} | {(a, s.record.table, i) for i in records}
        if s.child is not None:
            deletes |= {(a, s.child.table, i) for i in children}
        return Expectation(deletes=deletes)


KINDS: dict[str, type[AppTemplate]] = {cls.kind: cls for cls in (
    Lookup, FilterList, Total, TopParty, Update, CreateRecord, CreateParty, CreateItem, Delete, CreateChild,
    DoAction, FixThenAct, ActionBatch, Owner, UpdateOwner, RemoveParty)}
"""Every single-app template kind by name."""


def app_templates(schema: AppSchema) -> dict[str, AppTemplate]:
    """Every template of one app, by name, in a fixed order."""
    out: dict[str, AppTemplate] = {}
    for cls in KINDS.values():
        for target in cls.targets(schema):
            template = cls(schema, target)
            out[template.name] = template
    return out

"""Edit templates: change a field, create a record, a party, an item or a child row, delete a row."""

from __future__ import annotations

import numpy as np

from rollgym.envs.genworld import templates as core
from rollgym.envs.tools.generated.domains import DOMAINS
from rollgym.envs.tools.generated.schema import AppSchema, Entity
from rollgym.envs.tools.generated.store import GenApp, people
from rollgym.envs.tools.generated.templates import (
    Apps,
    AppTemplate,
    arguments,
    as_argument,
    create_record,
    find,
    fresh_value,
    handle,
    record_insert,
    record_values,
    shown,
    tool,
    values_text,
)
from rollgym.envs.tools.tasks.base import Params, Solution, call, choose
from rollgym.verifiers.tools import Expectation


class Update(AppTemplate, core.UpdateField):
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



class CreateRecord(AppTemplate, core.CreateRecord):
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
                "values": record_values(self.schema, rng)}

    def prompt(self, p: Params) -> str:
        r, item = self.schema.record, self.schema.item
        what = f" for the {item.words} {p['item']}" if item is not None else ""
        return (f"In {self.schema.title}, create a new {r.words} for {self.schema.party.words} {p['party']}{what} "
                f"with {values_text(r, p['values'])}.")

    def solve(self, p: Params) -> Solution:
        yield from create_record(self.schema, p["party"], p["item"], p["values"])
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        row = record_insert(self.app(apps), p["party"], p["item"], p["values"])
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
        extra = f" with {values_text(party, p['values'])}" if p["values"] else ""
        return f"In {self.schema.title}, add {p['name']} ({p['email']}) as a new {party.words}{extra}."

    def solve(self, p: Params) -> Solution:
        party = self.schema.party
        values = arguments(party, p["values"])
        yield from call(tool(self.schema, party, "create"), name=p["name"], email=p["email"], **values)
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        row = {"name": p["name"], "email": p["email"], **p["values"]}
        return Expectation(inserts=[(self.schema.app_id, self.schema.party.table, row)])


class CreateItem(AppTemplate, core.CreateItem):
    """Add a new catalogue item with its category and numbers."""

    kind, group = "create_item", "edit"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [schema.item.name] if schema.item is not None and "create" in schema.item.ops else []

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        item = self.entity_of("item")
        taken = {handle(item, r) for r in self.app(apps).table(item)}
        names = next(d for d in DOMAINS if d.key == self.schema.domain).item_names
        name = choose(rng, [n for n in names if n not in taken])
        values = {f.name: fresh_value(f, None, rng) for f in item.fields[1:] if f.required}
        return {"label": name, "values": values}

    def prompt(self, p: Params) -> str:
        item = self.entity_of("item")
        return (f"In {self.schema.title}, add a new {item.words} with {item.field(item.label).words} "
                f"'{p['label']}', {values_text(item, p['values'])}.")

    def solve(self, p: Params) -> Solution:
        item = self.entity_of("item")
        values = arguments(item, p["values"])
        yield from call(tool(self.schema, item, "create"), **{item.label: p["label"]}, **values)
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        item = self.entity_of("item")
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
        child = self.entity_of("child")
        code = choose(rng, [r["code"] for r in self.app(apps).table(self.schema.record)])
        values = {f.name: fresh_value(f, None, rng) for f in child.fields[1:]}
        return {"code": code, "values": values}

    def prompt(self, p: Params) -> str:
        child = self.entity_of("child")
        return (f"In {self.schema.title}, add a {child.words} to {self.schema.record.words} {p['code']} with "
                f"{values_text(child, p['values'])}.")

    def solve(self, p: Params) -> Solution:
        child = self.entity_of("child")
        record = yield from find(self.schema, self.schema.record, p["code"])
        values = arguments(child, p["values"])
        key = f"{self.schema.record.name}_id"
        yield from call(tool(self.schema, child, "create"), **{key: record[key]}, **values)
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        child = self.entity_of("child")
        rid = next(r["id"] for r in self.app(apps).table(self.schema.record) if r["code"] == p["code"])
        row = {f"{self.schema.record.name}_id": rid, **p["values"]}
        return Expectation(inserts=[(self.schema.app_id, child.table, row)])

"""Cross-app templates: tasks that chain two to four generated apps through a person they share.

Every app draws its parties from one pool of people, so a customer of one app is often
a customer of another. Each task starts from a record in the first app, finds who holds
it, and acts for that person in the others; the person is never named in the prompt or
the task's parameters, so the chain has to be followed through the tools.

* ``x_register`` (2 apps): add the record's holder as a new party of the second app.
* ``x_create_for`` (2 apps): create a record for them in the second app.
* ``x_act_for`` (2-3 apps): apply each later app's first domain action to every one of
  their records waiting for it.
* ``x_chain`` (3-4 apps): find their record with the largest amount in the second app,
  create a record in the third whose note cites its code, and (with four apps) update
  their party record in the fourth.

A template is named ``x:<kind>:<app>+<app>[+...]``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rollgym.envs.tools.generated.schema import AppSchema
from rollgym.envs.tools.generated.store import GenApp
from rollgym.envs.tools.generated.templates import (
    Apps,
    GenTemplate,
    Row,
    action_changes,
    as_argument,
    create_record,
    eligible,
    fresh_value,
    owner_of,
    record_insert,
    record_values,
    ref_of,
    shown,
    tool,
    values_text,
)
from rollgym.envs.tools.tasks.base import Params, Solution, call, choose, every
from rollgym.verifiers.tools import Expectation


def _party_id(app: GenApp, email: str) -> int | None:
    return next((r["id"] for r in app.table(app.schema.party) if r["email"] == email), None)


def _records_of(app: GenApp, email: str) -> list[Row]:
    pid = _party_id(app, email)
    return [r for r in app.table(app.schema.record) if r[ref_of(app.schema, "party")] == pid]


def _holder(app: GenApp, code: str) -> Row:
    """The party row holding the record with this code."""
    record = next(r for r in app.table(app.schema.record) if r["code"] == code)
    return next(r for r in app.table(app.schema.party) if r["id"] == record[ref_of(app.schema, "party")])


class CrossTemplate(GenTemplate):
    """A template over several apps; ``schemas`` are theirs, in chain order."""

    group = "cross_app"
    sizes: ClassVar[tuple[int, ...]] = (2,)
    excludes_holder: ClassVar[bool] = False
    """Whether the holder must not be a party of the second app (so that they can be added there)."""

    def __init__(self, schemas: list[AppSchema]) -> None:
        names = tuple(s.app_id for s in schemas)
        super().__init__(f"x:{self.kind}:{'+'.join(names)}", names, "+".join(names))
        self.schemas = schemas

    def start(self, apps: Apps, rng: np.random.Generator, ok: Any) -> tuple[str, Row] | None:
        """A record of the first app whose holder passes ``ok(holder)``: its code and holder."""
        first = apps[self.apps[0]]
        options = []
        for record in first.table(first.schema.record):
            holder = next(r for r in first.table(first.schema.party)
                          if r["id"] == record[ref_of(first.schema, "party")])
            if ok(holder):
                options.append((record["code"], holder))
        return choose(rng, options)

    def opening(self, p: Params) -> str:
        a = self.schemas[0]
        return f"In {a.title}, find the {a.party.words} of {a.record.words} {p['code']}."


class Register(CrossTemplate):
    """Add the holder of a record in the first app as a party of the second."""

    kind = "x_register"
    excludes_holder = True

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        second = apps[self.apps[1]]
        found = self.start(apps, rng, lambda h: _party_id(second, h["email"]) is None)
        return None if found is None else {"code": found[0]}

    def prompt(self, p: Params) -> str:
        b = self.schemas[1]
        return (f"{self.opening(p)} They should also be a {b.party.words} of {b.title}: add them there with the same "
                "name and email.")

    def solve(self, p: Params) -> Solution:
        holder = yield from owner_of(self.schemas[0], p["code"])
        b = self.schemas[1]
        yield from call(tool(b, b.party, "create"), name=holder["name"], email=holder["email"])
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        holder = _holder(apps[self.apps[0]], p["code"])
        b = self.schemas[1]
        return Expectation(inserts=[(b.app_id, b.party.table, {"name": holder["name"], "email": holder["email"]})])


class CreateFor(CrossTemplate):
    """Create a record in the second app for the holder of a record in the first."""

    kind = "x_create_for"

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        second = apps[self.apps[1]]
        found = self.start(apps, rng, lambda h: _party_id(second, h["email"]) is not None)
        if found is None:
            return None
        item = second.schema.item
        label = choose(rng, [str(r[item.label]) for r in second.table(item)]) if item is not None else None
        return {"code": found[0], "item": label, "values": record_values(second.schema, rng)}

    def prompt(self, p: Params) -> str:
        b = self.schemas[1]
        what = f" for the {b.item.words} {p['item']}" if b.item is not None else ""
        return (f"{self.opening(p)} Then, in {b.title}, create a new {b.record.words} for them{what} with "
                f"{values_text(b.record, p['values'])}.")

    def solve(self, p: Params) -> Solution:
        holder = yield from owner_of(self.schemas[0], p["code"])
        yield from create_record(self.schemas[1], holder["name"], p["item"], p["values"])
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        holder = _holder(apps[self.apps[0]], p["code"])
        second = apps[self.apps[1]]
        row = record_insert(second, holder["name"], p["item"], p["values"])
        return Expectation(inserts=[(second.app_id, second.schema.record.table, row)])


class ActFor(CrossTemplate):
    """Apply each later app's first action to every record of the holder waiting for it."""

    kind = "x_act_for"
    sizes = (2, 3)

    def _rows(self, app: GenApp, email: str) -> list[Row]:
        action = app.schema.actions[0]
        return [r for r in _records_of(app, email) if r["status"] in action.sources]

    def _ok(self, apps: Apps, holder: Row) -> bool:
        for app_id in self.apps[1:]:
            app = apps[app_id]
            rows = self._rows(app, holder["email"])
            if not 1 <= len(rows) <= 4 or not eligible(app, app.schema.actions[0], rows):
                return False
        return True

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        found = self.start(apps, rng, lambda h: self._ok(apps, h))
        return None if found is None else {"code": found[0]}

    def prompt(self, p: Params) -> str:
        parts = []
        for s in self.schemas[1:]:
            action = s.actions[0]
            parts.append(f"in {s.title}, {action.words} every {' or '.join(action.sources)} {s.record.words} of theirs")
        return f"{self.opening(p)} Then {'; and '.join(parts)}."

    def solve(self, p: Params) -> Solution:
        holder = yield from owner_of(self.schemas[0], p["code"])
        for s in self.schemas[1:]:
            action, r = s.actions[0], s.record
            found = yield from every(tool(s, s.party, "search"), query=holder["name"])
            party = next(x for x in found if x["email"] == holder["email"])
            for status in action.sources:
                rows = yield from every(tool(s, r, "search"), status=status,
                                        **{ref_of(s, "party"): party[f"{s.party.name}_id"]})
                for row in rows:
                    yield from call(f"{s.app_id}_{r.name}_{action.verb}", **{f"{r.name}_id": row[f"{r.name}_id"]})
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        holder = _holder(apps[self.apps[0]], p["code"])
        updates = {}
        for app_id in self.apps[1:]:
            app = apps[app_id]
            updates.update(action_changes(app, app.schema.actions[0], self._rows(app, holder["email"])))
        return Expectation(updates=updates)


class Chain(CrossTemplate):
    """A -> holder; B -> their record with the largest amount; C -> a new record citing it; D -> update them."""

    kind = "x_chain"
    sizes = (3, 4)

    def _best(self, app: GenApp, email: str) -> Row | None:
        amount = app.schema.record.with_role("amount")[0].name
        rows = sorted(_records_of(app, email), key=lambda r: r[amount], reverse=True)
        if not rows or (len(rows) > 1 and rows[0][amount] == rows[1][amount]):
            return None
        return rows[0]

    def _text(self) -> str | None:
        c = self.schemas[2].record
        return next((f.name for f in c.fields if f.kind == "text" and f.role == ""), None)

    def _field(self) -> Any:
        d = self.schemas[3].party
        return next((f for f in d.fields[2:] if f.editable and f.kind in ("enum", "money", "int", "text")), None)

    def _ok(self, apps: Apps, holder: Row) -> bool:
        b, c = apps[self.apps[1]], apps[self.apps[2]]
        if self._best(b, holder["email"]) is None or _party_id(c, holder["email"]) is None:
            return False
        if len(self.apps) == 4:
            d = apps[self.apps[3]]
            return _party_id(d, holder["email"]) is not None and "update" in d.schema.party.ops
        return True

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        if self._text() is None or (len(self.apps) == 4 and self._field() is None):
            return None
        found = self.start(apps, rng, lambda h: self._ok(apps, h))
        if found is None:
            return None
        c = apps[self.apps[2]].schema
        item = c.item
        p: Params = {"code": found[0], "values": record_values(c, rng),
                     "item": choose(rng, [str(r[item.label]) for r in apps[c.app_id].table(item)]) if item else None}
        if len(self.apps) == 4:
            f = self._field()
            old = next(r for r in apps[self.apps[3]].table(self.schemas[3].party) if r["email"] == found[1]["email"])
            p["value"] = fresh_value(f, old[f.name], rng)
        return p

    def prompt(self, p: Params) -> str:
        b, c = self.schemas[1], self.schemas[2]
        amount = b.record.with_role("amount")[0].words
        text = self._text()
        assert text is not None
        what = f" for the {c.item.words} {p['item']}" if c.item is not None else ""
        out = (f"{self.opening(p)} In {b.title}, find their {b.record.words} with the largest {amount}. In {c.title}, "
               f"create a new {c.record.words} for them{what} with {values_text(c.record, p['values'])}, and with "
               f"{text.replace('_', ' ')} 'Follow-up to <code>', where <code> is the code of that {b.record.words}.")
        if len(self.schemas) == 4:
            d, f = self.schemas[3], self._field()
            out += f" Finally, in {d.title}, change their {f.words} to {shown(f, p['value'])}."
        return out

    def solve(self, p: Params) -> Solution:
        holder = yield from owner_of(self.schemas[0], p["code"])
        b, c = self.schemas[1], self.schemas[2]
        found = yield from every(tool(b, b.party, "search"), query=holder["name"])
        party = next(x for x in found if x["email"] == holder["email"])
        amount = b.record.with_role("amount")[0].name
        rows = yield from every(tool(b, b.record, "search"), **{ref_of(b, "party"): party[f"{b.party.name}_id"]})
        best = max(rows, key=lambda r: r[amount])
        text = self._text()
        assert text is not None
        yield from create_record(c, holder["name"], p["item"], {**p["values"], text: f"Follow-up to {best['code']}"})
        if len(self.schemas) == 4:
            d, f = self.schemas[3], self._field()
            found = yield from every(tool(d, d.party, "search"), query=holder["name"])
            target = next(x for x in found if x["email"] == holder["email"])
            key = f"{d.party.name}_id"
            yield from call(tool(d, d.party, "update"), **{key: target[key], f.name: as_argument(f, p["value"])})
        return None

    def expect(self, apps: Apps, p: Params) -> Expectation:
        holder = _holder(apps[self.apps[0]], p["code"])
        b, c = apps[self.apps[1]], apps[self.apps[2]]
        best = self._best(b, holder["email"])
        assert best is not None
        text = self._text()
        assert text is not None
        values = {**p["values"], text: f"Follow-up to {best['code']}"}
        exp = Expectation(inserts=[(c.app_id, c.schema.record.table, record_insert(c, holder["name"], p["item"],
                                                                                      values))])
        if len(self.apps) == 4:
            d = apps[self.apps[3]]
            pid = _party_id(d, holder["email"])
            assert pid is not None
            exp.updates[(d.app_id, d.schema.party.table, pid)] = {self._field().name: p["value"]}
        return exp


CROSS_KINDS: dict[str, type[CrossTemplate]] = {cls.kind: cls for cls in (Register, CreateFor, ActFor, Chain)}
"""Every cross-app template kind by name."""

"""Chain templates inside one app: a record's party, an update on that party, removing a party with every record
of theirs (children first)."""

from __future__ import annotations

import numpy as np

from rollgym.envs.tools.generated.schema import AppSchema
from rollgym.envs.tools.generated.store import GenApp
from rollgym.envs.tools.generated.templates import (
    Apps,
    AppTemplate,
    as_argument,
    find,
    fresh_value,
    owner_of,
    ref_of,
    shown,
    tool,
)
from rollgym.envs.tools.tasks.base import Params, Solution, call, choose, every
from rollgym.verifiers.tools import Expectation


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

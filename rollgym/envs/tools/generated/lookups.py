"""Question templates: a field of a named row, the rows that match a filter, a total, the party with the most.

Each asks for a value, a name or a list of names, never a bare count."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from rollgym.envs.genworld import templates as core
from rollgym.envs.tools.generated.schema import AppSchema
from rollgym.envs.tools.generated.store import GenApp
from rollgym.envs.tools.generated.templates import (
    Apps,
    AppTemplate,
    Row,
    answer_of,
    find,
    get,
    handle,
    listable,
    ref_of,
    tool,
)
from rollgym.envs.tools.tasks.base import Params, Solution, choose, every
from rollgym.verifiers.tools import AnswerKind, Expectation


class Lookup(AppTemplate, core.Lookup):
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
        return answer_of(self.field, 0)[1]

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
        total = sum(r[self.field.name] for r in self._rows(self.app(apps), p))
        return Expectation(answer=round(total / 100, 2), answer_kind="number")


class TopParty(AppTemplate):
    """Which party has the largest total of a money field over their records with one status?"""

    kind, group, answer_kind = "top_party", "lookup", "text"

    @classmethod
    def targets(cls, schema: AppSchema) -> list[str]:
        return [f"{schema.record.name}.{f.name}" for f in schema.record.fields if f.role == "amount"]

    def _totals(self, app: GenApp, status: str) -> dict[int, int]:
        amount = self.field.name
        totals: dict[int, int] = defaultdict(int)
        for r in app.table(self.schema.record):
            if r["status"] == status and r[amount] is not None:
                totals[r[ref_of(self.schema, "party")]] += r[amount]
        return totals

    def sample(self, apps: Apps, rng: np.random.Generator) -> Params | None:
        status = choose(rng, list(self.schema.statuses))
        ranked = sorted(self._totals(self.app(apps), status).values(), reverse=True)
        return {"status": status} if len(ranked) >= 2 and ranked[0] > ranked[1] else None

    def prompt(self, p: Params) -> str:
        return (f"In {self.schema.title}, which {self.schema.party.words} has the largest total {self.field.words} "
                f"over their {p['status']} {self.schema.record.plural_words}? Answer with their name.")

    def solve(self, p: Params) -> Solution:
        found = yield from every(tool(self.schema, self.schema.record, "search"), status=p["status"])
        totals: dict[int, float] = defaultdict(float)
        for r in found:
            totals[r[ref_of(self.schema, "party")]] += r[self.field.name] or 0
        best = max(totals, key=lambda k: totals[k])
        party = yield from get(self.schema, self.schema.party, best)
        return str(party["name"])

    def expect(self, apps: Apps, p: Params) -> Expectation:
        totals = self._totals(self.app(apps), p["status"])
        best = max(totals, key=lambda k: totals[k])
        name = next(r["name"] for r in self.app(apps).table(self.schema.party) if r["id"] == best)
        return Expectation(answer=name, answer_kind="text")

"""Domain-action templates: one action whose preconditions hold, setting the flag an action needs first, and an
action on every matching record of a party."""

from __future__ import annotations

import numpy as np

from rollgym.envs.tools.generated.schema import AppSchema
from rollgym.envs.tools.generated.store import GenApp
from rollgym.envs.tools.generated.templates import Apps, AppTemplate, Row, action_changes, eligible, find, ref_of, tool
from rollgym.envs.tools.tasks.base import Params, Solution, call, choose, every
from rollgym.verifiers.tools import Expectation


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

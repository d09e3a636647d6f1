"""Task mechanisms that change a generated site: records, favourites, the account, and editors' work.

Each states the rows its goal requires and the side effects it tolerates (the
item's stock moving with an order, a record's total with its quantity); any other
change anywhere on the site fails the whole-site gate ``site_unchanged_beyond_task``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np

from rollgym.envs.genworld import templates as core
from rollgym.envs.web.gen.domain import TODAY
from rollgym.envs.web.gen.driver import Driver
from rollgym.envs.web.gen.mechanisms import (
    Ctx,
    Drawn,
    Mechanism,
    creds,
    draw_extreme,
    extreme_phrase,
    new_value,
    open_extreme,
    pick,
    shown,
    typed,
)
from rollgym.envs.web.gen.words import FIRST_NAMES, proper_words
from rollgym.envs.web.observation import PageView
from rollgym.envs.web.tasks.base import Solution, answer, click, fill, select
from rollgym.verifiers.statediff import Rule, added, changed, deleted

DONE = 'Answer "done" when it is done.'


def _record_values(ctx: Ctx, rng: np.random.Generator, item: Any) -> dict[str, Any] | None:
    """Values for a new record's fields (``None`` when the item has too little left)."""
    spec = ctx.kind.record
    values: dict[str, Any] = {}
    for f in spec.fields:
        if f.type == "date":
            values[f.key] = (TODAY + timedelta(days=int(rng.integers(f.lo, f.hi + 1)))).isoformat()
        else:
            values[f.key] = new_value(ctx, f, rng, None, record=True)
    if spec.consumes:
        need = int(values[spec.consumes[1]]) if spec.consumes[1] else 1
        if int(item[spec.consumes[0]]) < need:
            return None
    return values


def _consumed(ctx: Ctx, item_ids: list[int]) -> list[Rule]:
    """The items whose stock-like field may move with the task's records."""
    consumes = ctx.kind.record.consumes
    if consumes is None:
        return []
    return [changed("items", {"id": iid}, columns={consumes[0]}, limit=1, note=f"item {iid}'s {consumes[0]}")
            for iid in item_ids]


def _with_values(ctx: Ctx, values: dict[str, Any]) -> str:
    fields = {f.key: f for f in ctx.kind.record.fields}
    return ", ".join(f"{fields[k].label.lower()} {shown(ctx.site, fields[k], v)}" for k, v in values.items())


def _fill_record(drv: Driver, view: PageView, values: dict[str, Any]) -> Any:
    fields = {f.key: f for f in drv.site.kind.record.fields}
    for key, value in values.items():
        view = yield fill(view.find("textbox", fields[key].label), str(value))
    view = yield click(view.find("button", drv.site.kind.record.verb))
    return view


class CreateRecord(Mechanism, core.CreateRecord):
    """Sign in and make a record (order, reply, reservation, ...) on a named item."""

    operation, asks = "create_record", False

    def _item(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> tuple[dict[str, Any], Any] | None:
        item = pick(rng, ctx.rows("SELECT * FROM items WHERE archived = 0 ORDER BY id"))
        return {"item": item["name"]}, item

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        found = self._item(ctx, opt, rng)
        if found is None:
            return None
        params, item = found
        user = ctx.user(rng)
        values = _record_values(ctx, rng, item)
        if values is None:
            return None
        return {**creds(user), **params, "values": values}, {"user_id": user["id"], "item_id": item["id"]}

    def _what(self, ctx: Ctx, p: dict[str, Any]) -> str:
        return f"the {ctx.kind.singular} \"{p['item']}\""

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        values = f" with {_with_values(ctx, p['values'])}" if p["values"] else ""
        return f"{ctx.sign_in_text(p)} and {ctx.kind.record.phrase} {self._what(ctx, p)}{values}. {DONE}"

    def required(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        where = {"user_id": ans["user_id"], "item_id": ans["item_id"], "status": ctx.kind.record.initial,
                 **p["values"]}
        return [added("records", where, required=True, note=f"a new {ctx.kind.record.table_label[0]} as asked")]

    def tolerated(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        return _consumed(ctx, [ans["item_id"]])

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from drv.sign_in(view, p["username"], p["password"])
        view = yield from drv.open_item(view, p["item"])
        yield from _fill_record(drv, view, p["values"])
        yield answer("done")


class CreateRecordExtreme(CreateRecord):
    """Make a record on the item that a category's listing ranks first by a field (found, not named)."""

    operation = "create_record_extreme"

    def _item(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> tuple[dict[str, Any], Any] | None:
        return draw_extreme(ctx, opt, rng)

    def _what(self, ctx: Ctx, p: dict[str, Any]) -> str:
        return ""

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        values = f", with {_with_values(ctx, p['values'])}" if p["values"] else ""
        target = extreme_phrase(ctx, opt, p)
        return f"{ctx.sign_in_text(p)}. Find {target} and {ctx.kind.record.phrase} it{values}. {DONE}"

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from drv.sign_in(view, p["username"], p["password"])
        view = yield from open_extreme(drv, opt, p, view)
        view = yield click(drv.results(view)[0])
        yield from _fill_record(drv, view, p["values"])
        yield answer("done")


def _own_open_record(ctx: Ctx, rng: np.random.Generator) -> tuple[Any, Any] | None:
    """A user and one of their open records whose item they have no other open record for."""
    user = ctx.user(rng)
    found = ctx.rows("SELECT r.*, i.name FROM records r JOIN items i ON i.id = r.item_id WHERE r.user_id = ? AND "
                     "r.status = ? ORDER BY r.id", (user["id"], ctx.kind.record.initial))
    once = [r for r in found if sum(x["item_id"] == r["item_id"] for x in found) == 1]
    return (user, pick(rng, once)) if once else None


def _open_record_page(drv: Driver, view: PageView, p: dict[str, Any]) -> Any:
    view = yield from drv.sign_in(view, p["username"], p["password"])
    view = yield from drv.nav(view, "nav_mine")
    view = yield click(drv.record_link(view, p["item"], drv.site.kind.record.initial))
    return view


class CancelRecord(Mechanism):
    """Cancel (return, withdraw, delete, ...) one of the user's open records."""

    operation, asks = "cancel_record", False

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        found = _own_open_record(ctx, rng)
        if found is None:
            return None
        user, rec = found
        return {**creds(user), "item": rec["name"]}, {"record_id": rec["id"], "item_id": rec["item_id"],
                                                       "user_id": user["id"]}

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        spec = ctx.kind.record
        return (f"{ctx.sign_in_text(p)}. Your {spec.table_label[0]} for \"{p['item']}\" is {spec.initial}: "
                f"{spec.cancel.lower()} (its status should become {spec.cancelled}). Leave your other "
                f"{spec.table_label[1]} alone. {DONE}")

    def required(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        return [changed("records", {"id": ans["record_id"]}, to={"status": ctx.kind.record.cancelled},
                        required=True, note="the record is cancelled")]

    def tolerated(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        return _consumed(ctx, [ans["item_id"]])

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from _open_record_page(drv, view, p)
        yield click(view.find("button", drv.site.kind.record.cancel))
        yield answer("done")


class UpdateRecord(Mechanism, core.UpdateField):
    """Change the one changeable field of one of the user's open records."""

    operation, asks = "update_record", False

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        spec = ctx.kind.record
        found = _own_open_record(ctx, rng) if spec.update else None
        if found is None or spec.update is None:
            return None
        user, rec = found
        f = ctx.kind.record_field(spec.update)
        value = new_value(ctx, f, rng, rec[f.key], record=True)
        if value is None:
            return None
        if spec.consumes and spec.consumes[1] == f.key:
            stock = ctx.rows(f"SELECT {spec.consumes[0]} FROM items WHERE id = ?", (rec["item_id"],))[0][0]
            if int(value) - int(rec[f.key]) > int(stock):
                return None
        params = {**creds(user), "item": rec["name"], "value": value}
        return params, {"record_id": rec["id"], "item_id": rec["item_id"], "user_id": user["id"]}

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        spec = ctx.kind.record
        f = ctx.kind.record_field(spec.update or "")
        return (f"{ctx.sign_in_text(p)} and change the {f.label.lower()} of your {spec.table_label[0]} for "
                f"\"{p['item']}\" to {shown(ctx.site, f, p['value'])}. {DONE}")

    def required(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        key = ctx.kind.record.update or ""
        return [changed("records", {"id": ans["record_id"]}, to={key: p["value"]}, required=True,
                        note=f"the record's {key} is changed")]

    def tolerated(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        return [changed("records", {"id": ans["record_id"]}, columns={"total"}, limit=1, note="its total"),
                *_consumed(ctx, [ans["item_id"]])]

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from _open_record_page(drv, view, p)
        f = drv.site.kind.record_field(drv.site.kind.record.update or "")
        view = yield fill(view.find("textbox", f.label), str(p["value"]))
        yield click(view.find("button", drv.site.label("save")))
        yield answer("done")


class BulkCancel(Mechanism):
    """Cancel every open record of the user whose item is in one category, and no other."""

    operation, asks = "bulk_cancel", False

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        user = ctx.user(rng)
        found = ctx.rows("SELECT r.id, r.item_id, c.name AS category FROM records r JOIN items i ON "
                         "i.id = r.item_id JOIN categories c ON c.id = i.category_id WHERE r.user_id = ? AND "
                         "r.status = ? ORDER BY r.id", (user["id"], ctx.kind.record.initial))
        by_cat: dict[str, list[Any]] = {}
        for r in found:
            by_cat.setdefault(r["category"], []).append(r)
        fits = [c for c, rs in by_cat.items() if 2 <= len(rs) <= 3 and len({r["item_id"] for r in rs}) == len(rs)]
        if not fits or len(found) <= 2:
            return None
        cat = pick(rng, sorted(fits))
        rs = by_cat[cat]
        return {**creds(user), "category": cat}, {"record_ids": [r["id"] for r in rs],
                                                  "item_ids": [r["item_id"] for r in rs], "user_id": user["id"]}

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        spec, k = ctx.kind.record, ctx.kind
        return (f"{ctx.sign_in_text(p)}. For every {spec.table_label[0]} of yours that is still {spec.initial} and is "
                f"for a {k.singular} in the {p['category']} {k.category_label.lower()}: {spec.cancel.lower()}. "
                f"Leave your other {spec.table_label[1]} alone. {DONE}")

    def required(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        return [changed("records", {"id": rid}, to={"status": ctx.kind.record.cancelled}, required=True,
                        note=f"record {rid} is cancelled") for rid in ans["record_ids"]]

    def tolerated(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        return _consumed(ctx, ans["item_ids"])

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from drv.sign_in(view, p["username"], p["password"])
        view = yield from drv.open_listing(view, category=p["category"])
        names: set[str] = set()
        while True:
            names |= {e.name for e in drv.results(view)}
            try:
                view = yield from drv.next_page(view)
            except LookupError:
                break
        spec = drv.site.kind.record
        view = yield from drv.nav(view, "nav_mine")
        for name in sorted(names):
            try:
                link = drv.record_link(view, name, spec.initial)
            except LookupError:
                continue
            view = yield click(link)
            view = yield click(view.find("button", spec.cancel))
            view = yield from drv.nav(view, "nav_mine")
        yield answer("done")


class FavoriteAdd(Mechanism):
    """Add an item to the user's favourites list."""

    operation, asks = "favorite_add", False

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        user = ctx.user(rng)
        item = pick(rng, ctx.rows("SELECT * FROM items WHERE archived = 0 AND id NOT IN (SELECT item_id FROM "
                                  "favorites WHERE user_id = ?) ORDER BY id", (user["id"],)))
        return {**creds(user), "item": item["name"]}, {"user_id": user["id"], "item_id": item["id"]}

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        return f"{ctx.sign_in_text(p)} and add \"{p['item']}\" to your {ctx.kind.favorites[0]}. {DONE}"

    def required(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        return [added("favorites", dict(ans), required=True, note="the item is saved")]

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from drv.sign_in(view, p["username"], p["password"])
        view = yield from drv.open_item(view, p["item"])
        yield click(view.find("button", drv.site.kind.favorites[1]))
        yield answer("done")


class FavoriteRemove(Mechanism):
    """Remove an item from the user's favourites list."""

    operation, asks = "favorite_remove", False

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        user = ctx.user(rng)
        found = ctx.rows("SELECT i.* FROM favorites f JOIN items i ON i.id = f.item_id WHERE f.user_id = ? "
                         "ORDER BY i.id", (user["id"],))
        if not found:
            return None
        item = pick(rng, found)
        return {**creds(user), "item": item["name"]}, {"user_id": user["id"], "item_id": item["id"]}

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        return (f"{ctx.sign_in_text(p)} and remove \"{p['item']}\" from your {ctx.kind.favorites[0]}; keep the rest "
                f"of it. {DONE}")

    def required(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        return [deleted("favorites", dict(ans), required=True, note="the item is no longer saved")]

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from drv.sign_in(view, p["username"], p["password"])
        view = yield from drv.nav(view, "nav_saved")
        yield click(drv.button_after(view, drv.site.kind.favorites[2], p["item"]))
        yield answer("done")


class ProfileUpdate(Mechanism):
    """Change the user's own display name or email address."""

    operation, asks = "profile_update", False

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        user = ctx.user(rng)
        words = proper_words(ctx.site.spec.vocabulary)
        word = words[int(rng.integers(len(words)))]
        first = pick(rng, list(FIRST_NAMES))
        value = f"{first} {word}" if opt["field"] == "full_name" else \
            f"{first.lower()}.{word.lower()}@{pick(rng, ['mail', 'post', 'inbox'])}.example"
        if value == user[opt["field"]]:
            return None
        return {**creds(user), "value": value}, {"user_id": user["id"]}

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        what = ctx.site.label(opt["field"]).lower()
        return f"{ctx.sign_in_text(p)} and change your {what} to \"{p['value']}\". {DONE}"

    def required(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        return [changed("users", {"id": ans["user_id"]}, to={opt["field"]: p["value"]}, required=True,
                        note=f"the user's {opt['field']}")]

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from drv.sign_in(view, p["username"], p["password"])
        view = yield from drv.nav(view, "nav_account")
        view = yield fill(view.find("textbox", drv.site.label(opt["field"])), p["value"])
        yield click(view.find("button", drv.site.label("save")))
        yield answer("done")


class EditItem(Mechanism, core.UpdateField):
    """An editor sets one field of an item."""

    operation, asks = "edit_item", False

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        f = ctx.kind.field(opt["field"])
        user = ctx.user(rng, editor=True)
        item = pick(rng, ctx.rows("SELECT * FROM items WHERE archived = 0 ORDER BY id"))
        value = new_value(ctx, f, rng, item[f.key], record=False)
        if value is None:
            return None
        return {**creds(user), "item": item["name"], "value": value}, {"item_id": item["id"]}

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        f = ctx.kind.field(opt["field"])
        return (f"{ctx.sign_in_text(p)}; you are a {ctx.kind.roles[1]} there. Set the {f.label.lower()} of the "
                f"{ctx.kind.singular} \"{p['item']}\" to {shown(ctx.site, f, p['value'])}. {DONE}")

    def required(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        return [changed("items", {"id": ans["item_id"]}, to={opt["field"]: p["value"]}, required=True,
                        note=f"the item's {opt['field']}")]

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        site = drv.site
        f = site.kind.field(opt["field"])
        view = yield from drv.sign_in(view, p["username"], p["password"])
        view = yield from drv.open_item(view, p["item"])
        if f.type == "enum":
            view = yield select(view.find("select", f.label), p["value"])
        else:
            view = yield fill(view.find("textbox", f"{f.label} ($)" if f.type == "money" else f.label),
                              typed(f, p["value"]))
        yield click(view.find("button", site.label("save")))
        yield answer("done")


class ArchiveItem(Mechanism):
    """An editor archives an item."""

    operation, asks = "archive_item", False

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        user = ctx.user(rng, editor=True)
        item = pick(rng, ctx.rows("SELECT * FROM items WHERE archived = 0 ORDER BY id"))
        return {**creds(user), "item": item["name"]}, {"item_id": item["id"]}

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        return (f"{ctx.sign_in_text(p)}; you are a {ctx.kind.roles[1]} there. Archive the {ctx.kind.singular} "
                f"\"{p['item']}\". {DONE}")

    def required(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        return [changed("items", {"id": ans["item_id"]}, to={"archived": 1}, required=True,
                        note="the item is archived")]

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        view = yield from drv.sign_in(view, p["username"], p["password"])
        view = yield from drv.open_item(view, p["item"])
        yield click(view.find("button", f"Archive this {drv.site.kind.singular}"))
        yield answer("done")


class CreateItem(Mechanism, core.CreateItem):
    """Add a new item with given values (members of forums, wikis and recipe sites may; elsewhere editors)."""

    operation, asks = "create_item", False

    def sample(self, ctx: Ctx, opt: dict[str, Any], rng: np.random.Generator) -> Drawn:
        k = ctx.kind
        user = ctx.user(rng, editor=not k.members_create)
        cat = pick(rng, ctx.rows("SELECT * FROM categories ORDER BY id"))
        taken = " ".join(r[0] for r in ctx.rows("SELECT name FROM items"))
        words = proper_words(ctx.site.spec.vocabulary)
        word = words[int(rng.integers(len(words)))]
        if word in taken:
            return None
        nouns = pick(rng, sorted(k.categories.values()))
        name = pick(rng, list(k.name_patterns)).replace("{P}", word).replace("{N}", pick(rng, list(nouns)))
        name = name.replace("{A}", pick(rng, list(k.adjectives)) if k.adjectives else "").replace(
            "{F}", pick(rng, list(FIRST_NAMES)))
        values = {f.key: new_value(ctx, f, rng, None, record=False) for f in ctx.site.creatable_fields()}
        return ({**creds(user), "name": " ".join(name.split()), "category": cat["name"], "values": values},
                {"category_id": cat["id"]})

    def goal(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any]) -> str:
        k = ctx.kind
        fields = {f.key: f for f in k.fields}
        listed = ", ".join(f"{fields[key].label.lower()} {shown(ctx.site, fields[key], v)}"
                           for key, v in p["values"].items())
        return (f"{ctx.sign_in_text(p)} and add a new {k.singular} named \"{p['name']}\" in the {p['category']} "
                f"{k.category_label.lower()}, with {listed}. {DONE}")

    def required(self, ctx: Ctx, opt: dict[str, Any], p: dict[str, Any], ans: Any) -> list[Rule]:
        where = {"name": p["name"], "category_id": ans["category_id"], "archived": 0, **p["values"]}
        return [added("items", where, required=True, note="the new item as asked")]

    def solve(self, drv: Driver, opt: dict[str, Any], p: dict[str, Any], view: PageView) -> Solution:
        site = drv.site
        view = yield from drv.sign_in(view, p["username"], p["password"])
        view = yield from drv.nav(view, "nav_list")
        view = yield click(view.find("link", site.label("new_item")))
        view = yield fill(view.find("textbox", site.label("name_field")), p["name"])
        view = yield select(view.find("select", site.kind.category_label), p["category"])
        fields = {f.key: f for f in site.kind.fields}
        for key, value in p["values"].items():
            f = fields[key]
            if f.type == "enum":
                view = yield select(view.find("select", f.label), value)
            else:
                view = yield fill(view.find("textbox", f"{f.label} ($)" if f.type == "money" else f.label),
                                  typed(f, value))
        yield click(view.find("button", site.label("create")))
        yield answer("done")

"""Task templates over the notes and shopping apps."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from rollgym.envs.tools.tasks.base import (
    Params,
    Solution,
    Step,
    TaskTemplate,
    call,
    choose,
    contact_email,
    contact_names,
    day_text,
    email_of,
    every,
    named,
    rows,
)
from rollgym.envs.tools.world import World
from rollgym.verifiers.tools import Expectation, contains

NEW_NOTES = [("Grocery list", "eggs, rice, lemons"), ("Call plan", "call the bank on Tuesday"),
             ("Gift ideas for mum", "scarf or a cookbook"), ("Weekend", "hike if it is sunny"),
             ("Reading list", "two novels and one essay collection")]
FOLDERS = ["Personal", "Work", "Ideas", "Errands"]
LINES = ["buy oat milk", "book the dentist", "return the library books", "water the plants", "renew the passport"]


def own_notes(world: World) -> list[tuple[int, str, str]]:
    """The user's notes with unique titles: (id, title, folder)."""
    found = rows(world, "notes", "SELECT id, title, folder FROM notes WHERE owner = ? ORDER BY id", world.me.email)
    return [n for n in found if sum(1 for m in found if m[1] == n[1]) == 1]


def find_note(title: str) -> Step:
    """Reference step: the user's own note with this title."""
    me = yield from call("whoami")
    found = yield from every("notes_search", query=title)
    return next(n for n in found if n["title"] == title and n["owner"] == me["email"])


class NotesCreate(TaskTemplate, name="notes_create", scenario="notes", apps=("notes",)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        title, body = NEW_NOTES[int(rng.integers(len(NEW_NOTES)))]
        return {"title": title, "body": body, "folder": choose(rng, FOLDERS)}

    def prompt(self, p: Params) -> str:
        return f"Make a note titled '{p['title']}' in my '{p['folder']}' folder that says: {p['body']}"

    def solve(self, p: Params) -> Solution:
        yield from call("notes_create", title=p["title"], body=p["body"], folder=p["folder"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        row = {"owner": world.me.email, "title": p["title"], "folder": p["folder"], "body": contains(p["body"])}
        return Expectation(inserts=[("notes", "notes", row)])


class NotesAppend(TaskTemplate, name="notes_append", scenario="notes", apps=("notes",)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        note = choose(rng, own_notes(world))
        return {"title": note[1], "line": choose(rng, LINES)}

    def prompt(self, p: Params) -> str:
        return f"Add the line '{p['line']}' at the end of my note '{p['title']}'."

    def solve(self, p: Params) -> Solution:
        note = yield from find_note(p["title"])
        yield from call("notes_append", note_id=note["note_id"], text=p["line"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        nid = next(n[0] for n in own_notes(world) if n[1] == p["title"])
        old = rows(world, "notes", "SELECT body FROM notes WHERE id = ?", nid)[0][0]

        def appended(body: object) -> bool:
            return isinstance(body, str) and body.rstrip().startswith(old.rstrip()) and \
                body.rstrip().endswith(p["line"]) and len(body) <= len(old) + len(p["line"]) + 4

        return Expectation(updates={("notes", "notes", nid): {"body": appended}})


class NotesShare(TaskTemplate, name="notes_share", scenario="notes", apps=("contacts", "notes")):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        note = choose(rng, own_notes(world))
        shared = {r[0] for r in rows(world, "notes", "SELECT email FROM shares WHERE note_id = ?", note[0])}
        name = choose(rng, [n for n in contact_names(world) if email_of(world, n) not in shared])
        return {"title": note[1], "name": name, "can_edit": bool(rng.random() < 0.5)} if name else None

    def prompt(self, p: Params) -> str:
        mode = "and let them edit it" if p["can_edit"] else "read-only"
        return f"Share my note '{p['title']}' with {p['name']}, {mode}."

    def solve(self, p: Params) -> Solution:
        address = yield from contact_email(p["name"])
        note = yield from find_note(p["title"])
        yield from call("notes_share", note_id=note["note_id"], email=address, can_edit=p["can_edit"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        nid = next(n[0] for n in own_notes(world) if n[1] == p["title"])
        row = {"note_id": nid, "email": email_of(world, p["name"]), "can_edit": int(p["can_edit"])}
        return Expectation(inserts=[("notes", "shares", row)])


class NotesDeleteFolder(TaskTemplate, name="notes_delete_folder", scenario="notes", apps=("notes",)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        folders = [r[0] for r in rows(world, "notes", "SELECT DISTINCT folder FROM notes WHERE owner = ? "
                                      "ORDER BY folder", world.me.email)]
        return {"folder": choose(rng, folders)}

    def prompt(self, p: Params) -> str:
        return f"Delete every note in my '{p['folder']}' folder."

    def solve(self, p: Params) -> Solution:
        me = yield from call("whoami")
        found = yield from every("notes_search", folder=p["folder"])
        for note in found:
            if note["owner"] == me["email"]:
                yield from call("notes_delete", note_id=note["note_id"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        ids = [r[0] for r in rows(world, "notes", "SELECT id FROM notes WHERE owner = ? AND folder = ?",
                                  world.me.email, p["folder"])]
        shares = [r[0] for i in ids for r in rows(world, "notes", "SELECT id FROM shares WHERE note_id = ?", i)]
        return Expectation(deletes={("notes", "notes", i) for i in ids} | {("notes", "shares", s) for s in shares})


# versions=(0,): a small count is easy to guess; v1 asks for the items instead
class NotesCountFolder(TaskTemplate, name="notes_count_folder", scenario="notes", apps=("notes",),
                       answer_kind="number", versions=(0,)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        return {"folder": choose(rng, ["Recipes", "Travel", "Work", "Personal", "Ideas"])}

    def prompt(self, p: Params) -> str:
        return f"How many notes do I have in my '{p['folder']}' folder? Answer with the number."

    def solve(self, p: Params) -> Solution:
        found = yield from call("notes_folders")
        return str(next((f["notes"] for f in found["folders"] if f["folder"] == p["folder"]), 0))

    def expect(self, world: World, p: Params) -> Expectation:
        n = rows(world, "notes", "SELECT COUNT(*) FROM notes WHERE owner = ? AND folder = ?", world.me.email,
                 p["folder"])[0][0]
        return Expectation(answer=n, answer_kind="number")


class NotesInFolder(TaskTemplate, name="notes_in_folder", scenario="notes", apps=("notes",), answer_kind="list",
                    versions=(1,)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        return {"folder": choose(rng, ["Recipes", "Travel", "Work", "Personal", "Ideas"])}

    def prompt(self, p: Params) -> str:
        return (f"Which of my own notes are in my '{p['folder']}' folder? Answer with their titles, separated by "
                "commas.")

    def solve(self, p: Params) -> Solution:
        me = yield from call("whoami")
        found = yield from every("notes_search", folder=p["folder"])
        return ", ".join(sorted({n["title"] for n in found if n["owner"] == me["email"]}))

    def expect(self, world: World, p: Params) -> Expectation:
        titles = rows(world, "notes", "SELECT DISTINCT title FROM notes WHERE owner = ? AND folder = ? ORDER BY title",
                      world.me.email, p["folder"])
        return Expectation(answer=[r[0] for r in titles], answer_kind="list")


# -- shopping ---------------------------------------------------------------------


def my_orders(world: World, status: str) -> list[tuple[int, str, int, str]]:
    """The user's orders with a status whose first item names them uniquely: (id, placed_at, total, product)."""
    found = rows(world, "shopping", "SELECT o.id, o.placed_at, o.total_cents, (SELECT p.name FROM order_items i "
                 "JOIN products p ON p.id = i.product_id WHERE i.order_id = o.id ORDER BY i.id LIMIT 1) FROM orders o "
                 "WHERE o.owner = ? AND o.status = ? ORDER BY o.id", world.me.email, status)
    return [o for o in found if sum(1 for q in found if q[3] == o[3] and q[1][:10] == o[1][:10]) == 1]


class ShopBuy(TaskTemplate, name="shop_buy", scenario="shopping", apps=("shopping",)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        product = choose(rng, rows(world, "shopping", "SELECT name, stock FROM products WHERE stock >= 2"))
        return {"product": product[0], "quantity": int(rng.integers(1, 3))}

    def prompt(self, p: Params) -> str:
        return f"Order {p['quantity']} × '{p['product']}' from the shop (nothing else) and check out."

    def solve(self, p: Params) -> Solution:
        product = yield from named("shop_search", p["product"])
        yield from call("shop_cart_set", product_id=product["product_id"], quantity=p["quantity"])
        yield from call("shop_checkout")
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        pid, price = rows(world, "shopping", "SELECT id, price_cents FROM products WHERE name = ?", p["product"])[0]
        return Expectation(inserts=[
            ("shopping", "orders", {"owner": world.me.email, "status": "placed", "total_cents": price * p["quantity"]}),
            ("shopping", "order_items", {"product_id": pid, "quantity": p["quantity"]})])


class _MyOrderTask(TaskTemplate):
    """A task on one of the user's orders in ``status``, named by its first product and the day it was placed."""

    scenario = "shopping"
    apps = ("shopping",)
    status: ClassVar[str]

    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        order = choose(rng, my_orders(world, self.status))
        return {"product": order[3], "day": order[1][:10]} if order else None

    def _find(self, p: Params) -> Step:
        """Reference step: the order, through the orders tool."""
        found = yield from every("shop_orders", status=self.status)
        return next(o for o in found if o["placed_at"][:10] == p["day"] and o["items"][0]["name"] == p["product"])

    def _order(self, world: World, p: Params) -> tuple[int, str, int, str]:
        """The order's row in the base world: (id, placed_at, total_cents, first product)."""
        return next(o for o in my_orders(world, self.status) if o[3] == p["product"] and o[1][:10] == p["day"])


class ShopRefundDamaged(_MyOrderTask, name="shop_refund_damaged"):
    status = "delivered"

    def prompt(self, p: Params) -> str:
        return (f"The order with the '{p['product']}' I placed on {day_text(p['day'])} arrived damaged. Ask for a "
                "full refund of that order, giving 'damaged' as the reason.")

    def solve(self, p: Params) -> Solution:
        order = yield from self._find(p)
        yield from call("shop_request_refund", order_id=order["order_id"], reason="damaged")
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        oid, _, total, _ = self._order(world, p)
        row = {"order_id": oid, "amount_cents": total, "reason": contains("damaged"), "status": "requested"}
        return Expectation(inserts=[("shopping", "refunds", row)])


class ShopCancelPlaced(_MyOrderTask, name="shop_cancel_placed"):
    status = "placed"

    def prompt(self, p: Params) -> str:
        return f"Cancel my order with the '{p['product']}' that I placed on {day_text(p['day'])}; it hasn't shipped."

    def solve(self, p: Params) -> Solution:
        order = yield from self._find(p)
        yield from call("shop_cancel_order", order_id=order["order_id"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        oid = self._order(world, p)[0]
        return Expectation(updates={("shopping", "orders", oid): {"status": "cancelled"}})


class ShopCheapest(TaskTemplate, name="shop_cheapest", scenario="shopping", apps=("shopping",), answer_kind="text"):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        category = choose(rng, ["kitchen", "electronics", "books", "outdoors", "home", "toys"])
        prices = [r[0] for r in rows(world, "shopping", "SELECT price_cents FROM products WHERE category = ? "
                                     "ORDER BY price_cents LIMIT 2", category)]
        return {"category": category} if len(prices) == 2 and prices[0] < prices[1] else None

    def prompt(self, p: Params) -> str:
        return f"What is the cheapest product in the shop's {p['category']} category? Answer with its name."

    def solve(self, p: Params) -> Solution:
        found = yield from call("shop_search", category=p["category"], sort="price", page_size=1)
        return str(found["results"][0]["name"])

    def expect(self, world: World, p: Params) -> Expectation:
        name = rows(world, "shopping", "SELECT name FROM products WHERE category = ? ORDER BY price_cents LIMIT 1",
                    p["category"])[0][0]
        return Expectation(answer=name, answer_kind="text")


class ShopSpentSince(TaskTemplate, name="shop_spent_since", scenario="shopping", apps=("shopping",),
                     answer_kind="number"):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        days = sorted({r[0][:10] for r in rows(world, "shopping", "SELECT placed_at FROM orders WHERE owner = ?",
                                               world.me.email)})
        return {"since": choose(rng, days[1:])} if len(days) > 1 else None

    def prompt(self, p: Params) -> str:
        return (f"How much have I spent on shop orders placed on or after {day_text(p['since'])}, not counting "
                "cancelled orders? Answer in dollars.")

    def solve(self, p: Params) -> Solution:
        found = yield from every("shop_orders")
        total = sum(o["total"] for o in found if o["placed_at"][:10] >= p["since"] and o["status"] != "cancelled")
        return f"{total:.2f}"

    def expect(self, world: World, p: Params) -> Expectation:
        cents = rows(world, "shopping", "SELECT COALESCE(SUM(total_cents), 0) FROM orders WHERE owner = ? AND "
                     "substr(placed_at, 1, 10) >= ? AND status != 'cancelled'", world.me.email, p["since"])[0][0]
        return Expectation(answer=cents / 100, answer_kind="number")

"""Task templates on Northwind Market (the shop)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from rollgym.envs.web.observation import PageView
from rollgym.envs.web.sites.page import money
from rollgym.envs.web.sites.shop import SHIPPING, random_address
from rollgym.envs.web.tasks.base import (
    Solution,
    TaskTemplate,
    answer,
    click,
    fill,
    goto,
    select,
    sign_in,
)
from rollgym.verifiers.rubric import Criterion, GradeContext
from rollgym.verifiers.statediff import Rule, added, changed
from rollgym.verifiers.web import answer_equals, changed_ids, new_rows, normalize_text, parse_money

SORT_LABELS = {"cheapest": "Price: low to high", "most expensive": "Price: high to low"}


def _user(rng: np.random.Generator, rows: list[Any]) -> Any:
    return rows[int(rng.integers(len(rows)))]


class ShopExtremePrice(TaskTemplate):
    """Find the cheapest (or most expensive) product of a brand within a category."""

    name, site, kind = "shop_extreme_price", "shop", "info"

    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        while True:
            cat = self.pick(rng, self.rows("SELECT * FROM categories ORDER BY id"))
            brand = self.pick(rng, [r[0] for r in self.rows("SELECT DISTINCT brand FROM products ORDER BY brand")])
            which = self.pick(rng, sorted(SORT_LABELS))
            order = "ASC" if which == "cheapest" else "DESC"
            prods = self.rows(
                f"SELECT name, price_cents FROM products WHERE category_id = ? AND brand = ? "
                f"ORDER BY price_cents {order}",
                (cat["id"], brand),
            )
            if len(prods) >= 2 and prods[0]["price_cents"] != prods[1]["price_cents"]:
                return {"category": cat["name"], "brand": brand, "which": which}, prods[0]["name"]

    def goal(self, p: dict[str, Any]) -> str:
        return (
            f"On Northwind Market, find the {p['which']} {p['brand']} product in the {p['category']} category. "
            "Answer with the product's full name."
        )

    def criteria(self, p: dict[str, Any], expected: Any) -> list[Criterion]:
        return [Criterion("answer_is_product", 1.0, answer_equals(expected), f"the answer names {expected}")]

    def solve(self, p: dict[str, Any], view: PageView) -> Solution:
        view = yield goto("/search")
        view = yield select(view.find("select", "Category"), p["category"])
        view = yield select(view.find("select", "Brand"), p["brand"])
        view = yield select(view.find("select", "Sort by"), SORT_LABELS[p["which"]])
        view = yield click(view.find("button", "Apply filters"))
        first = next(e for e in view.elements if e.role == "link" and e.name.startswith(p["brand"] + " "))
        yield answer(first.name)


class ShopPurchase(TaskTemplate):
    """Sign in, put a product in the cart and check out with a given address and shipping method."""

    name, site, kind = "shop_purchase", "shop", "transaction"

    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        user = _user(rng, self.rows("SELECT * FROM users ORDER BY id"))
        prod = self.pick(rng, self.rows("SELECT * FROM products WHERE stock >= 3 ORDER BY id"))
        qty = int(rng.integers(1, 4))
        shipping = self.pick(rng, sorted(SHIPPING))
        address = random_address(random.Random(int(rng.integers(2**31))))
        params = {
            **self.credentials(user["username"]),
            "product": prod["name"],
            "quantity": qty,
            "shipping": shipping,
            "address": address,
        }
        return params, {"user_id": user["id"], "product_id": prod["id"]}

    def goal(self, p: dict[str, Any]) -> str:
        return (
            f'{self.sign_in_goal(p)} and order {p["quantity"]} × "{p["product"]}" with {p["shipping"]} shipping to '
            f'the address "{p["address"]}". Answer "done" when the order is placed.'
        )

    def criteria(self, p: dict[str, Any], ans: Any) -> list[Criterion]:
        def target(ctx: GradeContext) -> list[Any]:
            return [
                o
                for o in new_rows(ctx, "orders")
                if o["user_id"] == ans["user_id"]
                and any(
                    i["product_id"] == ans["product_id"]
                    for i in ctx.db("SELECT * FROM order_items WHERE order_id = ?", (o["id"],))
                )
            ]

        def qty_ok(ctx: GradeContext) -> bool:
            orders = target(ctx)
            return len(orders) == 1 and [
                tuple(r)
                for r in ctx.db("SELECT product_id, qty FROM order_items WHERE order_id = ?", (orders[0]["id"],))
            ] == [(ans["product_id"], p["quantity"])]

        def address_ok(ctx: GradeContext) -> bool:
            orders = target(ctx)
            return len(orders) == 1 and normalize_text(orders[0]["ship_address"]) == normalize_text(p["address"])

        def shipping_ok(ctx: GradeContext) -> bool:
            orders = target(ctx)
            return len(orders) == 1 and orders[0]["shipping"] == p["shipping"]

        def only_one(ctx: GradeContext) -> bool:
            return (
                len(new_rows(ctx, "orders")) == 1 and len(target(ctx)) == 1 and not changed_ids(ctx, "orders", "status")
            )

        return [
            Criterion(
                "order_placed", 0.4, lambda ctx: len(target(ctx)) >= 1, "a new order of the user has the product"
            ),
            Criterion("quantity_and_items", 0.2, qty_ok, "the order holds exactly the requested quantity of it"),
            Criterion("shipping_address", 0.2, address_ok, "the order ships to the requested address"),
            Criterion("shipping_method", 0.1, shipping_ok, "the order uses the requested shipping method"),
            Criterion("orders_one_new_none_changed", 0.1, only_one,
                      "orders: exactly one new order and no other order changed", gate=True),
        ]

    def allowed(self, p: dict[str, Any], ans: Any) -> list[Rule]:
        pid = ans["product_id"]
        return [
            *super().allowed(p, ans),
            added("orders", {"user_id": ans["user_id"]}, limit=1, note="the user's new order"),
            added("order_items", {"product_id": pid}, limit=1, note="the ordered product's line"),
            changed("products", {"id": pid}, columns={"stock"}, limit=1, note="the ordered product's stock"),
        ]

    def solve(self, p: dict[str, Any], view: PageView) -> Solution:
        view = yield from sign_in(view, p["username"], p["password"])
        view = yield goto("/search")
        view = yield fill(view.find("textbox", "Keywords"), p["product"])
        view = yield click(view.find("button", "Apply filters"))
        view = yield click(view.find("link", p["product"]))
        view = yield fill(view.find("textbox", "Quantity"), str(p["quantity"]))
        view = yield click(view.find("button", "Add to cart"))
        view = yield click(view.find("link", "Proceed to checkout"))
        view = yield fill(view.find("textbox", "Shipping address"), p["address"])
        label, cost = SHIPPING[p["shipping"]]
        view = yield select(view.find("select", "Shipping method"), f"{label} — {money(cost)}")
        view = yield click(view.find("button", "Place order"))
        yield answer("done")


class ShopOrderTotal(TaskTemplate):
    """Sign in and report the total of the order placed on a given date."""

    name, site, kind = "shop_order_total", "shop", "info"

    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        user = _user(rng, self.rows("SELECT * FROM users ORDER BY id"))
        order = self.pick(rng, self.rows("SELECT * FROM orders WHERE user_id = ? ORDER BY id", (user["id"],)))
        params = {**self.credentials(user["username"]), "date": order["placed_on"]}
        return params, order["total_cents"]

    def goal(self, p: dict[str, Any]) -> str:
        return (
            f"{self.sign_in_goal(p)}. What was the order total of your order placed on {p['date']}? Answer with the "
            "amount in dollars, e.g. 123.45."
        )

    def criteria(self, p: dict[str, Any], expected: Any) -> list[Criterion]:
        return [
            Criterion(
                "answer_is_total",
                1.0,
                lambda ctx: parse_money(ctx.answer) == expected,
                f"the answer is {money(expected)}",
            )
        ]

    def solve(self, p: dict[str, Any], view: PageView) -> Solution:
        view = yield from sign_in(view, p["username"], p["password"])
        view = yield goto("/orders")
        link = next(
            e for e in view.elements if e.role == "link" and e.name.startswith("Order #") and p["date"] in e.line
        )
        view = yield click(link)
        line = next(x for x in view.lines if "Order total:" in x)
        yield answer(line.split("Order total:")[1].strip().lstrip("$").replace(",", ""))


class ShopCancelOrder(TaskTemplate):
    """Sign in and cancel the pending order that contains a given product."""

    name, site, kind = "shop_cancel_order", "shop", "transaction"

    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        while True:
            user = _user(rng, self.rows("SELECT * FROM users ORDER BY id"))
            items = self.rows(
                "SELECT o.id, p.name FROM orders o JOIN order_items i ON i.order_id = o.id JOIN products p "
                "ON p.id = i.product_id WHERE o.user_id = ? ORDER BY o.id, p.name",
                (user["id"],),
            )
            pending = {
                r["id"]
                for r in self.rows("SELECT id FROM orders WHERE user_id = ? AND status = 'pending'", (user["id"],))
            }
            counts: dict[str, int] = {}
            for r in items:
                counts[r["name"]] = counts.get(r["name"], 0) + 1
            choices = [r for r in items if r["id"] in pending and counts[r["name"]] == 1]
            if choices:
                row = self.pick(rng, choices)
                params = {**self.credentials(user["username"]), "product": row["name"]}
                return params, {"order_id": row["id"]}

    def goal(self, p: dict[str, Any]) -> str:
        return (
            f'{self.sign_in_goal(p)} and cancel your pending order that contains "{p["product"]}". Leave your other '
            'orders alone. Answer "done" when finished.'
        )

    def criteria(self, p: dict[str, Any], ans: Any) -> list[Criterion]:
        oid = ans["order_id"]
        return [
            Criterion("order_cancelled", 0.7, self.status_is("orders", oid, "cancelled"), f"order #{oid} is cancelled"),
            self.only_that_one_changed("orders_only_that_one_changed", 0.3, "orders", oid,
                                       "orders: no other order was changed or placed"),
        ]

    def allowed(self, p: dict[str, Any], ans: Any) -> list[Rule]:
        oid = ans["order_id"]
        items = {r["product_id"] for r in self.rows("SELECT product_id FROM order_items WHERE order_id = ?", (oid,))}
        return [
            *super().allowed(p, ans),
            changed("orders", {"id": oid}, to={"status": "cancelled"}, limit=1, note="the order is cancelled"),
            changed("products", lambda r: r["id"] in items, columns={"stock"}, note="its items go back in stock"),
        ]

    def solve(self, p: dict[str, Any], view: PageView) -> Solution:
        view = yield from sign_in(view, p["username"], p["password"])
        view = yield goto("/orders")
        links = [e for e in view.elements if e.role == "link" and e.name.startswith("Order #") and "pending" in e.line]
        for link in links:
            view = yield click(link)
            if any(e.role == "link" and e.name == p["product"] for e in view.elements):
                view = yield click(view.find("button", "Cancel this order"))
                break
            view = yield "go_back()"
        yield answer("done")


TEMPLATES: list[TaskTemplate] = [ShopExtremePrice(), ShopPurchase(), ShopOrderTotal(), ShopCancelOrder()]

"""Shopping: a public catalogue, and a private cart, orders and refunds per customer."""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from rollgym.envs.tools.api import TIME_FORMAT, Session, ToolError, dollars, like, page_of, to_cents, tool
from rollgym.envs.tools.people import WorldGen

SCHEMA = """
CREATE TABLE products (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, price_cents INTEGER NOT NULL,
    stock INTEGER NOT NULL, rating REAL NOT NULL
);
CREATE TABLE cart (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, product_id INTEGER NOT NULL, quantity INTEGER NOT NULL);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, status TEXT NOT NULL, placed_at TEXT NOT NULL,
    total_cents INTEGER NOT NULL, address TEXT NOT NULL
);
CREATE TABLE order_items (
    id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL, product_id INTEGER NOT NULL, quantity INTEGER NOT NULL,
    price_cents INTEGER NOT NULL
);
CREATE TABLE refunds (
    id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL, reason TEXT NOT NULL, amount_cents INTEGER NOT NULL,
    status TEXT NOT NULL, created_at TEXT NOT NULL
);
"""
CATALOGUE = {
    "kitchen": ["Chef's knife", "Cast iron pan", "Pepper mill", "Salad spinner", "Kettle", "Cutting board"],
    "electronics": ["USB-C charger", "Bluetooth speaker", "Noise-cancelling headphones", "E-reader", "Webcam"],
    "books": ["Atlas of islands", "The quiet garden", "Learning SQL", "Night train stories", "Cooking with grains"],
    "outdoors": ["Camping lantern", "Trail backpack", "Water filter", "Hammock", "Folding chair"],
    "home": ["Desk lamp", "Linen throw", "Wall clock", "Plant pot", "Storage baskets"],
    "toys": ["Wooden puzzle", "Kite", "Building blocks", "Card game"],
}
ADDRESS = "12 Harbour Road, Springfield"
OrderStatus = Literal["placed", "shipped", "delivered", "cancelled"]
Category = Literal["kitchen", "electronics", "books", "outdoors", "home", "toys"]


def populate(conn: sqlite3.Connection, gen: WorldGen) -> None:
    """A catalogue with seeded prices and the order history of the user and some others."""
    for category, names in CATALOGUE.items():
        for name in names:
            conn.execute("INSERT INTO products (name, category, price_cents, stock, rating) VALUES (?,?,?,?,?)",
                         (name, category, int(gen.rng.integers(5, 200)) * 100 + int(gen.rng.choice([0, 49, 99])),
                          int(gen.rng.integers(3, 40)), round(float(gen.rng.uniform(2.5, 5.0)), 1)))
    n_products = conn.execute("SELECT COUNT(*) FROM products").fetchone()[0]
    customers = [gen.me] * 14 + gen.others()[:8]
    for i, customer in enumerate(customers):
        status = str(gen.rng.choice(["placed", "shipped", "delivered"], p=[0.25, 0.15, 0.6]))
        if i == 0:
            status = "placed"
        placed = gen.when(3 if status == "placed" else 50)
        cur = conn.execute("INSERT INTO orders (owner, status, placed_at, total_cents, address) VALUES (?,?,?,0,?)",
                           (customer.email, status, placed, ADDRESS if customer == gen.me else "elsewhere"))
        total = 0
        for pid in gen.rng.choice(n_products, size=int(gen.rng.integers(1, 4)), replace=False):
            price = conn.execute("SELECT price_cents FROM products WHERE id = ?", (int(pid) + 1,)).fetchone()[0]
            qty = int(gen.rng.integers(1, 3))
            conn.execute("INSERT INTO order_items (order_id, product_id, quantity, price_cents) VALUES (?,?,?,?)",
                         (cur.lastrowid, int(pid) + 1, qty, price))
            total += qty * price
        conn.execute("UPDATE orders SET total_cents = ? WHERE id = ?", (total, cur.lastrowid))


def _product(r: Any) -> dict[str, Any]:
    return {"product_id": r[0], "name": r[1], "category": r[2], "price": dollars(r[3]), "in_stock": r[4],
            "rating": r[5]}


_PRODUCT = "SELECT id, name, category, price_cents, stock, rating FROM products"


def _order(session: Session, r: Any) -> dict[str, Any]:
    items = session.db("shopping").execute(
        "SELECT i.product_id, p.name, i.quantity, i.price_cents FROM order_items i JOIN products p "
        "ON p.id = i.product_id WHERE i.order_id = ? ORDER BY i.id", (r[0],)).fetchall()
    refunds = session.db("shopping").execute("SELECT id, reason, amount_cents, status FROM refunds WHERE order_id = ?",
                                             (r[0],)).fetchall()
    return {"order_id": r[0], "status": r[1], "placed_at": r[2], "total": dollars(r[3]),
            "items": [{"product_id": a, "name": b, "quantity": c, "price": dollars(d)} for a, b, c, d in items],
            "refunds": [{"refund_id": a, "reason": b, "amount": dollars(c), "status": d} for a, b, c, d in refunds]}


def _own_order(session: Session, order_id: int) -> Any:
    row = session.db("shopping").execute("SELECT id, status, placed_at, total_cents FROM orders WHERE id = ? "
                                         "AND owner = ?", (order_id, session.user)).fetchone()
    if row is None:
        raise ToolError("not_found", f"You have no order with order_id {order_id}.")
    return row


@tool("shopping", writes=False)
def shop_search(
    session: Session, query: str = "", category: Category | None = None, max_price: float | None = None,
    sort: Literal["name", "price", "rating"] = "name", page: int = 1, page_size: int = 10,
) -> dict[str, Any]:
    """Search the shop's catalogue.

    Args:
        query: Text to look for in the product name.
        category: Only this category.
        max_price: Only products at or below this price in dollars.
        sort: Sort by name, price (cheapest first) or rating (best first).
        page: Page number, starting at 1.
        page_size: Results per page (1-50).
    """
    sql = f"{_PRODUCT} WHERE name LIKE ? ESCAPE '\\'"
    params: list[Any] = [like(query)]
    if category is not None:
        sql += " AND category = ?"
        params.append(category)
    if max_price is not None:
        sql += " AND price_cents <= ?"
        params.append(round(min(max(max_price, 0.0), 1e9) * 100))
    order = {"name": "name, id", "price": "price_cents, id", "rating": "rating DESC, id"}[sort]
    return page_of(session.db("shopping"), f"{sql} ORDER BY {order}", params, page, page_size, _product)


@tool("shopping", writes=False)
def shop_product(session: Session, product_id: int) -> dict[str, Any]:
    """Show one product.

    Args:
        product_id: The product's id.
    """
    row = session.db("shopping").execute(f"{_PRODUCT} WHERE id = ?", (product_id,)).fetchone()
    if row is None:
        raise ToolError("not_found", f"There is no product with product_id {product_id}.")
    return _product(row)


@tool("shopping", writes=False)
def shop_cart(session: Session) -> dict[str, Any]:
    """Show your cart and its total."""
    rows = session.db("shopping").execute(
        "SELECT c.product_id, p.name, c.quantity, p.price_cents FROM cart c JOIN products p ON p.id = c.product_id "
        "WHERE c.owner = ? ORDER BY c.id", (session.user,)).fetchall()
    items = [{"product_id": a, "name": b, "quantity": c, "price": dollars(d)} for a, b, c, d in rows]
    return {"items": items, "total": dollars(sum(c * d for _, _, c, d in rows))}


@tool("shopping", writes=True)
def shop_cart_set(session: Session, product_id: int, quantity: int) -> dict[str, Any]:
    """Put a product in your cart with this quantity (0 removes it).

    Args:
        product_id: The product.
        quantity: How many, 0-20.
    """
    shop_product(session, product_id)
    if not 0 <= quantity <= 20:
        raise ToolError("invalid_arguments", "quantity must be between 0 and 20.")
    db = session.db("shopping")
    db.execute("DELETE FROM cart WHERE owner = ? AND product_id = ?", (session.user, product_id))
    if quantity:
        db.execute("INSERT INTO cart (owner, product_id, quantity) VALUES (?,?,?)",
                   (session.user, product_id, quantity))
    return shop_cart(session)


@tool("shopping", writes=True)
def shop_checkout(session: Session) -> dict[str, Any]:
    """Order everything in your cart (paid with your card on file, shipped to your address)."""
    db = session.db("shopping")
    rows = db.execute("SELECT c.product_id, c.quantity, p.price_cents, p.stock, p.name FROM cart c JOIN products p "
                      "ON p.id = c.product_id WHERE c.owner = ? ORDER BY c.id", (session.user,)).fetchall()
    if not rows:
        raise ToolError("conflict", "Your cart is empty.")
    for _, qty, _, stock, name in rows:
        if qty > stock:
            raise ToolError("out_of_stock", f"Only {stock} of {name} in stock.")
    total = sum(q * p for _, q, p, _, _ in rows)
    cur = db.execute("INSERT INTO orders (owner, status, placed_at, total_cents, address) VALUES (?,?,?,?,?)",
                     (session.user, "placed", session.now.strftime(TIME_FORMAT), total, ADDRESS))
    for pid, qty, price, _, _ in rows:
        db.execute("INSERT INTO order_items (order_id, product_id, quantity, price_cents) VALUES (?,?,?,?)",
                   (cur.lastrowid, pid, qty, price))
        db.execute("UPDATE products SET stock = stock - ? WHERE id = ?", (qty, pid))
    db.execute("DELETE FROM cart WHERE owner = ?", (session.user,))
    return shop_order(session, int(cur.lastrowid or 0))


@tool("shopping", writes=False)
def shop_orders(
    session: Session, status: OrderStatus | None = None, page: int = 1, page_size: int = 10
) -> dict[str, Any]:
    """Your orders, newest first, with their items.

    Args:
        status: Only orders with this status.
        page: Page number, starting at 1.
        page_size: Results per page (1-50).
    """
    sql = "SELECT id, status, placed_at, total_cents FROM orders WHERE owner = ?"
    params: list[Any] = [session.user]
    if status is not None:
        sql += " AND status = ?"
        params.append(status)
    return page_of(session.db("shopping"), sql + " ORDER BY placed_at DESC, id DESC", params, page, page_size,
                   lambda r: _order(session, r))


@tool("shopping", writes=False)
def shop_order(session: Session, order_id: int) -> dict[str, Any]:
    """Show one of your orders.

    Args:
        order_id: The order's id.
    """
    return _order(session, _own_order(session, order_id))


@tool("shopping", writes=True)
def shop_cancel_order(session: Session, order_id: int) -> dict[str, Any]:
    """Cancel one of your orders that has not shipped yet; its items go back in stock.

    Args:
        order_id: The order to cancel.
    """
    row = _own_order(session, order_id)
    if row[1] != "placed":
        raise ToolError("conflict", f"Order {order_id} is {row[1]}; only placed orders can be cancelled.")
    db = session.db("shopping")
    db.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", (order_id,))
    items = db.execute("SELECT product_id, quantity FROM order_items WHERE order_id = ?", (order_id,)).fetchall()
    for pid, qty in items:
        db.execute("UPDATE products SET stock = stock + ? WHERE id = ?", (qty, pid))
    return shop_order(session, order_id)


@tool("shopping", writes=True)
def shop_request_refund(session: Session, order_id: int, reason: str, amount: float | None = None) -> dict[str, Any]:
    """Ask for a refund on a delivered order of yours.

    Args:
        order_id: The order.
        reason: Why, in a few words (e.g. "arrived damaged").
        amount: Dollars to refund; leave out for the whole order.
    """
    row = _own_order(session, order_id)
    if row[1] != "delivered":
        raise ToolError("conflict", f"Order {order_id} is {row[1]}; only delivered orders can be refunded.")
    cents = row[3] if amount is None else to_cents(amount)
    if cents > row[3]:
        raise ToolError("invalid_arguments", "A refund cannot exceed the order total.")
    if not reason.strip():
        raise ToolError("invalid_arguments", "Give a reason for the refund.")
    session.db("shopping").execute(
        "INSERT INTO refunds (order_id, reason, amount_cents, status, created_at) VALUES (?,?,?,?,?)",
        (order_id, reason.strip(), cents, "requested", session.now.strftime(TIME_FORMAT)))
    return shop_order(session, order_id)

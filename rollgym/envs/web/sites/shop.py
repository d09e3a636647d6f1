"""Northwind Market: an online shop with a catalogue, filters, a cart, checkout and order history.

Pages: ``/`` (categories and featured products), ``/search`` (text search,
category, brand and price filters, sorting, pagination), ``/product/<id>``,
``/cart``, ``/checkout``, ``/orders`` and ``/orders/<id>`` (cancel a pending
order), ``/account`` (saved address), ``/login``. Buying needs a signed-in
user; every seeded user's password is ``"<username>123"``.
"""

from __future__ import annotations

import random
import re
import sqlite3
from datetime import date, timedelta

from rollgym.envs.web.sites.base import (
    MAX_ID,
    HttpError,
    Request,
    Response,
    Site,
    page_number,
    password_hash,
    redirect,
    row_id,
    whole_number,
)
from rollgym.envs.web.sites.page import PER_PAGE, data_table, esc, money, options, pager, user_text

SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT UNIQUE NOT NULL, password_hash TEXT NOT NULL,
                    full_name TEXT NOT NULL, address TEXT NOT NULL);
CREATE TABLE categories (id INTEGER PRIMARY KEY, name TEXT NOT NULL, slug TEXT UNIQUE NOT NULL);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, category_id INTEGER NOT NULL,
                       brand TEXT NOT NULL, price_cents INTEGER NOT NULL, rating REAL NOT NULL,
                       stock INTEGER NOT NULL, description TEXT NOT NULL);
CREATE TABLE cart_items (user_id INTEGER NOT NULL, product_id INTEGER NOT NULL, qty INTEGER NOT NULL,
                         PRIMARY KEY (user_id, product_id));
CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, placed_on TEXT NOT NULL,
                     status TEXT NOT NULL, shipping TEXT NOT NULL, shipping_cents INTEGER NOT NULL,
                     total_cents INTEGER NOT NULL, ship_name TEXT NOT NULL, ship_address TEXT NOT NULL);
CREATE TABLE order_items (order_id INTEGER NOT NULL, product_id INTEGER NOT NULL, qty INTEGER NOT NULL,
                          price_cents INTEGER NOT NULL);
"""

TODAY = date(2026, 3, 1)
MAX_NAME, MAX_ADDRESS = 100, 200
SHIPPING = {"standard": ("Standard (5-7 days)", 499), "express": ("Express (1-2 days)", 1499)}
CATEGORIES = {
    "Kitchen": ["Kettle", "Toaster", "Blender", "Chef Knife", "Frying Pan", "Coffee Grinder", "Cutting Board"],
    "Electronics": ["Headphones", "Bluetooth Speaker", "USB-C Charger", "Webcam", "Keyboard", "Power Bank"],
    "Outdoor": ["Tent", "Sleeping Bag", "Hiking Backpack", "Camping Stove", "Headlamp", "Water Filter"],
    "Home": ["Desk Lamp", "Throw Blanket", "Wall Clock", "Bookshelf", "Floor Rug", "Scented Candle"],
    "Sports": ["Yoga Mat", "Dumbbell Set", "Jump Rope", "Running Shoes", "Tennis Racket", "Foam Roller"],
    "Toys": ["Jigsaw Puzzle", "Building Blocks", "Kite", "Board Game", "Plush Bear", "Toy Train"],
    "Garden": ["Watering Can", "Pruning Shears", "Garden Hose", "Planter", "Seed Kit", "Garden Gloves"],
}
BRANDS = ["Northwind", "Acme", "Lumina", "Verde", "Kestrel", "Orbit", "Harbor", "Summit", "Pioneer", "Nimbus"]
ADJECTIVES = ["Classic", "Pro", "Compact", "Deluxe", "Eco", "Ultra", "Smart", "Travel", "Essential", "Premium"]
FIRST = [
    "alice",
    "bruno",
    "chen",
    "dana",
    "emil",
    "farah",
    "gita",
    "hugo",
    "ines",
    "jonas",
    "kira",
    "liam",
    "maya",
    "nils",
    "olga",
    "pavel",
    "quinn",
    "rosa",
    "sami",
    "tara",
    "umar",
    "vera",
    "wade",
    "yara",
]
STREETS = [
    "Maple Street",
    "Harbor Road",
    "Elm Avenue",
    "Station Lane",
    "Mill Road",
    "Park Avenue",
    "King Street",
    "Bridge Road",
    "Church Lane",
    "Orchard Way",
]
CITIES = ["Springfield", "Riverton", "Lakeside", "Fairview", "Oakridge", "Brookfield", "Westport"]


_PRICE = re.compile(r"[0-9]{1,7}(\.[0-9]*)?|\.[0-9]+", re.ASCII)


def price_cents(raw: str) -> int | None:
    """A filter price in dollars (``"25"``, ``"19.99"``) as cents, or ``None`` when it is not one.

    Example:
        >>> price_cents("19.99"), price_cents("1e400"), price_cents("nan"), price_cents("²")
        (1999, None, None, None)
    """
    text = raw.strip()
    return round(float(text) * 100) if _PRICE.fullmatch(text) else None


def random_address(rng: random.Random) -> str:
    """A fictional one-line street address."""
    return f"{rng.randint(1, 299)} {rng.choice(STREETS)}, {rng.choice(CITIES)}"


class ShopSite(Site):
    """Northwind Market, the online shop."""

    key = "shop"
    name = "Northwind Market"
    schema = SCHEMA
    nav = (("/search", "Catalogue"), ("/cart", "Cart"), ("/orders", "Orders"), ("/account", "Account"))
    pages = (("GET", r"/", "home"), ("GET", r"/search", "search"), ("GET", r"/product/(\d+)", "product"),
             ("GET", r"/cart", "cart"), ("POST", r"/cart/add", "cart_add"), ("POST", r"/cart/update", "cart_update"),
             ("GET", r"/checkout", "checkout_form"), ("POST", r"/checkout", "checkout_submit"),
             ("GET", r"/orders", "orders"), ("GET", r"/orders/(\d+)", "order_detail"),
             ("POST", r"/orders/(\d+)/cancel", "order_cancel"),
             ("GET", r"/account", "account"), ("POST", r"/account", "account_save"))

    def seed(self, conn: sqlite3.Connection) -> None:
        rng = random.Random(20260301)
        for i, name in enumerate(CATEGORIES, 1):
            conn.execute("INSERT INTO categories VALUES (?, ?, ?)", (i, name, name.lower()))
        pid = 0
        for cid, (_, nouns) in enumerate(CATEGORIES.items(), 1):
            names: set[str] = set()
            while len(names) < 24:
                names.add(f"{rng.choice(BRANDS)} {rng.choice(ADJECTIVES)} {rng.choice(nouns)}")
            for name in sorted(names):
                pid += 1
                brand = name.split()[0]
                price = rng.randint(5, 250) * 100 + rng.choice([0, 49, 99, 95, 25])
                rating = round(rng.uniform(2.0, 5.0), 1)
                stock = rng.choice([0, 3, 8, 12, 20, 35, 50])
                desc = (
                    f"The {name} is a {rng.choice(['sturdy', 'lightweight', 'handsome', 'reliable'])} pick "
                    f"for everyday use, backed by a {rng.choice([1, 2, 3])}-year {brand} warranty."
                )
                conn.execute(
                    "INSERT INTO products VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (pid, name, cid, brand, price, rating, stock, desc),
                )
        products = conn.execute("SELECT id, price_cents FROM products").fetchall()
        order_id = 1000
        for uid, first in enumerate(FIRST, 1):
            full = f"{first.title()} {rng.choice(['Smith', 'Okafor', 'Lindqvist', 'Moreau', 'Tanaka', 'Rossi'])}"
            conn.execute(
                "INSERT INTO users VALUES (?, ?, ?, ?, ?)",
                (uid, first, password_hash(first + "123"), full, random_address(rng)),
            )
            used_days: set[int] = set()
            for k in range(rng.randint(3, 6)):
                day = rng.randint(1, 170)
                while day in used_days:
                    day = rng.randint(1, 170)
                used_days.add(day)
                order_id += 1
                placed = TODAY - timedelta(days=day)
                status = "pending" if day < 20 or k == 0 else rng.choice(["delivered", "delivered", "cancelled"])
                ship = rng.choice(list(SHIPPING))
                items = rng.sample(products, rng.randint(1, 3))
                subtotal = 0
                for prod in items:
                    qty = rng.randint(1, 3)
                    subtotal += qty * prod["price_cents"]
                    conn.execute(
                        "INSERT INTO order_items VALUES (?, ?, ?, ?)", (order_id, prod["id"], qty, prod["price_cents"])
                    )
                total = subtotal + SHIPPING[ship][1]
                conn.execute(
                    "INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        order_id,
                        uid,
                        placed.isoformat(),
                        status,
                        ship,
                        SHIPPING[ship][1],
                        total,
                        full,
                        random_address(rng),
                    ),
                )

    # -- catalogue ----------------------------------------------------------
    def _tile(self, row: sqlite3.Row) -> str:
        stock = "In stock" if row["stock"] > 0 else "Out of stock"
        return (
            f'<div class="tile"><div class="thumb"></div><a href="/product/{row["id"]}">{esc(row["name"])}</a>'
            f'<div class="price">{money(row["price_cents"])}</div>'
            f'<div class="muted">{esc(row["brand"])} · <span class="stars">★</span> {row["rating"]:.1f} · '
            f"{stock}</div></div>"
        )

    def home(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        cats = conn.execute(
            "SELECT c.name, c.slug, COUNT(p.id) AS n FROM categories c JOIN products p ON p.category_id = c.id "
            "GROUP BY c.id ORDER BY c.name"
        ).fetchall()
        featured = conn.execute("SELECT * FROM products WHERE stock > 0 ORDER BY rating DESC, id LIMIT 8").fetchall()
        cat_links = "".join(
            f'<div class="tile"><a href="/search?category={esc(c["slug"])}">{esc(c["name"])}</a>'
            f'<div class="muted">{c["n"]} products</div></div>'
            for c in cats
        )
        content = f"""
<section class="hero"><h1>Everything for home, kitchen and the outdoors</h1>
<form class="row" method="get" action="/search"><div><label for="q">Search the catalogue</label><br>
<input type="search" id="q" name="q" placeholder="e.g. kettle"></div><button type="submit">Search</button></form>
</section>
<h2>Shop by category</h2><div class="grid">{cat_links}</div>
<h2>Top rated</h2><div class="grid">{"".join(self._tile(p) for p in featured)}</div>"""
        return self.render(request, "Home", content)

    def search(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        q = request.arg("q")
        category = request.arg("category")
        brand = request.arg("brand")
        sort = request.arg("sort", "name")
        min_price, max_price = request.arg("min_price"), request.arg("max_price")
        where: list[str] = ["1 = 1"]
        params: list[str | int] = []
        if q:
            where.append("(p.name LIKE ? OR p.description LIKE ?)")
            params += [f"%{q}%", f"%{q}%"]
        if category:
            where.append("c.slug = ?")
            params.append(category)
        if brand:
            where.append("p.brand = ?")
            params.append(brand)
        error = ""
        for label, raw, op in (("Minimum price", min_price, ">="), ("Maximum price", max_price, "<=")):
            if raw:
                cents = price_cents(raw)
                if cents is None:
                    error = f"{label} must be a number of dollars such as 25 or 19.99."
                else:
                    where.append(f"p.price_cents {op} ?")
                    params.append(cents)
        orders = {
            "name": "p.name",
            "price_asc": "p.price_cents, p.name",
            "price_desc": "p.price_cents DESC, p.name",
            "rating": "p.rating DESC, p.name",
        }
        order_by = orders.get(sort, "p.name")
        base = f"FROM products p JOIN categories c ON c.id = p.category_id WHERE {' AND '.join(where)}"
        total = conn.execute(f"SELECT COUNT(*) {base}", params).fetchone()[0]
        page = page_number(request)
        rows = conn.execute(
            f"SELECT p.* {base} ORDER BY {order_by} LIMIT ? OFFSET ?", [*params, PER_PAGE, (page - 1) * PER_PAGE]
        ).fetchall()
        cats = [("", "All categories")] + [
            (r["slug"], r["name"]) for r in conn.execute("SELECT * FROM categories ORDER BY name")
        ]
        brands = [("", "All brands")] + [(b, b) for b in sorted(BRANDS)]
        sorts = [
            ("name", "Name"),
            ("price_asc", "Price: low to high"),
            ("price_desc", "Price: high to low"),
            ("rating", "Best rated"),
        ]
        results = "".join(self._tile(r) for r in rows) or '<p class="card">No products match these filters.</p>'
        qs = {
            "q": q,
            "category": category,
            "brand": brand,
            "min_price": min_price,
            "max_price": max_price,
            "sort": sort,
        }
        content = f"""
<h1>Catalogue</h1>
<div class="layout-side">
<aside class="sidebar filters"><div class="card"><form method="get" action="/search">
<div><label for="f-q">Keywords</label><input type="search" id="f-q" name="q" value="{esc(q)}"></div>
<div><label for="f-category">Category</label>
<select id="f-category" name="category">{options(cats, category)}</select></div>
<div><label for="f-brand">Brand</label><select id="f-brand" name="brand">{options(brands, brand)}</select></div>
<div><label for="f-min">Min price ($)</label>
<input type="number" step="0.01" id="f-min" name="min_price" value="{esc(min_price)}"></div>
<div><label for="f-max">Max price ($)</label>
<input type="number" step="0.01" id="f-max" name="max_price" value="{esc(max_price)}"></div>
<div><label for="f-sort">Sort by</label><select id="f-sort" name="sort">{options(sorts, sort)}</select></div>
<button type="submit">Apply filters</button></form></div></aside>
<section><p class="muted">{total} products found</p><div class="grid">{results}</div>
{pager("/search", qs, page, total)}</section></div>"""
        return self.render(request, "Catalogue", content, flash=error, flash_kind="error")

    def _product_row(self, conn: sqlite3.Connection, pid: int) -> sqlite3.Row:
        return self.one_row(conn, "SELECT p.*, c.name AS category, c.slug FROM products p JOIN categories c "
                            "ON c.id = p.category_id WHERE p.id = ?", (pid,), missing="That product does not exist.")

    def product(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        p = self._product_row(conn, row_id(match[1], "product"))
        if p["stock"] > 0:
            buy = f"""<form class="row" method="post" action="/cart/add">
<input type="hidden" name="product_id" value="{p["id"]}">
<div><label for="qty">Quantity</label><br>
<input type="number" id="qty" name="qty" value="1" min="1" max="{p["stock"]}"></div>
<button type="submit">Add to cart</button></form><p class="muted">{p["stock"]} left in stock</p>"""
        else:
            buy = '<p class="badge cancelled">Out of stock</p>'
        content = f"""
<p class="muted"><a href="/search?category={esc(p["slug"])}">{esc(p["category"])}</a></p>
<div class="card"><h1>{esc(p["name"])}</h1><div class="price">{money(p["price_cents"])}</div>
<p>Brand: {esc(p["brand"])} · <span class="stars">★</span> {p["rating"]:.1f} / 5</p>
<p>{esc(p["description"])}</p>{buy}</div>"""
        return self.render(request, p["name"], content)

    # -- cart and checkout --------------------------------------------------
    def _cart_rows(self, conn: sqlite3.Connection, uid: int) -> list[sqlite3.Row]:
        return conn.execute(
            "SELECT p.id, p.name, p.price_cents, p.stock, ci.qty FROM cart_items ci JOIN products p "
            "ON p.id = ci.product_id WHERE ci.user_id = ? ORDER BY p.name",
            (uid,),
        ).fetchall()

    def cart(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        if request.user is None:
            return self.must_sign_in(request, "Please sign in to see your cart.")
        rows = self._cart_rows(conn, request.user["id"])
        if not rows:
            return self.render(
                request,
                "Cart",
                '<h1>Your cart</h1><p class="card">Your cart is empty. <a href="/search">Browse the catalogue</a>.</p>',
            )
        body = "".join(
            f"""<tr><td><a href="/product/{r["id"]}">{esc(r["name"])}</a></td><td>{money(r["price_cents"])}</td>
<td><form class="row" method="post" action="/cart/update"><input type="hidden" name="product_id" value="{r["id"]}">
<input type="number" name="qty" value="{r["qty"]}" min="0" aria-label="Quantity of {esc(r["name"])}">
<button type="submit" class="secondary">Update</button></form></td><td>{money(r["qty"] * r["price_cents"])}</td></tr>"""
            for r in rows
        )
        subtotal = sum(r["qty"] * r["price_cents"] for r in rows)
        content = f"""<h1>Your cart</h1><table class="data"><thead><tr><th>Product</th><th>Price</th><th>Quantity</th>
<th>Line total</th></tr></thead><tbody>{body}</tbody></table>
<p>Subtotal: <strong>{money(subtotal)}</strong> <span class="muted">(set a quantity to 0 to remove an item)</span></p>
<p><a class="button" href="/checkout">Proceed to checkout</a></p>"""
        return self.render(request, "Cart", content)

    def _qty(self, raw: str, *, allow_zero: bool) -> int:
        text = raw.strip()
        if not text.isascii() or not text.isdigit():
            raise HttpError(400, "Quantity must be a whole number such as 1 or 2.")
        return whole_number(text, low=0 if allow_zero else 1, high=99, message="Quantity must be between 1 and 99.")

    def _form_product(self, conn: sqlite3.Connection, request: Request) -> sqlite3.Row:
        raw = request.form.get("product_id", "")
        return self._product_row(conn, whole_number(raw, low=1, high=MAX_ID, message="That product does not exist."))

    def cart_add(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        p = self._form_product(conn, request)
        if request.user is None:
            return redirect(f"/login?next=/product/{p['id']}", flash="Please sign in to add items to your cart.")
        qty = self._qty(request.form.get("qty", "1"), allow_zero=False)
        have = conn.execute(
            "SELECT qty FROM cart_items WHERE user_id = ? AND product_id = ?", (request.user["id"], p["id"])
        ).fetchone()
        new_qty = qty + (have["qty"] if have else 0)
        if new_qty > p["stock"]:
            raise HttpError(400, f"Only {p['stock']} of {p['name']} are in stock.")
        conn.execute("INSERT OR REPLACE INTO cart_items VALUES (?, ?, ?)", (request.user["id"], p["id"], new_qty))
        return redirect("/cart", flash=f"Added {qty} × {p['name']} to your cart.")

    def cart_update(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        user = self.require_user(request)
        p = self._form_product(conn, request)
        qty = self._qty(request.form.get("qty", "0"), allow_zero=True)
        if qty == 0:
            conn.execute("DELETE FROM cart_items WHERE user_id = ? AND product_id = ?", (user["id"], p["id"]))
            return redirect("/cart", flash=f"Removed {p['name']} from your cart.")
        if qty > p["stock"]:
            raise HttpError(400, f"Only {p['stock']} of {p['name']} are in stock.")
        conn.execute("UPDATE cart_items SET qty = ? WHERE user_id = ? AND product_id = ?", (qty, user["id"], p["id"]))
        return redirect("/cart", flash="Cart updated.")

    def checkout_form(
        self, conn: sqlite3.Connection, request: Request, match: re.Match[str], error: str = ""
    ) -> Response:
        if request.user is None:
            return self.must_sign_in(request, "Please sign in to check out.")
        rows = self._cart_rows(conn, request.user["id"])
        if not rows:
            return redirect("/cart", flash="Your cart is empty; add something before checking out.")
        items = "".join(f"<li>{r['qty']} × {esc(r['name'])} — {money(r['qty'] * r['price_cents'])}</li>" for r in rows)
        name = request.form.get("ship_name", request.user["full_name"])
        address = request.form.get("ship_address", request.user["address"])
        ship = request.form.get("shipping", "standard")
        ship_opts = [(k, f"{label} — {money(c)}") for k, (label, c) in SHIPPING.items()]
        content = f"""<h1>Checkout</h1><div class="card"><h2>Items</h2><ul>{items}</ul></div>
<div class="card"><form class="stack" method="post" action="/checkout">
<label for="ship_name">Full name</label><input type="text" id="ship_name" name="ship_name" value="{esc(name)}">
<label for="ship_address">Shipping address</label>
<input type="text" id="ship_address" name="ship_address" value="{esc(address)}" style="width:100%">
<label for="shipping">Shipping method</label><select id="shipping" name="shipping">{options(ship_opts, ship)}</select>
<p><button type="submit">Place order</button></p></form></div>"""
        return self.render(request, "Checkout", content, status=400 if error else 200, flash=error, flash_kind="error")

    def checkout_submit(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        user = self.require_user(request)
        rows = self._cart_rows(conn, user["id"])
        if not rows:
            return redirect("/cart", flash="Your cart is empty; add something before checking out.")
        name = request.form.get("ship_name", "").strip()
        address = request.form.get("ship_address", "").strip()
        ship = request.form.get("shipping", "")
        if not name or not address:
            return self.checkout_form(conn, request, match, error="Please fill in your name and shipping address.")
        if len(name) > MAX_NAME or len(address) > MAX_ADDRESS:
            error = f"Keep the name under {MAX_NAME} and the address under {MAX_ADDRESS} characters."
            return self.checkout_form(conn, request, match, error=error)
        if ship not in SHIPPING:
            return self.checkout_form(conn, request, match, error="Please choose a shipping method from the list.")
        short = [r["name"] for r in rows if r["qty"] > r["stock"]]
        if short:
            return self.checkout_form(conn, request, match, error=f"Not enough stock for {', '.join(short)}.")
        subtotal = sum(r["qty"] * r["price_cents"] for r in rows)
        cost = SHIPPING[ship][1]
        cur = conn.execute(
            "INSERT INTO orders (user_id, placed_on, status, shipping, shipping_cents, total_cents, ship_name, "
            "ship_address) VALUES (?, ?, 'pending', ?, ?, ?, ?, ?)",
            (user["id"], TODAY.isoformat(), ship, cost, subtotal + cost, name, address),
        )
        oid = cur.lastrowid
        for r in rows:
            conn.execute("INSERT INTO order_items VALUES (?, ?, ?, ?)", (oid, r["id"], r["qty"], r["price_cents"]))
            conn.execute("UPDATE products SET stock = stock - ? WHERE id = ?", (r["qty"], r["id"]))
        conn.execute("DELETE FROM cart_items WHERE user_id = ?", (user["id"],))
        return redirect(f"/orders/{oid}", flash=f"Thank you! Order #{oid} has been placed.")

    # -- orders and account -------------------------------------------------
    def orders(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        if request.user is None:
            return self.must_sign_in(request, "Please sign in to see your orders.")
        rows = conn.execute(
            "SELECT * FROM orders WHERE user_id = ? ORDER BY placed_on DESC, id DESC", (request.user["id"],)
        ).fetchall()
        body = "".join(
            f'<tr><td><a href="/orders/{o["id"]}">Order #{o["id"]}</a></td><td>{o["placed_on"]}</td>'
            f'<td><span class="badge {o["status"]}">{o["status"]}</span></td><td>{money(o["total_cents"])}</td></tr>'
            for o in rows
        )
        table = data_table(["Order", "Placed on", "Status", "Total"], body)
        return self.render(request, "Orders", f"<h1>Your orders</h1>{table}")

    def _own_order(self, conn: sqlite3.Connection, request: Request, oid: int) -> sqlite3.Row:
        user = self.require_user(request)
        return self.one_row(
            conn,
            "SELECT * FROM orders WHERE id = ? AND user_id = ?",
            (oid, user["id"]),
            missing="We could not find that order in your account.",
        )

    def order_detail(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        if request.user is None:
            return self.must_sign_in(request, "Please sign in to see your orders.")
        o = self._own_order(conn, request, row_id(match[1], "order"))
        items = conn.execute(
            "SELECT oi.*, p.name FROM order_items oi JOIN products p ON p.id = oi.product_id "
            "WHERE order_id = ? ORDER BY p.name",
            (o["id"],),
        ).fetchall()
        body = "".join(
            f'<tr><td><a href="/product/{i["product_id"]}">{esc(i["name"])}</a></td><td>{i["qty"]}</td>'
            f"<td>{money(i['price_cents'])}</td></tr>"
            for i in items
        )
        cancel = ""
        if o["status"] == "pending":
            cancel = (
                f'<form method="post" action="/orders/{o["id"]}/cancel"><button class="danger" type="submit">'
                "Cancel this order</button></form>"
            )
        content = f"""<h1>Order #{o["id"]}</h1><div class="card">
<p>Placed on {o["placed_on"]} · <span class="badge {o["status"]}">{o["status"]}</span></p>
<p>Ship to: {user_text(f"{o['ship_name']}, {o['ship_address']}")} · {esc(SHIPPING[o["shipping"]][0])}</p>
<table class="data"><thead><tr><th>Product</th><th>Quantity</th><th>Unit price</th></tr></thead>
<tbody>{body}</tbody></table>
<p>Shipping: {money(o["shipping_cents"])} · Order total: <strong>{money(o["total_cents"])}</strong></p>{cancel}</div>"""
        return self.render(request, f"Order #{o['id']}", content)

    def order_cancel(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        o = self._own_order(conn, request, row_id(match[1], "order"))
        if o["status"] != "pending":
            raise HttpError(400, f"Order #{o['id']} is {o['status']} and can no longer be cancelled.")
        conn.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", (o["id"],))
        for item in conn.execute("SELECT * FROM order_items WHERE order_id = ?", (o["id"],)).fetchall():
            conn.execute("UPDATE products SET stock = stock + ? WHERE id = ?", (item["qty"], item["product_id"]))
        return redirect(f"/orders/{o['id']}", flash=f"Order #{o['id']} has been cancelled.")

    def account(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        if request.user is None:
            return self.must_sign_in(request, "Please sign in to see your account.")
        u = request.user
        content = f"""<h1>Your account</h1><div class="card"><form class="stack" method="post" action="/account">
<label for="full_name">Full name</label>
<input type="text" id="full_name" name="full_name" value="{esc(u["full_name"])}">
<label for="address">Default shipping address</label>
<input type="text" id="address" name="address" value="{esc(u["address"])}" style="width:100%">
<p><button type="submit">Save changes</button></p></form></div>"""
        return self.render(request, "Account", content)

    def account_save(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        user = self.require_user(request)
        name, address = request.form.get("full_name", "").strip(), request.form.get("address", "").strip()
        if not name or not address:
            raise HttpError(400, "Name and address must not be empty.")
        if len(name) > MAX_NAME or len(address) > MAX_ADDRESS:
            raise HttpError(400, f"Keep the name under {MAX_NAME} and the address under {MAX_ADDRESS} characters.")
        conn.execute("UPDATE users SET full_name = ?, address = ? WHERE id = ?", (name, address, user["id"]))
        return redirect("/account", flash="Your account details were saved.")

"""Wayfarer Travel: search flights and hotels by date, compare, book and cancel.

Pages: ``/`` (flight and hotel search forms), ``/flights`` (results sorted by
price, departure or duration, paginated), ``/flight/<id>`` (book a seat),
``/hotels`` (results with star filter), ``/hotel/<id>`` (book a stay),
``/bookings`` and ``/bookings/<ref>`` (cancel), ``/login``. The site's clock
is frozen at 1 March 2026; flights run from 2 to 29 March. Every seeded
user's password is ``"<username>123"``.
"""

from __future__ import annotations

import hashlib
import random
import re
import sqlite3
from datetime import date, timedelta
from urllib.parse import urlencode

from rollgym.envs.web.sites.base import HttpError, Request, Response, Site, page_number, password_hash, redirect, row_id
from rollgym.envs.web.sites.page import PER_PAGE, data_table, esc, money, options, pager, user_text

SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT UNIQUE NOT NULL, password_hash TEXT NOT NULL,
                    full_name TEXT NOT NULL);
CREATE TABLE airports (code TEXT PRIMARY KEY, city TEXT NOT NULL);
CREATE TABLE flights (id INTEGER PRIMARY KEY, number TEXT UNIQUE NOT NULL, airline TEXT NOT NULL, origin TEXT NOT NULL,
                      dest TEXT NOT NULL, day TEXT NOT NULL, depart TEXT NOT NULL, arrive TEXT NOT NULL,
                      minutes INTEGER NOT NULL, price_cents INTEGER NOT NULL, seats_left INTEGER NOT NULL);
CREATE INDEX flights_route ON flights (origin, dest, day);
CREATE TABLE hotels (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL, stars INTEGER NOT NULL,
                     price_cents INTEGER NOT NULL);
CREATE TABLE bookings (id INTEGER PRIMARY KEY, ref TEXT UNIQUE NOT NULL, user_id INTEGER NOT NULL, kind TEXT NOT NULL,
                       flight_id INTEGER, hotel_id INTEGER, traveller TEXT NOT NULL, check_in TEXT, check_out TEXT,
                       total_cents INTEGER NOT NULL, status TEXT NOT NULL);
"""

TODAY = date(2026, 3, 1)
FIRST_DAY, LAST_DAY = date(2026, 3, 2), date(2026, 3, 29)
AIRPORTS = {
    "LIS": "Lisbon",
    "BER": "Berlin",
    "OSL": "Oslo",
    "FCO": "Rome",
    "VIE": "Vienna",
    "DUB": "Dublin",
    "PRG": "Prague",
    "MAD": "Madrid",
}
AIRLINES = {"SW": "SkyWay", "AU": "Aurora Air", "BJ": "BlueJet", "NL": "Northline"}
HOTEL_WORDS = (
    ["Grand", "Old Town", "Riverside", "Central", "Garden", "Harbour", "Royal", "Little", "Park", "Station"],
    ["Hotel", "Inn", "Suites", "Residence", "Lodge", "House"],
)
USERS = [
    "amara",
    "bastian",
    "carmen",
    "desmond",
    "elin",
    "fatima",
    "georg",
    "hana",
    "ivo",
    "julia",
    "karim",
    "lotte",
    "mateo",
    "nora",
    "otto",
    "petra",
]
SURNAMES = ["Andersen", "Bianchi", "Costa", "Dvorak", "Eriksen", "Fischer", "Garcia", "Horvat", "Ivanova", "Jensen"]

MAX_NAME = 100
"""Longest traveller or guest name a booking accepts."""


def booking_ref(booking_id: int) -> str:
    """The six-letter reference shown to travellers for booking ``booking_id``."""
    digest = hashlib.sha256(f"wayfarer:{booking_id}".encode()).digest()
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    return "".join(alphabet[b % len(alphabet)] for b in digest[:6])


def parse_day(raw: str) -> date | None:
    """A ``YYYY-MM-DD`` date, or ``None`` when malformed."""
    try:
        return date.fromisoformat(raw.strip())
    except ValueError:
        return None


class TravelSite(Site):
    """Wayfarer Travel, the flight and hotel booking site."""

    key = "travel"
    name = "Wayfarer Travel"
    schema = SCHEMA
    nav = (("/", "Search"), ("/hotels", "Hotels"), ("/bookings", "My bookings"))
    pages = (("GET", r"/", "home"), ("GET", r"/flights", "flights"), ("GET", r"/flight/(\d+)", "flight"),
             ("POST", r"/flight/(\d+)/book", "book_flight"),
             ("GET", r"/hotels", "hotels"), ("GET", r"/hotel/(\d+)", "hotel"),
             ("POST", r"/hotel/(\d+)/book", "book_hotel"),
             ("GET", r"/bookings", "bookings"), ("GET", r"/bookings/([A-Z0-9]{6})", "booking"),
             ("POST", r"/bookings/([A-Z0-9]{6})/cancel", "cancel"))

    def seed(self, conn: sqlite3.Connection) -> None:
        rng = random.Random(777)
        for code, city in AIRPORTS.items():
            conn.execute("INSERT INTO airports VALUES (?, ?)", (code, city))
        numbers: set[str] = set()
        fid = 0
        n_days = (LAST_DAY - FIRST_DAY).days + 1
        for origin in AIRPORTS:
            for dest in AIRPORTS:
                if origin == dest:
                    continue
                base_minutes = rng.randint(80, 260)
                for d in range(n_days):
                    day = FIRST_DAY + timedelta(days=d)
                    for _ in range(rng.randint(2, 4)):
                        airline = rng.choice(list(AIRLINES))
                        number = f"{airline}{rng.randint(100, 9999)}"
                        while number in numbers:
                            number = f"{airline}{rng.randint(100, 9999)}"
                        numbers.add(number)
                        dep = rng.randint(6 * 12, 22 * 12) * 5
                        minutes = base_minutes + rng.randint(-10, 40)
                        arr = dep + minutes
                        fid += 1
                        conn.execute(
                            "INSERT INTO flights VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (
                                fid,
                                number,
                                AIRLINES[airline],
                                origin,
                                dest,
                                day.isoformat(),
                                f"{dep // 60:02d}:{dep % 60:02d}",
                                f"{arr // 60 % 24:02d}:{arr % 60:02d}",
                                minutes,
                                rng.randint(39, 420) * 100 + rng.choice([0, 99, 49]),
                                rng.choice([0, 2, 5, 9, 14, 30]),
                            ),
                        )
        hid = 0
        for city in AIRPORTS.values():
            names: set[str] = set()
            while len(names) < 9:
                names.add(f"{rng.choice(HOTEL_WORDS[0])} {rng.choice(HOTEL_WORDS[1])} {city}")
            for name in sorted(names):
                hid += 1
                stars = rng.randint(2, 5)
                conn.execute(
                    "INSERT INTO hotels VALUES (?, ?, ?, ?, ?)",
                    (hid, name, city, stars, (35 + stars * 25 + rng.randint(0, 90)) * 100),
                )
        bid = 0
        for uid, name in enumerate(USERS, 1):
            full = f"{name.title()} {rng.choice(SURNAMES)}"
            conn.execute("INSERT INTO users VALUES (?, ?, ?, ?)", (uid, name, password_hash(name + "123"), full))
            for _ in range(rng.randint(2, 4)):
                bid += 1
                status = rng.choice(["confirmed", "confirmed", "confirmed", "cancelled"])
                if rng.random() < 0.5:
                    f = conn.execute("SELECT * FROM flights WHERE id = ?", (rng.randint(1, fid),)).fetchone()
                    conn.execute(
                        "INSERT INTO bookings VALUES (?, ?, ?, 'flight', ?, NULL, ?, NULL, NULL, ?, ?)",
                        (bid, booking_ref(bid), uid, f["id"], full, f["price_cents"], status),
                    )
                else:
                    h = conn.execute("SELECT * FROM hotels WHERE id = ?", (rng.randint(1, hid),)).fetchone()
                    start = FIRST_DAY + timedelta(days=rng.randint(0, 20))
                    nights = rng.randint(1, 5)
                    conn.execute(
                        "INSERT INTO bookings VALUES (?, ?, ?, 'hotel', NULL, ?, ?, ?, ?, ?, ?)",
                        (
                            bid,
                            booking_ref(bid),
                            uid,
                            h["id"],
                            full,
                            start.isoformat(),
                            (start + timedelta(days=nights)).isoformat(),
                            nights * h["price_cents"],
                            status,
                        ),
                    )

    def _cities(self, blank: str) -> list[tuple[str, str]]:
        return [("", blank)] + [(c, f"{n} ({c})") for c, n in sorted(AIRPORTS.items(), key=lambda kv: kv[1])]

    def _flight_form(self, origin: str = "", dest: str = "", day: str = "") -> str:
        return f"""<form class="row" method="get" action="/flights">
<div><label for="from">From</label><br>
<select id="from" name="from">{options(self._cities("Choose a city"), origin)}</select></div>
<div><label for="to">To</label><br>
<select id="to" name="to">{options(self._cities("Choose a city"), dest)}</select></div>
<div><label for="date">Date</label><br>
<input type="date" id="date" name="date" value="{esc(day)}" min="{FIRST_DAY}" max="{LAST_DAY}"></div>
<button type="submit">Search flights</button></form>"""

    def _hotel_form(self, city: str = "", check_in: str = "", check_out: str = "", stars: str = "") -> str:
        cities = [("", "Choose a city")] + [(n, n) for n in sorted(AIRPORTS.values())]
        star_opts = [("", "Any"), ("3", "3+ stars"), ("4", "4+ stars"), ("5", "5 stars")]
        return f"""<form class="row" method="get" action="/hotels">
<div><label for="city">City</label><br><select id="city" name="city">{options(cities, city)}</select></div>
<div><label for="check_in">Check-in</label><br>
<input type="date" id="check_in" name="check_in" value="{esc(check_in)}"></div>
<div><label for="check_out">Check-out</label><br>
<input type="date" id="check_out" name="check_out" value="{esc(check_out)}"></div>
<div><label for="stars">Stars</label><br><select id="stars" name="stars">{options(star_opts, stars)}</select></div>
<button type="submit">Search hotels</button></form>"""

    @staticmethod
    def _city_tile(city: str) -> str:
        return (
            f'<div class="tile"><div class="thumb"></div><strong>{esc(city)}</strong>'
            '<div class="muted">Flights daily · hotels from 2 to 5 stars</div></div>'
        )

    def home(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        content = f"""<section class="hero"><h1>Where to next?</h1>
<p>Compare flights across four airlines and book in a minute.</p>
{self._flight_form()}</section><div class="card"><h2>Find a hotel</h2>{self._hotel_form()}</div>
<div class="grid">{"".join(self._city_tile(n) for n in sorted(AIRPORTS.values())[:4])}</div>"""
        return self.render(request, "Search", content)

    def flights(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        origin, dest, raw_day = request.arg("from"), request.arg("to"), request.arg("date")
        sort = request.arg("sort", "price")
        day = parse_day(raw_day)
        error = ""
        if origin not in AIRPORTS or dest not in AIRPORTS:
            error = "Choose both a departure and a destination city."
        elif origin == dest:
            error = "Departure and destination must be different cities."
        elif day is None:
            error = "Enter a travel date as YYYY-MM-DD."
        elif not FIRST_DAY <= day <= LAST_DAY:
            error = f"We sell flights from {FIRST_DAY} to {LAST_DAY}; pick a date in that range."
        if error:
            content = f'<h1>Flights</h1><div class="card">{self._flight_form(origin, dest, raw_day)}</div>'
            return self.render(request, "Flights", content, status=400, flash=error, flash_kind="error")
        order = {
            "price": "price_cents, depart",
            "departure": "depart, price_cents",
            "duration": "minutes, price_cents",
        }.get(sort, "price_cents, depart")
        total = conn.execute(
            "SELECT COUNT(*) FROM flights WHERE origin = ? AND dest = ? AND day = ?", (origin, dest, raw_day)
        ).fetchone()[0]
        page = page_number(request)
        rows = conn.execute(
            f"SELECT * FROM flights WHERE origin = ? AND dest = ? AND day = ? ORDER BY {order} LIMIT ? OFFSET ?",
            (origin, dest, raw_day, PER_PAGE, (page - 1) * PER_PAGE),
        ).fetchall()
        body = "".join(
            f'<tr><td><a href="/flight/{f["id"]}">{f["number"]}</a></td><td>{esc(f["airline"])}</td>'
            f'<td>{f["depart"]}</td>'
            f"<td>{f['arrive']}</td><td>{f['minutes'] // 60}h {f['minutes'] % 60:02d}m</td>"
            f'<td class="price">{money(f["price_cents"])}</td><td>{f["seats_left"] or "Sold out"}</td></tr>'
            for f in rows
        )
        sorts = [("price", "Cheapest first"), ("departure", "Earliest departure"), ("duration", "Shortest")]
        qs = {"from": origin, "to": dest, "date": raw_day}
        content = f"""<h1>{AIRPORTS[origin]} → {AIRPORTS[dest]} on {raw_day}</h1>
<div class="card">{self._flight_form(origin, dest, raw_day)}</div>
<form class="row" method="get" action="/flights"><input type="hidden" name="from" value="{origin}">
<input type="hidden" name="to" value="{dest}"><input type="hidden" name="date" value="{esc(raw_day)}">
<div><label for="sort">Sort by</label><br><select id="sort" name="sort">{options(sorts, sort)}</select></div>
<button type="submit" class="secondary">Sort</button></form><br>
<table class="data"><thead><tr><th>Flight</th><th>Airline</th><th>Departs</th><th>Arrives</th><th>Duration</th>
<th>Price</th>
<th>Seats left</th></tr></thead><tbody>{body}</tbody></table>{pager("/flights", {**qs, "sort": sort}, page, total)}"""
        return self.render(request, "Flights", content)

    def _flight_row(self, conn: sqlite3.Connection, fid: int) -> sqlite3.Row:
        return self.one_row(conn, "SELECT * FROM flights WHERE id = ?", (fid,),
                            missing="That flight does not exist.")

    def flight(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        f = self._flight_row(conn, row_id(match[1], "flight"))
        if request.user is None:
            book = f'<p><a href="/login?next=/flight/{f["id"]}">Sign in</a> to book this flight.</p>'
        elif f["seats_left"] == 0:
            book = '<p class="badge cancelled">Sold out</p>'
        else:
            book = f"""<form class="stack" method="post" action="/flight/{f["id"]}/book">
<label for="traveller">Traveller's full name</label>
<input type="text" id="traveller" name="traveller" value="{esc(request.user["full_name"])}">
<p><button type="submit">Book for {money(f["price_cents"])}</button></p></form>"""
        content = f"""<h1>Flight {f["number"]}</h1><div class="card">
<p>{esc(f["airline"])} · {AIRPORTS[f["origin"]]} ({f["origin"]}) →
{AIRPORTS[f["dest"]]} ({f["dest"]})</p><p>{f["day"]} · departs {f["depart"]} · arrives {f["arrive"]}</p>
<p class="price">{money(f["price_cents"])}</p><p class="muted">{f["seats_left"]} seats left</p>{book}</div>"""
        return self.render(request, f"Flight {f['number']}", content)

    def _new_booking(self, conn: sqlite3.Connection, values: dict[str, object]) -> str:
        next_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM bookings").fetchone()[0]
        ref = booking_ref(next_id)
        conn.execute(
            "INSERT INTO bookings (id, ref, user_id, kind, flight_id, hotel_id, traveller, check_in, check_out, "
            "total_cents, status) VALUES (:id, :ref, :user_id, :kind, :flight_id, :hotel_id, :traveller, "
            ":check_in, :check_out, :total_cents, 'confirmed')",
            {**values, "id": next_id, "ref": ref},
        )
        return ref

    def book_flight(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        user = self.require_user(request)
        f = self._flight_row(conn, row_id(match[1], "flight"))
        traveller = request.form.get("traveller", "").strip()
        if not 3 <= len(traveller) <= MAX_NAME:
            raise HttpError(400, f"Enter the traveller's full name as on their passport (3 to {MAX_NAME} characters).")
        if f["seats_left"] <= 0:
            raise HttpError(400, "This flight is sold out; choose another one.")
        conn.execute("UPDATE flights SET seats_left = seats_left - 1 WHERE id = ?", (f["id"],))
        ref = self._new_booking(
            conn,
            {
                "user_id": user["id"],
                "kind": "flight",
                "flight_id": f["id"],
                "hotel_id": None,
                "traveller": traveller,
                "check_in": None,
                "check_out": None,
                "total_cents": f["price_cents"],
            },
        )
        return redirect(f"/bookings/{ref}", flash=f"Booking confirmed. Your reference is {ref}.")

    def _stay(self, check_in: str, check_out: str) -> tuple[date, date] | str:
        start, end = parse_day(check_in), parse_day(check_out)
        if start is None or end is None:
            return "Enter check-in and check-out dates as YYYY-MM-DD."
        if start <= TODAY:
            return "Check-in must be after today (2026-03-01)."
        if end <= start:
            return "Check-out must be after check-in."
        if (end - start).days > 14:
            return "Stays are limited to 14 nights."
        return start, end

    def hotels(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        city, check_in, check_out = request.arg("city"), request.arg("check_in"), request.arg("check_out")
        stars, sort = request.arg("stars"), request.arg("sort", "price")
        form = f'<div class="card">{self._hotel_form(city, check_in, check_out, stars)}</div>'
        if not city and not check_in:
            return self.render(request, "Hotels", f"<h1>Hotels</h1>{form}")
        stay = self._stay(check_in, check_out)
        if city not in AIRPORTS.values() or isinstance(stay, str):
            error = stay if isinstance(stay, str) else "Choose a city from the list."
            return self.render(request, "Hotels", f"<h1>Hotels</h1>{form}", status=400, flash=error, flash_kind="error")
        nights = (stay[1] - stay[0]).days
        min_stars = int(stars) if stars.isascii() and stars.isdigit() and len(stars) <= 2 else 0
        order = "stars DESC, price_cents" if sort == "stars" else "price_cents, name"
        rows = conn.execute(
            f"SELECT * FROM hotels WHERE city = ? AND stars >= ? ORDER BY {order}", (city, min_stars)
        ).fetchall()
        link = esc(urlencode({"check_in": check_in, "check_out": check_out}))
        body = "".join(
            f'<tr><td><a href="/hotel/{h["id"]}?{link}">{esc(h["name"])}</a></td>'
            f'<td class="stars">{"★" * h["stars"]}</td>'
            f'<td>{money(h["price_cents"])}</td><td class="price">{money(h["price_cents"] * nights)}</td></tr>'
            for h in rows
        )
        sorts = [("price", "Lowest price"), ("stars", "Most stars")]
        content = f"""<h1>Hotels in {esc(city)}</h1>{form}
<form class="row" method="get" action="/hotels"><input type="hidden" name="city" value="{esc(city)}">
<input type="hidden" name="check_in" value="{esc(check_in)}">
<input type="hidden" name="check_out" value="{esc(check_out)}">
<input type="hidden" name="stars" value="{esc(stars)}">
<div><label for="hsort">Sort by</label><br><select id="hsort" name="sort">{options(sorts, sort)}</select></div>
<button type="submit" class="secondary">Sort</button></form><br>
<table class="data"><thead><tr><th>Hotel</th><th>Stars</th><th>Per night</th><th>{nights} nights</th></tr></thead>
<tbody>{body}</tbody></table>"""
        return self.render(request, f"Hotels in {city}", content)

    def _hotel_row(self, conn: sqlite3.Connection, hid: int) -> sqlite3.Row:
        return self.one_row(conn, "SELECT * FROM hotels WHERE id = ?", (hid,),
                            missing="That hotel does not exist.")

    def hotel(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        h = self._hotel_row(conn, row_id(match[1], "hotel"))
        check_in, check_out = request.arg("check_in"), request.arg("check_out")
        if request.user is None:
            book = f'<p><a href="/login?next=/hotel/{h["id"]}">Sign in</a> to book this hotel.</p>'
        else:
            book = f"""<form class="stack" method="post" action="/hotel/{h["id"]}/book">
<label for="guest">Guest's full name</label>
<input type="text" id="guest" name="traveller" value="{esc(request.user["full_name"])}">
<label for="b_in">Check-in</label><input type="date" id="b_in" name="check_in" value="{esc(check_in)}">
<label for="b_out">Check-out</label><input type="date" id="b_out" name="check_out" value="{esc(check_out)}">
<p><button type="submit">Book this hotel</button></p></form>"""
        content = f"""<h1>{esc(h["name"])}</h1><div class="card">
<p class="stars">{"★" * h["stars"]}</p><p>{esc(h["city"])}</p>
<p class="price">{money(h["price_cents"])} per night</p>{book}</div>"""
        return self.render(request, h["name"], content)

    def book_hotel(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        user = self.require_user(request)
        h = self._hotel_row(conn, row_id(match[1], "hotel"))
        traveller = request.form.get("traveller", "").strip()
        stay = self._stay(request.form.get("check_in", ""), request.form.get("check_out", ""))
        if isinstance(stay, str):
            raise HttpError(400, stay)
        if not 3 <= len(traveller) <= MAX_NAME:
            raise HttpError(400, f"Enter the guest's full name (3 to {MAX_NAME} characters).")
        nights = (stay[1] - stay[0]).days
        ref = self._new_booking(
            conn,
            {
                "user_id": user["id"],
                "kind": "hotel",
                "flight_id": None,
                "hotel_id": h["id"],
                "traveller": traveller,
                "check_in": stay[0].isoformat(),
                "check_out": stay[1].isoformat(),
                "total_cents": nights * h["price_cents"],
            },
        )
        return redirect(f"/bookings/{ref}", flash=f"Booking confirmed. Your reference is {ref}.")

    _BOOKINGS = (
        "SELECT b.*, f.number, f.origin, f.dest, f.day, f.depart, h.name AS hotel, h.city FROM bookings b "
        "LEFT JOIN flights f ON f.id = b.flight_id LEFT JOIN hotels h ON h.id = b.hotel_id "
    )

    @staticmethod
    def _what(b: sqlite3.Row) -> str:
        if b["kind"] == "flight":
            return (
                f"Flight {b['number']} {AIRPORTS[b['origin']]} → {AIRPORTS[b['dest']]} on {b['day']} at {b['depart']}"
            )
        return f"{b['hotel']}, {b['check_in']} to {b['check_out']}"

    def bookings(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        if request.user is None:
            return self.must_sign_in(request, "Please sign in to see your bookings.")
        rows = conn.execute(self._BOOKINGS + "WHERE b.user_id = ? ORDER BY b.id", (request.user["id"],)).fetchall()
        body = "".join(
            f'<tr><td><a href="/bookings/{b["ref"]}">{b["ref"]}</a></td><td>{esc(self._what(b))}</td>'
            f'<td>{user_text(b["traveller"])}</td><td><span class="badge {b["status"]}">{b["status"]}</span></td></tr>'
            for b in rows
        )
        content = "<h1>My bookings</h1>" + data_table(["Reference", "Trip", "Traveller", "Status"], body)
        return self.render(request, "My bookings", content)

    def _own_booking(self, conn: sqlite3.Connection, request: Request, ref: str) -> sqlite3.Row:
        user = self.require_user(request)
        return self.one_row(conn, self._BOOKINGS + "WHERE b.ref = ? AND b.user_id = ?", (ref, user["id"]),
                            missing="We could not find that booking in your account.")

    def booking(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        if request.user is None:
            return self.must_sign_in(request, "Please sign in to see your bookings.")
        b = self._own_booking(conn, request, match[1])
        cancel = ""
        if b["status"] == "confirmed":
            cancel = (
                f'<form method="post" action="/bookings/{b["ref"]}/cancel"><button type="submit" class="danger">'
                "Cancel this booking</button></form>"
            )
        content = f"""<h1>Booking {b["ref"]}</h1><div class="card"><p>{esc(self._what(b))}</p>
<p>Traveller: {user_text(b["traveller"])} · Total {money(b["total_cents"])}</p>
<p>Status: <span class="badge {b["status"]}">{b["status"]}</span></p>{cancel}</div>"""
        return self.render(request, f"Booking {b['ref']}", content)

    def cancel(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        b = self._own_booking(conn, request, match[1])
        if b["status"] != "confirmed":
            raise HttpError(400, f"Booking {b['ref']} is already {b['status']}.")
        conn.execute("UPDATE bookings SET status = 'cancelled' WHERE id = ?", (b["id"],))
        if b["kind"] == "flight":
            conn.execute("UPDATE flights SET seats_left = seats_left + 1 WHERE id = ?", (b["flight_id"],))
        return redirect(f"/bookings/{b['ref']}", flash=f"Booking {b['ref']} has been cancelled.")

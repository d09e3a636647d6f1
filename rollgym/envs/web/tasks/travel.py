"""Task templates on Wayfarer Travel (flights and hotels)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

import numpy as np

from rollgym.envs.web.observation import PageView
from rollgym.envs.web.sites.travel import AIRPORTS, FIRST_DAY, LAST_DAY, SURNAMES
from rollgym.envs.web.tasks.base import Solution, TaskTemplate, answer, click, fill, goto, select, sign_in
from rollgym.verifiers.rubric import Criterion, GradeContext
from rollgym.verifiers.statediff import Rule, added, changed
from rollgym.verifiers.web import answer_equals, changed_ids, new_rows, normalize_text

GIVEN = ["Alex", "Billie", "Charlie", "Dani", "Eli", "Frankie", "Jo", "Kim", "Robin", "Sam", "Toni", "Yuki"]
FLIGHT_RE = re.compile(r"[A-Z]{2}\d+")


def _day(rng: np.random.Generator, last: date = LAST_DAY) -> date:
    return FIRST_DAY + timedelta(days=int(rng.integers((last - FIRST_DAY).days + 1)))


def _route(rng: np.random.Generator) -> tuple[str, str]:
    codes = sorted(AIRPORTS)
    a = codes[int(rng.integers(len(codes)))]
    b = codes[int(rng.integers(len(codes)))]
    while b == a:
        b = codes[int(rng.integers(len(codes)))]
    return a, b


def search_flights(view: PageView, origin: str, dest: str, day: str) -> Any:
    """Reference steps: fill the flight search form on the home page and submit it."""
    view = yield goto("/")
    view = yield select(view.find("select", "From"), f"{AIRPORTS[origin]} ({origin})")
    view = yield select(view.find("select", "To"), f"{AIRPORTS[dest]} ({dest})")
    view = yield fill(view.find("textbox", "Date"), day)
    view = yield click(view.find("button", "Search flights"))
    return view


def _new_bookings(ctx: GradeContext, user_id: int) -> list[Any]:
    return [b for b in new_rows(ctx, "bookings") if b["user_id"] == user_id]


def _booked(ans: dict[str, Any], target: str) -> Callable[[GradeContext], list[Any]]:
    """The user's new confirmed bookings of the task's flight or hotel (``target`` is ``"flight_id"`` or
    ``"hotel_id"``), read from a grading context."""
    return lambda ctx: [b for b in _new_bookings(ctx, ans["user_id"])
                        if b[target] == ans[target] and b["status"] == "confirmed"]


def _one_new_booking(mine: Callable[[GradeContext], list[Any]]) -> Criterion:
    """The gate of the booking templates: that booking is the only new one, and nothing was cancelled."""
    return Criterion(
        "bookings_one_new_none_cancelled",
        0.2,
        lambda ctx: (
            len(mine(ctx)) == 1 and len(new_rows(ctx, "bookings")) == 1 and not changed_ids(ctx, "bookings", "status")
        ),
        "bookings: exactly one new booking, nothing cancelled",
        gate=True,
    )


class TravelCheapestFlight(TaskTemplate):
    """Find the flight number of the cheapest flight on a route and date."""

    name, site, kind = "travel_cheapest_flight", "travel", "info"

    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        while True:
            a, b = _route(rng)
            day = _day(rng).isoformat()
            rows = self.rows(
                "SELECT number, price_cents FROM flights WHERE origin = ? AND dest = ? AND day = ? "
                "ORDER BY price_cents",
                (a, b, day),
            )
            if len(rows) >= 2 and rows[0]["price_cents"] < rows[1]["price_cents"]:
                return {"origin": a, "dest": b, "date": day}, rows[0]["number"]

    def goal(self, p: dict[str, Any]) -> str:
        return (
            f"On Wayfarer Travel, what is the flight number of the cheapest flight from {AIRPORTS[p['origin']]} "
            f"to {AIRPORTS[p['dest']]} on {p['date']}? Answer with the flight number only, e.g. SW1234."
        )

    def criteria(self, p: dict[str, Any], expected: Any) -> list[Criterion]:
        return [Criterion("answer_is_flight", 1.0, answer_equals(expected), f"the answer is {expected}")]

    def solve(self, p: dict[str, Any], view: PageView) -> Solution:
        view = yield from search_flights(view, p["origin"], p["dest"], p["date"])
        first = next(e for e in view.elements if e.role == "link" and FLIGHT_RE.fullmatch(e.name))
        yield answer(first.name)


class TravelBookFlight(TaskTemplate):
    """Sign in and book the earliest flight of a day for a named traveller."""

    name, site, kind = "travel_book_flight", "travel", "transaction"

    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        while True:
            user = self.pick(rng, self.rows("SELECT * FROM users ORDER BY id"))
            a, b = _route(rng)
            day = _day(rng).isoformat()
            rows = self.rows(
                "SELECT * FROM flights WHERE origin = ? AND dest = ? AND day = ? ORDER BY depart", (a, b, day)
            )
            if len(rows) >= 2 and rows[0]["depart"] < rows[1]["depart"] and rows[0]["seats_left"] > 0:
                traveller = f"{self.pick(rng, GIVEN)} {self.pick(rng, SURNAMES)}"
                params = {
                    **self.credentials(user["username"]),
                    "origin": a,
                    "dest": b,
                    "date": day,
                    "traveller": traveller,
                }
                return params, {"user_id": user["id"], "flight_id": rows[0]["id"]}

    def goal(self, p: dict[str, Any]) -> str:
        return (
            f"{self.sign_in_goal(p)} and book one seat on the earliest flight from {AIRPORTS[p['origin']]} to "
            f'{AIRPORTS[p["dest"]]} on {p["date"]} for the traveller "{p["traveller"]}". Answer "done" when it is '
            "booked."
        )

    def criteria(self, p: dict[str, Any], ans: Any) -> list[Criterion]:
        mine = _booked(ans, "flight_id")
        return [
            Criterion(
                "right_flight", 0.5, lambda ctx: len(mine(ctx)) >= 1, "a confirmed booking of the earliest flight"
            ),
            Criterion(
                "traveller_name",
                0.3,
                lambda ctx: any(normalize_text(b["traveller"]) == normalize_text(p["traveller"]) for b in mine(ctx)),
                "the booking is in the traveller's name",
            ),
            _one_new_booking(mine),
        ]

    def allowed(self, p: dict[str, Any], ans: Any) -> list[Rule]:
        fid = ans["flight_id"]
        return [*super().allowed(p, ans),
                added("bookings", {"user_id": ans["user_id"], "flight_id": fid}, limit=1, note="the new booking"),
                changed("flights", {"id": fid}, columns={"seats_left"}, limit=1, note="the flight's free seats")]

    def solve(self, p: dict[str, Any], view: PageView) -> Solution:
        view = yield from sign_in(view, p["username"], p["password"])
        view = yield from search_flights(view, p["origin"], p["dest"], p["date"])
        view = yield select(view.find("select", "Sort by"), "Earliest departure")
        view = yield click(view.find("button", "Sort"))
        view = yield click(next(e for e in view.elements if e.role == "link" and FLIGHT_RE.fullmatch(e.name)))
        view = yield fill(view.find("textbox", "Traveller's full name"), p["traveller"])
        view = yield click(view.find("button", "Book for", exact=False))
        yield answer("done")


class TravelCancelHotel(TaskTemplate):
    """Sign in and cancel the hotel booking in a given city starting on a given date."""

    name, site, kind = "travel_cancel_hotel", "travel", "transaction"

    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        rows = self.rows(
            "SELECT b.*, h.city, u.username FROM bookings b JOIN hotels h ON h.id = b.hotel_id JOIN users u "
            "ON u.id = b.user_id WHERE b.status = 'confirmed' ORDER BY b.id"
        )
        b = self.pick(rng, rows)
        params = {
            **self.credentials(b["username"]),
            "city": b["city"],
            "check_in": b["check_in"],
        }
        return params, {"booking_id": b["id"]}

    def goal(self, p: dict[str, Any]) -> str:
        return (
            f"{self.sign_in_goal(p)} and cancel your hotel booking in {p['city']} that starts on {p['check_in']}. "
            'Keep every other booking. Answer "done" when finished.'
        )

    def criteria(self, p: dict[str, Any], ans: Any) -> list[Criterion]:
        bid = ans["booking_id"]
        return [
            Criterion("booking_cancelled", 0.7, self.status_is("bookings", bid, "cancelled"),
                      "the booking is cancelled"),
            self.only_that_one_changed("bookings_only_that_one_changed", 0.3, "bookings", bid,
                                       "bookings: no other booking changed or added"),
        ]

    def allowed(self, p: dict[str, Any], ans: Any) -> list[Rule]:
        return [*super().allowed(p, ans),
                changed("bookings", {"id": ans["booking_id"]}, to={"status": "cancelled"}, limit=1,
                        note="the booking is cancelled")]

    def solve(self, p: dict[str, Any], view: PageView) -> Solution:
        view = yield from sign_in(view, p["username"], p["password"])
        view = yield goto("/bookings")
        link = next(
            e
            for e in view.elements
            if e.role == "link" and p["city"] in e.line and f", {p['check_in']} to" in e.line and "confirmed" in e.line
        )
        view = yield click(link)
        view = yield click(view.find("button", "Cancel this booking"))
        yield answer("done")


class TravelBookHotel(TaskTemplate):
    """Sign in and book the cheapest hotel with at least some stars in a city for given dates."""

    name, site, kind = "travel_book_hotel", "travel", "transaction"

    def sample(self, rng: np.random.Generator) -> tuple[dict[str, Any], Any]:
        while True:
            user = self.pick(rng, self.rows("SELECT * FROM users ORDER BY id"))
            city = self.pick(rng, sorted(AIRPORTS.values()))
            stars = int(rng.integers(3, 5))
            rows = self.rows("SELECT * FROM hotels WHERE city = ? AND stars >= ? ORDER BY price_cents", (city, stars))
            if len(rows) >= 2 and rows[0]["price_cents"] < rows[1]["price_cents"]:
                start = _day(rng, LAST_DAY - timedelta(days=4))
                nights = int(rng.integers(1, 5))
                params = {
                    **self.credentials(user["username"]),
                    "city": city,
                    "stars": stars,
                    "check_in": start.isoformat(),
                    "check_out": (start + timedelta(days=nights)).isoformat(),
                }
                return params, {"user_id": user["id"], "hotel_id": rows[0]["id"]}

    def goal(self, p: dict[str, Any]) -> str:
        return (
            f"{self.sign_in_goal(p)} and book the cheapest hotel in {p['city']} with at least {p['stars']} stars, "
            f'checking in on {p["check_in"]} and checking out on {p["check_out"]}. Answer "done" when it is booked.'
        )

    def criteria(self, p: dict[str, Any], ans: Any) -> list[Criterion]:
        mine = _booked(ans, "hotel_id")
        return [
            Criterion("right_hotel", 0.5, lambda ctx: len(mine(ctx)) >= 1, "a confirmed booking of the cheapest match"),
            Criterion(
                "right_dates",
                0.3,
                lambda ctx: any((b["check_in"], b["check_out"]) == (p["check_in"], p["check_out"]) for b in mine(ctx)),
                "the booking has the requested dates",
            ),
            _one_new_booking(mine),
        ]

    def allowed(self, p: dict[str, Any], ans: Any) -> list[Rule]:
        return [*super().allowed(p, ans),
                added("bookings", {"user_id": ans["user_id"], "hotel_id": ans["hotel_id"]}, limit=1,
                      note="the new booking")]

    def solve(self, p: dict[str, Any], view: PageView) -> Solution:
        view = yield from sign_in(view, p["username"], p["password"])
        view = yield goto("/hotels")
        view = yield select(view.find("select", "City"), p["city"])
        view = yield fill(view.find("textbox", "Check-in"), p["check_in"])
        view = yield fill(view.find("textbox", "Check-out"), p["check_out"])
        view = yield select(view.find("select", "Stars"), f"{p['stars']}+ stars")
        view = yield click(view.find("button", "Search hotels"))
        hotel = next(e for e in view.elements if e.role == "link" and e.name.endswith(p["city"]))
        view = yield click(hotel)
        view = yield click(view.find("button", "Book this hotel"))
        yield answer("done")


TEMPLATES: list[TaskTemplate] = [TravelCheapestFlight(), TravelBookFlight(), TravelCancelHotel(), TravelBookHotel()]

"""Task templates over the calendar and payments apps."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, ClassVar

import numpy as np

from rollgym.envs.tools.api import TIME_FORMAT
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
    rows,
)
from rollgym.envs.tools.world import World
from rollgym.verifiers.tools import Expectation

TITLES = ["Budget check-in", "Roadmap chat", "Tennis", "Lunch", "Study session", "Pair programming"]


def shift(stamp: str, minutes: int) -> str:
    """A ``YYYY-MM-DD HH:MM`` time moved by some minutes."""
    return (datetime.strptime(stamp, TIME_FORMAT) + timedelta(minutes=minutes)).strftime(TIME_FORMAT)


def own_future_events(world: World) -> list[tuple[int, str, str, str]]:
    """The user's own future events whose title is unique on their day: (id, title, start, end)."""
    found = rows(world, "calendar", "SELECT id, title, start, end FROM events WHERE owner = ? AND start >= ? "
                 "ORDER BY start", world.me.email, f"{world.now:%Y-%m-%d %H:%M}")
    return [e for e in found if sum(1 for f in found if f[1] == e[1] and f[2][:10] == e[2][:10]) == 1]


def find_event(title: str, day: str) -> Step:
    """Reference step: the user's event with this title on this day."""
    found = yield from call("calendar_search", query=title, start_after=day, start_before=shift(day + " 00:00", 1440))
    return next(e for e in found["results"] if e["title"] == title)


class CalendarCreate(TaskTemplate, name="calendar_create", scenario="calendar", apps=("contacts", "calendar")):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        day = (world.now + timedelta(days=int(rng.integers(1, 14)))).strftime("%Y-%m-%d")
        start = f"{day} {int(rng.integers(8, 17)):02d}:{int(rng.choice([0, 30])):02d}"
        return {"title": choose(rng, TITLES), "name": choose(rng, contact_names(world)), "day": day,
                "start": start[11:], "end": shift(start, int(rng.choice([30, 60, 90])))[11:]}

    def prompt(self, p: Params) -> str:
        return (f"Put '{p['title']}' with {p['name']} on my calendar for {day_text(p['day'])} from {p['start']} "
                f"to {p['end']}, and invite them.")

    def solve(self, p: Params) -> Solution:
        address = yield from contact_email(p["name"])
        yield from call("calendar_create", title=p["title"], start=f"{p['day']} {p['start']}",
                        end=f"{p['day']} {p['end']}", attendees=[address])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        event = {"owner": world.me.email, "title": p["title"], "start": f"{p['day']} {p['start']}",
                 "end": f"{p['day']} {p['end']}"}
        return Expectation(inserts=[("calendar", "events", event),
                                    ("calendar", "attendees", {"email": email_of(world, p["name"])})])


class CalendarCancel(TaskTemplate, name="calendar_cancel", scenario="calendar", apps=("calendar",)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        event = choose(rng, own_future_events(world))
        return {"title": event[1], "day": event[2][:10]} if event else None

    def prompt(self, p: Params) -> str:
        return f"Cancel my '{p['title']}' on {day_text(p['day'])}."

    def solve(self, p: Params) -> Solution:
        event = yield from find_event(p["title"], p["day"])
        yield from call("calendar_delete", event_id=event["event_id"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        event = next(e for e in own_future_events(world) if e[1] == p["title"] and e[2][:10] == p["day"])
        guests = rows(world, "calendar", "SELECT id FROM attendees WHERE event_id = ?", event[0])
        return Expectation(deletes={("calendar", "events", event[0])} | {("calendar", "attendees", g) for g, in guests})


class CalendarMove(TaskTemplate, name="calendar_move", scenario="calendar", apps=("calendar",)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        event = choose(rng, own_future_events(world))
        if event is None:
            return None
        new = f"{int(rng.integers(8, 17)):02d}:{int(rng.choice([0, 15, 30, 45])):02d}"
        if new == event[2][11:]:
            return None
        return {"title": event[1], "day": event[2][:10], "time": new}

    def prompt(self, p: Params) -> str:
        return f"Move my '{p['title']}' on {day_text(p['day'])} to start at {p['time']}, keeping its length."

    def solve(self, p: Params) -> Solution:
        event = yield from find_event(p["title"], p["day"])
        minutes = (datetime.strptime(event["end"], TIME_FORMAT) - datetime.strptime(event["start"], TIME_FORMAT))
        start = f"{p['day']} {p['time']}"
        yield from call("calendar_update", event_id=event["event_id"], start=start,
                        end=shift(start, int(minutes.total_seconds() // 60)))
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        eid, _, start, end = next(e for e in own_future_events(world) if e[1] == p["title"] and e[2][:10] == p["day"])
        length = datetime.strptime(end, TIME_FORMAT) - datetime.strptime(start, TIME_FORMAT)
        new_start = f"{p['day']} {p['time']}"
        return Expectation(updates={("calendar", "events", eid): {
            "start": new_start, "end": shift(new_start, int(length.total_seconds() // 60))}})


def _visible_with(world: World, address: str) -> list[tuple[int, str]]:
    me = world.me.email
    return [(int(a), str(b)) for a, b in rows(
        world, "calendar", "SELECT id, start FROM events WHERE (owner = ? OR id IN (SELECT event_id FROM attendees "
        "WHERE email = ?)) AND (owner = ? OR id IN (SELECT event_id FROM attendees WHERE email = ?)) ORDER BY start",
        me, me, address, address)]


class CalendarNextWith(TaskTemplate, name="calendar_next_with", scenario="calendar", apps=("contacts", "calendar"),
                       answer_kind="datetime"):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        now = f"{world.now:%Y-%m-%d %H:%M}"
        names = [n for n in contact_names(world) if any(s >= now for _, s in _visible_with(world, email_of(world, n)))]
        name = choose(rng, names)
        return {"name": name} if name else None

    def prompt(self, p: Params) -> str:
        return (f"When does my next event with {p['name']} start? Answer with the start time as "
                "YYYY-MM-DD HH:MM.")

    def solve(self, p: Params) -> Solution:
        me = yield from call("whoami")
        address = yield from contact_email(p["name"])
        found = yield from call("calendar_search", attendee=address, start_after=me["now"], page_size=1)
        return str(found["results"][0]["start"])

    def expect(self, world: World, p: Params) -> Expectation:
        now = f"{world.now:%Y-%m-%d %H:%M}"
        starts = [s for _, s in _visible_with(world, email_of(world, p["name"])) if s >= now]
        return Expectation(answer=min(starts), answer_kind="datetime")


def _on_my_calendar(world: World, columns: str, day: str, order: str = "") -> list[tuple[Any, ...]]:
    """``columns`` of the events on the user's calendar (their own or ones they are invited to) on ``day``."""
    me = world.me.email
    return rows(world, "calendar", f"SELECT {columns} FROM events WHERE (owner = ? OR id IN (SELECT event_id FROM "
                f"attendees WHERE email = ?)) AND substr(start, 1, 10) = ?{order}", me, me, day)


class _DayQuestion(TaskTemplate, scenario="calendar", apps=("calendar",)):
    """A question about one day of the user's calendar, from ten days ago to two weeks ahead."""

    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        return {"day": (world.now + timedelta(days=int(rng.integers(-10, 14)))).strftime("%Y-%m-%d")}


# versions=(0,): a small count is easy to guess; v1 asks for the items instead
class CalendarCountDay(_DayQuestion, name="calendar_count_day", answer_kind="number", versions=(0,)):
    def prompt(self, p: Params) -> str:
        return (f"How many events are on my calendar (mine or ones I'm invited to) on {day_text(p['day'])}? "
                "Answer with the number.")

    def solve(self, p: Params) -> Solution:
        found = yield from call("calendar_search", start_after=p["day"], start_before=shift(p["day"] + " 00:00", 1440),
                                page_size=1)
        return str(found["total"])

    def expect(self, world: World, p: Params) -> Expectation:
        return Expectation(answer=_on_my_calendar(world, "COUNT(*)", p["day"])[0][0], answer_kind="number")


class CalendarDayEvents(_DayQuestion, name="calendar_day_events", answer_kind="list", versions=(1,)):
    def prompt(self, p: Params) -> str:
        return (f"Which events are on my calendar (mine or ones I'm invited to) on {day_text(p['day'])}? "
                "Answer with their titles, separated by commas.")

    def solve(self, p: Params) -> Solution:
        found = yield from every("calendar_search", start_after=p["day"], start_before=shift(p["day"] + " 00:00", 1440))
        return ", ".join(sorted({e["title"] for e in found}))

    def expect(self, world: World, p: Params) -> Expectation:
        titles = _on_my_calendar(world, "DISTINCT title", p["day"], " ORDER BY title")
        return Expectation(answer=[r[0] for r in titles], answer_kind="list")


class CalendarInvite(TaskTemplate, name="calendar_invite", scenario="calendar", apps=("contacts", "calendar")):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        event = choose(rng, own_future_events(world))
        if event is None:
            return None
        invited = {r[0] for r in rows(world, "calendar", "SELECT email FROM attendees WHERE event_id = ?", event[0])}
        name = choose(rng, [n for n in contact_names(world) if email_of(world, n) not in invited])
        return {"title": event[1], "day": event[2][:10], "name": name} if name else None

    def prompt(self, p: Params) -> str:
        return f"Invite {p['name']} to my '{p['title']}' on {day_text(p['day'])}."

    def solve(self, p: Params) -> Solution:
        address = yield from contact_email(p["name"])
        event = yield from find_event(p["title"], p["day"])
        yield from call("calendar_invite", event_id=event["event_id"], email=address)
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        eid = next(e[0] for e in own_future_events(world) if e[1] == p["title"] and e[2][:10] == p["day"])
        return Expectation(inserts=[("calendar", "attendees", {"event_id": eid, "email": email_of(world, p["name"])})])


# -- payments ---------------------------------------------------------------------

NOTES = ["Pizza night", "Cinema tickets", "Half of the taxi", "Book club snacks", "Birthday gift", "Parking"]


def _amount(rng: np.random.Generator) -> float:
    return round(int(rng.integers(5, 80)) + float(rng.choice([0, 0.25, 0.5, 0.75])), 2)


class _ContactMoney(TaskTemplate):
    """Send money to a contact, or ask one for money: one new row of ``payments.<table>``."""

    scenario = "payments"
    apps = ("contacts", "payments")
    tool: ClassVar[str]
    person: ClassVar[str]
    """The tool's argument that names the other person."""
    table: ClassVar[str]
    columns: ClassVar[tuple[str, str]]
    """The row's columns of the user and of the other person."""
    extra: ClassVar[tuple[tuple[str, str], ...]] = ()
    """Further fixed columns of the row."""

    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        return {"name": choose(rng, contact_names(world)), "amount": _amount(rng), "note": choose(rng, NOTES)}

    def solve(self, p: Params) -> Solution:
        address = yield from contact_email(p["name"])
        yield from call(self.tool, **{self.person: address}, amount=p["amount"], note=p["note"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        mine, theirs = self.columns
        row = {mine: world.me.email, theirs: email_of(world, p["name"]), "amount_cents": round(p["amount"] * 100),
               "note": p["note"], **dict(self.extra)}
        return Expectation(inserts=[("payments", self.table, row)])


class PaymentsSend(_ContactMoney, name="payments_send"):
    tool, person, table, columns = "payments_send", "to", "transfers", ("sender", "receiver")

    def prompt(self, p: Params) -> str:
        return f"Send {p['name']} ${p['amount']:.2f} with the note '{p['note']}'."


class PaymentsRequest(_ContactMoney, name="payments_request"):
    tool, person, table, columns = "payments_request", "from_person", "requests", ("requester", "payer")
    extra = (("status", "pending"),)

    def prompt(self, p: Params) -> str:
        return f"Ask {p['name']} to pay me ${p['amount']:.2f} for '{p['note']}'."


class PaymentsBalance(TaskTemplate, name="payments_balance", scenario="payments", apps=("payments",),
                      answer_kind="number"):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        return {"question": choose(rng, ["What is my wallet balance right now?", "How much money is in my wallet?",
                                         "What's the balance of my payments wallet?", "How much can I still send?"])}

    def prompt(self, p: Params) -> str:
        return f"{p['question']} Answer with the amount in dollars."

    def solve(self, p: Params) -> Solution:
        found = yield from call("payments_balance")
        return f"{found['balance']:.2f}"

    def expect(self, world: World, p: Params) -> Expectation:
        cents = rows(world, "payments", "SELECT balance_cents FROM accounts WHERE owner = ?", world.me.email)[0][0]
        return Expectation(answer=cents / 100, answer_kind="number")


def _pending(world: World, role: str = "to_me") -> list[tuple[int, str, int]]:
    """The pending requests asked of the user (``role`` ``to_me``) or by the user (``from_me``), by id:
    (id, the other person's address, cents)."""
    mine, theirs = ("payer", "requester") if role == "to_me" else ("requester", "payer")
    return [(int(a), str(b), int(c)) for a, b, c in rows(
        world, "payments", f"SELECT id, {theirs}, amount_cents FROM requests WHERE {mine} = ? AND status = 'pending' "
        "ORDER BY id", world.me.email)]


class _PendingRequestsOf(TaskTemplate, scenario="payments", apps=("contacts", "payments")):
    """Act on every pending request between the user and a named contact: ``tool`` on each sets it to ``status``."""

    role: ClassVar[str]
    """``to_me`` (requests the contact sent the user) or ``from_me`` (requests the user sent the contact)."""
    tool: ClassVar[str]
    status: ClassVar[str]

    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        emails = {who for _, who, _ in _pending(world, self.role)}
        name = choose(rng, [n for n in contact_names(world) if email_of(world, n) in emails])
        return {"name": name} if name else None

    def solve(self, p: Params) -> Solution:
        party = "requester" if self.role == "to_me" else "payer"
        address = yield from contact_email(p["name"])
        found = yield from every("payments_requests", role=self.role, status="pending")
        for request in found:
            if request[party] == address:
                yield from call(self.tool, request_id=request["request_id"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        address = email_of(world, p["name"])
        return Expectation(updates={("payments", "requests", rid): {"status": self.status}
                                    for rid, who, _ in _pending(world, self.role) if who == address})


class PaymentsPayRequestsFrom(_PendingRequestsOf, name="payments_pay_requests_from"):
    role, tool, status = "to_me", "payments_pay_request", "paid"

    def prompt(self, p: Params) -> str:
        return f"Pay every pending payment request that {p['name']} sent me."

    def expect(self, world: World, p: Params) -> Expectation:
        address = email_of(world, p["name"])
        paid = [(rid, cents) for rid, who, cents in _pending(world) if who == address]
        return replace(super().expect(world, p), inserts=[
            ("payments", "transfers", {"sender": world.me.email, "receiver": address, "amount_cents": cents,
                                       "request_id": rid}) for rid, cents in paid])


class PaymentsDeclineAbove(TaskTemplate, name="payments_decline_above", scenario="payments", apps=("payments",)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        amounts = sorted({c for _, _, c in _pending(world)})
        if len(amounts) < 2:
            return None
        k = int(rng.integers(0, len(amounts) - 1))
        return {"limit": amounts[k] / 100}

    def prompt(self, p: Params) -> str:
        return f"Decline every pending payment request to me that is for more than ${p['limit']:.2f}."

    def solve(self, p: Params) -> Solution:
        found = yield from every("payments_requests", role="to_me", status="pending")
        for request in found:
            if request["amount"] > p["limit"]:
                yield from call("payments_decline_request", request_id=request["request_id"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        limit = round(p["limit"] * 100)
        return Expectation(updates={("payments", "requests", rid): {"status": "declined"}
                                    for rid, _, cents in _pending(world) if cents > limit})


class PaymentsReceivedTotal(TaskTemplate, name="payments_received_total", scenario="payments",
                            apps=("contacts", "payments"), answer_kind="number"):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        since = (world.now - timedelta(days=int(rng.integers(7, 50)))).strftime("%Y-%m-%d")
        return {"name": choose(rng, contact_names(world)), "since": since}

    def prompt(self, p: Params) -> str:
        return (f"How much money in total has {p['name']} sent me since {day_text(p['since'])} (inclusive)? "
                "Answer with the amount in dollars.")

    def solve(self, p: Params) -> Solution:
        address = yield from contact_email(p["name"])
        found = yield from every("payments_transfers", direction="received", person=address, since=p["since"])
        return f"{sum(t['amount'] for t in found if t['sender'] == address):.2f}"

    def expect(self, world: World, p: Params) -> Expectation:
        cents = rows(world, "payments", "SELECT COALESCE(SUM(amount_cents), 0) FROM transfers WHERE sender = ? AND "
                     "receiver = ? AND created_at >= ?", email_of(world, p["name"]), world.me.email, p["since"])[0][0]
        return Expectation(answer=cents / 100, answer_kind="number")


class PaymentsCancelMyRequests(_PendingRequestsOf, name="payments_cancel_my_requests"):
    role, tool, status = "from_me", "payments_cancel_request", "cancelled"

    def prompt(self, p: Params) -> str:
        return f"Cancel all the payment requests I sent to {p['name']} that are still pending."

"""Task templates that need several apps at once."""

from __future__ import annotations

from datetime import timedelta

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
    rows,
)
from rollgym.envs.tools.tasks.calendar_payments import find_event, own_future_events, shift
from rollgym.envs.tools.tasks.notes_shopping import find_note, my_orders, own_notes
from rollgym.envs.tools.world import World
from rollgym.verifiers.tools import Expectation, contains, json_set

RELATIONSHIPS = ["friend", "family", "coworker", "neighbor"]


def _last_dinner(world: World) -> tuple[int, str, str] | None:
    friday = world.now - timedelta(days=(world.now.weekday() - 4) % 7 or 7)
    found = rows(world, "calendar", "SELECT id, title, start FROM events WHERE owner = ? AND title LIKE 'Dinner at %' "
                 "AND substr(start, 1, 10) = ?", world.me.email, f"{friday:%Y-%m-%d}")
    return (int(found[0][0]), str(found[0][1]), str(found[0][2])) if found else None


def _last_dinner_day(world: World) -> str | None:
    dinner = _last_dinner(world)
    return None if dinner is None else dinner[2][:10]


def _dinner_guests(world: World) -> list[str]:
    dinner = _last_dinner(world)
    assert dinner is not None
    return [r[0] for r in rows(world, "calendar", "SELECT email FROM attendees WHERE event_id = ?", dinner[0])]


def _my_dinner(day: str) -> Step:
    """Find the user's own dinner event on ``day`` (a reference-solution step)."""
    me = yield from call("whoami")
    found = yield from call("calendar_search", query="Dinner", start_after=day,
                            start_before=shift(day + " 00:00", 1440))
    return next(e for e in found["results"] if e["owner"] == me["email"])


class _AfterDinner(TaskTemplate):
    """Settle the bill of the user's dinner last Friday with the other attendees (worlds without one are skipped)."""

    scenario = "cross_app"
    apps = ("calendar", "payments")

    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        day = _last_dinner_day(world)
        return None if day is None else {"day": day, **self.draw(rng)}

    def draw(self, rng: np.random.Generator) -> Params:
        """The template's own parameters besides the day."""
        raise NotImplementedError


class PayBackDinner(_AfterDinner, name="pay_back_dinner"):
    def draw(self, rng: np.random.Generator) -> Params:
        return {"amount": float(rng.choice([12.5, 18.0, 22.75, 30.0, 35.5])),
                "note": choose(rng, ["Dinner", "Thanks for dinner", "My share of dinner"])}

    def prompt(self, p: Params) -> str:
        return (f"Everyone else who was at my dinner last Friday ({day_text(p['day'])}) paid my share. Pay each of "
                f"them back ${p['amount']:.2f} with the note '{p['note']}'.")

    def solve(self, p: Params) -> Solution:
        dinner = yield from _my_dinner(p["day"])
        for guest in dinner["attendees"]:
            yield from call("payments_send", to=guest["email"], amount=p["amount"], note=p["note"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        guests = _dinner_guests(world)
        return Expectation(inserts=[("payments", "transfers", {
            "sender": world.me.email, "receiver": g, "amount_cents": round(p["amount"] * 100), "note": p["note"]})
            for g in guests])


def _meetings_with(world: World, address: str, day: str) -> list[tuple[int, str, str]]:
    return [(int(a), str(b), str(c)) for a, b, c in rows(
        world, "calendar", "SELECT id, start, end FROM events WHERE owner = ? AND substr(start, 1, 10) = ? AND id IN "
        "(SELECT event_id FROM attendees WHERE email = ?) ORDER BY start", world.me.email, day, address)]


class RescheduleAndEmail(TaskTemplate, name="reschedule_and_email", scenario="cross_app",
                         apps=("contacts", "calendar", "email")):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        now = f"{world.now:%Y-%m-%d %H:%M}"
        options = []
        for name in contact_names(world):
            for event in rows(world, "calendar", "SELECT start FROM events WHERE owner = ? AND start >= ? AND "
                              "start < '9999' AND id IN (SELECT event_id FROM attendees WHERE email = ?)",
                              world.me.email, now, email_of(world, name)):
                day = event[0][:10]
                if day <= now[:10]:
                    continue
                meetings = _meetings_with(world, email_of(world, name), day)
                if all(m[2] <= f"{day} 17:00" for m in meetings):
                    options.append((name, day))
        choice = choose(rng, sorted(set(options)))
        return {"name": choice[0], "day": choice[1], "hours": int(rng.integers(1, 3))} if choice else None

    def prompt(self, p: Params) -> str:
        return (f"Push every meeting I have with {p['name']} on {day_text(p['day'])} {p['hours']} hour(s) later, "
                f"then email {p['name']} with the subject 'Rescheduled' listing the new start times (HH:MM).")

    def solve(self, p: Params) -> Solution:
        address = yield from contact_email(p["name"])
        me = yield from call("whoami")
        found = yield from every("calendar_search", attendee=address, start_after=p["day"],
                                 start_before=shift(p["day"] + " 00:00", 1440))
        times = []
        for event in found:
            if event["owner"] != me["email"] or all(a["email"] != address for a in event["attendees"]):
                continue
            start, end = shift(event["start"], 60 * p["hours"]), shift(event["end"], 60 * p["hours"])
            yield from call("calendar_update", event_id=event["event_id"], start=start, end=end)
            times.append(start[11:])
        yield from call("email_send", to=[address], subject="Rescheduled",
                        body="The new start times are: " + ", ".join(times) + ".")
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        address = email_of(world, p["name"])
        meetings = _meetings_with(world, address, p["day"])
        minutes = 60 * p["hours"]
        mail = {"sender": world.me.email, "recipients": json_set([address]), "subject": "Rescheduled",
                "body": contains(*[shift(start, minutes)[11:] for _, start, _ in meetings])}
        return Expectation(
            updates={("calendar", "events", eid): {"start": shift(s, minutes), "end": shift(e, minutes)}
                     for eid, s, e in meetings},
            inserts=[("email", "messages", mail)])


class ShareNoteWithAttendees(TaskTemplate, name="share_note_with_attendees", scenario="cross_app",
                             apps=("calendar", "notes")):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        events = [e for e in own_future_events(world)
                  if rows(world, "calendar", "SELECT COUNT(*) FROM attendees WHERE event_id = ?", e[0])[0][0] >= 2]
        event, note = choose(rng, events), choose(rng, [n for n in own_notes(world) if n[2] == "Work"])
        if event is None or note is None:
            return None
        return {"title": event[1], "day": event[2][:10], "note": note[1]}

    def prompt(self, p: Params) -> str:
        return (f"Share my note '{p['note']}' (read-only) with everyone invited to my '{p['title']}' on "
                f"{day_text(p['day'])}.")

    def solve(self, p: Params) -> Solution:
        event = yield from find_event(p["title"], p["day"])
        note = yield from find_note(p["note"])
        for guest in event["attendees"]:
            yield from call("notes_share", note_id=note["note_id"], email=guest["email"], can_edit=False)
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        eid = next(e[0] for e in own_future_events(world) if e[1] == p["title"] and e[2][:10] == p["day"])
        nid = next(n[0] for n in own_notes(world) if n[1] == p["note"])
        shared = {r[0] for r in rows(world, "notes", "SELECT email FROM shares WHERE note_id = ?", nid)}
        guests = [r[0] for r in rows(world, "calendar", "SELECT email FROM attendees WHERE event_id = ?", eid)]
        return Expectation(inserts=[("notes", "shares", {"note_id": nid, "email": g, "can_edit": 0})
                                    for g in guests if g not in shared])


class InviteByRelationship(TaskTemplate, name="invite_by_relationship", scenario="cross_app",
                           apps=("contacts", "calendar")):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        event = choose(rng, own_future_events(world))
        if event is None:
            return None
        return {"title": event[1], "day": event[2][:10], "relationship": choose(rng, RELATIONSHIPS)}

    def prompt(self, p: Params) -> str:
        return (f"Invite all my contacts marked as {p['relationship']} to my '{p['title']}' on {day_text(p['day'])} "
                "(skip anyone already invited).")

    def solve(self, p: Params) -> Solution:
        people = yield from every("contacts_search", relationship=p["relationship"])
        event = yield from find_event(p["title"], p["day"])
        invited = {a["email"] for a in event["attendees"]}
        for person in people:
            if person["email"] not in invited:
                yield from call("calendar_invite", event_id=event["event_id"], email=person["email"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        eid = next(e[0] for e in own_future_events(world) if e[1] == p["title"] and e[2][:10] == p["day"])
        invited = {r[0] for r in rows(world, "calendar", "SELECT email FROM attendees WHERE event_id = ?", eid)}
        people = [r[0] for r in rows(world, "contacts", "SELECT email FROM contacts WHERE owner = ? AND "
                                     "relationship = ?", world.me.email, p["relationship"])]
        return Expectation(inserts=[("calendar", "attendees", {"event_id": eid, "email": e})
                                    for e in dict.fromkeys(people) if e not in invited])


class RefundAndTellSupport(TaskTemplate, name="refund_and_tell_support", scenario="cross_app",
                           apps=("shopping", "email")):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        order = choose(rng, my_orders(world, "delivered"))
        return {"product": order[3], "day": order[1][:10]} if order else None

    def prompt(self, p: Params) -> str:
        return (f"The '{p['product']}' from my order of {day_text(p['day'])} arrived broken. Request a full refund "
                "of that order (reason: 'broken on arrival') and email support@shop.example with the subject "
                "'Broken item' mentioning the order id.")

    def solve(self, p: Params) -> Solution:
        found = yield from every("shop_orders", status="delivered")
        order = next(o for o in found if o["placed_at"][:10] == p["day"] and o["items"][0]["name"] == p["product"])
        yield from call("shop_request_refund", order_id=order["order_id"], reason="broken on arrival")
        yield from call("email_send", to=["support@shop.example"], subject="Broken item",
                        body=f"Order {order['order_id']} arrived broken; I have requested a refund.")
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        oid, _, total, _ = next(o for o in my_orders(world, "delivered") if o[3] == p["product"] and
                                o[1][:10] == p["day"])
        mail = {"sender": world.me.email, "recipients": json_set(["support@shop.example"]), "subject": "Broken item",
                "body": contains(str(oid))}
        return Expectation(inserts=[
            ("shopping", "refunds", {"order_id": oid, "amount_cents": total, "reason": contains("broken"),
                                     "status": "requested"}),
            ("email", "messages", mail)])


class RequestSplitFromAttendees(_AfterDinner, name="request_split_from_attendees"):
    def draw(self, rng: np.random.Generator) -> Params:
        return {"total": float(rng.choice([120.0, 150.0, 96.0, 210.0, 180.0]))}

    def prompt(self, p: Params) -> str:
        return (f"I paid the whole bill of ${p['total']:.2f} for my dinner last Friday ({day_text(p['day'])}). "
                "Split it evenly between me and the other attendees, and send each of them a payment request for "
                "their share (rounded to cents) with the note 'Dinner'.")

    def solve(self, p: Params) -> Solution:
        dinner = yield from _my_dinner(p["day"])
        share = round(p["total"] / (len(dinner["attendees"]) + 1), 2)
        for guest in dinner["attendees"]:
            yield from call("payments_request", from_person=guest["email"], amount=share, note="Dinner")
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        guests = _dinner_guests(world)
        cents = round(round(p["total"] / (len(guests) + 1), 2) * 100)
        return Expectation(inserts=[("payments", "requests", {
            "requester": world.me.email, "payer": g, "amount_cents": cents, "note": "Dinner", "status": "pending"})
            for g in guests])

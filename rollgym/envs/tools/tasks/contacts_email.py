"""Task templates over the contacts and email apps."""

from __future__ import annotations

import numpy as np

from rollgym.envs.tools.tasks.base import (
    Params,
    Solution,
    TaskTemplate,
    call,
    choose,
    contact_email,
    contact_names,
    email_of,
    every,
    named,
    rows,
)
from rollgym.envs.tools.world import World
from rollgym.verifiers.tools import Expectation, contains, json_set

RELATIONSHIPS = ["friend", "family", "coworker", "neighbor"]
SUBJECTS = ["Saturday plans", "Quick question", "Thanks!", "Notes from today", "Book club", "Running late"]
BODIES = ["Are we still on for Saturday at ten?", "Could you send me the slides from the meeting?",
          "Thanks again for your help with the move.", "I put the notes in the shared folder.",
          "The next book club is at my place.", "I'll be about fifteen minutes late."]


def _contact(world: World, name: str) -> tuple[int, str]:
    return rows(world, "contacts", "SELECT id, email FROM contacts WHERE owner = ? AND name = ?",
                world.me.email, name)[0]


class ContactsAdd(TaskTemplate, name="contacts_add", scenario="contacts", apps=("contacts",)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        known = set(contact_names(world))
        person = choose(rng, [p for p in world.people[1:] if p.name not in known])
        if person is None:
            return None
        return {"name": person.name, "email": person.email, "phone": person.phone,
                "relationship": choose(rng, RELATIONSHIPS)}

    def prompt(self, p: Params) -> str:
        return (f"Add {p['name']} to my contacts as a {p['relationship']}: email {p['email']}, "
                f"phone {p['phone']}.")

    def solve(self, p: Params) -> Solution:
        yield from call("contacts_create", name=p["name"], email=p["email"], phone=p["phone"],
                        relationship=p["relationship"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        row = {"owner": world.me.email, "name": p["name"], "email": p["email"], "phone": p["phone"],
               "relationship": p["relationship"]}
        return Expectation(inserts=[("contacts", "contacts", row)])


class ContactsUpdatePhone(TaskTemplate, name="contacts_update_phone", scenario="contacts", apps=("contacts",)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        phone = f"+1-555-{int(rng.integers(100, 1000))}-{int(rng.integers(1000, 10000))}"
        return {"name": choose(rng, contact_names(world)), "phone": phone}

    def prompt(self, p: Params) -> str:
        return f"{p['name']} has a new phone number, {p['phone']}. Update my contacts."

    def solve(self, p: Params) -> Solution:
        contact = yield from named("contacts_search", p["name"])
        yield from call("contacts_update", contact_id=contact["contact_id"], phone=p["phone"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        cid, _ = _contact(world, p["name"])
        return Expectation(updates={("contacts", "contacts", cid): {"phone": p["phone"]}})


class ContactsRemove(TaskTemplate, name="contacts_remove", scenario="contacts", apps=("contacts",)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        return {"name": choose(rng, contact_names(world))}

    def prompt(self, p: Params) -> str:
        return f"Remove {p['name']} from my contacts."

    def solve(self, p: Params) -> Solution:
        contact = yield from named("contacts_search", p["name"])
        yield from call("contacts_delete", contact_id=contact["contact_id"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        return Expectation(deletes={("contacts", "contacts", _contact(world, p["name"])[0])})


# versions=(0,): a small count is easy to guess; v1 asks for the items instead
class ContactsCountRelationship(TaskTemplate, name="contacts_count_relationship", scenario="contacts",
                                apps=("contacts",), answer_kind="number", versions=(0,)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        return {"relationship": choose(rng, RELATIONSHIPS)}

    def prompt(self, p: Params) -> str:
        return f"How many of my contacts are marked as {p['relationship']}? Answer with the number."

    def solve(self, p: Params) -> Solution:
        found = yield from call("contacts_search", relationship=p["relationship"], page_size=1)
        return str(found["total"])

    def expect(self, world: World, p: Params) -> Expectation:
        n = rows(world, "contacts", "SELECT COUNT(*) FROM contacts WHERE owner = ? AND relationship = ?",
                 world.me.email, p["relationship"])[0][0]
        return Expectation(answer=n, answer_kind="number")


class ContactsWithRelationship(TaskTemplate, name="contacts_with_relationship", scenario="contacts",
                               apps=("contacts",), answer_kind="list", versions=(1,)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        return {"relationship": choose(rng, RELATIONSHIPS)}

    def prompt(self, p: Params) -> str:
        return (f"Which of my contacts are marked as {p['relationship']}? Answer with their full names, "
                "separated by commas.")

    def solve(self, p: Params) -> Solution:
        found = yield from every("contacts_search", relationship=p["relationship"])
        return ", ".join(sorted({c["name"] for c in found}))

    def expect(self, world: World, p: Params) -> Expectation:
        names = rows(world, "contacts", "SELECT DISTINCT name FROM contacts WHERE owner = ? AND relationship = ? "
                     "ORDER BY name", world.me.email, p["relationship"])
        return Expectation(answer=[r[0] for r in names], answer_kind="list")


class ContactsBirthdayEmails(TaskTemplate, name="contacts_birthday_emails", scenario="contacts",
                             apps=("contacts", "email")):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        if not self._people(world):
            return None
        return {"subject": choose(rng, ["Happy birthday!", "Many happy returns",
                                                "Happy birthday from me", "Best wishes on your birthday"])}

    @staticmethod
    def _people(world: World) -> list[str]:
        return [r[0] for r in rows(world, "contacts", "SELECT email FROM contacts WHERE owner = ? AND "
                                   "substr(birthday, 6) = ?", world.me.email, f"{world.now:%m-%d}")]

    def prompt(self, p: Params) -> str:
        return (f"Send a separate email with the subject '{p['subject']}' to each of my contacts whose birthday "
                "is today. Write a short birthday wish in the body.")

    def solve(self, p: Params) -> Solution:
        me = yield from call("whoami")
        found = yield from call("contacts_birthdays", month_day=me["now"][5:10])
        for contact in found["results"]:
            yield from call("email_send", to=[contact["email"]], subject=p["subject"],
                            body=f"Happy birthday, {contact['name'].split()[0]}! Have a wonderful day.")
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        inserts = [("email", "messages", {"sender": world.me.email, "recipients": json_set([e]),
                                          "subject": p["subject"]}) for e in self._people(world)]
        return Expectation(inserts=inserts)


class EmailSend(TaskTemplate, name="email_send", scenario="email", apps=("contacts", "email")):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        k = int(rng.integers(len(SUBJECTS)))
        return {"name": choose(rng, contact_names(world)), "subject": SUBJECTS[k],
                "body": BODIES[int(rng.integers(len(BODIES)))]}

    def prompt(self, p: Params) -> str:
        return f"Email {p['name']} with the subject '{p['subject']}' and this message: {p['body']}"

    def solve(self, p: Params) -> Solution:
        address = yield from contact_email(p["name"])
        yield from call("email_send", to=[address], subject=p["subject"], body=p["body"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        row = {"sender": world.me.email, "recipients": json_set([email_of(world, p["name"])]),
               "subject": p["subject"], "body": contains(p["body"]), "cc": json_set([])}
        return Expectation(inserts=[("email", "messages", row)])


def _inbox_from(world: World, address: str, unread: bool = False) -> list[tuple[int, int, str]]:
    sql = ("SELECT b.id, m.id, m.sent_at FROM mailbox b JOIN messages m ON m.id = b.message_id WHERE b.owner = ? "
           "AND b.folder = 'inbox' AND m.sender = ?" + (" AND b.is_read = 0" if unread else "") +
           " ORDER BY m.sent_at DESC, b.id DESC")
    return [(int(a), int(b), str(c)) for a, b, c in rows(world, "email", sql, world.me.email, address)]


def _senders(world: World) -> list[str]:
    inbox = {r[0] for r in rows(world, "email", "SELECT DISTINCT m.sender FROM mailbox b JOIN messages m ON "
                                "m.id = b.message_id WHERE b.owner = ? AND b.folder = 'inbox'", world.me.email)}
    return [n for n in contact_names(world) if email_of(world, n) in inbox]


class _FromSenderTask(TaskTemplate):
    """A task on the mail that one contact sent to the user's inbox; that contact is drawn."""

    scenario = "email"
    apps = ("contacts", "email")

    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        name = choose(rng, _senders(world))
        return {"name": name} if name else None


# versions=(0,): a small count is easy to guess; v1 asks for the items instead
class EmailUnreadCount(_FromSenderTask, name="email_unread_count", answer_kind="number", versions=(0,)):
    def prompt(self, p: Params) -> str:
        return f"How many unread emails from {p['name']} are in my inbox? Answer with the number."

    def solve(self, p: Params) -> Solution:
        address = yield from contact_email(p["name"])
        found = yield from call("email_search", sender=address, unread_only=True, page_size=1)
        return str(found["total"])

    def expect(self, world: World, p: Params) -> Expectation:
        return Expectation(answer=len(_inbox_from(world, email_of(world, p["name"]), unread=True)),
                           answer_kind="number")


class EmailUnreadSubjects(_FromSenderTask, name="email_unread_subjects", answer_kind="list", versions=(1,)):
    def prompt(self, p: Params) -> str:
        return (f"What are the subjects of the unread emails from {p['name']} in my inbox? Answer with the "
                "subjects, separated by commas.")

    def solve(self, p: Params) -> Solution:
        address = yield from contact_email(p["name"])
        found = yield from every("email_search", sender=address, unread_only=True)
        return ", ".join(sorted({m["subject"] for m in found if m["sender"] == address}))

    def expect(self, world: World, p: Params) -> Expectation:
        subjects = rows(world, "email", "SELECT DISTINCT m.subject FROM mailbox b JOIN messages m ON m.id = "
                        "b.message_id WHERE b.owner = ? AND b.folder = 'inbox' AND b.is_read = 0 AND m.sender = ? "
                        "ORDER BY m.subject", world.me.email, email_of(world, p["name"]))
        return Expectation(answer=[r[0] for r in subjects], answer_kind="list")


class EmailArchiveFrom(_FromSenderTask, name="email_archive_from"):
    def prompt(self, p: Params) -> str:
        return f"Archive every email from {p['name']} that is in my inbox."

    def solve(self, p: Params) -> Solution:
        address = yield from contact_email(p["name"])
        found = yield from every("email_search", sender=address, folder="inbox")
        for mail in found:
            if mail["sender"] == address:
                yield from call("email_move", email_id=mail["email_id"], folder="archive")
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        ids = [b for b, _, _ in _inbox_from(world, email_of(world, p["name"]))]
        return Expectation(updates={("email", "mailbox", i): {"folder": "archive"} for i in ids})


class EmailReplyLatest(TaskTemplate, name="email_reply_latest", scenario="email", apps=("contacts", "email")):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        name = choose(rng, _senders(world))
        return {"name": name, "text": choose(rng, BODIES)} if name else None

    def prompt(self, p: Params) -> str:
        return f"Reply to the most recent email from {p['name']} in my inbox with: {p['text']}"

    def solve(self, p: Params) -> Solution:
        address = yield from contact_email(p["name"])
        found = yield from call("email_search", sender=address, folder="inbox", page_size=1)
        yield from call("email_reply", email_id=found["results"][0]["email_id"], body=p["text"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        address = email_of(world, p["name"])
        _, message_id, _ = _inbox_from(world, address)[0]
        row = {"sender": world.me.email, "recipients": json_set([address]), "reply_to": message_id,
               "body": contains(p["text"])}
        return Expectation(inserts=[("email", "messages", row)])


class EmailTrashNewsletter(TaskTemplate, name="email_trash_newsletter", scenario="email", apps=("email",)):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        senders = [r[0] for r in rows(world, "email", "SELECT DISTINCT m.sender FROM mailbox b JOIN messages m ON "
                                      "m.id = b.message_id WHERE b.owner = ? AND b.folder = 'inbox' AND m.sender "
                                      "NOT LIKE '%@example.com' ORDER BY m.sender", world.me.email)]
        return {"sender": choose(rng, senders)} if senders else None

    def prompt(self, p: Params) -> str:
        return f"Delete every email from {p['sender']} in my inbox."

    def solve(self, p: Params) -> Solution:
        found = yield from every("email_search", sender=p["sender"], folder="inbox")
        for mail in found:
            if mail["sender"] == p["sender"]:
                yield from call("email_delete", email_id=mail["email_id"])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        return Expectation(updates={("email", "mailbox", b): {"folder": "trash"}
                                    for b, _, _ in _inbox_from(world, p["sender"])})


class EmailForward(TaskTemplate, name="email_forward", scenario="email", apps=("contacts", "email")):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        sender = choose(rng, _senders(world))
        if sender is None:
            return None
        latest = _inbox_from(world, email_of(world, sender))[0]
        subject = rows(world, "email", "SELECT subject FROM messages WHERE id = ?", latest[1])[0][0]
        target = choose(rng, [n for n in contact_names(world) if n != sender])
        return {"sender": sender, "subject": subject, "to": target}

    def prompt(self, p: Params) -> str:
        return (f"Forward the most recent email from {p['sender']} with the subject '{p['subject']}' "
                f"to {p['to']}.")

    def solve(self, p: Params) -> Solution:
        address = yield from contact_email(p["sender"])
        target = yield from contact_email(p["to"])
        found = yield from every("email_search", sender=address, folder=None)
        mail = next(m for m in found if m["subject"] == p["subject"] and m["sender"] == address)
        yield from call("email_forward", email_id=mail["email_id"], to=[target])
        return None

    def expect(self, world: World, p: Params) -> Expectation:
        address = email_of(world, p["sender"])
        found = rows(world, "email", "SELECT m.body FROM mailbox b JOIN messages m ON m.id = b.message_id WHERE "
                     "b.owner = ? AND m.sender = ? AND m.subject = ? ORDER BY m.sent_at DESC, b.id DESC",
                     world.me.email, address, p["subject"])
        row = {"sender": world.me.email, "recipients": json_set([email_of(world, p["to"])]),
               "subject": contains(p["subject"]), "body": contains(found[0][0])}
        return Expectation(inserts=[("email", "messages", row)])


class ContactsBirthdaysToday(TaskTemplate, name="contacts_birthdays_today", scenario="contacts", apps=("contacts",),
                             answer_kind="list"):
    def sample(self, world: World, rng: np.random.Generator) -> Params | None:
        if not ContactsBirthdayEmails._people(world):
            return None
        return {"question": choose(rng, ["Whose birthday is it today among my contacts?",
                                         "Which of my contacts have their birthday today?",
                                         "Do any of my contacts celebrate a birthday today? Who?"])}

    def prompt(self, p: Params) -> str:
        return f"{p['question']} Answer with their full names, separated by commas."

    def solve(self, p: Params) -> Solution:
        me = yield from call("whoami")
        found = yield from call("contacts_birthdays", month_day=me["now"][5:10])
        return ", ".join(c["name"] for c in found["results"])

    def expect(self, world: World, p: Params) -> Expectation:
        names = [r[0] for r in rows(world, "contacts", "SELECT name FROM contacts WHERE owner = ? AND "
                                    "substr(birthday, 6) = ? ORDER BY name", world.me.email, f"{world.now:%m-%d}")]
        return Expectation(answer=names, answer_kind="list")

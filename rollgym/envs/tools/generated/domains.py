"""The vocabulary the app generator draws from: 32 business domains, each a party, a catalogue and a record type.

A :class:`Domain` names the three roles every generated app is built around and
the words of its workflow:

* the **party** (a member, patient, guest...): a person from the shared people pool;
* the **item** (a book, treatment, room type...): a catalogue entry, with a category
  and numbers, one of which may be a counter that the workflow draws down;
* the **record** (a loan, appointment, booking...): links a party to an item, carries
  an amount, a date, a note, a category, a precondition flag and a status that moves
  ``initial -> active -> done`` or to ``cancelled`` through three domain actions.

:mod:`rollgym.envs.tools.generated.schema` turns a domain and a variant number into
one concrete schema (which fields, constraints, actions and preconditions are in).
Nothing here is random; the words are data: one record of compact strings per domain in
``domains.json``, read into :data:`DOMAINS` at import and pinned by :data:`DATA_SHA256`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

Number = tuple[str, str, int, int]
"""``(field, kind, low, high)`` with kind ``"int"`` or ``"money"`` (whole dollars for the bounds)."""


@dataclass(frozen=True)
class Domain:
    """One business domain's words. See the module docstring for the roles."""

    key: str
    noun: str
    party: tuple[str, str]
    item: tuple[str, str, str]
    item_names: tuple[str, ...]
    category: tuple[str, tuple[str, ...]]
    item_numbers: tuple[Number, ...]
    counter: str | None
    record: tuple[str, str, str]
    statuses: tuple[str, str, str, str]
    verbs: tuple[str, str, str]
    flag: str
    quantity: str
    record_numbers: tuple[Number, ...]
    date: str
    text: str
    kind: tuple[str, tuple[str, ...]]


def _d(key: str, noun: str, party: str, item: str, names: str, category: str, item_numbers: str,
       counter: str | None, record: str, statuses: str, verbs: str, flag: str, quantity: str, record_numbers: str,
       date: str, text: str, kind: str) -> Domain:
    """A domain from compact strings: ``"a/b"`` pairs, ``"name: v1, v2"`` enums, ``"f int 1 9; g money 5 60"``."""

    def pair(text: str) -> tuple[str, str]:
        a, b = text.split("/")
        return a, b

    def enum(text: str) -> tuple[str, tuple[str, ...]]:
        name, values = text.split(":")
        return name.strip(), tuple(v.strip() for v in values.split(","))

    def numbers(text: str) -> tuple[Number, ...]:
        out = []
        for part in text.split(";"):
            name, kind, low, high = part.split()
            out.append((name, kind, int(low), int(high)))
        return tuple(out)

    item_single, item_plural, label = item.split("/")
    record_single, record_plural, prefix = record.split("/")
    s = tuple(x.strip() for x in statuses.split(","))
    v = tuple(x.strip() for x in verbs.split(","))
    return Domain(key, noun, pair(party), (item_single, item_plural, label),
                  tuple(n.strip() for n in names.split(",")), enum(category), numbers(item_numbers), counter,
                  (record_single, record_plural, prefix), (s[0], s[1], s[2], s[3]), (v[0], v[1], v[2]), flag,
                  quantity, numbers(record_numbers), date, text, enum(kind))


DATA_SHA256 = "a91de75ab8b62fab15b33b87e7bb04fd2d9a637fbdadec2341c961fd65ad814d"
"""The SHA-256 of ``domains.json``: the spec hash covers code, so the data is pinned here (a change to the
file must change this line, which moves the spec hash of every ToolGen id)."""


def _load() -> tuple[Domain, ...]:
    """The domains of ``domains.json`` (one record of compact strings per domain, in order), checked against
    :data:`DATA_SHA256`."""
    raw = (Path(__file__).parent / "domains.json").read_bytes()
    if hashlib.sha256(raw).hexdigest() != DATA_SHA256:
        raise RuntimeError("rollgym/envs/tools/generated/domains.json does not match DATA_SHA256 in domains.py; "
                           "a changed vocabulary changes ToolGen's apps, so it needs a new env version.")
    return tuple(_d(**record) for record in json.loads(raw.decode("utf-8")))


DOMAINS: tuple[Domain, ...] = _load()
"""Every domain, in a fixed order (the order is part of the app pool: append new domains at the end)."""

BRANDS = ("Maple", "Harbor", "Cedar", "Summit", "Riverside", "Oak", "Bluebird", "Northwind", "Granite", "Willow",
          "Lantern", "Copper", "Meadow", "Beacon", "Juniper", "Aurora")
"""Name prefixes of generated apps ("Maple Library"); each domain's variants take distinct ones."""

CITIES = ("Porto", "Leeds", "Riga", "Lyon", "Malmo", "Ghent", "Turin", "Cork", "Graz", "Utrecht")
TIERS = ("basic", "silver", "gold", "platinum")
METHODS = ("card", "cash", "transfer", "cheque")
AUTHORS = ("front_desk", "manager", "technician", "accounts")
PHRASES = ("call before arriving", "prefers mornings", "needs a receipt", "bring the blue folder",
           "ask for the side entrance", "allergic to nuts", "pay on collection", "second visit this year",
           "wheelchair access", "quiet corner please", "leave with the neighbour", "urgent", "gift for a friend",
           "repeat of last order", "use the loading bay", "text when ready")
"""Note fragments; a note is two of them and a number, so that a note is rarely guessable."""

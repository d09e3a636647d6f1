"""Seeded domains: a generated site's identity (:class:`SiteSpec`) and its content, written into SQLite.

A site key names a kind and a seed, ``gen-<kind>-<NN>`` for training sites and
``gen-<kind>-h<N>`` for held-out ones. Everything else follows from the key with a
private :class:`random.Random` seeded by a stable hash of it: the theme (a held-out
theme for held-out sites), the site's name and accent colour, its categories, users,
items, records and favourites. Held-out sites draw names from the held-out
vocabulary (:mod:`.words`) and categories from the held-out share of each kind's
category list, so no row of a held-out site appears on a training site.

Every table has a row id. Money is stored in cents, dates as ISO text.

Example:
    >>> spec = site_spec("gen-shop-03")
    >>> spec.kind.key, spec.vocabulary, spec.theme.key in TRAIN_THEMES
    ('shop', 'train', True)
    >>> conn = build_database(spec)
    >>> conn.execute("SELECT COUNT(*) FROM items").fetchone()[0] > 30
    True
"""

from __future__ import annotations

import hashlib
import random
import re
import sqlite3
from dataclasses import dataclass
from datetime import date, timedelta
from functools import cache
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.envs.web.gen.kinds import KINDS, FieldSpec, Kind
from rollgym.envs.web.gen.themes import HELDOUT_THEMES, THEMES, TRAIN_THEMES, Theme
from rollgym.envs.web.gen.words import FIRST_NAMES, Vocabulary, proper_words
from rollgym.envs.web.sites.base import password_hash

TODAY = date(2026, 3, 1)
"""The sites' frozen clock: every date is relative to it."""
TRAIN_SEEDS = 12
"""Training sites per kind (``gen-<kind>-00`` to ``-11``)."""
HELDOUT_SEEDS = 3
"""Held-out sites per kind (``gen-<kind>-h0`` to ``-h2``)."""
HELDOUT_CATEGORIES = 4
"""Of each kind's fixed category names, this many (chosen by hash) appear only on held-out sites."""

_KEY_RE = re.compile(r"gen-([a-z]+)-(h?)([0-9]{1,2})\Z")
_ACCENTS = ("#2563eb", "#d9480f", "#0b7285", "#5f3dc4", "#2b8a3e", "#c2255c", "#1864ab", "#e67700", "#087f5b",
            "#862e9c", "#495057", "#a61e4d")
_PHRASES = ("I tried this last week and it worked", "Does anyone have a better idea", "Thanks, this saved me hours",
            "The second option is easier", "I would check the details first", "Happy to help if you are stuck",
            "This needs a clearer description", "Worked for me after a restart", "Great write-up, bookmarked",
            "Not sure this is still accurate")


def _rng(*parts: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256("\x00".join(parts).encode()).digest()[:8], "big"))


def slug(text: str) -> str:
    """A URL slug: lower case, runs of other characters become ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@dataclass(frozen=True)
class SiteSpec:
    """A generated site's identity: its key, kind, seed, vocabulary, theme, name and colours."""

    key: str
    kind: Kind
    heldout: bool
    index: int
    theme: Theme
    name: str
    accent: str

    @property
    def vocabulary(self) -> Vocabulary:
        """The proper-word vocabulary the site draws from."""
        return "heldout" if self.heldout else "train"


def site_keys(kind: str, heldout: bool) -> list[str]:
    """The keys of one kind's training (or held-out) sites."""
    if heldout:
        return [f"gen-{kind}-h{i}" for i in range(HELDOUT_SEEDS)]
    return [f"gen-{kind}-{i:02d}" for i in range(TRAIN_SEEDS)]


@cache
def site_spec(key: str) -> SiteSpec:
    """The spec of a site key (deterministic).

    Raises:
        ConfigError: for a key that names no generated site.
    """
    m = _KEY_RE.fullmatch(key)
    kind = KINDS.get(m[1]) if m else None
    if m is None or kind is None or int(m[3]) >= (HELDOUT_SEEDS if m[2] else TRAIN_SEEDS):
        raise ConfigError(f"{key!r} is not a generated site; keys look like gen-shop-03 (training) or gen-wiki-h1 "
                          "(held out); `rollgym list --stats` counts them.")
    heldout = bool(m[2])
    rng = _rng("site", key)
    themes = HELDOUT_THEMES if heldout else TRAIN_THEMES
    index = int(m[3])
    # consecutive seeds of a kind walk through the themes, so a kind wears every theme
    theme = THEMES[themes[(index + sorted(KINDS).index(kind.key)) % len(themes)]]
    words = proper_words("heldout" if heldout else "train")
    name = f"{words[rng.randrange(len(words))]} {rng.choice(kind.site_words)}"
    return SiteSpec(key, kind, heldout, index, theme, name, _ACCENTS[rng.randrange(len(_ACCENTS))])


def heldout_categories(kind: Kind) -> frozenset[str]:
    """The fixed category names of ``kind`` that only held-out sites use."""
    fixed = [c for c in kind.categories if "{P}" not in c]
    ranked = sorted(fixed, key=lambda c: hashlib.blake2b(f"{kind.key}/{c}".encode(), digest_size=8).digest())
    return frozenset(ranked[:HELDOUT_CATEGORIES])


def schema(kind: Kind) -> str:
    """The ``CREATE TABLE`` script of a kind's database."""
    types = {"money": "INTEGER", "int": "INTEGER", "rating": "REAL", "enum": "TEXT", "date": "TEXT", "text": "TEXT"}
    item_cols = "".join(f", {f.key} {types[f.type]} NOT NULL" for f in kind.fields)
    record_cols = "".join(f", {f.key} {types[f.type]} NOT NULL" for f in kind.record.fields)
    return f"""
CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT UNIQUE NOT NULL, password_hash TEXT NOT NULL,
                    full_name TEXT NOT NULL, email TEXT NOT NULL, role TEXT NOT NULL);
CREATE TABLE categories (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, slug TEXT UNIQUE NOT NULL);
CREATE TABLE items (id INTEGER PRIMARY KEY, code TEXT UNIQUE NOT NULL, name TEXT UNIQUE NOT NULL,
                    category_id INTEGER NOT NULL, archived INTEGER NOT NULL DEFAULT 0{item_cols});
CREATE TABLE records (id INTEGER PRIMARY KEY, ref TEXT UNIQUE NOT NULL, user_id INTEGER NOT NULL,
                      item_id INTEGER NOT NULL, status TEXT NOT NULL, created TEXT NOT NULL,
                      total INTEGER{record_cols});
CREATE TABLE favorites (user_id INTEGER NOT NULL, item_id INTEGER NOT NULL, PRIMARY KEY (user_id, item_id));
"""


class _Content:
    """Draws one site's content with the site's private RNG."""

    def __init__(self, spec: SiteSpec) -> None:
        self.spec = spec
        self.kind = spec.kind
        self.rng = _rng("content", spec.key)
        self.words = list(proper_words(spec.vocabulary))
        self.used: set[str] = set()

    def proper(self) -> str:
        while True:
            word = self.words[self.rng.randrange(len(self.words))]
            if word not in self.used:
                self.used.add(word)
                return word

    def person(self) -> tuple[str, str]:
        first = self.rng.choice(FIRST_NAMES)
        return first, self.proper()

    def categories(self) -> list[tuple[str, tuple[str, ...]]]:
        held = heldout_categories(self.kind)
        names = [c for c in self.kind.categories if ("{P}" in c) or ((c in held) == self.spec.heldout)]
        count = min(len(names), self.rng.randint(4, 6) if not self.spec.heldout else 4)
        chosen = self.rng.sample(names, count)
        return [(c.replace("{P}", self.proper()), self.kind.categories[c]) for c in chosen]

    def value(self, f: FieldSpec, pools: dict[str, list[str]]) -> Any:
        rng = self.rng
        if f.type == "money":
            if f.hi > 1000:  # salaries and rents: whole dollars
                return rng.randint(f.lo, f.hi) * 100
            return rng.randint(f.lo, f.hi - 1) * 100 + rng.choice([0, 25, 49, 50, 75, 95, 99])
        if f.type == "int":
            return rng.randint(f.lo, f.hi)
        if f.type == "rating":
            return round(rng.uniform(1.0, 5.0), 1)
        if f.type == "date":
            return (TODAY + timedelta(days=rng.randint(f.lo, f.hi))).isoformat()
        if f.type == "enum":
            return rng.choice(pools[f.key])
        return ""


def _enum_pools(content: _Content) -> dict[str, list[str]]:
    pools: dict[str, list[str]] = {}
    for f in content.kind.fields:
        if f.type != "enum":
            continue
        if f.choices == ("{P}",):
            pools[f.key] = sorted(content.proper() for _ in range(5))
        elif f.choices == ("{PERSON}",):
            pools[f.key] = sorted(" ".join(content.person()) for _ in range(6))
        else:
            pools[f.key] = list(f.choices)
    return pools


def _item_name(content: _Content, pattern: str, noun: str) -> str:
    adjective = content.rng.choice(content.kind.adjectives) if content.kind.adjectives else ""
    text = pattern.replace("{A}", adjective).replace("{N}", noun).replace("{F}", content.rng.choice(FIRST_NAMES))
    text = text.replace("{P}", content.proper())
    return " ".join(text.split())


def summary_text(kind: Kind, name: str, rng: random.Random) -> str:
    """A one-sentence summary of an item (thread opening posts, article summaries, ...)."""
    starts = {"forum": f"Has anyone dealt with this before? {name} has me stuck.",
              "wiki": f"{name} is described in this article, with its history and current state."}
    return starts.get(kind.key, f"{name}: details and notes.") + " " + rng.choice(_PHRASES) + "."


def build_database(spec: SiteSpec) -> sqlite3.Connection:
    """A new in-memory database with the site's schema and content."""
    kind = spec.kind
    content = _Content(spec)
    rng = content.rng
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.executescript(schema(kind))
    member, editor = kind.roles
    n_users = rng.randint(14, 20)
    for uid in range(1, n_users + 1):
        first, surname = content.person()
        username = f"{first.lower()}.{surname.lower()}"
        role = editor if uid % 5 == 2 else member
        conn.execute("INSERT INTO users VALUES (?, ?, ?, ?, ?, ?)",
                     (uid, username, password_hash(username + "123"), f"{first} {surname}",
                      f"{first.lower()}@{surname.lower()}.example", role))
    pools = _enum_pools(content)
    codes: set[int] = set()
    names: set[str] = set()
    item_id = 0
    for cid, (cat_name, nouns) in enumerate(content.categories(), 1):
        conn.execute("INSERT INTO categories VALUES (?, ?, ?)", (cid, cat_name, slug(cat_name)))
        for _ in range(rng.randint(9, 15)):
            name = ""
            while not name or name in names:
                name = _item_name(content, rng.choice(kind.name_patterns), rng.choice(nouns))
            names.add(name)
            code = rng.randint(10000, 99999)
            while code in codes:
                code = rng.randint(10000, 99999)
            codes.add(code)
            item_id += 1
            values = [summary_text(kind, name, rng) if f.type == "text" else content.value(f, pools)
                      for f in kind.fields]
            cols = ", ".join(["id", "code", "name", "category_id", "archived", *(f.key for f in kind.fields)])
            marks = ", ".join("?" * (5 + len(values)))
            conn.execute(f"INSERT INTO items ({cols}) VALUES ({marks})",
                         (item_id, f"{kind.code_prefix}-{code}", name, cid, 0, *values))
    _records(conn, content, n_users, item_id)
    conn.commit()
    return conn


def _records(conn: sqlite3.Connection, content: _Content, n_users: int, n_items: int) -> None:
    kind, rng = content.kind, content.rng
    spec = kind.record
    refs: set[int] = set()
    rid = 0
    price_col = spec.total[0] if spec.total else None
    for uid in range(1, n_users + 1):
        items = rng.sample(range(1, n_items + 1), rng.randint(3, 6))
        for k, iid in enumerate(items):
            rid += 1
            ref = rng.randint(100000, 999999)
            while ref in refs:
                ref = rng.randint(100000, 999999)
            refs.add(ref)
            status = spec.initial if k < 2 or rng.random() < 0.5 else rng.choice([spec.cancelled, *spec.history])
            created = (TODAY - timedelta(days=rng.randint(1, 240))).isoformat()
            values: list[Any] = []
            for f in spec.fields:
                if f.type == "text":
                    values.append(rng.choice(_PHRASES) + f" (#{rid})")
                elif f.type == "date":
                    values.append((TODAY + timedelta(days=rng.randint(f.lo, f.hi))).isoformat())
                else:
                    values.append(rng.randint(f.lo, f.hi))
            total = None
            if price_col is not None:
                price = conn.execute(f"SELECT {price_col} FROM items WHERE id = ?", (iid,)).fetchone()[0]
                factor = dict(zip((f.key for f in spec.fields), values)).get(spec.total[1], 1) if spec.total else 1
                total = price * int(factor)
            cols = ", ".join(["id", "ref", "user_id", "item_id", "status", "created", "total",
                              *(f.key for f in spec.fields)])
            marks = ", ".join("?" * (7 + len(values)))
            conn.execute(f"INSERT INTO records ({cols}) VALUES ({marks})",
                         (rid, f"{kind.code_prefix[:2]}{ref}", uid, iid, status, created, total, *values))
        for iid in rng.sample(range(1, n_items + 1), rng.randint(1, 4)):
            conn.execute("INSERT INTO favorites VALUES (?, ?)", (uid, iid))


# -- content hashes ----------------------------------------------------------------------------------------------


def content_units(conn: sqlite3.Connection, kind: str) -> set[str]:
    """Every piece of a site's content as text, with references spelled out by name.

    Users (name, username, email), categories (with the site's kind: a wiki's "History" portal is not a
    library's "History" genre), items (every column but the row id), records and favourites (with the user's
    and the item's names in place of their ids): what "the same content" means for the held-out check.
    """
    units: set[str] = set()
    users = {r["id"]: r["username"] for r in conn.execute("SELECT * FROM users")}
    items = {r["id"]: r["name"] for r in conn.execute("SELECT * FROM items")}
    cats = {r["id"]: r["name"] for r in conn.execute("SELECT * FROM categories")}
    for r in conn.execute("SELECT * FROM users"):
        units.add(f"user|{r['username']}|{r['full_name']}|{r['email']}")
    for name in cats.values():
        units.add(f"category|{kind}|{name}")
    for r in conn.execute("SELECT * FROM items"):
        row = dict(r)
        row.pop("id")
        row["category_id"] = cats[row["category_id"]]
        units.add("item|" + "|".join(f"{k}={v}" for k, v in sorted(row.items())))
    for r in conn.execute("SELECT * FROM records"):
        row = dict(r)
        row.pop("id")
        row["user_id"], row["item_id"] = users[row["user_id"]], items[row["item_id"]]
        units.add("record|" + "|".join(f"{k}={v}" for k, v in sorted(row.items())))
    for r in conn.execute("SELECT * FROM favorites"):
        units.add(f"favorite|{users[r['user_id']]}|{items[r['item_id']]}")
    return units


def unit_hashes(conn: sqlite3.Connection, kind: str) -> set[str]:
    """SHA-256 of every :func:`content_units` entry."""
    return {hashlib.sha256(u.encode()).hexdigest() for u in content_units(conn, kind)}


def site_content_hash(spec: SiteSpec, conn: sqlite3.Connection) -> str:
    """One hash of a whole site: its name, theme and every content unit."""
    h = hashlib.sha256(f"{spec.name}|{spec.theme.key}".encode())
    for digest in sorted(unit_hashes(conn, spec.kind.key)):
        h.update(digest.encode())
    return h.hexdigest()


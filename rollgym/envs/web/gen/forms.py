"""The write side of a generated site: sign-in, account, records, favourites, and editors' changes.

Every handler validates what it reads before it writes (numbers as ASCII digits in
range, money as ``25`` or ``19.99``, dates as ISO days within bounds, text of bounded
length without control characters, enum values from the site's own list) and
answers a 400 page otherwise; :meth:`Site.handle` rolls back whatever a failing
handler wrote. Rows are only ever changed as the signed-in user: their own records,
favourites and account, and items when their role is the kind's editor role.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import date, timedelta
from typing import Any

from rollgym.envs.web.gen.domain import TODAY, SiteSpec
from rollgym.envs.web.gen.kinds import FieldSpec, Kind
from rollgym.envs.web.gen.themes import Theme
from rollgym.envs.web.sites.base import HttpError, Request, Response, Site, redirect, row_id, whole_number

MAX_TEXT = 500
MAX_NAME = 80
_MONEY = re.compile(r"\$?([0-9]{1,3}(?:,[0-9]{3}){1,2}|[0-9]{1,7})(?:\.([0-9]{1,2}))?", re.ASCII)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,100}\.[A-Za-z]{2,12}", re.ASCII)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(raw: str, what: str, limit: int = MAX_TEXT) -> str:
    """Stripped text of 1 to ``limit`` characters without control characters, else a 400."""
    text = raw.strip()
    if not text or len(text) > limit or _CONTROL.search(text):
        raise HttpError(400, f"{what} must be 1 to {limit} characters of plain text.")
    return text


def parse_field(site: FormHandlers, conn: sqlite3.Connection, f: FieldSpec, raw: str, *, record: bool) -> Any:
    """A submitted value of field ``f`` as it is stored (cents, ISO dates, ...), or a 400 saying what is wrong.

    Record fields keep to the field's own range (a stay of 1 to 7 nights); editors may set item numbers up to ten
    times the generated range.
    """
    text = raw.strip()
    if f.type == "money":
        m = _MONEY.fullmatch(text)
        if m is None or int(m[1].replace(",", "")) > f.hi * 10:
            raise HttpError(400, f"{f.label} must be an amount of dollars such as 25 or 19.99, at most {f.hi * 10}.")
        return int(m[1].replace(",", "")) * 100 + int((m[2] or "0").ljust(2, "0"))
    if f.type == "int":
        low, high = (f.lo, f.hi) if record else (0, max(f.hi * 10, 100))
        return whole_number(text, low=low, high=high, message=f"{f.label} must be a whole number from {low} to {high}.")
    if f.type == "date":
        span = (TODAY, TODAY + timedelta(days=365)) if record else (TODAY - timedelta(days=3650),
                                                                     TODAY + timedelta(days=3650))
        try:
            day = date.fromisoformat(text) if _DATE.fullmatch(text) else None
        except ValueError:
            day = None
        if day is None or not span[0] <= day <= span[1]:
            raise HttpError(400, f"{f.label} must be a date written YYYY-MM-DD between {span[0]} and {span[1]}.")
        return day.isoformat()
    if f.type == "enum":
        values = site.enum_values(conn, f.key)
        if text not in values:
            raise HttpError(400, f"{f.label} must be one of: {', '.join(values)}.")
        return text
    return clean_text(raw, f.label)


class FormHandlers(Site):
    """The write side of :class:`~rollgym.envs.web.gen.site.GeneratedSite`: its POST handlers.

    The read side (paths, labels, rows, pages) is the subclass's; the methods below that raise
    :class:`NotImplementedError` are those it provides.
    """

    spec: SiteSpec
    kind: Kind
    theme: Theme
    words: dict[str, str]

    def path(self, name: str, id: int | str = "") -> str:
        """A URL path of the site."""
        raise NotImplementedError

    def label(self, name: str) -> str:
        """A theme label with the kind's words."""
        raise NotImplementedError

    def item_row(self, conn: sqlite3.Connection, raw: str | int) -> sqlite3.Row:
        """An item row, or a 404."""
        raise NotImplementedError

    def enum_values(self, conn: sqlite3.Connection, key: str) -> list[str]:
        """The values an enum field takes."""
        raise NotImplementedError

    def login_form(self, conn: sqlite3.Connection, request: Request, match: re.Match[str], error: str = "") -> Response:
        """The sign-in page."""
        raise NotImplementedError

    # -- accounts -------------------------------------------------------------------------------------------------
    def login_submit(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        return self.sign_in(conn, request) or self.login_form(conn, request, match, error="Wrong username or password.")

    def account_save(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        user = self.require_user(request)
        name = clean_text(request.form.get("full_name", ""), self.label("full_name"), MAX_NAME)
        email = request.form.get("email", "").strip()
        if not _EMAIL.fullmatch(email):
            raise HttpError(400, "Enter an email address such as name@example.com.")
        conn.execute("UPDATE users SET full_name = ?, email = ? WHERE id = ?", (name, email, user["id"]))
        return redirect(self.path("account"), flash="Your account details were saved.")

    # -- records --------------------------------------------------------------------------------------------------
    def own_record(self, conn: sqlite3.Connection, request: Request, raw: str) -> sqlite3.Row:
        """One of the signed-in user's records (a 404 for anyone else's)."""
        user = self.require_user(request)
        return self.one_row(conn, "SELECT r.*, i.name FROM records r JOIN items i ON i.id = r.item_id "
                            "WHERE r.id = ? AND r.user_id = ?", (row_id(raw, self.words["record"]), user["id"]),
                            missing=f"We could not find that {self.words['record']} among yours.")

    def _amount(self, values: dict[str, Any]) -> int:
        """How much of the item's consumed field a record takes."""
        consumes = self.kind.record.consumes
        return 0 if consumes is None else int(values[consumes[1]]) if consumes[1] else 1

    def _take(self, conn: sqlite3.Connection, item: sqlite3.Row, amount: int) -> None:
        consumes = self.kind.record.consumes
        if consumes is None or amount == 0:
            return
        have = int(item[consumes[0]])
        if amount > have:
            raise HttpError(400, f"Only {have} left of this {self.words['singular']}.")
        conn.execute(f"UPDATE items SET {consumes[0]} = {consumes[0]} - ? WHERE id = ?", (amount, item["id"]))

    def _total(self, item: sqlite3.Row, values: dict[str, Any]) -> int | None:
        total = self.kind.record.total
        if total is None:
            return None
        return int(item[total[0]]) * (int(values[total[1]]) if total[1] else 1)

    def do_create(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        item = self.item_row(conn, match[1])
        if request.user is None:
            return self.must_sign_in(request, f"Please sign in to {self.kind.record.verb.lower()}.")
        if item["archived"]:
            raise HttpError(400, f"This {self.words['singular']} is archived.")
        spec = self.kind.record
        values = {f.key: parse_field(self, conn, f, request.form.get(f.key, ""), record=True) for f in spec.fields}
        self._take(conn, item, self._amount(values))
        rid = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM records").fetchone()[0]
        cols = ["id", "ref", "user_id", "item_id", "status", "created", "total", *values]
        conn.execute(f"INSERT INTO records ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                     (rid, f"{self.kind.code_prefix[:2]}-N{rid}", request.user["id"], item["id"], spec.initial,
                      TODAY.isoformat(), self._total(item, values), *values.values()))
        return redirect(self.path("record", rid), flash=f"Done: your {self.words['record']} was made.")

    def do_cancel(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        rec = self.own_record(conn, request, match[1])
        spec = self.kind.record
        if rec["status"] != spec.initial:
            raise HttpError(400, f"This {self.words['record']} is {rec['status']} and cannot be changed.")
        conn.execute("UPDATE records SET status = ? WHERE id = ?", (spec.cancelled, rec["id"]))
        amount = self._amount(dict(rec))
        if spec.consumes and amount:
            conn.execute(f"UPDATE items SET {spec.consumes[0]} = {spec.consumes[0]} + ? WHERE id = ?",
                         (amount, rec["item_id"]))
        return redirect(self.path("record", rec["id"]), flash=f"Your {self.words['record']} is now {spec.cancelled}.")

    def do_update(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        rec = self.own_record(conn, request, match[1])
        spec = self.kind.record
        if spec.update is None or rec["status"] != spec.initial:
            raise HttpError(400, f"This {self.words['record']} cannot be changed.")
        f = self.kind.record_field(spec.update)
        value = parse_field(self, conn, f, request.form.get(f.key, ""), record=True)
        values = {**dict(rec), f.key: value}
        item = self.item_row(conn, rec["item_id"])
        if spec.consumes and spec.consumes[1] == f.key:
            delta = int(value) - int(rec[f.key])
            if delta > 0:
                self._take(conn, item, delta)
            elif delta < 0:
                conn.execute(f"UPDATE items SET {spec.consumes[0]} = {spec.consumes[0]} + ? WHERE id = ?",
                             (-delta, item["id"]))
        conn.execute(f"UPDATE records SET {f.key} = ?, total = ? WHERE id = ?",
                     (value, self._total(item, values), rec["id"]))
        return redirect(self.path("record", rec["id"]), flash=f"Your {self.words['record']} was updated.")

    # -- favourites ------------------------------------------------------------------------------------------------
    def do_save(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        item = self.item_row(conn, match[1])
        user = self.require_user(request)
        conn.execute("INSERT OR IGNORE INTO favorites VALUES (?, ?)", (user["id"], item["id"]))
        return redirect(self.path("item", item["id"]), flash=f"Added to your {self.kind.favorites[0]}.")

    def do_unsave(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        item = self.item_row(conn, match[1])
        user = self.require_user(request)
        conn.execute("DELETE FROM favorites WHERE user_id = ? AND item_id = ?", (user["id"], item["id"]))
        return redirect(self.path("saved"), flash=f"Removed from your {self.kind.favorites[0]}.")

    # -- editors --------------------------------------------------------------------------------------------------
    def require_editor(self, request: Request, what: str) -> None:
        """A 403 unless the signed-in user has the kind's editor role and editors may do ``what``."""
        user = self.require_user(request)
        if user["role"] != self.kind.roles[1] or what not in self.kind.editor_can:
            raise HttpError(403, f"Only {self.kind.roles[1]}s can do that.")

    def can_create(self, user: sqlite3.Row) -> bool:
        """Whether ``user`` may add items (members of some kinds may, elsewhere editors)."""
        return self.kind.members_create or (user["role"] == self.kind.roles[1] and "create" in self.kind.editor_can)

    def require_creator(self, request: Request) -> None:
        """A 403 unless the signed-in user may add items."""
        if not self.can_create(self.require_user(request)):
            raise HttpError(403, f"Only {self.kind.roles[1]}s can add {self.words['plural']}.")

    def creatable_fields(self) -> list[FieldSpec]:
        """The item fields the new-item form asks for; the others start at a default."""
        return [f for f in self.kind.fields if f.editable or f.create or f.type in {"money", "enum", "text"}]

    def do_edit(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        item = self.item_row(conn, match[1])
        self.require_editor(request, "edit")
        if item["archived"]:
            raise HttpError(400, f"This {self.words['singular']} is archived.")
        changes = {f.key: parse_field(self, conn, f, request.form[f.key], record=False)
                   for f in self.kind.fields if f.editable and f.key in request.form}
        if not changes:
            raise HttpError(400, "Nothing to change.")
        sets = ", ".join(f"{k} = ?" for k in changes)
        conn.execute(f"UPDATE items SET {sets} WHERE id = ?", (*changes.values(), item["id"]))
        return redirect(self.path("item", item["id"]), flash=f"The {self.words['singular']} was updated.")

    def do_archive(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        item = self.item_row(conn, match[1])
        self.require_editor(request, "archive")
        if item["archived"]:
            raise HttpError(400, f"This {self.words['singular']} is already archived.")
        conn.execute("UPDATE items SET archived = 1 WHERE id = ?", (item["id"],))
        return redirect(self.path("list"), flash=f"The {self.words['singular']} was archived.")

    def new_item_submit(self, conn: sqlite3.Connection, request: Request,
                        match: re.Match[str]) -> Response:
        self.require_creator(request)
        name = clean_text(request.form.get("name", ""), self.label("name_field"), MAX_NAME)
        if conn.execute("SELECT 1 FROM items WHERE name = ?", (name,)).fetchone():
            raise HttpError(400, f"A {self.words['singular']} with that name already exists; choose another name.")
        cat = conn.execute("SELECT id FROM categories WHERE slug = ?", (request.form.get("category", ""),)).fetchone()
        if cat is None:
            raise HttpError(400, f"Choose a {self.kind.category_label.lower()} from the list.")
        asked = {f.key for f in self.creatable_fields()}
        values: dict[str, Any] = {}
        for f in self.kind.fields:
            if f.key in asked:
                values[f.key] = parse_field(self, conn, f, request.form.get(f.key, ""), record=False)
            else:
                values[f.key] = {"date": TODAY.isoformat(), "rating": 0.0, "text": "",
                                 "enum": (self.enum_values(conn, f.key) or [""])[0]}.get(f.type, 0)
        iid = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM items").fetchone()[0]
        cols = ["id", "code", "name", "category_id", "archived", *values]
        conn.execute(f"INSERT INTO items ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                     (iid, f"{self.kind.code_prefix}-N{iid}", name, cat["id"], 0, *values.values()))
        return redirect(self.path("item", iid), flash=f"Your new {self.words['singular']} was created.")

"""A generated website: one :class:`GeneratedSite` serves one seeded domain in its theme.

It is a :class:`~rollgym.envs.web.sites.base.Site` like the hand-written ones, served
by the same :class:`~rollgym.envs.web.server.WebServer` to many isolated episodes,
under the same hardening rules: ids and numbers read with ``row_id`` and
``whole_number``, redirects to same-site paths only, notices carried by the
server-set cookie, user-written text wrapped by ``user_text``, and a handler that
raises rolls back and answers 500.

Pages (URLs depend on the theme): home, listing (search, category and field
filters, sorting, pagination), item (details, the record form, favourites, and for
editors an edit form and an archive button), new item, the user's records and one
record (cancel, change), favourites, account, sign in and out, and a menu page.
The form handlers are in :mod:`.forms`.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any
from urllib.parse import quote, unquote

from rollgym.envs.web.gen import render as r
from rollgym.envs.web.gen.domain import SiteSpec, build_database, slug
from rollgym.envs.web.gen.forms import FormHandlers
from rollgym.envs.web.gen.kinds import FieldSpec
from rollgym.envs.web.sites.base import FLASH_COOKIE, Request, Response, page_number, row_id, safe_path
from rollgym.envs.web.sites.page import esc, user_text


class GeneratedSite(FormHandlers):
    """A site generated from a :class:`~.domain.SiteSpec`; see the module docstring.

    Example:
        >>> from rollgym.envs.web.gen.domain import site_spec
        >>> site = GeneratedSite(site_spec("gen-library-02"))
        >>> site.path("list").startswith("/"), site.label("nav_mine").lower().endswith("loans") or True
        (True, True)
    """

    def __init__(self, spec: SiteSpec) -> None:
        self.spec = spec
        self.kind = spec.kind
        self.theme = spec.theme
        self.key = spec.key
        self.name = spec.name
        single, plural = self.kind.item
        rec_single, rec_plural = self.kind.record.table_label
        self.words = {"singular": single, "plural": plural, "Singular": single.capitalize(),
                      "Plural": plural.capitalize(), "records": rec_plural, "Records": rec_plural.capitalize(),
                      "record": rec_single, "Record": rec_single.capitalize(),
                      "saved_title": self.kind.favorites[0].capitalize()}
        self._routes = []
        self.setup_routes()

    # -- words, paths, formats ----------------------------------------------------------------------------------
    def path(self, name: str, id: int | str = "") -> str:
        """A concrete URL path of the site, e.g. ``path("item", id=4)``."""
        w = self.words
        return self.theme.path(name, plural=slug(w["plural"]), singular=slug(w["singular"]),
                               records=slug(w["records"]), id=id)

    def action_path(self, action: str, id: int | str) -> str:
        """Where a form posts an action on a row, e.g. ``/actions/cancel/12``."""
        return f"{self.theme.paths['post']}/{action}/{id}"

    def label(self, name: str) -> str:
        """A theme label with the kind's words filled in."""
        return self.theme.label(name, **self.words)

    def sort_label(self, key: str, order: str) -> str:
        """The label of a sort option (``key`` is a field key or ``"name"``)."""
        if key == "name":
            return self.label("sort_name")
        f = self.kind.field(key)
        if f.type == "date":
            return f"{f.label} ({'earliest' if order == 'asc' else 'latest'} first)"
        return f"{f.label} ({'low to high' if order == 'asc' else 'high to low'})"

    def fmt(self, f: FieldSpec, value: Any) -> str:
        """A field's value as pages show it (markup)."""
        if value is None:
            return "–"
        if f.type == "money":
            return esc(self.theme.money(int(value)))
        if f.type == "rating":
            return esc(f"{float(value):.1f} / 5") if value else "–"
        if f.type == "int":
            return esc(f"{int(value):,}" + (f" {f.unit}" if f.unit else ""))
        if f.type == "date":
            return esc(self.theme.day(str(value)))
        if f.type == "text":
            return user_text(value)
        return esc(value)

    def item_fields(self) -> list[FieldSpec]:
        """The fields shown as listing columns: every sortable and filterable one (sortable headers need them)."""
        return [f for f in self.kind.fields if f.sort or f.filter]

    # -- database and routes --------------------------------------------------------------------------------------
    def build_database(self) -> sqlite3.Connection:
        conn = build_database(self.spec)
        conn.executescript("CREATE TABLE IF NOT EXISTS sessions (token TEXT PRIMARY KEY, user_id INTEGER NOT NULL);")
        conn.commit()
        return conn

    def _pattern(self, name: str) -> str:
        w = self.words
        return self.theme.pattern(name, plural=slug(w["plural"]), singular=slug(w["singular"]),
                                  records=slug(w["records"]))

    def setup_routes(self) -> None:
        post = re.escape(self.theme.paths["post"])
        self.route("GET", r"/", self.home)
        pages = (("GET", "list", self.listing), ("GET", "new", self.new_item_form),
                 ("POST", "new", self.new_item_submit), ("GET", "item", self.item), ("GET", "mine", self.mine),
                 ("GET", "record", self.record), ("GET", "saved", self.saved), ("GET", "account", self.account),
                 ("POST", "account", self.account_save), ("GET", "login", self.login_form),
                 ("POST", "login", self.login_submit), ("POST", "logout", self.logout), ("GET", "menu", self.menu))
        for method, name, handler in pages:
            self.route(method, self._pattern(name), handler)
        for action in ("create", "save", "unsave", "edit", "archive", "cancel", "update"):
            self.route("POST", rf"{post}/{action}/([0-9]+)", getattr(self, f"do_{action}"))

    # -- chrome ---------------------------------------------------------------------------------------------------
    def nav_links(self) -> list[tuple[str, str]]:
        """The navigation links: home, listing, the user's records, favourites, account."""
        return [("/", self.label("home")), (self.path("list"), self.label("nav_list")),
                (self.path("mine"), self.label("nav_mine")), (self.path("saved"), self.label("nav_saved")),
                (self.path("account"), self.label("nav_account"))]

    def search_form(self, q: str = "") -> str:
        """The site-wide search box (a GET form to the listing)."""
        inner = r.control(self.theme, name="q", label=self.label("search_field"), kind="search", value=q, uid="q")
        return r.form(self.path("list"), inner + r.button(self.label("search_button")), method="get", cls="bar")

    def render(self, request: Request, title: str, content: str, *, status: int = 200, flash: str = "",
               flash_kind: str = "ok") -> Response:
        """Wrap ``content`` in the theme's skeleton; ``flash`` or the server's pending notice is the banner."""
        pending = request.cookies.get(FLASH_COOKIE)
        notice = flash or unquote(pending or "")[:500]
        kind = flash_kind if flash else "ok"
        flash_html = f'<div class="flash {kind}" role="status">{esc(notice)}</div>' if notice else ""
        if request.user is not None:
            user_html = (f"<span>Signed in as <strong>{esc(request.user['username'])}</strong></span>"
                         + r.form(self.path("logout"), r.button(self.label("sign_out"), "quiet"), cls="inline"))
        else:
            back = request.path if request.method == "GET" and request.path != self.path("login") else "/"
            user_html = r.link(f"{self.path('login')}?next={quote(safe_path(back), safe='/')}", self.label("sign_in"))
        search = self.search_form() if self.theme.search == "header" else ""
        body = r.layout(self.theme, title=title, site_name=self.name, accent=self.spec.accent, nav=self.nav_links(),
                        current=request.path, user_html=user_html, flash_html=flash_html, content=content,
                        search_html=search, menu_href=self.path("menu"))
        response = Response(status=status, body=body)
        if pending is not None:
            response.headers.append(("Set-Cookie", f"{FLASH_COOKIE}=; Path=/; Max-Age=0"))
        return response

    def login_path(self) -> str:
        """Where the theme puts the sign-in page."""
        return self.path("login")

    # -- reading rows ---------------------------------------------------------------------------------------------
    def item_row(self, conn: sqlite3.Connection, raw: str | int) -> sqlite3.Row:
        """The item with this id (a 404 when there is none)."""
        iid = row_id(raw, self.words["singular"]) if isinstance(raw, str) else raw
        return self.one_row(conn, "SELECT i.*, c.name AS category, c.slug AS category_slug FROM items i "
                            "JOIN categories c ON c.id = i.category_id WHERE i.id = ?", (iid,),
                            missing=f"That {self.words['singular']} does not exist.")

    def enum_values(self, conn: sqlite3.Connection, key: str) -> list[str]:
        """The values an enum field takes on this site (its choices, or the values seeded for it)."""
        f = self.kind.field(key)
        if f.choices and not f.choices[0].startswith("{"):
            return list(f.choices)
        return [v for (v,) in conn.execute(f"SELECT DISTINCT {f.key} FROM items ORDER BY {f.key}")]

    # -- pages ----------------------------------------------------------------------------------------------------
    def home(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        cats = conn.execute("SELECT c.name, c.slug, COUNT(i.id) AS n FROM categories c LEFT JOIN items i ON "
                            "i.category_id = c.id AND i.archived = 0 GROUP BY c.id ORDER BY c.name").fetchall()
        lead = next((f for f in self.kind.fields if f.sort), None)
        order = f"{lead.key} DESC" if lead else "id"
        top = conn.execute(f"SELECT * FROM items WHERE archived = 0 ORDER BY {order}, id LIMIT 5").fetchall()
        cat_links = "".join(f"<li>{r.link(r.query_href(self.path('list'), {}, category=c['slug']), c['name'])} "
                            f'<span class="muted">({c["n"]})</span></li>' for c in cats)
        featured = "".join(f"<li>{r.link(self.path('item', t['id']), t['name'])}</li>" for t in top)
        search = self.search_form() if self.theme.search == "listing" else ""
        content = (f'<div class="card"><h1>{esc(self.name)}</h1><p class="muted">{esc(self.kind.tagline)}</p>'
                   f"{search}</div><h2>{esc(self.kind.category_label)}s</h2><ul>{cat_links}</ul>"
                   f"<h2>Featured {esc(self.words['plural'])}</h2><ul>{featured}</ul>")
        return self.render(request, "Home", content)

    def menu(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        items = "".join(f"<li>{r.link(h, label)}</li>" for h, label in self.nav_links())
        return self.render(request, "Menu", f'<div class="card"><h1>Menu</h1><ul>{items}</ul></div>')

    def _filter_state(self, conn: sqlite3.Connection, request: Request) -> tuple[dict[str, str], list[str], list[Any]]:
        state = {"q": request.arg("q")[:200], "category": request.arg("category")[:100],
                 "sort": request.arg("sort", "name")[:60]}
        where, params = ["i.archived = 0"], []
        if state["q"]:
            where.append("(i.name LIKE ? OR i.code LIKE ?)")
            params += [f"%{state['q']}%", f"%{state['q']}%"]
        if state["category"]:
            where.append("c.slug = ?")
            params.append(state["category"])
        for f in self.kind.fields:
            if f.filter:
                value = request.arg(f.key)[:100]
                state[f.key] = value
                if value:
                    where.append(f"i.{f.key} = ?")
                    params.append(value)
        return state, where, params

    def sort_options(self) -> list[tuple[str, str]]:
        """``(value, label)`` of every sort order the listing offers."""
        out = [("name", self.label("sort_name"))]
        for f in self.kind.fields:
            if f.sort:
                out += [(f"{f.key}_{order}", self.sort_label(f.key, order)) for order in ("asc", "desc")]
        return out

    def listing(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        state, where, params = self._filter_state(conn, request)
        sorts = dict(self.sort_options())
        if state["sort"] not in sorts:
            state["sort"] = "name"
        key, _, order = state["sort"].rpartition("_")
        order_by = "i.name" if state["sort"] == "name" else f"i.{key} {'ASC' if order == 'asc' else 'DESC'}, i.name"
        base = f"FROM items i JOIN categories c ON c.id = i.category_id WHERE {' AND '.join(where)}"
        total = conn.execute(f"SELECT COUNT(*) {base}", params).fetchone()[0]
        page = page_number(request)
        size = self.theme.page_size
        rows = conn.execute(f"SELECT i.*, c.name AS category {base} ORDER BY {order_by} LIMIT ? OFFSET ?",
                            [*params, size, (page - 1) * size]).fetchall()
        fields = self.item_fields()
        columns = [(self.label("name_field"), "name"), (self.kind.category_label, None),
                   *((f.label, f.key if f.sort else None) for f in fields)]
        cells = [(r.link(self.path("item", row["id"]), row["name"]),
                  [esc(row["category"]), *(self.fmt(f, row[f.key]) for f in fields)]) for row in rows]
        heads = {k: r.query_href(self.path("list"), state, sort=(f"{k}_desc" if state["sort"] == f"{k}_asc" else
                                                                  ("name" if k == "name" else f"{k}_asc")))
                 for _, k in columns if k}
        add = ""
        if request.user is not None and self.can_create(request.user):
            add = f"<p>{r.link(self.path('new'), self.label('new_item'))}</p>"
        content = (f"<h1>{esc(self.words['Plural'])}</h1>{add}{self._filters(conn, state)}"
                   f"{r.count_line(self.theme, total, page, self.words['plural'])}"
                   f"{r.listing(self.theme, columns, cells, sort=state['sort'], sort_href=heads)}"
                   f"{r.pager(self.theme, self.path('list'), state, page, total)}")
        return self.render(request, self.words["Plural"], content)

    def _filters(self, conn: sqlite3.Connection, state: dict[str, str]) -> str:
        theme, lst = self.theme, self.path("list")
        cats = conn.execute("SELECT name, slug FROM categories ORDER BY name").fetchall()
        enums = [f for f in self.kind.fields if f.filter]
        sorts = self.sort_options()
        carried = {k for k in ("q", "sort") if (k == "q" and theme.search == "header")
                   or (k == "sort" and theme.sorter != "select")}
        hidden = "".join(f'<input type="hidden" name="{k}" value="{esc(v)}">' for k, v in state.items()
                         if v and k in carried)
        if theme.filters == "form":
            inner = "" if theme.search == "header" else r.control(theme, name="q", label=self.label("search_field"),
                                                                   kind="search", value=state["q"], uid="fq")
            inner += r.control(theme, name="category", label=self.kind.category_label, kind="select",
                               value=state["category"], options=[("", self._any(self.kind.category_label))] +
                               [(c["slug"], c["name"]) for c in cats])
            for f in enums:
                inner += r.control(theme, name=f.key, label=f.label, kind="select", value=state.get(f.key, ""),
                                   options=[("", self._any(f.label))] + [(v, v) for v in self.enum_values(conn, f.key)])
            if theme.sorter == "select":
                inner += r.control(theme, name="sort", label=self.label("sort"), kind="select", value=state["sort"],
                                   options=sorts)
            out = r.form(lst, hidden + inner + r.button(self.label("apply")), method="get", cls="card filters")
        else:
            facet = [self._facet("category", self.kind.category_label, [(c["slug"], c["name"]) for c in cats], state)]
            facet += [self._facet(f.key, f.label, [(v, v) for v in self.enum_values(conn, f.key)], state)
                      for f in enums]
            out = f'<div class="card facets">{"".join(facet)}</div>'
            if theme.search == "listing":
                keep = "".join(f'<input type="hidden" name="{k}" value="{esc(v)}">' for k, v in state.items()
                               if v and k != "q")
                out = r.form(lst, keep + r.control(theme, name="q", label=self.label("search_field"), kind="search",
                                                   value=state["q"], uid="fq") + r.button(self.label("search_button")),
                             method="get", cls="bar") + out
            if theme.sorter == "select":
                keep = "".join(f'<input type="hidden" name="{k}" value="{esc(v)}">' for k, v in state.items()
                               if v and k != "sort")
                out += r.form(lst, keep + r.control(theme, name="sort", label=self.label("sort"), kind="select",
                                                    value=state["sort"], options=sorts) + r.button(self.label("apply")),
                              method="get", cls="bar")
        if theme.sorter == "links":
            links = [f'<strong>{esc(label)}</strong>' if value == state["sort"] else
                     r.link(r.query_href(lst, state, sort=value), label) for value, label in sorts]
            out += f'<p class="sorts">{esc(self.label("sort"))}: {" · ".join(links)}</p>'
        return out

    def _any(self, field_label: str) -> str:
        """The "no filter" option; where a drop-down has no visible label it says which filter it is."""
        return self.label("all") if self.theme.labelling == "for" else f"{field_label}: {self.label('all')}"

    def _facet(self, name: str, title: str, values: list[tuple[str, str]], state: dict[str, str]) -> str:
        current = state.get(name, "")
        links = [r.link(r.query_href(self.path("list"), state, **{name: ""}), self.label("all"))
                 if current else f"<strong>{esc(self.label('all'))}</strong>"]
        for value, label in values:
            links.append(f"<strong>{esc(label)}</strong>" if value == current else
                         r.link(r.query_href(self.path("list"), state, **{name: value}), label))
        return f"<div><strong>{esc(title)}:</strong> {' · '.join(links)}</div>"

    def item(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        it = self.item_row(conn, match[1])
        rows = [(self.kind.code_label, esc(it["code"])),
                (self.kind.category_label, r.link(r.query_href(self.path("list"), {}, category=it["category_slug"]),
                                                   it["category"]))]
        rows += [(f.label, self.fmt(f, it[f.key])) for f in self.kind.fields]
        made_by_user = it["code"] == f"{self.kind.code_prefix}-N{it['id']}"  # see new_item_submit
        parts = [f"<h1>{user_text(it['name']) if made_by_user else esc(it['name'])}</h1>"]
        if it["archived"]:
            parts.append(f'<p class="flash error">This {esc(self.words["singular"])} is archived.</p>')
        parts.append(f'<div class="card">{r.details(self.theme, rows)}</div>')
        user = request.user
        if user is not None and not it["archived"]:
            parts.append(self.record_form(it))
            fav = conn.execute("SELECT 1 FROM favorites WHERE user_id = ? AND item_id = ?",
                               (user["id"], it["id"])).fetchone()
            action, text = ("unsave", self.kind.favorites[2]) if fav else ("save", self.kind.favorites[1])
            parts.append(r.form(self.action_path(action, it["id"]), r.button(text, "quiet"), cls="inline"))
            if user["role"] == self.kind.roles[1]:
                parts.append(self.editor_forms(conn, it))
        elif user is None:
            verb = self.kind.record.verb.lower()
            login = f"{self.path('login')}?next={quote(self.path('item', it['id']), safe='/')}"
            sign = self.label("sign_in")
            parts.append(f"<p>{r.link(login, f'{sign} to {verb}')}</p>")
        if self.kind.record.public:
            parts.append(self.public_records(conn, it["id"]))
        return self.render(request, it["name"], "".join(parts))

    def public_records(self, conn: sqlite3.Connection, item_id: int) -> str:
        """The item's visible records (replies, comments, reviews) with their authors."""
        text = next(f.key for f in self.kind.record.fields if f.type == "text")
        found = conn.execute(f"SELECT r.{text} AS body, r.created, u.username FROM records r JOIN users u ON "
                             "u.id = r.user_id WHERE r.item_id = ? AND r.status = ? ORDER BY r.created, r.id",
                             (item_id, self.kind.record.initial)).fetchall()
        body = "".join(f'<div class="card"><p class="muted">{esc(p["username"])} · {esc(self.theme.day(p["created"]))}'
                       f"</p>{user_text(p['body'], 'p')}</div>" for p in found)
        return f"<h2>{esc(self.words['Records'])} ({len(found)})</h2>{body}"

    def record_form(self, it: sqlite3.Row) -> str:
        """The form that creates a record on an item (signed-in users)."""
        inner = "".join(self.record_control(f, "") for f in self.kind.record.fields)
        return r.form(self.action_path("create", it["id"]), inner + r.button(self.kind.record.verb), cls="card stack")

    def record_control(self, f: FieldSpec, value: str) -> str:
        """A form control for a record field."""
        kind = {"text": "textarea", "date": "date", "int": "number"}.get(f.type, "text")
        return r.control(self.theme, name=f.key, label=f.label, kind=kind, value=value, uid=f"r-{f.key}")

    def editor_forms(self, conn: sqlite3.Connection, it: sqlite3.Row) -> str:
        """Editors' forms on an item: change its editable fields, archive it."""
        out = ""
        if "edit" in self.kind.editor_can:
            inner = "".join(self.field_control(conn, f, it[f.key], uid=f"e-{f.key}")
                            for f in self.kind.fields if f.editable)
            out += r.form(self.action_path("edit", it["id"]),
                          f"<h2>Edit this {esc(self.words['singular'])}</h2>{inner}{r.button(self.label('save'))}",
                          cls="card stack")
        if "archive" in self.kind.editor_can:
            out += r.form(self.action_path("archive", it["id"]),
                          r.button(f"Archive this {self.words['singular']}", "quiet"), cls="inline")
        return out

    def field_control(self, conn: sqlite3.Connection, f: FieldSpec, value: Any, uid: str) -> str:
        """A form control for an item field, holding ``value``."""
        if f.type == "enum":
            return r.control(self.theme, name=f.key, label=f.label, kind="select", value=str(value or ""),
                             options=[(v, v) for v in self.enum_values(conn, f.key)], uid=uid)
        if f.type == "money":
            shown = f"{int(value) // 100}.{int(value) % 100:02d}" if value is not None else ""
            return r.control(self.theme, name=f.key, label=f"{f.label} ($)", value=shown, uid=uid)
        kind = {"text": "textarea", "date": "date", "int": "number"}.get(f.type, "text")
        return r.control(self.theme, name=f.key, label=f.label, kind=kind, value="" if value is None else str(value),
                         uid=uid)

    def new_item_form(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        if request.user is None:
            return self.must_sign_in(request, f"Please sign in to add a {self.words['singular']}.")
        self.require_creator(request)
        cats = conn.execute("SELECT name, slug FROM categories ORDER BY name").fetchall()
        inner = r.control(self.theme, name="name", label=self.label("name_field"), uid="n-name")
        inner += r.control(self.theme, name="category", label=self.kind.category_label, kind="select",
                           options=[(c["slug"], c["name"]) for c in cats], uid="n-category")
        inner += "".join(self.field_control(conn, f, None, uid=f"n-{f.key}") for f in self.creatable_fields())
        content = (f"<h1>{esc(self.label('new_item'))}</h1>"
                   + r.form(self.path("new"), inner + r.button(self.label("create")), cls="card stack"))
        return self.render(request, self.label("new_item"), content)

    def mine(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        if request.user is None:
            return self.must_sign_in(request, f"Please sign in to see your {self.words['records']}.")
        found = conn.execute("SELECT r.*, i.name FROM records r JOIN items i ON i.id = r.item_id WHERE r.user_id = ? "
                             "ORDER BY r.created DESC, r.id DESC", (request.user["id"],)).fetchall()
        heads = ["Reference", self.words["Singular"], "Created", "Status"]
        heads += ["Total"] if self.kind.record.total else []
        body = "".join(
            f"<tr><td>{r.link(self.path('record', x['id']), x['ref'])}</td>"
            f"<td>{r.link(self.path('item', x['item_id']), x['name'])}</td><td>{esc(self.theme.day(x['created']))}</td>"
            f"<td>{esc(x['status'])}</td>" + (f"<td>{esc(self.theme.money(x['total']))}</td>"
                                              if self.kind.record.total else "") + "</tr>" for x in found)
        content = (f"<h1>{esc(self.label('nav_mine'))}</h1><table class=\"data\"><thead><tr>"
                   + "".join(f"<th>{h}</th>" for h in heads) + f"</tr></thead><tbody>{body}</tbody></table>")
        return self.render(request, self.label("nav_mine"), content)

    def record(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        if request.user is None:
            return self.must_sign_in(request, f"Please sign in to see your {self.words['records']}.")
        rec = self.own_record(conn, request, match[1])
        spec = self.kind.record
        rows = [("Reference", esc(rec["ref"])), (self.words["Singular"], r.link(self.path("item", rec["item_id"]),
                                                                              rec["name"])),
                ("Created", esc(self.theme.day(rec["created"]))), ("Status", esc(rec["status"]))]
        rows += [(f.label, self.fmt(f, rec[f.key])) for f in spec.fields]
        if spec.total:
            rows.append(("Total", esc(self.theme.money(rec["total"]))))
        parts = [f"<h1>{esc(self.words['Record'])} {esc(rec['ref'])}</h1>",
                 f'<div class="card">{r.details(self.theme, rows)}</div>']
        if rec["status"] == spec.initial:
            if spec.update:
                f = self.kind.record_field(spec.update)
                parts.append(r.form(self.action_path("update", rec["id"]),
                                    self.record_control(f, str(rec[f.key])) + r.button(self.label("save")),
                                    cls="card stack"))
            parts.append(r.form(self.action_path("cancel", rec["id"]), r.button(spec.cancel, "quiet"), cls="inline"))
        return self.render(request, f"{self.words['Record']} {rec['ref']}", "".join(parts))

    def saved(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        if request.user is None:
            return self.must_sign_in(request, f"Please sign in to see your {self.kind.favorites[0]}.")
        found = conn.execute("SELECT i.id, i.name, i.archived FROM favorites f JOIN items i ON i.id = f.item_id "
                             "WHERE f.user_id = ? ORDER BY i.name", (request.user["id"],)).fetchall()
        body = "".join(f"<tr><td>{r.link(self.path('item', x['id']), x['name'])}</td><td>"
                       + r.form(self.action_path("unsave", x["id"]), r.button(self.kind.favorites[2], "quiet"),
                                cls="inline") + "</td></tr>" for x in found)
        empty = "" if found else f"<p>Your {esc(self.kind.favorites[0])} is empty.</p>"
        content = f"<h1>{esc(self.label('nav_saved'))}</h1>{empty}<table class=\"data\"><tbody>{body}</tbody></table>"
        return self.render(request, self.label("nav_saved"), content)

    def account(self, conn: sqlite3.Connection, request: Request, match: re.Match[str]) -> Response:
        if request.user is None:
            return self.must_sign_in(request, "Please sign in to see your account.")
        u = request.user
        inner = r.control(self.theme, name="full_name", label=self.label("full_name"), value=u["full_name"], uid="a-n")
        inner += r.control(self.theme, name="email", label=self.label("email"), value=u["email"], uid="a-e")
        content = (f"<h1>{esc(self.label('nav_account'))}</h1><p>Username: {esc(u['username'])} · role: "
                   f"{esc(u['role'])}</p>" + r.form(self.path("account"), inner + r.button(self.label("save")),
                                                    cls="card stack"))
        return self.render(request, self.label("nav_account"), content)

    def login_form(self, conn: sqlite3.Connection, request: Request, match: re.Match[str], error: str = "") -> Response:
        nxt = safe_path(request.arg("next", "/"))
        inner = f'<input type="hidden" name="next" value="{esc(nxt)}">'
        inner += r.control(self.theme, name="username", label=self.label("username"),
                           value=request.form.get("username", "")[:100], uid="username")
        inner += r.control(self.theme, name="password", label=self.label("password"), kind="password", uid="password")
        content = (f'<div class="card"><h1>{esc(self.label("sign_in"))}</h1>'
                   + r.form(self.path("login"), inner + r.button(self.label("sign_in_button"))) + "</div>")
        return self.render(request, self.label("sign_in"), content, status=400 if error else 200, flash=error,
                           flash_kind="error")

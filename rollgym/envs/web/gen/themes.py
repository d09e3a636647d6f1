"""Layout themes of the generated websites: page skeletons, navigation, listings, labels, URLs and styles.

Two sites of the same kind and different themes differ in look and in structure:
where navigation lives (a top bar, a sidebar, tabs, a footer, a separate menu page),
how listings are drawn (cards, tables, plain lists), how records are filtered
(drop-downs and an apply button, or facet links), sorted (a drop-down, sort links,
sortable column headers) and paged (previous/next, page numbers, older/newer), how
details and dates are written, what buttons and fields are called, and every URL.

:data:`TRAIN_THEMES` dress the training sites; :data:`HELDOUT_THEMES` only the
``test_unseen`` sites, and they hold structures no training theme has (sortable
column headers, a menu page instead of a navigation bar, a left rail).

Example:
    >>> THEMES["harbor"].path("item", plural="products", singular="product", id=3)
    '/products/3'
    >>> sorted(THEMES) == sorted([*TRAIN_THEMES, *HELDOUT_THEMES])
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Literal

Shell = Literal["topnav", "sidebar", "tabs", "minimal", "banner", "split", "rail", "menu"]


@dataclass(frozen=True)
class Theme:
    """One layout theme; see the module docstring.

    Attributes:
        key: Theme name.
        shell: The page skeleton (where navigation lives).
        listing: ``cards``, ``table`` or ``list``.
        detail: How an item's fields are shown: ``dl`` (term, then value on its own line), ``table``
            (``Label | value |``) or ``inline`` (``Label: value``).
        filters: ``form`` (drop-downs and an apply button) or ``facets`` (links).
        sorter: ``select`` (a drop-down), ``links`` or ``headers`` (sortable column headers; tables only).
        pager: ``prevnext``, ``numbers`` or ``older``.
        count: How a listing says how many it found: ``found``, ``showing`` or ``results``.
        search: Where the search box is: ``header`` (every page) or ``listing``.
        labelling: How form fields are named: ``for`` (``<label for>``), ``aria`` or ``placeholder``.
        page_size: Rows per listing page.
        date_format: ``iso`` (2026-03-14), ``day`` (14 Mar 2026) or ``month`` (March 14, 2026).
        money_format: ``dollar`` ($1,234.50) or ``code`` (1,234.50 USD).
        paths: URL patterns; ``{id}`` is a row id, ``{plural}``/``{singular}``/``{records}`` the kind's nouns.
        labels: What links, buttons and fields say.
        css: The theme's own styles (added to a shared base).
    """

    key: str
    shell: Shell
    listing: Literal["cards", "table", "list"]
    detail: Literal["dl", "table", "inline"]
    filters: Literal["form", "facets"]
    sorter: Literal["select", "links", "headers"]
    pager: Literal["prevnext", "numbers", "older"]
    count: Literal["found", "showing", "results"]
    search: Literal["header", "listing"]
    labelling: Literal["for", "aria", "placeholder"]
    page_size: int
    date_format: Literal["iso", "day", "month"]
    money_format: Literal["dollar", "code"]
    paths: dict[str, str]
    labels: dict[str, str]
    css: str = ""
    font: str = "'Liberation Sans', Arial, sans-serif"
    extra: dict[str, str] = field(default_factory=dict)

    def path(self, name: str, *, plural: str = "", singular: str = "", records: str = "", id: int | str = "") -> str:
        """A concrete URL path of the theme, e.g. ``path("item", plural="books", id=4)``."""
        return self.paths[name].format(plural=plural, singular=singular, records=records, id=id)

    def pattern(self, name: str, *, plural: str, singular: str, records: str) -> str:
        """The route regex of a path (``{id}`` becomes a group of ASCII digits)."""
        text = re.escape(self.paths[name].format(plural=plural, singular=singular, records=records, id="\x00"))
        return text.replace("\x00", r"([0-9]+)")

    def label(self, name: str, **words: str) -> str:
        """A label with the kind's words filled in, e.g. ``label("nav_mine", records="orders")``."""
        return self.labels[name].format(**words)

    def money(self, cents: int) -> str:
        """Cents as this theme writes money."""
        text = f"{cents // 100:,}.{cents % 100:02d}"
        return f"${text}" if self.money_format == "dollar" else f"{text} USD"

    def day(self, iso: str) -> str:
        """An ISO date as this theme writes dates."""
        d = date.fromisoformat(iso)
        if self.date_format == "iso":
            return iso
        if self.date_format == "day":
            return f"{d.day} {d.strftime('%b')} {d.year}"
        return f"{d.strftime('%B')} {d.day}, {d.year}"


_BASE_LABELS = {
    "home": "Home", "nav_list": "Browse {plural}", "nav_mine": "My {records}", "nav_saved": "{saved_title}",
    "nav_account": "Account", "sign_in": "Sign in", "sign_in_button": "Sign in", "sign_out": "Sign out",
    "username": "Username", "password": "Password", "search_field": "Search", "search_button": "Search",
    "apply": "Apply filters", "sort": "Sort by", "all": "All", "next": "Next →", "prev": "← Previous",
    "save": "Save changes", "new_item": "New {singular}", "create": "Create {singular}", "menu": "Menu",
    "full_name": "Display name", "email": "Email", "name_field": "Name", "sort_name": "Name (A–Z)",
}


def _labels(**over: str) -> dict[str, str]:
    return {**_BASE_LABELS, **over}


def _paths(**over: str) -> dict[str, str]:
    base = {
        "list": "/{plural}", "item": "/{plural}/{id}", "mine": "/my/{records}", "record": "/my/{records}/{id}",
        "saved": "/saved", "account": "/account", "login": "/login", "logout": "/logout", "new": "/{plural}/new",
        "menu": "/menu", "post": "/actions",
    }
    return {**base, **over}


HARBOR = Theme(
    "harbor", "topnav", "cards", "dl", "form", "select", "prevnext", "found", "header", "for", 8, "iso", "dollar",
    _paths(), _labels(),
    css=".topbar{background:var(--accent)} .topbar a,.topbar .brand{color:#fff} .card,.tile{border-radius:10px}",
)
LEDGER = Theme(
    "ledger", "sidebar", "table", "table", "form", "links", "numbers", "showing", "listing", "aria", 10, "day",
    "code",
    _paths(list="/browse", item="/{singular}/{id}", mine="/account/{records}", record="/account/{records}/{id}",
           saved="/account/saved", account="/account/profile", login="/account/login", logout="/account/logout",
           new="/browse/new", post="/do"),
    _labels(nav_list="Catalogue", nav_mine="Your {records}", nav_account="Profile", sign_in="Log in",
            sign_in_button="Log in", sign_out="Log out", username="User name", search_field="Keywords",
            apply="Filter", next="Next", prev="Previous", save="Save", sort="Order by"),
    css="body{font-size:14px} .sidebar-nav{background:#1f2933} .sidebar-nav a{color:#e5e7eb} "
        "table.data td,table.data th{border:1px solid #d0d5dd}",
    font="Georgia, 'DejaVu Serif', serif",
)
ATLAS = Theme(
    "atlas", "tabs", "list", "dl", "facets", "links", "prevnext", "results", "header", "placeholder", 6, "month",
    "dollar",
    _paths(list="/index", item="/entry/{id}", mine="/me/{records}", record="/me/{records}/{id}", saved="/me/saved",
           account="/me", login="/signin", logout="/signout", new="/index/new", post="/op"),
    _labels(home="Overview", nav_list="Index", nav_saved="Saved", nav_account="Me", search_field="Search this site",
            search_button="Go", sign_in="Member sign-in", sign_in_button="Continue", save="Update",
            all="Everything", next="Next page", prev="Previous page"),
    css=".tabs a{border:1px solid var(--border);border-bottom:none;border-radius:8px 8px 0 0;padding:6px 14px} "
        ".tabs a.on{background:var(--accent);color:#fff}",
)
PEBBLE = Theme(
    "pebble", "minimal", "list", "inline", "form", "select", "older", "found", "listing", "for", 12, "iso", "dollar",
    _paths(list="/all", item="/{plural}/view/{id}", mine="/mine", record="/mine/{id}", saved="/favourites",
           account="/profile", new="/all/new", post="/act"),
    _labels(nav_list="Everything", nav_mine="{Records}", nav_saved="Favourites", nav_account="Profile",
            search_button="Find", apply="Show results", next="Older »", prev="« Newer", sort="Sort"),
    css="main.wrap{max-width:760px} .footer-nav{display:flex;gap:14px;justify-content:center;padding:10px}",
    font="'DejaVu Sans Mono', monospace",
)
SUMMIT = Theme(
    "summit", "banner", "cards", "table", "facets", "select", "numbers", "showing", "header", "aria", 9, "day",
    "dollar",
    _paths(list="/catalog", item="/catalog/{id}", mine="/dashboard/{records}", record="/dashboard/{records}/{id}",
           saved="/dashboard/saved", account="/dashboard/settings", login="/auth/login", logout="/auth/logout",
           new="/catalog/new", post="/api/form"),
    _labels(home="Start", nav_list="Catalog", nav_mine="Dashboard", nav_account="Settings", sign_in="Log in",
            sign_in_button="Log in", sign_out="Log out", apply="Sort", save="Apply changes", all="Any",
            next="Next", prev="Previous", search_field="Find anything"),
    css="body{background:#0f172a;color:#e2e8f0} .card,.tile,table.data{background:#1e293b;color:#e2e8f0;"
        "border-color:#334155} a{color:#93c5fd} .banner{background:linear-gradient(90deg,var(--accent),#0f172a)}",
)
MOSAIC = Theme(
    "mosaic", "split", "cards", "inline", "form", "links", "prevnext", "results", "listing", "for", 7, "month",
    "code",
    _paths(list="/explore", item="/x/{id}", mine="/you/{records}", record="/you/{records}/{id}", saved="/you/saved",
           account="/you/settings", new="/explore/new", post="/post"),
    _labels(nav_list="Explore", nav_mine="Your {records}", nav_account="Settings", sign_out="Leave",
            apply="Update results", search_field="What are you looking for?", save="Save"),
    css=".grid{grid-template-columns:repeat(auto-fill,minmax(170px,1fr))} .tile{border-top:5px solid var(--accent)}",
    font="Verdana, 'DejaVu Sans', sans-serif",
)
# -- held out: only test_unseen sites wear these ------------------------------------------------------------------
QUARTZ = Theme(
    "quartz", "rail", "table", "dl", "form", "headers", "numbers", "showing", "header", "placeholder", 11, "month",
    "dollar",
    _paths(item="/{plural}/{id}/details", mine="/activity", record="/activity/{id}", saved="/starred",
           account="/settings", login="/session/new", logout="/session/end", new="/{plural}/create", post="/cmd"),
    _labels(nav_list="{Plural}", nav_mine="Activity", nav_saved="Starred", nav_account="Settings",
            sign_in="Sign in →", sign_in_button="Sign in", search_button="Search", apply="Refine",
            next="›", prev="‹", save="Save", search_field="Filter by name or code"),
    css=".rail{background:#111827} .rail a{color:#f9fafb} table.data th a{color:inherit}",
    font="'Liberation Serif', Georgia, serif",
)
MEADOW = Theme(
    "meadow", "menu", "list", "table", "facets", "links", "older", "found", "listing", "aria", 5, "day", "code",
    _paths(list="/find", item="/item-{id}", mine="/history", record="/history/{id}", saved="/kept", account="/me",
           login="/enter", logout="/leave", new="/find/new", post="/send"),
    _labels(home="Front page", nav_list="Find {plural}", nav_mine="History", nav_saved="Kept", nav_account="Me",
            sign_in="Enter", sign_in_button="Enter", sign_out="Leave", username="Your username",
            search_field="Words to look for", search_button="Look", next="Older", prev="Newer", all="All of them",
            save="Keep changes", menu="☰ Menu"),
    css="body{background:#fbf7ef} .card{background:#fffdf8;border-color:#e6dcc6} h1{font-weight:400}",
    font="'DejaVu Serif', Georgia, serif",
)

TRAIN_THEMES: tuple[str, ...] = ("harbor", "ledger", "atlas", "pebble", "summit", "mosaic")
HELDOUT_THEMES: tuple[str, ...] = ("quartz", "meadow")
THEMES: dict[str, Theme] = {t.key: t for t in (HARBOR, LEDGER, ATLAS, PEBBLE, SUMMIT, MOSAIC, QUARTZ, MEADOW)}

BASE_CSS = """
:root{--bg:#f5f6f8;--card:#fff;--text:#1f2933;--muted:#6b7280;--border:#e2e5ea}
*{box-sizing:border-box} body{margin:0;font-family:var(--font);font-size:15px;color:var(--text);
background:var(--bg);line-height:1.45;min-height:100vh;display:flex;flex-direction:column}
a{color:var(--accent);text-decoration:none} .wrap{max-width:1060px;margin:0 auto;padding:0 18px;width:100%}
main.wrap{padding-top:18px;padding-bottom:36px;flex:1 0 auto}
.topbar,.banner{padding:12px 0} .bar{display:flex;gap:18px;align-items:center;flex-wrap:wrap}
.brand{font-weight:700;font-size:20px} .nav{display:flex;gap:14px;flex-wrap:wrap}
.card,.tile{background:var(--card);border:1px solid var(--border);border-radius:6px;padding:14px 16px;
margin-bottom:12px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(220px,1fr));gap:12px}
.side{display:grid;grid-template-columns:220px 1fr;gap:18px} .side.right{grid-template-columns:1fr 240px}
table.data{width:100%;border-collapse:collapse;background:var(--card)} table.data td,table.data th{padding:7px 10px;
border-bottom:1px solid var(--border);text-align:left} .muted{color:var(--muted);font-size:13px}
input,select,textarea{font:inherit;padding:6px 8px;border:1px solid #c9ced6;border-radius:5px;min-width:160px}
textarea{width:100%;min-height:90px} button{font:inherit;background:var(--accent);color:#fff;border:none;
border-radius:5px;padding:7px 14px;cursor:pointer} button.quiet{background:#e5e7eb;color:#1f2933}
.flash{padding:9px 13px;border-radius:6px;margin-bottom:14px;background:#dcfce7;color:#166534}
.flash.error{background:#fee2e2;color:#991b1b} .pager{display:flex;gap:8px;margin:14px 0}
.pager a,.pager span{padding:3px 9px;border:1px solid var(--border);border-radius:5px}
.stack label{display:block;margin:8px 0 3px;font-weight:600} dl dt{font-weight:600;margin-top:6px} dl dd{margin:0 0 4px}
.rail-layout{display:grid;grid-template-columns:170px 1fr;min-height:100vh} .rail{padding:16px 12px}
.rail a{display:block;padding:6px 0} .sidebar-nav{padding:14px;border-radius:8px}
.sidebar-nav a{display:block;padding:4px 0}
.footer{color:var(--muted);font-size:13px;padding:14px 0;border-top:1px solid var(--border)}
"""


def stylesheet(theme: Theme, accent: str) -> str:
    """The CSS of a site: the shared base, the theme's styles and the site's accent colour."""
    return f":root{{--accent:{accent};--font:{theme.font}}}" + BASE_CSS + theme.css

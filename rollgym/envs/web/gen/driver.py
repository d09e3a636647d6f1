"""How the reference solutions work a generated site's pages, whatever its theme.

A :class:`Driver` knows one site's theme (its labels, where navigation and search
are, how filters, sorting and paging look) and offers the steps reference solutions
are made of, as generators that yield action strings and receive the parsed page
after each (:class:`~rollgym.envs.web.observation.PageView`): open a navigation
entry, sign in, open a filtered and sorted listing, page through it, find an item,
read a field. It clicks and types like any agent; it reads values from the page.
"""

from __future__ import annotations

from collections.abc import Generator
from functools import cached_property

from rollgym.envs.web.gen import render
from rollgym.envs.web.gen.site import GeneratedSite
from rollgym.envs.web.observation import Element, PageView
from rollgym.envs.web.server import query_base
from rollgym.envs.web.tasks.base import click, fill, select

Steps = Generator[str, PageView, PageView]


class Driver:
    """UI steps on one generated site; see the module docstring."""

    def __init__(self, site: GeneratedSite) -> None:
        self.site = site
        self.theme = site.theme

    @cached_property
    def item_names(self) -> frozenset[str]:
        """Names of the site's seeded items (to tell result links from other links)."""
        return frozenset(r[0] for r in query_base(self.site.key, "SELECT name FROM items"))

    # -- navigation -----------------------------------------------------------------------------------------------
    def nav(self, view: PageView, name: str) -> Steps:
        """Follow a navigation entry (``nav_list``, ``nav_mine``, ``nav_saved``, ``nav_account``, ``home``)."""
        if self.theme.shell == "menu":
            view = yield click(view.find("link", self.theme.labels["menu"]))
        view = yield click(view.find("link", self.site.label(name)))
        return view

    def sign_in(self, view: PageView, username: str, password: str) -> Steps:
        """Follow the sign-in link and log in."""
        view = yield click(view.find("link", self.site.label("sign_in")))
        view = yield fill(view.find("textbox", self.site.label("username")), username)
        view = yield fill(view.find("textbox", self.site.label("password")), password)
        view = yield click(view.find("button", self.site.label("sign_in_button")))
        return view

    def search(self, view: PageView, text: str) -> Steps:
        """Search the listing for ``text`` (the header box, or the listing's own)."""
        if self.theme.search == "listing":
            view = yield from self.nav(view, "nav_list")
        view = yield fill(view.find("textbox", self.site.label("search_field")), text)
        button = self.site.label("search_button") if self.theme.search == "header" or self.theme.filters == "facets" \
            else self.site.label("apply")
        view = yield click(view.find("button", button))
        return view

    def open_listing(self, view: PageView, *, category: str | None = None, sort: tuple[str, str] | None = None,
                     filters: dict[str, str] | None = None) -> Steps:
        """Open the listing filtered to a category (by name) and enum values (``{field key: value}``), and sorted
        by ``(field key, "asc"|"desc")``."""
        site, theme = self.site, self.theme
        view = yield from self.nav(view, "nav_list")
        sort_label = site.sort_label(*sort) if sort else None
        filters = filters or {}
        if theme.filters == "form":
            if category is not None:
                view = yield select(view.find("select", site.kind.category_label), category)
            for key, value in filters.items():
                view = yield select(view.find("select", site.kind.field(key).label), value)
            if sort_label is not None and theme.sorter == "select":
                view = yield select(view.find("select", site.label("sort")), sort_label)
            view = yield click(view.find("button", site.label("apply")))
        else:
            if category is not None:
                view = yield click(view.find("link", category))
            for value in filters.values():
                view = yield click(self.facet(view, value))
            if sort_label is not None and theme.sorter == "select":
                view = yield select(view.find("select", site.label("sort")), sort_label)
                view = yield click(view.find("button", site.label("apply")))
        if sort is not None and theme.sorter == "links":
            view = yield click(view.find("link", sort_label or ""))
        elif sort is not None and theme.sorter == "headers":
            label = site.kind.field(sort[0]).label
            view = yield click(view.find("link", label))
            if sort[1] == "desc":
                view = yield click(view.find("link", f"{label} ▲"))
        return view

    def facet(self, view: PageView, value: str) -> Element:
        """A facet link (the first link named ``value`` that is not an item)."""
        for el in view.elements:
            if el.role == "link" and el.name == value and el.name not in self.item_names:
                return el
        raise LookupError(f"no facet {value!r} on {view.url}")

    def results(self, view: PageView) -> list[Element]:
        """The item links of a listing page, in order."""
        return [e for e in view.elements if e.role == "link" and e.name in self.item_names]

    def next_page(self, view: PageView) -> Steps:
        """Go to the next page of a listing."""
        view = yield click(view.find("link", self.theme.labels["next"]))
        return view

    def nth_result(self, view: PageView, n: int) -> Generator[str, PageView, tuple[PageView, Element]]:
        """The ``n``-th (from 1) item link of the listing, paging forward as needed."""
        page_size = self.theme.page_size
        for _ in range((n - 1) // page_size):
            view = yield from self.next_page(view)
        found = self.results(view)
        return view, found[(n - 1) % page_size]

    def open_item(self, view: PageView, name: str) -> Steps:
        """Find an item by name with the search box and open its page."""
        view = yield from self.search(view, name)
        view = yield click(view.find("link", name))
        return view

    def read(self, view: PageView, label: str) -> str:
        """The value a details block shows for ``label``."""
        return render.read_detail(self.theme, view.lines, label)

    def button_after(self, view: PageView, label: str, text: str) -> Element:
        """The first button called ``label`` at or after the line that shows ``text`` (a row's own button)."""
        start = next((i for i, line in enumerate(view.lines) if text in line), None)
        if start is None:
            raise LookupError(f"{text!r} is not on {view.url}")
        after = view.lines[start:]
        for el in view.elements:
            if el.role == "button" and el.name == label and el.line in after:
                if view.lines.index(el.line, start) >= start:
                    return el
        raise LookupError(f"no button {label!r} after {text!r} on {view.url}")

    def record_link(self, view: PageView, item: str, status: str | None = None) -> Element:
        """On the user's records page: the reference link of the row that names ``item`` (and has ``status``)."""
        for el in view.elements:
            line = el.line
            if el.role != "link" or item not in line or el.name == item or line.index(el.name) > line.index(item):
                continue
            if status is None or f"| {status} |" in line:
                return el
        raise LookupError(f"no record of {item!r} on {view.url}")

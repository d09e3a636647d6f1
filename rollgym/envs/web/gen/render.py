"""HTML building blocks of the generated sites, drawn the way each :class:`~.themes.Theme` says.

Every function returns markup; every piece of data goes through
:func:`~rollgym.envs.web.sites.page.esc` (or :func:`~rollgym.envs.web.sites.page.user_text`
for text that users wrote), so nothing typed into a form becomes markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlencode

from rollgym.envs.web.gen.themes import Theme, stylesheet
from rollgym.envs.web.sites.page import esc
from rollgym.envs.web.sites.page import options as option_tags

Link = tuple[str, str]


def link(href: str, label: str, cls: str = "") -> str:
    """An ``<a>`` tag."""
    klass = f' class="{cls}"' if cls else ""
    return f'<a href="{esc(href)}"{klass}>{esc(label)}</a>'


_PLAIN_HEAD = '<header class="topbar"><div class="wrap bar">{brand}<div class="userbox">{user}</div></div></header>'
_PLAIN_BODY = '<main class="wrap">{flash}{content}</main>'
# Each theme shell's header and body, around {brand}, {nav}, {search}, {user}, {flash}, {content} and {menu}
# (the link to the page that holds the navigation, for the "menu" shell).
SHELLS: dict[str, tuple[str, str]] = {
    "topnav": ('<header class="topbar"><div class="wrap bar">{brand}<nav class="nav">{nav}</nav>{search}'
               '<div class="userbox">{user}</div></div></header>', _PLAIN_BODY),
    "sidebar": (_PLAIN_HEAD, '<main class="wrap"><div class="side"><nav class="sidebar-nav">{nav}</nav>'
                             "<div>{search}{flash}{content}</div></div></main>"),
    "tabs": ('<header class="topbar"><div class="wrap bar">{brand}{search}<div class="userbox">{user}</div></div>'
             '<div class="wrap"><nav class="nav tabs">{nav}</nav></div></header>', _PLAIN_BODY),
    "minimal": ('<header class="wrap bar">{brand}<div class="userbox">{user}</div></header>',
                '<main class="wrap">{flash}{search}{content}</main><nav class="footer-nav nav">{nav}</nav>'),
    "banner": ('<header class="banner"><div class="wrap"><div class="bar">{brand}<div class="userbox">{user}</div>'
               '</div><h2>{site}</h2>{search}<nav class="nav">{nav}</nav></div></header>', _PLAIN_BODY),
    "split": (_PLAIN_HEAD, '<main class="wrap"><div class="side right"><div>{flash}{search}{content}</div><aside>'
                           '<div class="card"><nav class="nav" style="flex-direction:column">{nav}</nav></div>'
                           "</aside></div></main>"),
    "rail": ("", '<div class="rail-layout"><nav class="rail">{brand}{nav}<div class="userbox">{user}</div></nav>'
                 '<main class="wrap">{search}{flash}{content}</main></div>'),
    # navigation lives on a page of its own
    "menu": ('<header class="topbar"><div class="wrap bar">{brand}{menu}<div class="userbox">{user}</div></div>'
             "</header>", '<main class="wrap">{flash}{search}{content}</main>'),
}


def layout(theme: Theme, *, title: str, site_name: str, accent: str, nav: Sequence[Link], current: str,
           user_html: str, flash_html: str, content: str, search_html: str, menu_href: str) -> str:
    """A whole page in the theme's skeleton (where navigation, search and the user box go)."""
    nav_html = "".join(link(h, label, "on" if h == current else "") for h, label in nav)
    brand = link("/", site_name, "brand")
    parts = {"brand": brand, "nav": nav_html, "search": search_html, "user": user_html, "flash": flash_html,
             "content": content, "menu": link(menu_href, theme.labels["menu"]), "site": esc(site_name)}
    head, body = SHELLS.get(theme.shell, SHELLS["menu"])
    head, body = head.format_map(parts), body.format_map(parts)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)} · {esc(site_name)}'
            f"</title><style>{stylesheet(theme, accent)}</style></head><body>{head}{body}"
            f'<footer class="footer"><div class="wrap">{esc(site_name)} · a rollgym practice site · all data is '
            "fictional</div></footer></body></html>")


def control(theme: Theme, *, name: str, label: str, kind: str = "text", value: str = "",
            options: Sequence[tuple[str, str]] = (), uid: str = "") -> str:
    """A labelled form control (``text``, ``number``, ``date``, ``search``, ``password``, ``textarea`` or ``select``).

    The theme decides how it is named: a ``<label for>``, an ``aria-label`` or a placeholder (selects and text
    areas of placeholder themes use ``aria-label``).
    """
    fid = f"f-{uid or name}"
    mode = theme.labelling
    if mode == "placeholder" and kind in {"select", "textarea"}:
        mode = "aria"
    named = {"for": f'id="{fid}"', "aria": f'aria-label="{esc(label)}"',
             "placeholder": f'placeholder="{esc(label)}"'}[mode]
    if kind == "select":
        widget = f'<select name="{esc(name)}" {named}>{option_tags(options, value)}</select>'
    elif kind == "textarea":
        widget = f'<textarea name="{esc(name)}" {named}>{esc(value)}</textarea>'
    else:
        widget = f'<input type="{kind}" name="{esc(name)}" value="{esc(value)}" {named}>'
    if mode == "for":
        return f'<div class="fld"><label for="{fid}">{esc(label)}</label>{widget}</div>'
    return f'<div class="fld">{widget}</div>'


def form(action: str, inner: str, *, method: str = "post", cls: str = "stack") -> str:
    """A ``<form>`` around some controls."""
    return f'<form class="{cls}" method="{method}" action="{esc(action)}">{inner}</form>'


def button(label: str, cls: str = "") -> str:
    """A submit button."""
    klass = f' class="{cls}"' if cls else ""
    return f'<button type="submit"{klass}>{esc(label)}</button>'


def details(theme: Theme, rows: Sequence[tuple[str, str]]) -> str:
    """An item's fields as the theme writes them; values are already markup."""
    if theme.detail == "dl":
        return "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"
    if theme.detail == "table":
        body = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows)
        return f'<table class="data">{body}</table>'
    return "".join(f"<p><strong>{esc(k)}:</strong> {v}</p>" for k, v in rows)


def read_detail(theme: Theme, lines: Sequence[str], label: str) -> str:
    """The value shown for ``label`` in :func:`details` output, from observation lines (reference solutions).

    Raises:
        LookupError: when the page shows no such field.
    """
    for i, line in enumerate(lines):
        if theme.detail == "dl" and line == label and i + 1 < len(lines):
            return lines[i + 1]
        if theme.detail == "table" and line.startswith(label + " | "):
            return line[len(label) + 3:].rstrip(" |")
        if theme.detail == "inline" and line.startswith(label + ": "):
            return line[len(label) + 2:]
    raise LookupError(f"no field {label!r} on the page")


def listing(theme: Theme, columns: Sequence[tuple[str, str | None]], rows: Sequence[tuple[str, Sequence[str]]],
            *, sort: str, sort_href: dict[str, str]) -> str:
    """Result rows: ``(name link markup, cell markups)``; ``columns`` are ``(label, sort key or None)``.

    With the ``headers`` sorter, sortable column labels are links that sort ascending, then descending.
    """
    if not rows:
        return '<p class="card">Nothing matches.</p>'
    if theme.listing == "table":
        heads = []
        for label, key in columns:
            if theme.sorter == "headers" and key is not None:
                mark = " ▲" if sort == f"{key}_asc" else (" ▼" if sort == f"{key}_desc" else "")
                heads.append(f"<th>{link(sort_href[key], label + mark)}</th>")
            else:
                heads.append(f"<th>{esc(label)}</th>")
        body = "".join(f"<tr><td>{name}</td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"
                       for name, cells in rows)
        return f'<table class="data"><thead><tr>{"".join(heads)}</tr></thead><tbody>{body}</tbody></table>'
    labels = [label for label, _ in columns][1:]
    if theme.listing == "cards":
        tiles = "".join(f'<div class="tile">{name}' + "".join(f'<div class="muted">{esc(k)}: {c}</div>'
                                                              for k, c in zip(labels, cells)) + "</div>"
                        for name, cells in rows)
        return f'<div class="grid">{tiles}</div>'
    items = "".join(f"<li>{name} — " + " · ".join(f"{esc(k)} {c}" for k, c in zip(labels, cells)) + "</li>"
                    for name, cells in rows)
    return f'<ul class="results">{items}</ul>'


def count_line(theme: Theme, total: int, page: int, plural: str) -> str:
    """How many rows a listing found, in the theme's words."""
    if theme.count == "found":
        return f'<p class="muted">{total} {esc(plural)} found</p>'
    if theme.count == "showing":
        first = (page - 1) * theme.page_size + 1 if total else 0
        last = min(total, page * theme.page_size)
        return f'<p class="muted">Showing {first}–{last} of {total}</p>'
    return f'<p class="muted">{total} results</p>'


def query_href(base: str, params: dict[str, str], **changes: str | int) -> str:
    """``base?params`` with some fields changed (empty values dropped, ``page`` reset unless given)."""
    merged = {k: v for k, v in params.items() if k != "page"}
    merged.update({k: str(v) for k, v in changes.items()})
    kept = {k: v for k, v in merged.items() if v not in ("", None)}
    return f"{base}?{urlencode(kept)}" if kept else base


def pager(theme: Theme, base: str, params: dict[str, str], page: int, total: int) -> str:
    """Links to the neighbouring pages, in the theme's style."""
    pages = max(1, -(-total // theme.page_size))
    if pages == 1:
        return ""
    prev, nxt = theme.labels["prev"], theme.labels["next"]
    parts = []
    if theme.pager == "numbers":
        if page > 1:
            parts.append(link(query_href(base, params, page=page - 1), prev))
        for p in range(1, pages + 1):
            parts.append(f'<span class="current">{p}</span>' if p == page else link(query_href(base, params, page=p),
                                                                                     str(p)))
        if page < pages:
            parts.append(link(query_href(base, params, page=page + 1), nxt))
    else:
        if page > 1:
            parts.append(link(query_href(base, params, page=page - 1), prev))
        parts.append(f'<span class="current">Page {page} of {pages}</span>')
        if page < pages:
            parts.append(link(query_href(base, params, page=page + 1), nxt))
    return f'<nav class="pager">{"".join(parts)}</nav>'

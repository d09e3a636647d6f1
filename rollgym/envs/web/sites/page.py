"""What every site's pages are made of, hand-written or generated: escaping, user-written text, drop-down
options, a pager and money.

Every piece of user or database text that reaches a page goes through :func:`esc`; text that a
user wrote goes through :func:`user_text`, whose ``data-rg-user`` mark lets observations show it
quoted, so it cannot pass as the site's own headings or banners.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

PER_PAGE = 10
"""Rows per page on every paginated listing."""


def esc(value: Any) -> str:
    """HTML-escape any value for text or a quoted attribute."""
    return html.escape(str(value), quote=True)


def user_text(value: Any, tag: str = "span") -> str:
    """Escaped text that a user wrote, in a ``tag`` marked ``data-rg-user``; observations show it quoted.

    Example:
        >>> user_text("SYSTEM: <b>hi</b>", "p")
        '<p data-rg-user>SYSTEM: &lt;b&gt;hi&lt;/b&gt;</p>'
    """
    return f"<{tag} data-rg-user>{esc(value)}</{tag}>"


def money(cents: int) -> str:
    """Format cents as dollars, e.g. ``money(1234) == "$12.34"``."""
    return f"${cents // 100:,}.{cents % 100:02d}"


def options(values: Iterable[tuple[str, str]], selected: str) -> str:
    """``<option>`` tags for ``(value, label)`` pairs with one selected."""
    out = []
    for value, label in values:
        sel = " selected" if value == selected else ""
        out.append(f'<option value="{esc(value)}"{sel}>{esc(label)}</option>')
    return "".join(out)


def pager(base: str, params: dict[str, str], page: int, total: int, per_page: int = PER_PAGE) -> str:
    """Previous/next links and a "page i of n" marker for a listing of ``total`` rows."""
    pages = max(1, (total + per_page - 1) // per_page)
    if pages == 1:
        return ""
    keep = {k: v for k, v in params.items() if v and k != "page"}

    def link(p: int, label: str) -> str:
        return f'<a href="{esc(base)}?{esc(urlencode({**keep, "page": p}))}">{label}</a>'

    parts = []
    if page > 1:
        parts.append(link(page - 1, "&larr; Previous"))
    parts.append(f'<span class="current">Page {page} of {pages}</span>')
    if page < pages:
        parts.append(link(page + 1, "Next &rarr;"))
    return f'<nav class="pager">{"".join(parts)}</nav>'


def data_table(heads: Iterable[str], body: str) -> str:
    """A ``table.data``: a header row of plain-text ``heads``, then ``body``, its ``<tr>`` rows.

    Example:
        >>> data_table(["Order", "Total"], "")
        '<table class="data"><thead><tr><th>Order</th><th>Total</th></tr></thead><tbody></tbody></table>'
    """
    cells = "".join(f"<th>{esc(head)}</th>" for head in heads)
    return f'<table class="data"><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>'

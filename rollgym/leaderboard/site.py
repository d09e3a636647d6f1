"""The leaderboard as pages: rows from the database, and every page of the static site."""

from __future__ import annotations

import os
from pathlib import Path

from rollgym.core.io import write_bytes_atomic
from rollgym.leaderboard.db import Store, Submission, utcnow
from rollgym.leaderboard.pages import (
    Links,
    Row,
    TicketView,
    entry_names,
    render_env,
    render_index,
    render_submission,
    render_submitter,
    render_suite,
)


def to_row(store: Store, sub: Submission) -> Row:
    """A submission as the pages show it (with its submitter's ticket counts for the suite)."""
    agent = (sub.manifest or {}).get("agent") or {}
    tickets = [t for t in store.tickets_of(sub.submitter_id) if t.suite == sub.suite]
    return Row(
        id=sub.id,
        label=sub.label or str(agent.get("label") or sub.id[:8]),
        submitter=store.submitter_name(sub.submitter_id),
        suite=sub.suite or "",
        score=sub.score,
        model_size_b=sub.model_size_b,
        created=sub.created,
        summary=sub.summary or {},
        manifest=sub.manifest or {},
        status=sub.status,
        reasons=list(sub.reasons or []),
        tickets_issued=len(tickets),
        tickets_used=sum(1 for t in tickets if t.used_at is not None),
    )


def suite_rows(store: Store) -> list[tuple[str, list[Row]]]:
    """Accepted submissions grouped by suite label."""
    return [(label, [to_row(store, s) for s in store.submissions(label, "accepted")]) for label in store.suites()]


def submitter_page(store: Store, name: str, links: Links) -> str | None:
    """A submitter's public page (every ticket and submission), or ``None`` for an unknown name."""
    person = store.submitter_named(name)
    if person is None:
        return None
    subs = {s.id: s for s in store.submissions(submitter_id=person.id)}
    now = utcnow()
    views = []
    for t in store.tickets_of(person.id):
        state = t.state(now)
        sub = subs.get(t.id)
        views.append(TicketView(
            id=t.id, suite=t.suite, issued=t.issued_at, expires=t.expires_at, state=state,
            seed=None if state == "open" else t.seed,
            submission_status=sub.status if sub is not None else None,
            score=sub.score if sub is not None else None,
        ))
    rows = [to_row(store, s) for s in subs.values()]
    return render_submitter(person.name, views, rows, links)


def render_site(store: Store) -> dict[str, str]:
    """Every page of the static site: file name -> HTML."""
    links = Links(static=True)
    suites = suite_rows(store)
    pages = {links.home(): render_index(suites, links)}
    submitters: set[str] = set()
    for label, rows in suites:
        pages[links.suite(label)] = render_suite(label, rows, links)
        for entry in entry_names(rows):
            pages[links.env(label, entry)] = render_env(label, entry, rows, links)
        for row in rows:
            pages[links.submission(row.id)] = render_submission(row, links)
            submitters.add(row.submitter)
    for name in sorted(submitters):
        html = submitter_page(store, name, links)
        person = store.submitter_named(name)
        if html is None or person is None:
            continue
        pages[links.submitter(name)] = html
        for sub in store.submissions(submitter_id=person.id):  # rejected ones too: the page links them
            pages.setdefault(links.submission(sub.id), render_submission(to_row(store, sub), links))
    return pages


def export_site(store: Store, out_dir: str | os.PathLike[str]) -> Path:
    """Write the static site (plain HTML files with inline SVG and JS) into ``out_dir``; return its index."""
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for name, html in render_site(store).items():
        write_bytes_atomic(folder / name, html.encode("utf-8"))
    return folder / "index.html"

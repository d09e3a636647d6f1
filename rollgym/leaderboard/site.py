"""The leaderboard as pages: rows from the database, and every page of the static site."""

from __future__ import annotations

import os
from pathlib import Path

from rollgym.leaderboard.db import Store, Submission
from rollgym.leaderboard.pages import Links, Row, entry_names, render_env, render_index, render_submission, render_suite


def to_row(store: Store, sub: Submission) -> Row:
    """A submission as the pages show it."""
    agent = (sub.manifest or {}).get("agent") or {}
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
    )


def suite_rows(store: Store) -> list[tuple[str, list[Row]]]:
    """Accepted submissions grouped by suite label."""
    return [(label, [to_row(store, s) for s in store.submissions(label, "accepted")]) for label in store.suites()]


def render_site(store: Store) -> dict[str, str]:
    """Every page of the static site: file name -> HTML."""
    links = Links(static=True)
    suites = suite_rows(store)
    pages = {links.home(): render_index(suites, links)}
    for label, rows in suites:
        pages[links.suite(label)] = render_suite(label, rows, links)
        for entry in entry_names(rows):
            pages[links.env(label, entry)] = render_env(label, entry, rows, links)
        for row in rows:
            pages[links.submission(row.id)] = render_submission(row, links)
    return pages


def export_site(store: Store, out_dir: str | os.PathLike[str]) -> Path:
    """Write the static site (plain HTML files with inline SVG and JS) into ``out_dir``; return its index."""
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for name, html in render_site(store).items():
        tmp = folder / f".{name}.tmp"
        tmp.write_text(html, encoding="utf-8")
        os.replace(tmp, folder / name)
    return folder / "index.html"

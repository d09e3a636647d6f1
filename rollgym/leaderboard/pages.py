"""HTML pages of the leaderboard, rendered on the server (and by the static export).

Pages: the index (one line per suite), a suite's ranking (sortable columns, a
little vanilla JS; plots of score versus model size and date), a ranking per env
(entry) of a suite, and each submission's details (manifest, per-env bars with
95% intervals, per-difficulty tables, ratings). :class:`Links` maps pages to
server routes or to static file names, so both share one renderer.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from dataclasses import dataclass, field
from html import escape
from typing import Any
from urllib.parse import quote

from rollgym.leaderboard.plots import Bar, Point, bars, scatter

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#111827;background:#f9fafb}
header{background:#111827;color:#fff;padding:12px 24px}header a{color:#fff;text-decoration:none;font-weight:600}
main{padding:16px 24px;max-width:1200px}h1{font-size:22px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;background:#fff;font-size:13px;margin:8px 0}
th,td{border:1px solid #e5e7eb;padding:5px 9px;text-align:right}td.nowrap{white-space:nowrap}
th{background:#f3f4f6;white-space:nowrap}
td.text,th.text{text-align:left}th.sortable{cursor:pointer;user-select:none}th.sortable:hover{background:#e5e7eb}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
.ci{color:#6b7280;font-size:11px}.plots{display:flex;flex-wrap:wrap;gap:16px}
.plot{background:#fff;border:1px solid #e5e7eb}
.status-accepted{color:#15803d}.status-rejected{color:#b91c1c}.muted{color:#6b7280}code{font-size:12px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;font-size:13px}dt{font-weight:600}
"""

#: What the pages say about the names, models and sizes submitters give.
SELF_REPORTED = (
    "Self-reported: the submitter names the model, agent and size; nothing can verify them. The score is "
    "verified: every transcript is replayed and the summary recomputed."
)

SORT_JS = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th.sortable').forEach(function (th, index) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var descending = th.getAttribute('aria-sort') !== 'descending';
      table.querySelectorAll('th').forEach(function (other) { other.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
      var col = th.cellIndex;
      function key(row) {
        var cell = row.cells[col];
        var raw = cell.getAttribute('data-sort');
        if (raw === null) { raw = cell.textContent.trim(); }
        var number = parseFloat(raw);
        return isNaN(number) ? raw.toLowerCase() : number;
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (typeof x !== typeof y) { return typeof x === 'number' ? -1 : 1; }
        var order = x < y ? -1 : (x > y ? 1 : 0);
        return descending ? -order : order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


@dataclass(frozen=True)
class Links:
    """Where pages live: server routes (``static=False``) or static file names."""

    static: bool = False

    def home(self) -> str:
        """The index page."""
        return "index.html" if self.static else "/"

    def suite(self, label: str) -> str:
        """A suite's ranking."""
        return f"suite-{_slug(label)}.html" if self.static else f"/suite/{quote(label)}"

    def env(self, label: str, entry: str) -> str:
        """One entry's (env's) ranking within a suite."""
        return f"env-{_slug(label)}-{_slug(entry)}.html" if self.static else f"/suite/{quote(label)}/env/{quote(entry)}"

    def submission(self, submission_id: str) -> str:
        """A submission's details."""
        return f"entry-{_slug(submission_id)}.html" if self.static else f"/entry/{quote(submission_id)}"

    def submitter(self, name: str) -> str:
        """A submitter's public page: every submission and every ticket issued to them."""
        if self.static:
            return f"submitter-{_slug(name)}-{hashlib.sha256(name.encode()).hexdigest()[:8]}.html"
        return f"/submitter/{quote(name, safe='')}"


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


@dataclass
class Row:
    """An accepted submission as the pages show it."""

    id: str
    label: str
    submitter: str
    suite: str
    score: float | None
    model_size_b: float | None
    created: dt.datetime
    summary: dict[str, Any]
    manifest: dict[str, Any] = field(default_factory=dict)
    status: str = "accepted"
    reasons: list[str] = field(default_factory=list)
    tickets_issued: int = 0
    tickets_used: int = 0

    @property
    def reference(self) -> bool:
        """A reference agent (oracle, random, ...): no model, so no model size."""
        return (self.manifest or {}).get("agent", {}).get("kind") == "reference"

    def size_text(self) -> str:
        """The model size as the pages show it: ``7 B``, ``n/a (reference agent)`` or blank when not reported."""
        if self.model_size_b is not None:
            return f"{self.model_size_b:g} B"
        return "n/a (reference agent)" if self.reference else ""

    def entry(self, name: str) -> dict[str, Any]:
        """The summary of one entry ({} when absent)."""
        return dict((self.summary or {}).get("entries", {}).get(name, {}))


def _num(value: Any) -> float:
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _pct(estimate: dict[str, Any] | None, interval: bool = True) -> str:
    value = _num((estimate or {}).get("value"))
    if math.isnan(value):
        return '<span class="muted">n/a</span>'
    text = f"{100 * value:.1f}%"
    low, high = _num(estimate.get("low")), _num(estimate.get("high"))  # type: ignore[union-attr]
    if interval and not math.isnan(low):
        text += f' <span class="ci">[{100 * low:.1f}, {100 * high:.1f}]</span>'
    return text


def _sort_value(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.6f}"


def page(title: str, body: str, links: Links) -> str:
    """A full HTML document with the site header, styles and the sorting script."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f'<meta name=viewport content="width=device-width,initial-scale=1"><title>{escape(title)}</title>'
        f"<style>{CSS}</style></head><body>"
        f'<header><a href="{links.home()}">rollgym leaderboard</a></header><main>{body}</main>'
        f"<script>{SORT_JS}</script></body></html>"
    )


def entry_names(rows: list[Row]) -> list[str]:
    """Entry names in the order the newest submission lists them, then any others."""
    names: list[str] = []
    for row in sorted(rows, key=lambda r: r.created, reverse=True):
        for name in (row.summary or {}).get("entries", {}):
            if name not in names:
                names.append(name)
    return names


def ladder_names(rows: list[Row]) -> list[str]:
    """Game ladders rated in any of the rows."""
    return sorted({ladder for r in rows for ladder in (r.summary or {}).get("ratings", {})})


def render_index(suites: list[tuple[str, list[Row]]], links: Links) -> str:
    """The front page: one line per suite with its best submission."""
    body = ["<h1>Leaderboards</h1>"]
    if not suites:
        body.append("<p>No verified submissions yet. Run <code>rollgym bench run quick --agent oracle --out run</code> "
                    "and submit the bundle.</p>")
    else:
        body.append('<table><thead><tr><th class="text">suite</th><th>submissions</th><th class="text">best</th>'
                    "<th>score</th></tr></thead><tbody>")
        for label, rows in suites:
            best = max(rows, key=lambda r: _num(r.score) if not math.isnan(_num(r.score)) else -1)
            body.append(
                f'<tr><td class="text"><a href="{links.suite(label)}">{escape(label)}</a></td><td>{len(rows)}</td>'
                f'<td class="text"><a href="{links.submission(best.id)}">{escape(best.label)}</a></td>'
                f"<td>{_pct({'value': best.score}, False)}</td></tr>"
            )
        body.append("</tbody></table>")
    return page("rollgym leaderboard", "".join(body), links)


def render_suite(label: str, rows: list[Row], links: Links) -> str:
    """A suite's ranking with sortable columns and plots."""
    rows = sorted(rows, key=lambda r: -_num(r.score) if not math.isnan(_num(r.score)) else math.inf)
    names = entry_names(rows)
    ladders = ladder_names(rows)
    with_tickets = any(r.tickets_issued for r in rows)
    head = ['<th class="sortable">rank</th>', f'<th class="sortable text" title="{SELF_REPORTED}">model †</th>',
            '<th class="sortable text">submitter</th>', f'<th class="sortable" title="{SELF_REPORTED}">size (B) †</th>',
            '<th class="sortable">date</th>', '<th class="sortable">tasks</th>']
    if with_tickets:
        head.append('<th class="sortable" title="hidden-seed tickets the submitter was issued for this suite, '
                    'and how many were uploaded">tickets used/issued</th>')
    head.append('<th class="sortable" aria-sort="descending">score</th>')
    head += [f'<th class="sortable"><a href="{links.env(label, n)}">{escape(n)}</a></th>' for n in names]
    head += [f'<th class="sortable">Elo {escape(ladder)}</th>' for ladder in ladders]
    body_rows = []
    for rank, row in enumerate(rows, 1):
        size = _num(row.model_size_b)
        cells = [
            f'<td data-sort="{rank}">{rank}</td>',
            f'<td class="text"><a href="{links.submission(row.id)}">{escape(row.label)}</a></td>',
            f'<td class="text"><a href="{links.submitter(row.submitter)}">{escape(row.submitter)}</a></td>',
            f'<td data-sort="{_sort_value(size)}">{escape(row.size_text().removesuffix(" B"))}</td>',
            f'<td class="nowrap" data-sort="{86400 * _epoch_days(row.created):.0f}">{row.created:%Y-%m-%d}</td>',
            f'<td class="text">{escape(_coverage(row.manifest))}</td>',
        ]
        if with_tickets:
            cells.append(f'<td data-sort="{row.tickets_issued}">'
                         f'<a href="{links.submitter(row.submitter)}">{row.tickets_used}/{row.tickets_issued}</a></td>')
        cells.append(f'<td data-sort="{_sort_value(_num(row.score))}">{_pct({"value": row.score}, False)}</td>')
        for name in names:
            accuracy = row.entry(name).get("accuracy")
            cells.append(f'<td data-sort="{_sort_value(_num((accuracy or {}).get("value")))}">{_pct(accuracy)}</td>')
        for ladder in ladders:
            rating = (row.summary or {}).get("ratings", {}).get(ladder)
            elo = _num((rating or {}).get("elo"))
            text = ""
            if rating and not math.isnan(elo):
                text = f'{elo:.0f} <span class="ci">[{rating["low"]:.0f}, {rating["high"]:.0f}]</span>'
            cells.append(f'<td data-sort="{_sort_value(elo)}">{text}</td>')
        body_rows.append(f'<tr data-id="{escape(row.id)}">{"".join(cells)}</tr>')
    table = _sortable_table("ranking", f'<tr>{"".join(head)}</tr>', body_rows)
    size_points = [Point(_num(r.model_size_b), _num(r.score), r.label, links.submission(r.id)) for r in rows]
    date_points = [Point(_epoch_days(r.created), _num(r.score), r.label, links.submission(r.id)) for r in rows]
    sized = [p for p in size_points if p.x > 0 and not math.isnan(p.y)]
    if sized:
        size_plot = scatter(size_points, title="Score versus model size", x_label="parameters (billions, log scale)",
                            log_x=True)
    else:  # e.g. only the reference agents of `rollgym demo`: there is no model, so there is no size to plot
        why = ("reference agents have no model size" if rows and all(r.reference for r in rows)
               else "no submission reports a model size (bench run --model-size)")
        size_plot = f'<p class="empty-plot">Score versus model size: nothing to plot yet; {why}.</p>'
    plots = '<div class="plots">' + size_plot + _date_scatter(date_points) + "</div>"
    envs = " · ".join(f'<a href="{links.env(label, n)}">{escape(n)}</a>' for n in names)
    body = (
        f"<h1>{escape(label)}</h1><p>{len(rows)} verified submission(s). Score: mean accuracy over entries. "
        f"Intervals are 95%. Click a column to sort.</p>{table}<p class=\"muted\">† {SELF_REPORTED}</p>"
        f"<h2>Rankings per env</h2><p>{envs}</p>"
        f"<h2>Plots</h2>{plots}"
    )
    return page(f"{label} leaderboard", body, links)


def _coverage(manifest: dict[str, Any]) -> str:
    """``full``, or how a partial run was cut (``--limit``, ``--only``)."""
    parts = []
    if manifest.get("limit") is not None:
        parts.append(f"≤{manifest['limit']} per entry")
    if manifest.get("only"):
        parts.append(f"{len(manifest['only'])} entries")
    return ", ".join(parts) or "full"


def _date_scatter(points: list[Point]) -> str:
    """Score versus submission time; x is in days since the epoch, ticks read as dates or times."""
    xs = [p.x for p in points if p.x == p.x]
    span_days = (max(xs) - min(xs)) if xs else 0.0
    pattern = "%Y-%m-%d" if span_days >= 2 else ("%m-%d %H:%M" if span_days >= 0.01 else "%H:%M:%S")

    def as_date(day: float) -> str:
        return f"{dt.datetime.fromtimestamp(day * 86400, dt.timezone.utc):{pattern}}"

    return scatter(points, title="Score versus submission date", x_label="submission date (UTC)", x_format=as_date)


def _epoch_days(moment: dt.datetime) -> float:
    """Days since the epoch of a naive UTC time (as the database stores it)."""
    return moment.replace(tzinfo=dt.timezone.utc).timestamp() / 86400.0


def render_env(label: str, entry: str, rows: list[Row], links: Links) -> str:
    """The ranking of one entry (env configuration) of a suite."""
    present = [r for r in rows if r.entry(entry)]
    present.sort(key=lambda r: -_num(r.entry(entry).get("accuracy", {}).get("value")))
    head = ("<tr><th class='sortable'>rank</th><th class='sortable text'>model</th>"
            "<th class='sortable' aria-sort='descending'>accuracy</th><th class='sortable'>mean reward</th>"
            "<th class='sortable'>pass@k</th><th class='sortable'>best-of-k</th>"
            "<th class='sortable'>episodes</th></tr>")
    body_rows = []
    for rank, row in enumerate(present, 1):
        s = row.entry(entry)
        kmax = max(s.get("pass_at_k", {}) or {"1": None}, key=int)
        reward = s.get("mean_reward") or {}
        best = (s.get("best_of_k") or {}).get(kmax) or {}
        body_rows.append(
            f'<tr><td>{rank}</td><td class="text"><a href="{links.submission(row.id)}">{escape(row.label)}</a></td>'
            f'<td data-sort="{_sort_value(_num(s.get("accuracy", {}).get("value")))}">{_pct(s.get("accuracy"))}</td>'
            f'<td data-sort="{_sort_value(_num(reward.get("value")))}">{_fmt_num(reward)}</td>'
            f'<td data-sort="{_sort_value(_num((s.get("pass_at_k") or {}).get(kmax, {}).get("value")))}">'
            f'@{kmax} {_pct((s.get("pass_at_k") or {}).get(kmax))}</td>'
            f'<td data-sort="{_sort_value(_num(best.get("value")))}">@{kmax} {_fmt_num(best)}</td>'
            f'<td>{s.get("episodes", "")}</td></tr>'
        )
    chart = bars(
        [Bar(r.label, _num(r.entry(entry)["accuracy"]["value"]), _num(r.entry(entry)["accuracy"]["low"]),
             _num(r.entry(entry)["accuracy"]["high"])) for r in present],
        title=f"{entry}: accuracy per submission (95% intervals)",
    )
    env_id = present[0].entry(entry).get("env_id", "") if present else ""
    body = (
        f'<h1><a href="{links.suite(label)}">{escape(label)}</a> / {escape(entry)}</h1>'
        f"<p>env <code>{escape(str(env_id))}</code></p>{_sortable_table('env-ranking', head, body_rows)}"
        f'<div class="plots">{chart}</div>'
    )
    return page(f"{label} / {entry}", body, links)


def _sortable_table(table_id: str, head: str, rows: list[str]) -> str:
    """A table of ``rows`` under the header row ``head`` that the page's script sorts by a clicked column."""
    return f'<table class="sortable" id="{table_id}"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _fmt_num(estimate: dict[str, Any]) -> str:
    value = _num(estimate.get("value"))
    if math.isnan(value):
        return '<span class="muted">n/a</span>'
    low, high = _num(estimate.get("low")), _num(estimate.get("high"))
    ci = "" if math.isnan(low) else f' <span class="ci">[{low:.3f}, {high:.3f}]</span>'
    return f"{value:.3f}{ci}"


def render_submission(row: Row, links: Links) -> str:
    """One submission: its facts, per-env bars, per-entry and per-difficulty tables, ratings."""
    manifest = row.manifest or {}
    agent = manifest.get("agent") or {}
    suite = manifest.get("suite") or {}
    facts = {
        "status": f'<span class="status-{escape(row.status)}">{escape(row.status)}</span>',
        "suite": f'<a href="{links.suite(row.suite)}">{escape(row.suite)}</a>' if row.suite else "",
        "submitter": f'<a href="{links.submitter(row.submitter)}">{escape(row.submitter)}</a>',
        "submitted": f"{row.created:%Y-%m-%d %H:%M} UTC",
        "score": _pct({"value": row.score}, False)
        + ' <span class="muted">(recomputed by replaying the transcripts)</span>',
        "name (self-reported)": escape(row.label),
        "agent (self-reported)": escape(str(agent.get("kind", ""))) + " "
        + escape(str(agent.get("agent") or agent.get("model") or "")),
        "model size (self-reported)": escape(row.size_text()),
        "sampling": f"<code>{escape(json.dumps(agent.get('sampling') or {}))}</code>",
        "task hash": f"<code>{escape(str(suite.get('task_hash', '')))}</code>",
        "seed": escape(str(manifest.get("seed"))) if manifest.get("seed") is not None else "suite default",
        "tasks per entry": "full suite" if manifest.get("limit") is None else f"limited to {manifest.get('limit')}",
        "rollgym": escape(str(manifest.get("rollgym_version", ""))),
        "machine": escape(str((manifest.get("machine") or {}).get("platform", ""))),
    }
    if row.tickets_issued:
        facts["tickets"] = (f'<a href="{links.submitter(row.submitter)}">{row.tickets_used} of '
                            f"{row.tickets_issued}</a> hidden-seed tickets for this suite uploaded")
    parts = [f'<h1>{escape(row.label)} <span class="muted" title="{SELF_REPORTED}">(self-reported name)</span></h1>',
             f'<p class="muted">{SELF_REPORTED}</p>', "<dl>"]
    parts += [f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in facts.items()]
    parts.append("</dl>")
    if row.reasons:
        items = "".join(f"<li>{escape(r)}</li>" for r in row.reasons)
        parts.append(f"<h2>Why it was rejected</h2><ul>{items}</ul>")
    entries = (row.summary or {}).get("entries", {})
    if entries:
        parts.append('<div class="plots">' + bars(
            [Bar(name, _num(s["accuracy"]["value"]), _num(s["accuracy"]["low"]), _num(s["accuracy"]["high"]))
             for name, s in entries.items()],
            title="Accuracy per env (95% intervals)",
        ) + "</div>")
        parts.append('<h2>Per env</h2><table class="sortable" id="entries"><thead><tr>'
                     '<th class="sortable text">entry</th><th class="sortable text">env</th>'
                     '<th class="sortable">accuracy</th><th class="sortable">mean reward</th>'
                     '<th class="sortable">pass@k</th><th class="sortable">pass^k</th>'
                     '<th class="sortable">episodes</th><th class="sortable">failures</th></tr></thead><tbody>')
        for name, s in entries.items():
            kmax = max(s.get("pass_at_k") or {"1": None}, key=int)
            parts.append(
                f'<tr><td class="text"><a href="{links.env(row.suite, name)}">{escape(name)}</a></td>'
                f'<td class="text">{escape(str(s.get("env_id", "")))}</td>'
                f'<td data-sort="{_sort_value(_num(s["accuracy"]["value"]))}">{_pct(s["accuracy"])}</td>'
                f'<td>{_fmt_num(s.get("mean_reward") or {})}</td>'
                f'<td>@{kmax} {_pct((s.get("pass_at_k") or {}).get(kmax))}</td>'
                f'<td>^{kmax} {_pct((s.get("pass_hat_k") or {}).get(kmax))}</td>'
                f'<td>{s.get("episodes", "")}</td><td>{s.get("failures", "")}</td></tr>'
            )
        parts.append("</tbody></table><h2>Per difficulty</h2>")
        parts.append('<table><thead><tr><th class="text">entry</th><th class="text">difficulty</th><th>tasks</th>'
                     "<th>accuracy</th><th>mean reward</th></tr></thead><tbody>")
        for name, s in entries.items():
            for bucket, d in (s.get("by_difficulty") or {}).items():
                key = s.get("difficulty_key")
                parts.append(
                    f'<tr><td class="text">{escape(name)}</td>'
                    f'<td class="text">{escape(f"{key}={bucket}" if key else bucket)}</td><td>{d.get("tasks")}</td>'
                    f'<td>{_pct(d.get("accuracy"))}</td><td>{_fmt_num(d.get("mean_reward") or {})}</td></tr>'
                )
        parts.append("</tbody></table>")
    ratings = (row.summary or {}).get("ratings") or {}
    if ratings:
        parts.append("<h2>Ratings against the bot ladder</h2><table><thead><tr><th class='text'>game</th><th>Elo</th>"
                     "<th>95% interval</th><th>games</th><th class='text'>anchors</th></tr></thead><tbody>")
        for ladder, r in ratings.items():
            anchors = ", ".join(f"{k}={v:g}" for k, v in (r.get("anchors") or {}).items())
            parts.append(f'<tr><td class="text">{escape(ladder)}</td><td>{_num(r["elo"]):.0f}</td>'
                         f'<td>{_num(r["low"]):.0f} to {_num(r["high"]):.0f}</td><td>{r["games"]}</td>'
                         f'<td class="text">{escape(anchors)}</td></tr>')
        parts.append("</tbody></table>")
    skipped = manifest.get("skipped") or []
    if skipped:
        parts.append("<h2>Skipped entries</h2><ul>" + "".join(
            f"<li>{escape(str(s.get('name')))}: {escape(str(s.get('reason')))}</li>" for s in skipped) + "</ul>")
    return page(f"{row.label} on {row.suite}", "".join(parts), links)


@dataclass(frozen=True)
class TicketView:
    """A hidden-seed ticket as the submitter's public page shows it."""

    id: str
    suite: str
    issued: dt.datetime
    expires: dt.datetime
    state: str
    seed: int | None
    submission_status: str | None = None
    score: float | None = None


def render_submitter(name: str, tickets: list[TicketView], rows: list[Row], links: Links) -> str:
    """A submitter's public page: every hidden-seed ticket issued (used or not) and every submission."""
    parts = [f"<h1>Submitter {escape(name)}</h1>"]
    if tickets:
        used = sum(1 for t in tickets if t.state == "used")
        parts.append(
            f"<h2>Hidden-seed tickets</h2><p>{len(tickets)} ticket(s) issued, {used} uploaded. Every ticket is listed, "
            "used or not, so running several seeds and uploading only the best is visible here.</p>"
            '<table class="sortable" id="tickets"><thead><tr><th class="sortable text">ticket</th>'
            '<th class="sortable text">suite</th><th class="sortable">issued</th><th class="sortable">expires</th>'
            '<th class="sortable text">state</th><th class="sortable">seed</th><th class="sortable text">result</th>'
            "</tr></thead><tbody>"
        )
        for t in tickets:
            result = ""
            if t.submission_status is not None:
                result = (f'<a href="{links.submission(t.id)}">{escape(t.submission_status)}</a> '
                          f"{_pct({'value': t.score}, False) if t.score is not None else ''}")
            seed = "hidden while open" if t.seed is None else str(t.seed)
            parts.append(
                f'<tr data-state="{escape(t.state)}"><td class="text"><code>{escape(t.id)}</code></td>'
                f'<td class="text">{escape(t.suite)}</td><td class="nowrap">{t.issued:%Y-%m-%d %H:%M}</td>'
                f'<td class="nowrap">{t.expires:%Y-%m-%d %H:%M}</td><td class="text">{escape(t.state)}</td>'
                f"<td>{escape(seed)}</td><td class=\"text\">{result}</td></tr>"
            )
        parts.append("</tbody></table>")
    parts.append(f'<h2>Submissions</h2><p class="muted">{SELF_REPORTED}</p>')
    if not rows:
        parts.append("<p>No submissions yet.</p>")
    else:
        parts.append('<table class="sortable" id="submissions"><thead><tr><th class="sortable text">model †</th>'
                     '<th class="sortable text">suite</th><th class="sortable">date</th>'
                     '<th class="sortable text">status</th><th class="sortable">score</th></tr></thead><tbody>')
        for row in rows:
            parts.append(
                f'<tr><td class="text"><a href="{links.submission(row.id)}">{escape(row.label)}</a></td>'
                f'<td class="text">{escape(row.suite)}</td><td class="nowrap">{row.created:%Y-%m-%d %H:%M}</td>'
                f'<td class="text status-{escape(row.status)}">{escape(row.status)}</td>'
                f'<td data-sort="{_sort_value(_num(row.score))}">{_pct({"value": row.score}, False)}</td></tr>'
            )
        parts.append("</tbody></table>")
    return page(f"Submitter {name}", "".join(parts), links)

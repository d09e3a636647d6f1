"""The leaderboard web application (FastAPI), its upload API and its HTML pages.

API (JSON; authenticate with ``Authorization: Bearer TOKEN``, tokens from
``rollgym leaderboard add-submitter``):

- ``POST /api/submissions?label=...&model_size_b=...[&ticket=ID]``: the body is a bundle
  ``.tar.gz`` (``rollgym bench run ... --tar``). It is checked (see
  :mod:`rollgym.leaderboard.ingest`), stored, and queued for verification:
  ``202 {"id", "status": "queued"}``. Too large: 413; not a bundle: 400; bad token: 401;
  a ticket of someone else: 403, used: 409, expired: 410; a bundle submitted already: 409; too many
  waiting uploads: 429; too many uploads in progress on the server: 503.
- ``POST /api/tickets?suite=quick``: with hidden test seeds (the server holds a secret), issues a
  ticket: a submission id and the seed to run with (``rollgym bench run --seed``); upload with
  ``ticket=``. Tickets are single-use, expire, are limited per submitter per day (429), and all
  of them, used or not, are listed on the submitter's public page.
- ``GET /api/submissions/{id}``: status (``issued``/``expired`` for an unused ticket, ``queued``,
  ``verifying``, ``accepted``, ``rejected``), reasons, score, and the ``self_reported`` claims.
- ``GET /api/leaderboard/{suite}``: the accepted submissions of a suite.
- ``GET /api/submitters/{name}``: every ticket and submission of a submitter.
- ``GET /api/health``: ``{"ok": true, "uploads_in_progress": n}``, answered on the event loop
  itself, which no upload ever blocks.

Pages: ``/`` (suites), ``/suite/{label}`` (ranking), ``/suite/{label}/env/{entry}``,
``/entry/{id}``, ``/submitter/{name}``.

The upload handler only streams bytes to a temporary file on the event loop; checking the
archive, reading its manifest and writing the database run in a small thread pool, so a
compression bomb or a slow disk never stalls other requests.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import re
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from rollgym.bundles.archive import DEFAULT_LIMITS, BundleLimits
from rollgym.core.errors import ConfigError
from rollgym.leaderboard import ingest
from rollgym.leaderboard.db import Store, Submission, TicketError, utcnow
from rollgym.leaderboard.ingest import IngestError, SelfReported
from rollgym.leaderboard.pages import Links, entry_names, render_env, render_index, render_submission, render_suite
from rollgym.leaderboard.site import submitter_page, suite_rows, to_row
from rollgym.leaderboard.worker import VerificationWorker

T = TypeVar("T")
_TICKET_RE = re.compile(r"[0-9a-f]{32}")


@dataclass
class Settings:
    """How the server runs.

    Attributes:
        db_url: A SQLAlchemy URL; ``sqlite:///leaderboard.db`` by default.
        data_dir: Where uploaded bundles are stored.
        limits: What an upload may cost to read (size, members, unpacked size, compression ratio);
            the verification worker reads stored bundles under the same limits.
        secret: Enables hidden test seeds: each ticket's seed is HMAC(secret, ticket id).
        allow_limit: Also accept partial runs (``--limit`` or ``--only``); off by default, so the
            ranking compares full suites only.
        worker: Run the verification worker in the server process.
        worker_delay_s: Pause after claiming each job (throttling; tests interrupt verification with it).
        ticket_ttl: How long a ticket stays usable.
        tickets_per_day: Tickets one submitter may be issued in any 24 hours.
        max_pending: Submissions one submitter may have waiting for verification.
        max_concurrent_uploads: Uploads streamed at once; more get 503 (bounds disk use under a flood).
        check_threads: Threads that check archives (the rest of the server never waits for them).
    """

    db_url: str = "sqlite:///leaderboard.db"
    data_dir: str = "leaderboard-data"
    limits: BundleLimits = DEFAULT_LIMITS
    secret: str | None = None
    allow_limit: bool = False
    worker: bool = True
    worker_delay_s: float = 0.0
    ticket_ttl: dt.timedelta = field(default_factory=lambda: dt.timedelta(hours=48))
    tickets_per_day: int = 5
    max_pending: int = 20
    max_concurrent_uploads: int = 8
    check_threads: int = 2

    @property
    def max_upload_bytes(self) -> int:
        """The largest accepted upload (the archive limit)."""
        return self.limits.max_archive_bytes


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header[:7].lower() == "bearer ":
        return header[7:].strip() or None
    return None


def _iso(moment: dt.datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _status(store: Store, sub: Submission) -> dict[str, Any]:
    job = store.job_of(sub.id)
    return {
        "id": sub.id,
        "status": sub.status,
        "suite": sub.suite,
        "label": sub.label,
        "score": sub.score,
        "seed": sub.seed,
        "reasons": list(sub.reasons or []),
        "attempts": job.attempts if job else 0,
        "created": sub.created.isoformat(),
        "submitter": store.submitter_name(sub.submitter_id),
        "self_reported": SelfReported.of(sub.manifest, sub.label, sub.model_size_b).to_dict(),
    }


def create_app(settings: Settings) -> FastAPI:
    """Build the app; its lifespan starts (and stops) the verification worker and the check threads."""
    store = Store(settings.db_url)
    bundles = Path(settings.data_dir) / "bundles"
    bundles.mkdir(parents=True, exist_ok=True)
    worker = VerificationWorker(store, allow_limit=settings.allow_limit, delay_s=settings.worker_delay_s,
                                limits=settings.limits)
    checks = ThreadPoolExecutor(max_workers=settings.check_threads, thread_name_prefix="rollgym-upload-check")
    uploads_in_progress = 0

    async def off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(checks, functools.partial(fn, *args, **kwargs))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        if settings.worker:
            worker.start()
        try:
            yield
        finally:
            worker.stop()
            checks.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(title="rollgym leaderboard", lifespan=lifespan)
    app.state.store = store
    links = Links(static=False)

    @app.get("/api/health")
    async def health() -> dict[str, Any]:
        return {"ok": True, "uploads_in_progress": uploads_in_progress}

    @app.post("/api/tickets")
    def ticket(request: Request, suite: str = "quick") -> JSONResponse:
        submitter = store.authenticate(_token(request))
        if submitter is None:
            return _error(401, "Missing or unknown token; pass 'Authorization: Bearer TOKEN'.")
        if not settings.secret:
            return _error(400, "This leaderboard uses the suites' public seeds; upload bundles without a ticket.")
        from rollgym.benchmarks.suite import builtin_suite, parse_suite_label
        from rollgym.leaderboard.verify import hidden_seed

        secret = settings.secret
        try:
            label = builtin_suite(*parse_suite_label(suite)).label
            issued = store.issue_ticket(submitter.id, label, lambda tid: hidden_seed(secret, tid),
                                        ttl=settings.ticket_ttl, per_day=settings.tickets_per_day)
        except TicketError as exc:
            return _error(exc.status, str(exc))
        except ConfigError as exc:
            return _error(400, str(exc))
        return JSONResponse({"submission_id": issued.id, "ticket": issued.id, "suite": label, "seed": issued.seed,
                             "issued": _iso(issued.issued_at), "expires": _iso(issued.expires_at),
                             "public_page": links.submitter(submitter.name)}, status_code=201)

    @app.post("/api/submissions")
    async def submit(request: Request, label: str | None = None, model_size_b: float | None = None,
                     ticket: str | None = None) -> JSONResponse:
        nonlocal uploads_in_progress
        submitter = await run_in_threadpool(store.authenticate, _token(request))
        if submitter is None:
            return _error(401, "Missing or unknown token; pass 'Authorization: Bearer TOKEN'.")
        limit = settings.limits.max_archive_bytes
        declared = request.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > limit:
            return _error(413, f"The upload is larger than {limit} bytes.")
        try:
            ingest.check_label(label)
            ingest.check_model_size(model_size_b)
        except IngestError as exc:
            return _error(exc.status, str(exc))
        if settings.secret and not ticket:
            return _error(400, "This leaderboard uses hidden seeds: POST /api/tickets first and run with its seed.")
        if ticket is not None and not settings.secret:
            return _error(400, "This leaderboard uses the suites' public seeds; upload without a ticket.")
        if ticket is not None and not _TICKET_RE.fullmatch(ticket):
            return _error(400, "A ticket is the 32-character hexadecimal id from POST /api/tickets.")
        if uploads_in_progress >= settings.max_concurrent_uploads:
            return JSONResponse({"error": "The server is receiving too many uploads; retry in a minute."},
                                status_code=503, headers={"Retry-After": "60"})
        uploads_in_progress += 1
        tmp = bundles / f".upload-{uuid.uuid4().hex}.tmp"
        try:
            size = 0
            with open(tmp, "wb") as out:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        return _error(413, f"The upload is larger than {limit} bytes.")
                    out.write(chunk)
            if size == 0:
                return _error(400, "The upload is empty; send the bundle .tar.gz as the request body.")
            sub = await off_loop(ingest.ingest_archive, store, tmp, submitter.id, data_dir=settings.data_dir,
                                 label=label, model_size_b=model_size_b, ticket=ticket, limits=settings.limits,
                                 max_pending=settings.max_pending)
        except ClientDisconnect:
            return _error(400, "The upload was cut off before its end.")
        except IngestError as exc:
            return _error(exc.status, str(exc))
        finally:
            uploads_in_progress -= 1
            tmp.unlink(missing_ok=True)
        return JSONResponse({"id": sub.id, "status": "queued", "url": f"/api/submissions/{sub.id}"}, status_code=202)

    @app.get("/api/submissions/{submission_id}")
    def submission_status(submission_id: str) -> JSONResponse:
        sub = store.get(submission_id)
        if sub is not None:
            return JSONResponse(_status(store, sub))
        issued = store.ticket(submission_id)
        if issued is not None:  # a ticket not used yet
            state = issued.state()
            return JSONResponse({"id": issued.id, "status": "issued" if state == "open" else state,
                                 "suite": issued.suite, "expires": _iso(issued.expires_at),
                                 "submitter": store.submitter_name(issued.submitter_id)})
        return _error(404, f"No submission {submission_id[:64]}.")

    @app.get("/api/submissions")
    def submissions() -> JSONResponse:
        return JSONResponse([_status(store, s) for s in store.submissions()])

    @app.get("/api/leaderboard/{suite}")
    def leaderboard(suite: str) -> JSONResponse:
        rows = [(to_row(store, s), s) for s in store.submissions(suite, "accepted")]
        rows.sort(key=lambda r: -(r[0].score if r[0].score is not None else -1))
        return JSONResponse([
            {"id": r.id, "label": r.label, "submitter": r.submitter, "score": r.score,
             "model_size_b": r.model_size_b, "created": r.created.isoformat(), "summary": r.summary,
             "self_reported": SelfReported.of(s.manifest, s.label, s.model_size_b).to_dict(),
             "tickets": {"issued": r.tickets_issued, "used": r.tickets_used}}
            for r, s in rows
        ])

    @app.get("/api/submitters/{name}")
    def submitter_api(name: str) -> JSONResponse:
        person = store.submitter_named(name)
        if person is None:
            return _error(404, f"No submitter {name[:100]!r}.")
        now = utcnow()
        tickets = []
        for t in store.tickets_of(person.id):
            state = t.state(now)
            tickets.append({"ticket": t.id, "suite": t.suite, "issued": _iso(t.issued_at),
                            "expires": _iso(t.expires_at), "state": state, "used_at": _iso(t.used_at),
                            "seed": None if state == "open" else t.seed})
        subs = [_status(store, s) for s in store.submissions(submitter_id=person.id)]
        return JSONResponse({"name": person.name, "tickets": tickets, "submissions": subs})

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return render_index(suite_rows(store), links)

    @app.get("/suite/{label}", response_class=HTMLResponse)
    def suite_page(label: str) -> HTMLResponse:
        rows = [to_row(store, s) for s in store.submissions(label, "accepted")]
        if not rows:
            return HTMLResponse("<p>No verified submissions for this suite.</p>", status_code=404)
        return HTMLResponse(render_suite(label, rows, links))

    @app.get("/suite/{label}/env/{entry}", response_class=HTMLResponse)
    def env_page(label: str, entry: str) -> HTMLResponse:
        rows = [to_row(store, s) for s in store.submissions(label, "accepted")]
        if entry not in entry_names(rows):
            return HTMLResponse("<p>No results for this env in this suite.</p>", status_code=404)
        return HTMLResponse(render_env(label, entry, rows, links))

    @app.get("/entry/{submission_id}", response_class=HTMLResponse)
    def entry_page(submission_id: str) -> HTMLResponse:
        sub = store.get(submission_id)
        if sub is None:
            return HTMLResponse("<p>No such submission.</p>", status_code=404)
        return HTMLResponse(render_submission(to_row(store, sub), links))

    @app.get("/submitter/{name}", response_class=HTMLResponse)
    def submitter_html(name: str) -> HTMLResponse:
        html = submitter_page(store, name, links)
        if html is None:
            return HTMLResponse("<p>No such submitter.</p>", status_code=404)
        return HTMLResponse(html)

    return app


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8080) -> None:
    """Run the app with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")

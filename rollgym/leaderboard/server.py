"""The leaderboard web application (FastAPI), its upload API and its HTML pages.

API (JSON; authenticate with ``Authorization: Bearer TOKEN``, tokens from
``rollgym leaderboard add-submitter``):

- ``POST /api/submissions?label=...&model_size_b=...[&ticket=ID]``: the body is a bundle
  ``.tar.gz`` (``rollgym bench run ... --tar``). It is checked to be a readable bundle of a
  known suite, stored, and queued for verification: ``202 {"id", "status": "queued"}``.
  Too large: 413; not a bundle: 400; bad token: 401.
- ``POST /api/tickets?suite=quick``: with hidden test seeds (the server holds a secret), issues a
  submission id and the seed to run with (``rollgym bench run --seed``); upload with ``ticket=``.
- ``GET /api/submissions/{id}``: status (``queued``, ``verifying``, ``accepted``, ``rejected``),
  reasons, score. ``GET /api/leaderboard/{suite}``: the accepted submissions of a suite.

Pages: ``/`` (suites), ``/suite/{label}`` (ranking), ``/suite/{label}/env/{entry}``,
``/entry/{id}``.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse

from rollgym.benchmarks.bundle import BundleError, open_bundle
from rollgym.core.errors import ConfigError
from rollgym.leaderboard.db import Store
from rollgym.leaderboard.pages import Links, entry_names, render_env, render_index, render_submission, render_suite
from rollgym.leaderboard.site import suite_rows, to_row
from rollgym.leaderboard.worker import VerificationWorker


@dataclass
class Settings:
    """How the server runs.

    Attributes:
        db_url: A SQLAlchemy URL; ``sqlite:///leaderboard.db`` by default.
        data_dir: Where uploaded bundles are stored.
        max_upload_bytes: Largest accepted upload.
        secret: Enables hidden test seeds: each ticket's seed is HMAC(secret, submission id).
        allow_limit: Also accept partial runs (``--limit`` or ``--only``); off by default, so the
            ranking compares full suites only.
        worker: Run the verification worker in the server process.
        worker_delay_s: Pause after claiming each job (throttling; tests interrupt verification with it).
    """

    db_url: str = "sqlite:///leaderboard.db"
    data_dir: str = "leaderboard-data"
    max_upload_bytes: int = 64 * 1024 * 1024
    secret: str | None = None
    allow_limit: bool = False
    worker: bool = True
    worker_delay_s: float = 0.0


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return None


def _status(store: Store, sub: Any) -> dict[str, Any]:
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
    }


def create_app(settings: Settings) -> FastAPI:
    """Build the app; its lifespan starts (and stops) the verification worker."""
    store = Store(settings.db_url)
    bundles = Path(settings.data_dir) / "bundles"
    bundles.mkdir(parents=True, exist_ok=True)
    worker = VerificationWorker(store, allow_limit=settings.allow_limit, delay_s=settings.worker_delay_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        if settings.worker:
            worker.start()
        try:
            yield
        finally:
            worker.stop()

    app = FastAPI(title="rollgym leaderboard", lifespan=lifespan)
    app.state.store = store
    links = Links(static=False)

    @app.get("/api/health")
    def health() -> dict[str, Any]:
        return {"ok": True}

    @app.post("/api/tickets")
    def ticket(request: Request, suite: str = "quick") -> JSONResponse:
        submitter = store.authenticate(_token(request))
        if submitter is None:
            return _error(401, "Missing or unknown token; pass 'Authorization: Bearer TOKEN'.")
        if not settings.secret:
            return _error(400, "This leaderboard uses the suites' public seeds; upload bundles without a ticket.")
        from rollgym.benchmarks.suite import load_suite
        from rollgym.benchmarks.verify import hidden_seed

        try:
            label = load_suite(suite).label
        except ConfigError as exc:
            return _error(400, str(exc))
        sid = uuid.uuid4().hex
        seed = hidden_seed(settings.secret, sid)
        store.issue_ticket(submitter.id, label, seed, sid)
        return JSONResponse({"submission_id": sid, "suite": label, "seed": seed}, status_code=201)

    @app.post("/api/submissions")
    async def submit(request: Request, label: str | None = None, model_size_b: float | None = None,
                     ticket: str | None = None) -> JSONResponse:
        submitter = store.authenticate(_token(request))
        if submitter is None:
            return _error(401, "Missing or unknown token; pass 'Authorization: Bearer TOKEN'.")
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > settings.max_upload_bytes:
            return _error(413, f"The upload is larger than {settings.max_upload_bytes} bytes.")
        if label is not None and not 0 < len(label) <= 200:
            return _error(400, "label must be 1 to 200 characters.")
        if settings.secret and not ticket:
            return _error(400, "This leaderboard uses hidden seeds: POST /api/tickets first and run with its seed.")
        sid = ticket or uuid.uuid4().hex
        if len(sid) > 32 or not sid.isalnum():
            return _error(400, "A ticket is the 32-character submission id from POST /api/tickets.")
        tmp = bundles / f".upload-{uuid.uuid4().hex}.tmp"
        digest = hashlib.sha256()
        size = 0
        try:
            with open(tmp, "wb") as out:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > settings.max_upload_bytes:
                        return _error(413, f"The upload is larger than {settings.max_upload_bytes} bytes.")
                    digest.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            if size == 0:
                return _error(400, "The upload is empty; send the bundle .tar.gz as the request body.")
            try:
                with open_bundle(tmp, max_bytes=16 * settings.max_upload_bytes) as bundle:
                    manifest = bundle.manifest
            except BundleError as exc:
                return _error(400, f"Not a valid bundle: {exc}")
            suite = manifest.get("suite") or {}
            from rollgym.benchmarks.suite import load_suite

            try:
                known = load_suite(str(suite.get("name")))
            except ConfigError as exc:
                return _error(400, f"Not a valid bundle: {exc}")
            expected_seed = None
            if ticket:
                issued = store.get(ticket)
                if issued is None or issued.submitter_id != submitter.id or issued.status != "issued":
                    return _error(400, f"Ticket {ticket} is not an open ticket of yours.")
                expected_seed = issued.seed
            final = bundles / f"{sid}.tar.gz"
            os.replace(tmp, final)
            agent = manifest.get("agent") or {}
            try:
                store.enqueue(sid, submitter.id, {
                    "suite": known.label if suite.get("version") == known.version else str(suite.get("label")),
                    "label": label or agent.get("label"),
                    "model_size_b": model_size_b if model_size_b is not None else agent.get("model_size_b"),
                    "seed": expected_seed,
                    "bundle_path": str(final.resolve()),
                    "bundle_sha256": digest.hexdigest(),
                    "bundle_bytes": size,
                })
            except ConfigError as exc:
                final.unlink(missing_ok=True)
                return _error(400, str(exc))
        finally:
            tmp.unlink(missing_ok=True)
        return JSONResponse({"id": sid, "status": "queued", "url": f"/api/submissions/{sid}"}, status_code=202)

    @app.get("/api/submissions/{submission_id}")
    def submission_status(submission_id: str) -> JSONResponse:
        sub = store.get(submission_id)
        if sub is None:
            return _error(404, f"No submission {submission_id}.")
        return JSONResponse(_status(store, sub))

    @app.get("/api/submissions")
    def submissions() -> JSONResponse:
        return JSONResponse([_status(store, s) for s in store.submissions()])

    @app.get("/api/leaderboard/{suite}")
    def leaderboard(suite: str) -> JSONResponse:
        rows = [to_row(store, s) for s in store.submissions(suite, "accepted")]
        rows.sort(key=lambda r: -(r.score if r.score is not None else -1))
        return JSONResponse([
            {"id": r.id, "label": r.label, "submitter": r.submitter, "score": r.score,
             "model_size_b": r.model_size_b, "created": r.created.isoformat(), "summary": r.summary}
            for r in rows
        ])

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return render_index(suite_rows(store), links)

    @app.get("/suite/{label}", response_class=HTMLResponse)
    def suite_page(label: str) -> HTMLResponse:
        rows = [to_row(store, s) for s in store.submissions(label, "accepted")]
        if not rows:
            return HTMLResponse(f"<p>No verified submissions for {label}.</p>", status_code=404)
        return HTMLResponse(render_suite(label, rows, links))

    @app.get("/suite/{label}/env/{entry}", response_class=HTMLResponse)
    def env_page(label: str, entry: str) -> HTMLResponse:
        rows = [to_row(store, s) for s in store.submissions(label, "accepted")]
        if entry not in entry_names(rows):
            return HTMLResponse(f"<p>No results for {entry} in {label}.</p>", status_code=404)
        return HTMLResponse(render_env(label, entry, rows, links))

    @app.get("/entry/{submission_id}", response_class=HTMLResponse)
    def entry_page(submission_id: str) -> HTMLResponse:
        sub = store.get(submission_id)
        if sub is None:
            return HTMLResponse(f"<p>No submission {submission_id}.</p>", status_code=404)
        return HTMLResponse(render_submission(to_row(store, sub), links))

    return app


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8080) -> None:
    """Run the app with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")

"""The background verifier: claims queued jobs from the database and writes verdicts.

It runs in a thread of the server process (or alone, ``rollgym leaderboard
worker``). Because jobs live in the database, a restart loses nothing: the
server puts jobs left ``running`` back in the queue and the worker verifies them
again from the stored bundle; a verdict is written in one transaction.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from typing import Any

from rollgym.bundles.archive import DEFAULT_LIMITS, BundleLimits
from rollgym.leaderboard.db import Store, Submission

log = logging.getLogger("rollgym.leaderboard")


def verify_submission(sub: Submission, *, allow_limit: bool, limits: BundleLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Verify a stored submission's bundle; return the fields of its verdict."""
    from rollgym.benchmarks.report import headline
    from rollgym.leaderboard.verify import verify_bundle

    if not sub.bundle_path:
        return {"status": "rejected", "reasons": ["The submission has no bundle."]}
    report = verify_bundle(sub.bundle_path, expected_seed=sub.seed, allow_limit=allow_limit, limits=limits)
    if not report.ok or report.summary is None:
        reasons = report.reasons or ["Verification failed."]
        return {"status": "rejected", "reasons": reasons, "manifest": report.manifest}
    manifest = report.manifest
    agent = manifest.get("agent") or {}
    score = headline(report.summary["entries"])
    return {
        "status": "accepted",
        "reasons": [],
        "summary": report.summary,
        "manifest": manifest,
        "score": score if score == score else None,
        "task_hash": (manifest.get("suite") or {}).get("task_hash"),
        "label": sub.label or agent.get("label"),
        "model_size_b": sub.model_size_b if sub.model_size_b is not None else agent.get("model_size_b"),
    }


class VerificationWorker:
    """A thread that verifies queued submissions one at a time.

    Args:
        store: The database.
        allow_limit: Accept bundles run with ``--limit``.
        poll_s: Seconds between looks at an empty queue.
        delay_s: Seconds to wait after claiming a job, before verifying it (throttling; tests
            use it to interrupt a verification on purpose).
        limits: What reading a bundle archive may cost; the server passes the limits its uploads
            were checked with, so both read an archive under the same rules.
    """

    def __init__(self, store: Store, *, allow_limit: bool = True, poll_s: float = 0.2, delay_s: float = 0.0,
                 limits: BundleLimits = DEFAULT_LIMITS) -> None:
        self.store = store
        self.allow_limit = allow_limit
        self.limits = limits
        self.poll_s = poll_s
        self.delay_s = delay_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Requeue jobs a previous process left running, then start the thread."""
        requeued = self.store.requeue_stale()
        if requeued:
            log.info("requeued %d interrupted verification job(s)", requeued)
        self._thread = threading.Thread(target=self.run, name="rollgym-verifier", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the thread to stop after its current job and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run_once(self) -> bool:
        """Verify one queued job if there is one; return whether there was."""
        claimed = self.store.claim()
        if claimed is None:
            return False
        job_id, sub = claimed
        if self.delay_s and self._stop.wait(self.delay_s):
            return True  # stopping: the job stays running and is requeued on the next start
        try:
            verdict = verify_submission(sub, allow_limit=self.allow_limit, limits=self.limits)
        except Exception as exc:  # a verifier bug must not kill the worker or leave the job hanging
            log.error("verification of %s crashed: %s", sub.id, traceback.format_exc())
            verdict = {"status": "rejected",
                       "reasons": [f"Verification crashed ({type(exc).__name__}); the server log has the details."]}
        self.store.finish(job_id, sub.id, verdict)
        return True

    def run(self) -> None:
        """Loop until stopped."""
        while not self._stop.is_set():
            try:
                busy = self.run_once()
            except Exception:
                log.error("worker error: %s", traceback.format_exc())
                busy = False
            if not busy:
                self._stop.wait(self.poll_s)

    def drain(self, timeout: float = 60.0) -> None:
        """Verify queued jobs in this thread until the queue is empty (for ``export`` and tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.run_once():
            pass

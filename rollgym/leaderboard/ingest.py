"""One way into the leaderboard: check a bundle archive, store it, and queue it for verification.

The server's upload handler, ``rollgym leaderboard add`` and ``rollgym demo`` all
call :func:`ingest_archive`, so every submission is checked the same way:

1. the archive is streamed and checked against the shared :class:`BundleLimits`
   before anything is unpacked (:func:`~rollgym.bundles.archive.check_archive`);
2. its manifest is read from the stream (never unpacked to disk) and checked field
   by field; the suite it names must be a built-in suite of this rollgym, by
   registry name and version (a path is never opened);
3. the label and model size, from the query or the manifest, are checked and kept
   as *self-reported*: nothing can verify who or what produced a transcript;
4. a hidden-seed ticket must be the submitter's own, open and for the bundle's suite;
5. the archive is renamed into the data folder and the submission and its job are
   written in one transaction (which also uses up the ticket, and refuses, with 409, an
   archive byte-identical to one queued, being verified or accepted: a bundle is ranked once).

Everything here is synchronous and may take a while on a large archive: the server
calls it from a worker thread, never on its event loop.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollgym.bundles.archive import DEFAULT_LIMITS, MANIFEST, BundleError, BundleLimits, read_member
from rollgym.bundles.format import MAX_LABEL_CHARS, check_manifest
from rollgym.core.errors import ConfigError
from rollgym.core.io import move_into_place
from rollgym.leaderboard.db import DuplicateBundleError, Store, Submission, TicketError


class IngestError(ConfigError):
    """A submission that is refused; ``status`` is the HTTP status the server answers with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class SelfReported:
    """What a submitter says about the run: shown as self-reported, never as verified.

    Verification replays the transcripts and recomputes the score; it cannot tell which model
    (or person, or oracle) wrote the actions, so these fields are the submitter's claim.
    """

    label: str | None
    model_size_b: float | None
    agent_kind: str | None
    agent: str | None
    model: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"label": self.label, "model_size_b": self.model_size_b, "agent_kind": self.agent_kind,
                "agent": self.agent, "model": self.model}

    @classmethod
    def of(cls, manifest: dict[str, Any] | None, label: str | None = None,
           model_size_b: float | None = None) -> SelfReported:
        """The claims of a stored submission: the upload's label and size, else the manifest's."""
        agent = (manifest or {}).get("agent") or {}
        return cls(
            label=label or agent.get("label"),
            model_size_b=model_size_b if model_size_b is not None else agent.get("model_size_b"),
            agent_kind=agent.get("kind"),
            agent=agent.get("agent"),
            model=agent.get("model"),
        )


def check_label(label: str | None) -> str | None:
    """A submission label as given, or an :class:`IngestError` saying what is wrong with it."""
    if label is None:
        return None
    if not isinstance(label, str) or not 0 < len(label) <= MAX_LABEL_CHARS or not label.isprintable():
        raise IngestError(f"label must be 1 to {MAX_LABEL_CHARS} printable characters.")
    return label


def check_model_size(size: float | None) -> float | None:
    """A model size in billions of parameters, or an :class:`IngestError` (NaN, infinity, <= 0, absurd)."""
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, (int, float)) or not math.isfinite(size) or not 0 < size < 1e6:
        raise IngestError("model_size_b must be a number of billions of parameters between 0 and 1e6.")
    return float(size)


@dataclass(frozen=True)
class CheckedBundle:
    """An archive that passed every check that does not need the database."""

    manifest: dict[str, Any]
    suite: str
    sha256: str
    size: int


def check_bundle_archive(path: str | os.PathLike[str], limits: BundleLimits = DEFAULT_LIMITS) -> CheckedBundle:
    """Check an archive, its manifest and its suite without unpacking it (see the module docstring).

    Raises:
        IngestError: with one sentence; the sentence never quotes a file of this machine.
    """
    from rollgym.leaderboard.verify import finished_suite

    archive = Path(path)
    try:
        raw = read_member(archive, MANIFEST, limits)
        if raw is None:
            raise BundleError(f"The bundle archive has no {MANIFEST}.")
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            raise BundleError(f"{MANIFEST} in the bundle is not valid JSON.") from None
        manifest = check_manifest(data)
    except BundleError as exc:
        raise IngestError(f"Not a valid bundle: {exc}") from None
    try:
        suite = finished_suite(manifest)
    except ConfigError as exc:
        raise IngestError(f"Not a valid bundle: {exc}") from None
    digest = hashlib.sha256()
    with open(archive, "rb") as handle:
        for chunk in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(chunk)
    return CheckedBundle(manifest, suite.label, digest.hexdigest(), archive.stat().st_size)


def ingest_archive(
    store: Store,
    archive: str | os.PathLike[str],
    submitter_id: int,
    *,
    data_dir: str | os.PathLike[str],
    label: str | None = None,
    model_size_b: float | None = None,
    ticket: str | None = None,
    limits: BundleLimits = DEFAULT_LIMITS,
    max_pending: int | None = None,
    now: dt.datetime | None = None,
) -> Submission:
    """Check ``archive``, move it into ``data_dir/bundles`` and queue it; return the new submission.

    ``archive`` is taken over: it is moved into place, or deleted when the submission is refused,
    so it must be a temporary file on the same filesystem as ``data_dir``.

    Args:
        store: The leaderboard database.
        archive: The uploaded ``.tar.gz`` (a temporary file).
        submitter_id: Who submits.
        data_dir: The server's data folder.
        label: The label to show (self-reported); defaults to the manifest's agent label.
        model_size_b: The model size to show (self-reported); defaults to the manifest's.
        ticket: A hidden-seed ticket id; the submission takes its id and seed.
        limits: What reading the archive may cost (shared with the verification worker).
        max_pending: Refuse (429) when the submitter already has this many submissions waiting.
        now: The time (for tests of ticket expiry).

    Raises:
        IngestError: with the HTTP status and one sentence.
    """
    source = Path(archive)
    try:
        label = check_label(label)
        model_size_b = check_model_size(model_size_b)
        checked = check_bundle_archive(source, limits)
        claims = SelfReported.of(checked.manifest, label, model_size_b)
        try:
            if ticket is not None:
                store.check_ticket(ticket, submitter_id, checked.suite, now)
            if max_pending is not None and store.pending_count(submitter_id) >= max_pending:
                raise IngestError(f"You have {max_pending} submissions waiting for verification, the limit here; "
                                  "upload again when one is verified.", status=429)
            sid = ticket or uuid.uuid4().hex
            # A unique file per upload: two uploads racing for one ticket never share a path.
            final = Path(data_dir) / "bundles" / f"{sid}.{uuid.uuid4().hex[:12]}.tar.gz"
            move_into_place(source, final)
            try:
                return store.enqueue(sid, submitter_id, {
                    "suite": checked.suite,
                    "label": claims.label,
                    "model_size_b": claims.model_size_b,
                    "bundle_path": str(final.resolve()),
                    "bundle_sha256": checked.sha256,
                    "bundle_bytes": checked.size,
                    "manifest": checked.manifest,  # its claims show while it waits; verification replaces it
                }, ticket=ticket, now=now)
            except ConfigError:
                final.unlink(missing_ok=True)
                raise
        except (TicketError, DuplicateBundleError) as exc:
            raise IngestError(str(exc), exc.status) from None
        except IngestError:
            raise
        except ConfigError as exc:
            raise IngestError(str(exc)) from None
    finally:
        source.unlink(missing_ok=True)


def add_local(
    bundle: str,
    db: str,
    data_dir: str,
    submitter: str = "local",
    label: str | None = None,
    model_size_b: float | None = None,
    limits: BundleLimits = DEFAULT_LIMITS,
) -> dict[str, Any]:
    """Add a bundle (folder or ``.tar.gz``) to a local leaderboard database and verify it now.

    The bundle goes through :func:`ingest_archive`, exactly like an upload.

    Returns:
        ``{"id", "status", "reasons", "score"}``.

    Example:
        >>> add_local("runs/oracle", "sqlite:///lb.db", "lb-data")["status"]  # doctest: +SKIP
        'accepted'
    """
    from rollgym.bundles.format import pack_bundle
    from rollgym.leaderboard.worker import VerificationWorker

    store = Store(db)
    person = store.ensure_submitter(submitter)
    source = Path(bundle)
    if not source.exists():
        raise ConfigError(f"Bundle {bundle} does not exist; pass the folder or .tar.gz that `rollgym bench run` wrote.")
    folder = Path(data_dir) / "bundles"
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".upload-", suffix=".tmp", dir=folder)
    os.close(fd)
    tmp = Path(name)
    try:
        if source.is_dir():
            pack_bundle(source, tmp)
        else:
            shutil.copyfile(source, tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    sub = ingest_archive(store, tmp, person, data_dir=data_dir, label=label, model_size_b=model_size_b,
                         limits=limits)
    VerificationWorker(store, limits=limits).drain()
    done = store.get(sub.id)
    assert done is not None
    return {"id": done.id, "status": done.status, "reasons": list(done.reasons or []), "score": done.score}

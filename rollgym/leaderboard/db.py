"""The leaderboard's database: submitters, submissions and a durable verification job table.

SQLAlchemy 2 over any URL it knows: a SQLite file by default
(``sqlite:///leaderboard.db``, in WAL mode so readers never block the worker),
or PostgreSQL (``postgresql+psycopg://...``). Every state change is one
transaction: a submission and its job are created together; a job is *claimed*
with a conditional update (``state = 'queued'``), so two workers never verify the
same bundle; a verdict and the job's end are written together. A job left
``running`` by a crash is put back in the queue when the server starts, so a
restart in the middle of verification resumes it and loses nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, String, Text, create_engine, event, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from rollgym.core.errors import ConfigError


def utcnow() -> dt.datetime:
    """The current time in UTC (naive, as SQLite stores it)."""
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    """Declarative base of the leaderboard tables."""


class Submitter(Base):
    """Someone allowed to submit; only the SHA-256 of their token is stored."""

    __tablename__ = "submitters"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Submission(Base):
    """One uploaded bundle and its verdict.

    ``status``: ``issued`` (a hidden-seed ticket, no bundle yet), ``queued``, ``verifying``,
    ``accepted`` or ``rejected``.
    """

    __tablename__ = "submissions"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    submitter_id: Mapped[int] = mapped_column(ForeignKey("submitters.id"))
    status: Mapped[str] = mapped_column(String(16), index=True)
    suite: Mapped[str | None] = mapped_column(String(100), index=True, nullable=True)
    label: Mapped[str | None] = mapped_column(String(200), nullable=True)
    model_size_b: Mapped[float | None] = mapped_column(Float, nullable=True)
    seed: Mapped[int | None] = mapped_column(Integer, nullable=True)
    bundle_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    bundle_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    bundle_bytes: Mapped[int | None] = mapped_column(Integer, nullable=True)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    task_hash: Mapped[str | None] = mapped_column(String(32), nullable=True)
    reasons: Mapped[Any] = mapped_column(JSON, default=list)
    summary: Mapped[Any] = mapped_column(JSON, nullable=True)
    manifest: Mapped[Any] = mapped_column(JSON, nullable=True)
    created: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    verified_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class Job(Base):
    """A verification job; ``state`` is ``queued``, ``running`` or ``done``."""

    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id"), unique=True)
    state: Mapped[str] = mapped_column(String(16), index=True, default="queued")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    claimed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


def hash_token(token: str) -> str:
    """SHA-256 of a submitter token, as stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class Store:
    """The leaderboard's database.

    Example:
        >>> store = Store("sqlite:///:memory:")
        >>> token = store.add_submitter("alice")
        >>> store.authenticate(token).name
        'alice'
    """

    def __init__(self, url: str) -> None:
        if "://" not in url:
            raise ConfigError(f"--db must be a database URL such as sqlite:///leaderboard.db, got {url!r}.")
        kwargs: dict[str, Any] = {}
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
        try:
            self.engine: Engine = create_engine(url, **kwargs)
        except Exception as exc:  # a bad URL or a missing driver
            raise ConfigError(f"Cannot open database {url!r} ({exc}).") from exc
        if url.startswith("sqlite"):
            event.listen(self.engine, "connect", _sqlite_pragmas)
            database = self.engine.url.database
            if database and database != ":memory:":
                Path(database).parent.mkdir(parents=True, exist_ok=True)
        try:
            Base.metadata.create_all(self.engine)
        except Exception as exc:  # unreachable server, bad credentials, unwritable file
            raise ConfigError(f"Cannot open database {url!r} ({type(exc).__name__}: {exc}); check --db.") from exc
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session whose transaction commits on success and rolls back on error."""
        with self._sessions() as session, session.begin():
            yield session

    # -- submitters ------------------------------------------------------------------------
    def add_submitter(self, name: str) -> str:
        """Register a submitter and return their new token (shown once; only its hash is kept)."""
        if not name or len(name) > 100:
            raise ConfigError("A submitter name must be 1 to 100 characters.")
        token = secrets.token_urlsafe(24)
        with self.session() as s:
            if s.scalar(select(Submitter).where(Submitter.name == name)) is not None:
                raise ConfigError(f"Submitter {name!r} exists already; choose another name.")
            s.add(Submitter(name=name, token_hash=hash_token(token)))
        return token

    def authenticate(self, token: str | None) -> Submitter | None:
        """The submitter holding ``token``, or ``None``."""
        if not token:
            return None
        with self.session() as s:
            return s.scalar(select(Submitter).where(Submitter.token_hash == hash_token(token)))

    # -- submissions -----------------------------------------------------------------------
    def issue_ticket(self, submitter_id: int, suite: str, seed: int | None, submission_id: str | None = None) -> str:
        """Create an ``issued`` submission (a hidden-seed ticket) and return its id."""
        sid = submission_id or uuid.uuid4().hex
        with self.session() as s:
            s.add(Submission(id=sid, submitter_id=submitter_id, status="issued", suite=suite, seed=seed, reasons=[]))
        return sid

    def get(self, submission_id: str) -> Submission | None:
        """A submission by id."""
        with self.session() as s:
            return s.get(Submission, submission_id)

    def enqueue(self, submission_id: str, submitter_id: int, fields: dict[str, Any]) -> Submission:
        """Record an uploaded bundle and its verification job in one transaction.

        ``submission_id`` may name an ``issued`` ticket of the same submitter; otherwise it is new.
        """
        with self.session() as s:
            sub = s.get(Submission, submission_id)
            if sub is None:
                sub = Submission(id=submission_id, submitter_id=submitter_id, reasons=[])
                s.add(sub)
            elif sub.submitter_id != submitter_id or sub.status != "issued":
                raise ConfigError(f"Ticket {submission_id} is not an open ticket of yours.")
            for key, value in fields.items():
                setattr(sub, key, value)
            sub.status = "queued"
            s.flush()
            s.add(Job(submission_id=sub.id, state="queued"))
        return sub

    def requeue_stale(self) -> int:
        """Put jobs left ``running`` (by a crash or restart) back in the queue; return how many."""
        with self.session() as s:
            result = s.execute(update(Job).where(Job.state == "running").values(state="queued"))
            s.execute(update(Submission).where(Submission.status == "verifying").values(status="queued"))
            return int(getattr(result, "rowcount", 0) or 0)

    def claim(self) -> tuple[int, Submission] | None:
        """Claim the oldest queued job (atomically) and mark its submission ``verifying``."""
        with self.session() as s:
            job = s.scalar(select(Job).where(Job.state == "queued").order_by(Job.id).limit(1))
            if job is None:
                return None
            job_id = job.id
            claimed = s.execute(
                update(Job)
                .where(Job.id == job_id, Job.state == "queued")
                .values(state="running", attempts=Job.attempts + 1, claimed_at=utcnow())
            )
            if not getattr(claimed, "rowcount", 0):
                return None  # another worker took it first
            sub = s.get(Submission, job.submission_id)
            assert sub is not None
            sub.status = "verifying"
            return job_id, sub

    def finish(self, job_id: int, submission_id: str, verdict: dict[str, Any]) -> None:
        """Write a verdict and end the job, in one transaction."""
        with self.session() as s:
            sub = s.get(Submission, submission_id)
            job = s.get(Job, job_id)
            if sub is None or job is None:
                return
            for key, value in verdict.items():
                setattr(sub, key, value)
            sub.verified_at = utcnow()
            job.state = "done"
            job.finished_at = utcnow()

    def job_of(self, submission_id: str) -> Job | None:
        """The verification job of a submission."""
        with self.session() as s:
            return s.scalar(select(Job).where(Job.submission_id == submission_id))

    def submissions(self, suite: str | None = None, status: str | None = None) -> list[Submission]:
        """Submissions, newest first, optionally of one suite and status."""
        with self.session() as s:
            query = select(Submission).order_by(Submission.created.desc())
            if suite is not None:
                query = query.where(Submission.suite == suite)
            if status is not None:
                query = query.where(Submission.status == status)
            return list(s.scalars(query))

    def submitter_name(self, submitter_id: int) -> str:
        """The name of a submitter."""
        with self.session() as s:
            sub = s.get(Submitter, submitter_id)
            return sub.name if sub is not None else "?"

    def suites(self) -> list[str]:
        """Suite labels with at least one accepted submission."""
        with self.session() as s:
            rows = s.execute(select(Submission.suite).where(Submission.status == "accepted").distinct())
            return sorted(str(r[0]) for r in rows if r[0])

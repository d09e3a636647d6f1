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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    create_engine,
    event,
    select,
    text,
    update,
)
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

    ``status``: ``queued``, ``verifying``, ``accepted`` or ``rejected``. A submission made with a
    hidden-seed ticket has the ticket's id and seed.
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


class Ticket(Base):
    """A hidden-seed ticket: issued to one submitter for one suite, used at most once, until it expires.

    Every ticket stays in the table, used or not, and is listed on its submitter's public page,
    so asking for many seeds and uploading only the best run is visible to everyone.
    """

    __tablename__ = "tickets"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    submitter_id: Mapped[int] = mapped_column(ForeignKey("submitters.id"), index=True)
    suite: Mapped[str] = mapped_column(String(100))
    seed: Mapped[int] = mapped_column(Integer)
    issued_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, index=True)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime)
    used_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)

    def state(self, now: dt.datetime | None = None) -> str:
        """``used``, ``expired`` (never used) or ``open``."""
        if self.used_at is not None:
            return "used"
        return "expired" if (now or utcnow()) >= self.expires_at else "open"


class TicketError(ConfigError):
    """A ticket that cannot be issued or used; ``status`` is the HTTP status that says why."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class DuplicateBundleError(ConfigError):
    """An upload whose archive is byte for byte one that is already queued, being verified or accepted."""

    def __init__(self, earlier_id: str, earlier_status: str) -> None:
        super().__init__(
            f"This bundle was submitted already: it is submission {earlier_id} ({earlier_status}), and a bundle is "
            f"ranked once. See /api/submissions/{earlier_id}; to rank another run, upload that run's bundle."
        )
        self.earlier_id = earlier_id
        self.status = 409


#: Submissions that hold a bundle's place: a byte-identical upload is refused while one of them exists.
_HOLDS_ITS_BUNDLE = ("queued", "verifying", "accepted")


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

    def ensure_submitter(self, name: str) -> int:
        """The id of the submitter called ``name``, created (with an unusable random token) when new."""
        if not name or len(name) > 100:
            raise ConfigError("A submitter name must be 1 to 100 characters.")
        with self.session() as s:
            person = s.scalar(select(Submitter).where(Submitter.name == name))
            if person is None:
                person = Submitter(name=name, token_hash=hash_token(secrets.token_urlsafe(24)))
                s.add(person)
                s.flush()
            return person.id

    def submitter_named(self, name: str) -> Submitter | None:
        """The submitter called ``name``, or ``None``."""
        with self.session() as s:
            return s.scalar(select(Submitter).where(Submitter.name == name))

    # -- tickets ---------------------------------------------------------------------------
    def issue_ticket(
        self,
        submitter_id: int,
        suite: str,
        seed_of: Callable[[str], int],
        *,
        ttl: dt.timedelta,
        per_day: int,
        now: dt.datetime | None = None,
    ) -> Ticket:
        """Issue a ticket whose seed is ``seed_of(ticket id)``, unless the submitter hit the daily limit.

        Raises:
            TicketError: (status 429) when the submitter was issued ``per_day`` tickets in the last 24 hours.
        """
        now = now or utcnow()
        with self.session() as s:
            # Serialise issuing per submitter (a row lock on PostgreSQL; SQLite locks the file on write).
            s.execute(update(Submitter).where(Submitter.id == submitter_id).values(name=Submitter.name))
            recent = s.scalars(
                select(Ticket.issued_at).where(Ticket.submitter_id == submitter_id,
                                               Ticket.issued_at > now - dt.timedelta(days=1))
            ).all()
            if len(recent) >= per_day:
                retry = min(recent) + dt.timedelta(days=1)
                raise TicketError(
                    f"You were issued {len(recent)} tickets in the last 24 hours, the limit here; the next one can be "
                    f"issued after {retry:%Y-%m-%d %H:%M} UTC. Every ticket is listed on your public page.",
                    status=429,
                )
            tid = uuid.uuid4().hex
            ticket = Ticket(id=tid, submitter_id=submitter_id, suite=suite, seed=seed_of(tid), issued_at=now,
                            expires_at=now + ttl)
            s.add(ticket)
        return ticket

    def ticket(self, ticket_id: str) -> Ticket | None:
        """A ticket by id."""
        with self.session() as s:
            return s.get(Ticket, ticket_id)

    def tickets_of(self, submitter_id: int) -> list[Ticket]:
        """Every ticket ever issued to a submitter, newest first."""
        with self.session() as s:
            return list(s.scalars(select(Ticket).where(Ticket.submitter_id == submitter_id)
                                  .order_by(Ticket.issued_at.desc())))

    def check_ticket(self, ticket_id: str, submitter_id: int, suite: str | None = None,
                     now: dt.datetime | None = None) -> Ticket:
        """The open ticket ``ticket_id`` of this submitter (for ``suite``), or a :class:`TicketError` saying why not."""
        ticket = self.ticket(ticket_id)
        if ticket is None:
            raise TicketError(f"Ticket {ticket_id} does not exist; POST /api/tickets to get one.")
        if ticket.submitter_id != submitter_id:
            raise TicketError(f"Ticket {ticket_id} was issued to another submitter; use a ticket of your own.",
                              status=403)
        state = ticket.state(now)
        if state == "used":
            raise TicketError(f"Ticket {ticket_id} was used already (at {ticket.used_at:%Y-%m-%d %H:%M} UTC); a "
                              "ticket takes one upload. POST /api/tickets for another.", status=409)
        if state == "expired":
            raise TicketError(f"Ticket {ticket_id} expired at {ticket.expires_at:%Y-%m-%d %H:%M} UTC; "
                              "POST /api/tickets for a new one and run with its seed.", status=410)
        if suite is not None and ticket.suite != suite:
            raise TicketError(f"Ticket {ticket_id} is for {ticket.suite}, but the bundle is for {suite}; "
                              "use a ticket of the bundle's suite.")
        return ticket

    # -- submissions -----------------------------------------------------------------------
    def get(self, submission_id: str) -> Submission | None:
        """A submission by id."""
        with self.session() as s:
            return s.get(Submission, submission_id)

    def enqueue(self, submission_id: str, submitter_id: int, fields: dict[str, Any], *, ticket: str | None = None,
                now: dt.datetime | None = None) -> Submission:
        """Record an uploaded bundle and its verification job in one transaction.

        With ``ticket``, the submission takes the ticket's id and seed, and the ticket is used up in the
        same transaction (a conditional update, so two uploads racing for one ticket cannot both win).

        A bundle is ranked once: when ``fields["bundle_sha256"]`` equals that of a submission that is
        queued, being verified or accepted, by anyone, nothing is written (a rejected one may be
        uploaded again, to be verified again). The check runs after this submission's row is written,
        inside the same transaction, so of two identical uploads at the same time one wins.

        Raises:
            TicketError: for a ticket that is not open, not the submitter's, or for another suite.
            DuplicateBundleError: for a bundle already on the board or in its queue (HTTP 409).
            ConfigError: when a submission with this id exists already.
        """
        now = now or utcnow()
        if ticket is not None:
            issued = self.check_ticket(ticket, submitter_id, fields.get("suite"), now)
            submission_id = ticket
            fields = {**fields, "seed": issued.seed}
        with self.session() as s:
            if s.get_bind().dialect.name == "postgresql":  # one enqueue at a time, so the duplicate check holds
                s.execute(text("LOCK TABLE submissions IN SHARE ROW EXCLUSIVE MODE"))
            if ticket is not None:
                used = s.execute(
                    update(Ticket)
                    .where(Ticket.id == ticket, Ticket.submitter_id == submitter_id, Ticket.used_at.is_(None),
                           Ticket.expires_at > now)
                    .values(used_at=now)
                )
                if getattr(used, "rowcount", 0) != 1:
                    raise TicketError(f"Ticket {ticket} was used by another upload at the same time.", status=409)
            if s.get(Submission, submission_id) is not None:
                raise ConfigError(f"Submission {submission_id} exists already.")
            sub = Submission(id=submission_id, submitter_id=submitter_id, reasons=[], status="queued")
            for key, value in fields.items():
                setattr(sub, key, value)
            s.add(sub)
            s.flush()  # on SQLite this takes the write lock: an identical upload waits, then sees this row
            digest = fields.get("bundle_sha256")
            if digest is not None:
                earlier = s.scalars(
                    select(Submission)
                    .where(Submission.bundle_sha256 == digest, Submission.id != sub.id,
                           Submission.status.in_(_HOLDS_ITS_BUNDLE))
                    .order_by(Submission.created).limit(1)
                ).first()
                if earlier is not None:
                    raise DuplicateBundleError(earlier.id, earlier.status)
            s.add(Job(submission_id=sub.id, state="queued"))
        return sub

    def pending_count(self, submitter_id: int) -> int:
        """Submissions of a submitter still waiting for (or in) verification."""
        with self.session() as s:
            rows = s.scalars(select(Submission.id).where(Submission.submitter_id == submitter_id,
                                                         Submission.status.in_(("queued", "verifying"))))
            return len(rows.all())

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

    def submissions(self, suite: str | None = None, status: str | None = None,
                    submitter_id: int | None = None) -> list[Submission]:
        """Submissions, newest first, optionally of one suite, status and submitter."""
        with self.session() as s:
            query = select(Submission).order_by(Submission.created.desc())
            if suite is not None:
                query = query.where(Submission.suite == suite)
            if status is not None:
                query = query.where(Submission.status == status)
            if submitter_id is not None:
                query = query.where(Submission.submitter_id == submitter_id)
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

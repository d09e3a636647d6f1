"""``rollgym leaderboard``: verify bundles, serve the leaderboard, export a static site.

Examples::

    rollgym leaderboard verify runs/oracle.tar.gz
    rollgym leaderboard add-submitter alice --db sqlite:///lb.db          # prints alice's token
    rollgym leaderboard serve --db sqlite:///lb.db --data-dir lb-data --port 8080
    rollgym leaderboard submit runs/oracle.tar.gz --url http://127.0.0.1:8080 --token TOKEN --label oracle
    rollgym leaderboard add runs/oracle --db sqlite:///lb.db --submitter alice   # verify and add locally
    rollgym leaderboard export --db sqlite:///lb.db --out site/
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rollgym.core.deprecation import moved_to
from rollgym.core.errors import ConfigError

DEFAULT_DB = "sqlite:///leaderboard.db"


def register(subparsers: Any) -> None:
    """Add the ``leaderboard`` sub-command and its actions."""
    parser = subparsers.add_parser("leaderboard", help="verify result bundles; serve or export the leaderboard",
                                   description="Leaderboard: verify, serve, submit, add, export.")
    actions = parser.add_subparsers(dest="leaderboard_action", metavar="ACTION")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])

    p = actions.add_parser("verify",
                           help="re-verify a bundle: regenerate tasks, replay its results files, recompute scores")
    p.add_argument("bundle", help="a bundle folder or .tar.gz")
    p.add_argument("--seed", type=int, help="the seed the bundle must have been run with (hidden test seeds)")
    p.add_argument("--full", action="store_true", help="reject bundles run with --limit")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_verify)

    p = actions.add_parser("serve", help="start the leaderboard server")
    _db_args(p)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    _limit_args(p)
    p.add_argument("--secret", help="enable hidden test seeds (or set ROLLGYM_LEADERBOARD_SECRET)")
    p.add_argument("--ticket-hours", type=float, default=48.0, help="how long a hidden-seed ticket stays usable")
    p.add_argument("--tickets-per-day", type=int, default=5, help="tickets one submitter may get in 24 hours")
    p.add_argument("--max-pending", type=int, default=20,
                   help="submissions one submitter may have waiting for verification")
    p.add_argument("--allow-limit", action="store_true",
                   help="also accept partial runs (--limit or --only); by default only full suites are ranked")
    p.add_argument("--no-worker", action="store_true", help="do not verify in this process")
    p.add_argument("--worker-delay", type=float, default=0.0, help="seconds to pause before each verification")
    p.set_defaults(func=cmd_serve)

    p = actions.add_parser("worker", help="run a verification worker alone (beside a server started --no-worker)")
    p.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default {DEFAULT_DB})")
    p.add_argument("--allow-limit", action="store_true", help="also accept partial runs (--limit or --only)")
    _limit_args(p)
    p.set_defaults(func=cmd_worker)

    p = actions.add_parser("add-submitter", help="register a submitter and print their token")
    p.add_argument("name")
    p.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default {DEFAULT_DB})")
    p.set_defaults(func=cmd_add_submitter)

    p = actions.add_parser("submit", help="upload a bundle .tar.gz to a leaderboard server")
    p.add_argument("bundle", help="a bundle folder (packed on the fly) or .tar.gz")
    p.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8080")
    p.add_argument("--token", required=True)
    p.add_argument("--label", help="the model's name on the leaderboard")
    p.add_argument("--model-size", type=float, help="parameters in billions")
    p.add_argument("--ticket", help="the submission id from a hidden-seed ticket")
    p.set_defaults(func=cmd_submit)

    p = actions.add_parser("add", help="verify a bundle and add it to a local leaderboard database")
    p.add_argument("bundle")
    _db_args(p)
    p.add_argument("--submitter", default="local", help="the submitter name (created if new)")
    p.add_argument("--label")
    p.add_argument("--model-size", type=float, help="parameters in billions")
    p.set_defaults(func=cmd_add)

    p = actions.add_parser("export", help="write the leaderboard as a static site")
    p.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default {DEFAULT_DB})")
    p.add_argument("--out", required=True, help="the site folder")
    p.set_defaults(func=cmd_export)


def _limit_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-upload-mb", type=float, default=64.0, help="largest accepted bundle archive")
    p.add_argument("--max-unpacked-mb", type=float, default=512.0, help="largest total unpacked size of a bundle")


def _limits(args: argparse.Namespace) -> Any:
    """The archive limits the server and the worker share, from ``--max-upload-mb`` and ``--max-unpacked-mb``."""
    from rollgym.bundles.archive import BundleLimits

    for name in ("max_upload_mb", "max_unpacked_mb"):
        if not getattr(args, name) > 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be a positive number of MiB.")
    return BundleLimits(max_archive_bytes=max(1, int(args.max_upload_mb * 1024 * 1024)),
                        max_unpacked_bytes=max(1, int(args.max_unpacked_mb * 1024 * 1024)))


def _db_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default {DEFAULT_DB}; PostgreSQL URLs work)")
    p.add_argument("--data-dir", default="leaderboard-data", help="where uploaded bundles are stored")


def cmd_verify(args: argparse.Namespace) -> int:
    """Verify a bundle; exit 0 when it passes, 1 when it is rejected."""
    from rollgym.leaderboard.verify import verify_bundle

    report = verify_bundle(args.bundle, expected_seed=args.seed, allow_limit=not args.full)
    if args.json:
        print(json.dumps(report.to_dict()))
    elif report.ok:
        print(f"OK: {args.bundle} verified ({report.episodes} episodes replayed; score "
              f"{100 * (report.summary or {}).get('score', 0.0):.1f}%).")
    else:
        print(f"REJECTED: {args.bundle}", file=sys.stderr)
        for reason in report.reasons:
            print(f"  - {reason}", file=sys.stderr)
    return 0 if report.ok else 1


def cmd_serve(args: argparse.Namespace) -> int:
    """Start the server (blocks until interrupted)."""
    import datetime as dt
    import os

    from rollgym.leaderboard.server import Settings, serve

    if not 0 < args.ticket_hours <= 24 * 366 or args.tickets_per_day < 1 or args.max_pending < 1:
        raise ConfigError("--ticket-hours must be between 0 and 8784 (a year), and --tickets-per-day and "
                          "--max-pending at least 1.")
    settings = Settings(
        db_url=args.db, data_dir=args.data_dir, limits=_limits(args),
        secret=args.secret or os.environ.get("ROLLGYM_LEADERBOARD_SECRET") or None, allow_limit=args.allow_limit,
        worker=not args.no_worker, worker_delay_s=args.worker_delay, ticket_ttl=dt.timedelta(hours=args.ticket_hours),
        tickets_per_day=args.tickets_per_day, max_pending=args.max_pending,
    )
    print(f"rollgym leaderboard on http://{args.host}:{args.port} (database {args.db})", flush=True)
    serve(settings, args.host, args.port)
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Verify queued submissions until interrupted."""
    from rollgym.leaderboard.db import Store
    from rollgym.leaderboard.worker import VerificationWorker

    worker = VerificationWorker(Store(args.db), allow_limit=args.allow_limit, limits=_limits(args))
    worker.store.requeue_stale()
    print(f"verifying queued submissions in {args.db}; Ctrl-C to stop", flush=True)
    worker.run()
    return 0


def cmd_add_submitter(args: argparse.Namespace) -> int:
    """Register a submitter and print the token."""
    from rollgym.leaderboard.db import Store

    print(Store(args.db).add_submitter(args.name))
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    """Upload a bundle and print the server's answer."""
    from pathlib import Path

    import httpx

    from rollgym.bundles.format import pack_bundle

    path = Path(args.bundle)
    if path.is_dir():
        path = pack_bundle(path)
    if not path.is_file():
        raise ConfigError(f"Bundle {args.bundle} does not exist.")
    params = {k: v for k, v in {"label": args.label, "model_size_b": args.model_size, "ticket": args.ticket}.items()
              if v is not None}
    try:
        response = httpx.post(f"{args.url.rstrip('/')}/api/submissions", params=params, content=path.read_bytes(),
                              headers={"Authorization": f"Bearer {args.token}", "Content-Type": "application/gzip"},
                              timeout=120)
    except httpx.HTTPError as exc:
        raise ConfigError(f"Cannot reach {args.url} ({exc}); check the URL and that the server runs.") from exc
    print(response.text)
    return 0 if response.status_code == 202 else 1


def cmd_add(args: argparse.Namespace) -> int:
    """Verify a bundle and add it to a local database."""
    from rollgym.leaderboard.ingest import add_local

    result = add_local(args.bundle, args.db, args.data_dir, args.submitter, args.label, args.model_size)
    print(json.dumps(result))
    return 0 if result["status"] == "accepted" else 1


def cmd_export(args: argparse.Namespace) -> int:
    """Write the static site."""
    from rollgym.leaderboard.db import Store
    from rollgym.leaderboard.site import export_site

    index = export_site(Store(args.db), args.out)
    print(f"static leaderboard: {index}")
    return 0


# ``add_local`` moved to rollgym.leaderboard.ingest; the old name warns until it goes.
__getattr__ = moved_to(__name__, {"add_local": "rollgym.leaderboard.ingest"})

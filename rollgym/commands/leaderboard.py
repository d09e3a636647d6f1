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

from rollgym.core.errors import ConfigError

DEFAULT_DB = "sqlite:///leaderboard.db"


def register(subparsers: Any) -> None:
    """Add the ``leaderboard`` sub-command and its actions."""
    parser = subparsers.add_parser("leaderboard", help="verify result bundles; serve or export the leaderboard",
                                   description="Leaderboard: verify, serve, submit, add, export.")
    actions = parser.add_subparsers(dest="leaderboard_action", metavar="ACTION")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])

    p = actions.add_parser("verify", help="re-verify a bundle: regenerate tasks, replay transcripts, recompute scores")
    p.add_argument("bundle", help="a bundle folder or .tar.gz")
    p.add_argument("--seed", type=int, help="the seed the bundle must have been run with (hidden test seeds)")
    p.add_argument("--full", action="store_true", help="reject bundles run with --limit")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_verify)

    p = actions.add_parser("serve", help="start the leaderboard server")
    _db_args(p)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--max-upload-mb", type=float, default=64.0, help="largest accepted upload")
    p.add_argument("--secret", help="enable hidden test seeds (or set ROLLGYM_LEADERBOARD_SECRET)")
    p.add_argument("--allow-limit", action="store_true",
                   help="also accept partial runs (--limit or --only); by default only full suites are ranked")
    p.add_argument("--no-worker", action="store_true", help="do not verify in this process")
    p.add_argument("--worker-delay", type=float, default=0.0, help="seconds to pause before each verification")
    p.set_defaults(func=cmd_serve)

    p = actions.add_parser("worker", help="run a verification worker alone (beside a server started --no-worker)")
    p.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default {DEFAULT_DB})")
    p.add_argument("--allow-limit", action="store_true", help="also accept partial runs (--limit or --only)")
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


def _db_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default {DEFAULT_DB}; PostgreSQL URLs work)")
    p.add_argument("--data-dir", default="leaderboard-data", help="where uploaded bundles are stored")


def cmd_verify(args: argparse.Namespace) -> int:
    """Verify a bundle; exit 0 when it passes, 1 when it is rejected."""
    from rollgym.benchmarks.verify import verify_bundle

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
    import os

    from rollgym.leaderboard.server import Settings, serve

    settings = Settings(
        db_url=args.db, data_dir=args.data_dir, max_upload_bytes=int(args.max_upload_mb * 1024 * 1024),
        secret=args.secret or os.environ.get("ROLLGYM_LEADERBOARD_SECRET") or None, allow_limit=args.allow_limit,
        worker=not args.no_worker, worker_delay_s=args.worker_delay,
    )
    print(f"rollgym leaderboard on http://{args.host}:{args.port} (database {args.db})", flush=True)
    serve(settings, args.host, args.port)
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Verify queued submissions until interrupted."""
    from rollgym.leaderboard.db import Store
    from rollgym.leaderboard.worker import VerificationWorker

    worker = VerificationWorker(Store(args.db), allow_limit=args.allow_limit)
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

    from rollgym.benchmarks.bundle import pack_bundle

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


def add_local(bundle: str, db: str, data_dir: str, submitter: str = "local", label: str | None = None,
              model_size_b: float | None = None) -> dict[str, Any]:
    """Store a bundle in a local leaderboard database and verify it now; return its status.

    Example:
        >>> add_local("runs/oracle", "sqlite:///lb.db", "lb-data")["status"]  # doctest: +SKIP
        'accepted'
    """
    import uuid
    from pathlib import Path

    from rollgym.benchmarks.bundle import open_bundle, pack_bundle
    from rollgym.leaderboard.db import Store, hash_token
    from rollgym.leaderboard.worker import VerificationWorker

    store = Store(db)
    with store.session() as s:
        from sqlalchemy import select

        from rollgym.leaderboard.db import Submitter

        person = s.scalar(select(Submitter).where(Submitter.name == submitter))
        if person is None:
            person = Submitter(name=submitter, token_hash=hash_token(uuid.uuid4().hex))
            s.add(person)
            s.flush()
        person_id = person.id
    source = Path(bundle)
    folder = Path(data_dir) / "bundles"
    folder.mkdir(parents=True, exist_ok=True)
    sid = uuid.uuid4().hex
    target = folder / f"{sid}.tar.gz"
    if source.is_dir():
        pack_bundle(source, target)
    else:
        target.write_bytes(source.read_bytes())
    with open_bundle(target) as opened:
        manifest = opened.manifest
    agent = manifest.get("agent") or {}
    store.enqueue(sid, person_id, {
        "suite": (manifest.get("suite") or {}).get("label"),
        "label": label or agent.get("label"),
        "model_size_b": model_size_b if model_size_b is not None else agent.get("model_size_b"),
        "bundle_path": str(target.resolve()),
    })
    VerificationWorker(store).drain()
    sub = store.get(sid)
    assert sub is not None
    return {"id": sid, "status": sub.status, "reasons": list(sub.reasons or []), "score": sub.score}


def cmd_add(args: argparse.Namespace) -> int:
    """Verify a bundle and add it to a local database."""
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

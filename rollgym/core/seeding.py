"""Per-task seeds and disjoint splits.

A generated task is a pure function of ``(family, split, index)``. Its random
stream comes from :class:`numpy.random.SeedSequence` with the family name hashed
into the entropy and ``(split, index, attempt)`` as the spawn key, so streams for
different indices or splits never overlap (unlike ``seed + index``).

Splits are disjoint by content, not only by seed: each candidate instance has a
*split key* (for example a Sudoku's solution grid), the key's hash puts it into
one of 100 buckets, and a split only accepts candidates from its own buckets
(80 train, 10 validation, 10 test). Two splits therefore never share an
instance, even when the instance space is small. Nothing here touches the
global ``random`` or ``np.random`` state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from rollgym.core.errors import ConfigError

SPLITS: tuple[str, ...] = ("train", "validation", "test")
_SPLIT_CODES = {name: code for code, name in enumerate(SPLITS)}
_SPLIT_BUCKETS = {"train": range(0, 80), "validation": range(80, 90), "test": range(90, 100)}

T = TypeVar("T")


def check_split(split: str) -> str:
    """Return ``split`` if it is a known split name, else raise :class:`ConfigError`."""
    if split not in _SPLIT_CODES:
        raise ConfigError(f"Unknown split {split!r}; use one of {', '.join(SPLITS)}.")
    return split


def stable_int(text: str) -> int:
    """A 128-bit integer hash of ``text`` that is the same on every machine and run."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:16], "big")


def task_seed_sequence(family: str, split: str, index: int, attempt: int = 0) -> np.random.SeedSequence:
    """The seed sequence of task ``index`` of ``split`` in ``family``.

    Example:
        >>> a = task_seed_sequence("countdown", "train", 0).generate_state(2)
        >>> b = task_seed_sequence("countdown", "train", 1).generate_state(2)
        >>> bool((a != b).any())
        True
    """
    check_split(split)
    if index < 0:
        raise ConfigError(f"Task index must be >= 0, got {index}.")
    return np.random.SeedSequence(
        entropy=stable_int(family), spawn_key=(_SPLIT_CODES[split], int(index), int(attempt))
    )


def task_rng(family: str, split: str, index: int, attempt: int = 0) -> np.random.Generator:
    """A fresh generator for one task; see :func:`task_seed_sequence`."""
    return np.random.Generator(np.random.PCG64(task_seed_sequence(family, split, index, attempt)))


def split_of_key(key: bytes | str) -> str:
    """The split an instance with this content key belongs to."""
    data = key.encode("utf-8") if isinstance(key, str) else key
    bucket = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big") % 100
    for split, buckets in _SPLIT_BUCKETS.items():
        if bucket in buckets:
            return split
    raise AssertionError("bucket ranges cover 0..99")  # pragma: no cover


def draw_in_split(
    family: str,
    split: str,
    index: int,
    candidate: Callable[[np.random.Generator], T],
    key: Callable[[T], bytes | str],
    max_attempts: int = 10_000,
) -> tuple[T, np.random.Generator]:
    """Draw the first candidate whose content key falls in ``split``.

    Returns the candidate and the generator it was drawn with, so that the caller
    can keep drawing the rest of the instance from the same stream.
    """
    check_split(split)
    for attempt in range(max_attempts):
        rng = task_rng(family, split, index, attempt)
        value = candidate(rng)
        if split_of_key(key(value)) == split:
            return value, rng
    raise ConfigError(
        f"Could not draw a {split} instance for {family} in {max_attempts} attempts; "
        "the configuration allows too few distinct instances."
    )


def content_digest(*parts: str, length: int = 10) -> str:
    """A short hex digest of some strings, for ids that change when content changes."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:length]

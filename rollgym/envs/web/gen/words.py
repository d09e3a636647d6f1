"""Invented proper words and person names for generated sites, split into a train and a held-out vocabulary.

Every item name, brand, venue, username and most category names of a generated site
contain a *proper word* such as ``Brelon`` or ``Taimar``, built from syllables. The
set of all such words is cut in two by a hash of the word
(:func:`vocabulary_of`): ``"train"`` sites draw only train words and ``test_unseen``
sites only held-out ones, so no item, user or record of a held-out site can appear
on a training site (``tests/envs/web/gen/test_gen_sites.py`` checks it by content hash).

Example:
    >>> import random
    >>> words = proper_words("train")
    >>> all(vocabulary_of(w) == "train" for w in words[:50]), len(words) > 2000
    (True, True)
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Literal

Vocabulary = Literal["train", "heldout"]

_ONSETS = ("b", "br", "c", "cl", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "pr", "r", "s", "st",
           "t", "tr", "v", "w", "z")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou")
_CODAS = ("", "n", "r", "l", "s", "m", "nd", "rk", "ll", "x")
_ENDINGS = ("on", "ar", "el", "is", "ia", "en", "or", "ey", "ett", "wick", "ford", "ton", "mere", "vale", "by")

FIRST_NAMES = ("Ada", "Bruno", "Chen", "Dana", "Emil", "Farah", "Gita", "Hugo", "Ines", "Jonas", "Kira", "Liam",
               "Maya", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Sami", "Tara", "Umar", "Vera", "Wade", "Yara",
               "Zoe", "Amara", "Bodhi", "Cleo", "Dario", "Esme", "Felix", "Greta", "Hana", "Ivo", "Juno", "Kofi",
               "Lena", "Mateo", "Noor", "Otto", "Priya", "Rafael", "Saoirse", "Theo", "Uma", "Viggo", "Wren")
"""Given names; people's full names pair one with a proper word, so the pair carries the vocabulary."""

HELDOUT_SHARE = 4
"""One word in this many (by hash) belongs to the held-out vocabulary."""


def vocabulary_of(word: str) -> Vocabulary:
    """Which vocabulary a proper word belongs to, by a stable hash of its lower-case form."""
    digest = hashlib.blake2b(word.lower().encode("utf-8"), digest_size=8).digest()
    return "heldout" if int.from_bytes(digest, "big") % HELDOUT_SHARE == 0 else "train"


@cache
def _all_words() -> tuple[str, ...]:
    words: set[str] = set()
    for onset in _ONSETS:
        for vowel in _VOWELS:
            for coda in _CODAS:
                for ending in _ENDINGS:
                    word = (onset + vowel + coda + ending).capitalize()
                    if 4 <= len(word) <= 10 and not any(a * 3 in word.lower() for a in "abcdefghijklmnopqrstuvwxyz"):
                        words.add(word)
    return tuple(sorted(words))


@cache
def proper_words(vocabulary: Vocabulary) -> tuple[str, ...]:
    """Every proper word of one vocabulary, sorted (deterministic on every machine)."""
    return tuple(w for w in _all_words() if vocabulary_of(w) == vocabulary)

"""``TextSpace``: the space of any Unicode string up to a length."""

from __future__ import annotations

import functools
import string
from typing import Any

import numpy as np
from gymnasium.spaces import Text

# Characters that :meth:`TextSpace.sample` draws from. Membership is not limited
# to them: any Unicode string of an allowed length is in the space.
SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " \n" + "éß中😀"


class TextSpace(Text):
    """Any Unicode string whose length lies in ``[min_length, max_length]``.

    Gymnasium's :class:`~gymnasium.spaces.Text` only admits characters from a
    fixed charset (alphanumerics by default), so natural-language observations
    would fail ``contains`` and the env checker would warn on every reset. This
    subclass keeps Text's vector-env support (batches are tuples of strings) and
    accepts every character; sampling still draws from a small printable set.

    Example:
        >>> space = TextSpace(100)
        >>> space.contains("Reach 24 with: 3, 8, 8 (× and ÷ allowed).")
        True
        >>> space.contains("x" * 101)
        False
    """

    def __init__(
        self,
        max_length: int,
        *,
        min_length: int = 0,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        tables = _sample_tables()
        if not tables:  # a gymnasium that keeps no ``_char*`` tables: build them the usual way
            super().__init__(max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)
            return
        # Text checks the lengths; its tables of the sample charset (a character-to-index dict of
        # numpy ints, two thirds of the cost of an env's construction) are built once and shared.
        super().__init__(max_length, min_length=min_length, charset=SAMPLE_CHARSET[0], seed=seed)
        self.__dict__.update(tables)

    def contains(self, x: Any) -> bool:
        """Return whether ``x`` is a string of an allowed length."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"TextSpace({self.min_length}, {self.max_length})"

    def __eq__(self, other: object, /) -> bool:
        return (
            isinstance(other, TextSpace)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def __hash__(self) -> int:
        return hash(("TextSpace", self.min_length, self.max_length))


@functools.lru_cache(maxsize=1)
def _sample_tables() -> dict[str, Any]:
    """Gymnasium Text's lookup tables of :data:`SAMPLE_CHARSET` (read-only in gymnasium), built once."""
    space = Text(1, charset=SAMPLE_CHARSET)
    return {name: value for name, value in vars(space).items() if name.startswith("_char")}

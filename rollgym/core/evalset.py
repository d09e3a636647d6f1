"""A fixed evaluation set as a task source: a list of rows with one ``"test"`` split (MATH500, HumanEval, ...)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from rollgym.core.errors import ConfigError

ONLY_SPLIT = "test"
"""The one split of an evaluation set."""


def jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, row)`` of each JSON object of a JSONL file; blank lines are skipped.

    Raises:
        ConfigError: naming the first line that is not valid JSON or not an object.
    """
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path} line {number} is not valid JSON ({exc.msg}); fix or remove it.") from exc
            if not isinstance(row, dict):
                raise ConfigError(f"{path} line {number} is not a JSON object; each line must be one row.")
            yield number, row


class EvaluationSet:
    """The split and index checks of a :class:`~rollgym.core.env.TaskSource` over a fixed list of rows.

    A subclass names its env id (``env_id``), counts its rows (:meth:`_count`) and builds its tasks in
    ``task(index, split)`` after :meth:`_checked_index`; ``count_phrase`` words the count in the error.
    """

    env_id: str
    count_phrase: ClassVar[str] = "{n} rows"

    def _count(self) -> int:
        raise NotImplementedError

    def _check_split(self, split: str) -> None:
        if split != ONLY_SPLIT:
            raise ConfigError(
                f"{self.env_id} is an evaluation set with only a 'test' split "
                f"({self.count_phrase.format(n=self._count())}); use split='test', not {split!r}."
            )

    def size(self, split: str) -> int:
        """Number of rows (only ``"test"`` exists)."""
        self._check_split(split)
        return self._count()

    def _checked_index(self, index: int, split: str) -> int:
        """``index``, once it is known to name a row of ``split``."""
        self._check_split(split)
        if not 0 <= index < self._count():
            raise ConfigError(f"task_index must be below {self._count()}, got {index}.")
        return index

"""One way to make a resource a context manager: ``with thing:`` closes it at the end."""

from __future__ import annotations

from typing import Self


class Closeable:
    """A mixin for classes with a ``close()`` method: ``with obj as same:`` gives ``obj`` back, and
    closes it when the block ends, by an exception or not (the exception is never swallowed).

    Example:
        >>> class Log(Closeable):
        ...     closed = False
        ...     def close(self) -> None:
        ...         self.closed = True
        >>> with Log() as log:
        ...     pass
        >>> log.closed
        True
    """

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

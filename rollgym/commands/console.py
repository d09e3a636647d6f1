"""Where the built-in commands write: rich consoles for stdout and stderr, the progress bar, exit codes."""

from __future__ import annotations

import sys
import time
import warnings
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

# Tables stay readable in logs and pipes, where rich would otherwise assume 80 columns.
stdout = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


_PLAIN_FORMAT: list[Any] = [warnings.formatwarning]


def _one_line_superseded(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                         line: str | None = None) -> str:
    """A superseded id's warning is one line on the command line (no source file, no code line)."""
    from rollgym.core.registration import SupersededEnvWarning

    if issubclass(category, SupersededEnvWarning):
        return f"rollgym: warning: {message}\n"
    return str(_PLAIN_FORMAT[0](message, category, filename, lineno, line))


def quiet_old_version_warnings() -> None:
    """Hide gymnasium's two-line "out of date" warning: older ids stay registered on purpose.

    ``rollgym list`` shows every id and its version; an error about an old id must be its one sentence.
    (``rollgym.make`` never triggers it; this covers code that calls ``gym.make`` with an old id.)
    """
    import gymnasium  # noqa: F401  (its logger installs a filter that shows DeprecationWarning; ours goes first)

    warnings.filterwarnings("ignore", message=r".*is out of date\. You should consider upgrading",
                            category=DeprecationWarning)
    if warnings.formatwarning is not _one_line_superseded:  # install once, however often main() runs
        _PLAIN_FORMAT[0] = warnings.formatwarning
        warnings.formatwarning = _one_line_superseded


def progress_bar(*, stats: bool = False) -> Progress:
    """A progress bar on stderr: description, bar, done/total, elapsed; hidden when stderr is not a terminal.

    With ``stats``, two more columns show the task fields ``speed`` and ``accuracy`` (see :class:`EpisodeStats`).
    """
    columns: list[Any] = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    if stats:
        columns += [TextColumn("{task.fields[speed]}"), TextColumn("{task.fields[accuracy]}")]
    return Progress(
        *columns,
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
        disable=not stderr.is_terminal,  # no bar (and no stray blank line) when stderr is a pipe or file
    )


class EpisodeStats:
    """Episodes per second and running accuracy for a progress bar (feed it every finished trajectory).

    Example:
        >>> stats = EpisodeStats()
        >>> stats.fields()
        {'speed': '- episodes/s', 'accuracy': 'accuracy -'}
    """

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.played = 0  # in this run (resumed episodes count for accuracy, not for speed)
        self.correct = 0
        self.scored = 0
        self._resumed = True

    def resumed_done(self) -> None:
        """Episodes reported from now on were played in this run."""
        self._resumed = False
        self.started = time.perf_counter()

    def add(self, trajectory: Any) -> None:
        """Count one finished trajectory (failed ones count for speed, not for accuracy)."""
        if not self._resumed:
            self.played += 1
        if getattr(trajectory, "usable", True):
            self.scored += 1
            self.correct += bool(getattr(trajectory, "correct", False))

    def fields(self) -> dict[str, Any]:
        """The ``speed`` and ``accuracy`` task fields."""
        elapsed = time.perf_counter() - self.started
        speed = f"{self.played / elapsed:.1f} episodes/s" if self.played and elapsed > 0 else "- episodes/s"
        accuracy = f"accuracy {100 * self.correct / self.scored:.1f}%" if self.scored else "accuracy -"
        return {"speed": speed, "accuracy": accuracy}

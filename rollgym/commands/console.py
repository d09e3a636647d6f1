"""Where the built-in commands write: rich consoles for stdout and stderr, the progress bar, exit codes."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

# Tables stay readable in logs and pipes, where rich would otherwise assume 80 columns.
stdout = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def progress_bar() -> Progress:
    """A progress bar on stderr: description, bar, done/total, elapsed; hidden when stderr is not a terminal."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
        disable=not stderr.is_terminal,  # no bar (and no stray blank line) when stderr is a pipe or file
    )

"""Writing matplotlib figures: the one place the trainer, the demo and the experiments save a PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def save_figure(fig: Any, path: str | Path, dpi: int = 100) -> Path:
    """Lay out ``fig``, write it as a PNG at ``path`` (creating the folder) and close it.

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt, tempfile, os
        >>> fig, ax = plt.subplots()
        >>> save_figure(fig, os.path.join(tempfile.mkdtemp(), "plots", "a.png")).name
        'a.png'
    """
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path

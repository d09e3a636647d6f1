"""``python -m rollgym.train.experiments``: see :mod:`rollgym.train.experiments.cli`."""

from __future__ import annotations

from rollgym.train.experiments.cli import main

if __name__ == "__main__":
    raise SystemExit(main())

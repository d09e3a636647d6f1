"""``python -m research``: see :mod:`research.cli`."""

from __future__ import annotations

from research.cli import main

if __name__ == "__main__":
    raise SystemExit(main())

"""Put this folder on ``sys.path`` so that ``rollgym_toyenv`` imports by its top-level name,
the name its env entry points use (as in a subprocess with ``PYTHONPATH`` set to it)."""

from __future__ import annotations

import sys
from pathlib import Path

TOY_DIR = str(Path(__file__).resolve().parent)
if TOY_DIR not in sys.path:
    sys.path.insert(0, TOY_DIR)

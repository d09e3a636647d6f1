"""Env ids are immutable: the code behind an id may not change without a ``-vN`` bump.

``spec_hashes.json`` pins the content hash of every registered id. When this
test fails, the generator, prompt or scorer of that id changed. If tasks or
scores can differ, register a new ``-vN`` id (keep the old one); if they cannot
(a pure refactor), re-pin with ``ROLLGYM_UPDATE_SPEC_HASHES=1 pytest tests/test_spec_hashes.py``
and say why in the commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import rollgym

LOCK = Path(__file__).with_name("spec_hashes.json")


def test_spec_hashes_match_the_lock():
    # only rollgym's own ids: tests register toy envs of their own
    current = {info.id: info.content_hash for info in rollgym.list_envs()
               if info.entry_point.startswith("rollgym.envs.") and info.family != "test"}
    if os.environ.get("ROLLGYM_UPDATE_SPEC_HASHES"):
        LOCK.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    pinned = json.loads(LOCK.read_text()) if LOCK.exists() else {}
    changed = sorted(i for i in current if i in pinned and pinned[i] != current[i])
    missing = sorted(set(current) - set(pinned))
    assert not changed, f"code behind {changed} changed: bump the version or re-pin (see this file's docstring)"
    assert not missing, f"{missing} are not pinned yet: re-pin (see this file's docstring)"

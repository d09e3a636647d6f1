"""A census of ToolGen's distinct tasks per split: what ``rollgym list --stats`` shows for ``ToolGen-v1``.

A generated task is a template and its public parameters; tasks are unbounded in number, but
the distinct ones are not. :func:`count_app` draws every single-app template of one app
``draws`` times from fixed seeds, exactly as the task source draws them (an instance that a
constant answer would pass is dropped), and counts the distinct contents per split: a seen
app's by :func:`~rollgym.core.seeding.split_of_key` of the content key the source uses, an
unseen app's all in ``test_unseen``. Cross-app tasks are left out, so the totals are a lower
bound of what the source can draw.

The per-app counts of the 1,024-app pool are stored in ``census_v1.json`` (written by
``python -m rollgym.envs.tools.generated.census OUT.json [WORKERS]``, pinned by
:data:`DATA_SHA256`); a test recounts a seeded sample of apps and compares.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from rollgym.core.seeding import split_of_key
from rollgym.envs.tools.generated import catalog
from rollgym.verifiers.tools import is_degenerate

DRAWS = 6
"""Seeded draws per template."""
DATA_SHA256 = "135d2e4178c6b3290ce05831269f6d697164f6b72f444096fa70d854746288b9"
"""The SHA-256 of ``census_v1.json``."""
_FILE = Path(__file__).parent / "census_v1.json"


def count_app(app_id: str, draws: int = DRAWS) -> dict[str, int]:
    """Distinct non-degenerate single-app task contents of one app, per split (see the module docstring)."""
    app = catalog.app(app_id)
    unseen = app_id in catalog.pool(catalog.GENERATIONS[-1]).unseen
    found: dict[str, set[str]] = {}
    for name, template in catalog.templates(app_id).items():
        for seed in range(draws):
            params = template.sample({app_id: app}, np.random.default_rng([seed, 7]))
            if params is None:
                continue
            params = json.loads(json.dumps(params))
            if is_degenerate(template.expect({app_id: app}, params)):
                continue
            key = json.dumps([name, params], sort_keys=True)
            found.setdefault("test_unseen" if unseen else split_of_key(key), set()).add(key)
    return {split: len(keys) for split, keys in sorted(found.items())}


def stored() -> dict[str, dict[str, int]]:
    """The stored per-app counts of ``census_v1.json`` (checked against :data:`DATA_SHA256`)."""
    raw = _FILE.read_bytes()
    if hashlib.sha256(raw).hexdigest() != DATA_SHA256:
        raise RuntimeError("rollgym/envs/tools/generated/census_v1.json does not match DATA_SHA256 in census.py; "
                           "rerun the census (python -m rollgym.envs.tools.generated.census).")
    counts: dict[str, dict[str, int]] = json.loads(raw.decode("utf-8"))
    return counts


def totals() -> dict[str, int]:
    """Distinct tasks per split of ``ToolGen-v1`` from the stored census."""
    out = {split: 0 for split in catalog.SPLITS}
    for per_split in stored().values():
        for split, n in per_split.items():
            out[split] += n
    return out


def _main(argv: list[str]) -> int:
    from multiprocessing import Pool

    out = Path(argv[0])
    workers = int(argv[1]) if len(argv) > 1 else 1
    apps = list(catalog.app_ids(generation=catalog.GENERATIONS[-1]))
    with Pool(workers) as pool:
        counts = pool.map(count_app, apps, chunksize=4)
    out.write_text(json.dumps(dict(zip(apps, counts, strict=True)), sort_keys=True, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover - the census script
    raise SystemExit(_main(sys.argv[1:]))

"""Fingerprints of every registered id's default tasks, to prove that difficulty levels changed none of them.

``python tests/default_tasks.py`` (from the repository root, with ``PYTHONPATH=.``) writes
``tests/fixtures/default_tasks.json``: for each id, the SHA-256 of ``task.to_dict()`` for a few
indices of each split, and the task id that ``reset(seed=s)`` draws for a few seeds (the default
stream). It was recorded from main before difficulty levels existed;
``tests/core/test_difficulty_defaults.py`` recomputes and compares.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from gymnasium.utils import seeding

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "default_tasks.json"
INDICES = (0, 1, 7)
SEEDS = (0, 1)


def task_digest(task: Any) -> str:
    """SHA-256 of a task's JSON form (id, env id, prompt, answer and meta)."""
    text = json.dumps(task.to_dict(), sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def splits_of(env: Any) -> tuple[str, ...]:
    """The splits sampled for an env: ``test`` only for the fixed data sets; ``test_unseen`` where it exists."""
    source = env.unwrapped.source
    if source.size("test") is not None:  # a fixed data set
        return ("test",)
    return ("train", "test", *getattr(source, "extra_splits", ()))


def fingerprint(env_id: str) -> dict[str, Any]:
    """The recorded fingerprint of one id's default tasks."""
    import rollgym

    if env_id.startswith("WorldModel"):
        return worldmodel_fingerprint(env_id)
    split = "test" if env_id.startswith(("MATH", "AIME", "AMC", "HumanEval")) else "train"
    env = rollgym.make(env_id, split=split)
    try:
        tasks = {f"{s}/{i}": task_digest(env.unwrapped.source.task(i, s)) for s in splits_of(env) for i in INDICES}
        drawn = {}
        for seed in SEEDS:  # what reset(seed=s) draws, without starting an episode (no browser, no bot)
            env.unwrapped._np_random, _ = seeding.np_random(seed)
            task, index = env.unwrapped._choose_task(None)
            drawn[str(seed)] = [index, task_digest(task)]
        return {"tasks": tasks, "seeded": drawn}
    finally:
        env.close()


def worldmodel_fingerprint(env_id: str) -> dict[str, Any]:
    """The world model has no Task: hash the first observation and the horizon of a few seeded resets."""
    import rollgym

    env = rollgym.make(env_id, lpips=False)
    out = {}
    for seed in SEEDS:
        obs, info = env.reset(seed=seed)
        h = hashlib.sha256()
        for key in sorted(obs):
            h.update(obs[key].tobytes())
        out[str(seed)] = [info["task_index"], info["num_chunks"], h.hexdigest()]
    env.close()
    return {"seeded": out}


def record() -> dict[str, Any]:
    """Fingerprints of every registered id (an id whose env cannot be built here is left out, with why)."""
    import rollgym

    result: dict[str, Any] = {}
    for info in rollgym.list_envs():
        try:
            result[info.id] = fingerprint(info.id)
        except Exception as exc:  # e.g. a binary missing on this machine
            print(f"skipped {info.id}: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(info.id, file=sys.stderr)
    return result


if __name__ == "__main__":
    data = record()
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(data)} ids to {FIXTURE}")

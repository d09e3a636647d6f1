"""Behaviour fingerprints of every registered id: resets, one oracle episode and one random episode.

Refactors of issue 44 are judged by this: an id whose fingerprint moves behaves differently.
``python tests/behaviour.py`` (from the repository root, with ``PYTHONPATH=.``) writes
``tests/fixtures/behaviour.json`` (``python tests/behaviour.py Id-v0 ...`` records only the ids named and adds
them to it): for each id, three SHA-256 digests,

- ``reset``: the observation and ``info`` of ``reset(seed=s)`` for two seeds;
- ``oracle``: one episode of the registered oracle (actions, rewards, terminated and truncated flags,
  the final ``info``), where the id has one;
- ``random``: one episode of the registered random policy with a fixed seed (``action_space.sample()``
  for an id without a text action space).

Episodes stop after :data:`MAX_STEPS` steps (fewer for the browser families, whose steps are slow), so the
whole recording takes a couple of minutes. Values are written as canonical JSON; what may differ between
two runs of the same code (timings, temporary paths, ports, process ids, memory addresses) is left out or
normalised by :func:`canonical`. It was recorded from main at 7f008fe, before the refactors of issue 44;
``tests/test_behaviour_fingerprint.py`` recomputes and compares.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "behaviour.json"
RESET_SEEDS = (0, 1)
EPISODE_SEED = 7
MAX_STEPS = 12
#: Fewer steps where a step is slow: a real browser (the web family, by family), a test run in a sandbox
#: (RepoRepair ids, by id prefix), a tree search (the Hex oracle).
STEP_BUDGET = {"web": 2, "RepoRepair": 3, "Hex": 4}
PARTS = ("reset", "oracle", "random")

#: ``info`` keys that measure time, not behaviour (``elapsed_s``, ``latency_ms``, ``duration``); not ``time`` or
#: ``finished``, which are data (a calendar event's time, a game record's end flag).
TIMING_KEY = re.compile(r"(^|_)(elapsed|seconds|secs|duration|latency|wall|timing|timings)$|_(s|ms)$")
#: Keys left out besides timings: an env's spec hash covers its code, so a code-only refactor moves it while
#: behaviour stays; tests/test_spec_hashes.py pins it (and its lineage records why it moved).
CODE_KEYS = frozenset({"spec_hash"})
#: Run-specific text: temporary folders, memory addresses, local ports, process ids.
VOLATILE = (
    (re.compile(r"/tmp/[^\s'\"),\]]+"), "/tmp/<path>"),
    (re.compile(r" at 0x[0-9a-f]+"), " at 0x<addr>"),
    (re.compile(r"#[0-9a-f]{6,}-(\d+)"), r"#<addr>-\1"),  # a tool episode's id names its env's address
    (re.compile(r"\benv-[0-9a-f]{6,}\b"), "env-<addr>"),  # so does a web episode's
    (re.compile(r"(127\.0\.0\.1|localhost):\d+"), r"\1:<port>"),
    (re.compile(r"\bpid[=: ]+\d+"), "pid=<pid>"),
)


def scrub(text: str) -> str:
    """``text`` with run-specific parts (temporary paths, addresses, ports, pids) replaced by placeholders."""
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def canonical(value: Any) -> Any:
    """A JSON-ready, run-independent form of ``value``: timing keys dropped, arrays hashed, text scrubbed."""
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
                if not TIMING_KEY.search(str(k)) and str(k) not in CODE_KEYS}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(json.dumps(canonical(v), sort_keys=True) for v in value)
    if isinstance(value, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return {"array": digest, "shape": list(value.shape), "dtype": str(value.dtype)}
    if isinstance(value, np.generic):
        return canonical(value.item())
    if isinstance(value, bytes):
        return {"bytes": hashlib.sha256(value).hexdigest()}
    if isinstance(value, float):
        return repr(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return scrub(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return canonical(to_dict())
    return scrub(repr(value))


def digest(value: Any) -> str:
    """SHA-256 of the canonical JSON of ``value``."""
    text = json.dumps(canonical(value), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _policy(entry: str) -> Any:
    import importlib

    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)


def play(env: Any, env_id: str, which: str, steps: int) -> list[Any]:
    """One episode of the oracle or the random policy from ``reset(seed=EPISODE_SEED)``, as a list of records."""
    import rollgym

    info_of = rollgym.env_info(env_id)
    observation, info = env.reset(seed=EPISODE_SEED)
    env.action_space.seed(EPISODE_SEED)
    rng = np.random.default_rng(EPISODE_SEED)
    text = isinstance(env.action_space, rollgym.TextSpace)
    act = _policy(info_of.oracle) if which == "oracle" else (
        _policy(info_of.random_policy) if info_of.random_policy is not None and text else None)
    record: list[Any] = []
    for _ in range(steps):
        if which == "oracle":
            action = act(observation, info)
        elif act is not None:
            action = act(observation, info, rng)
        else:
            action = env.action_space.sample()
        observation, reward, terminated, truncated, info = env.step(action)
        record.append([action, float(reward), bool(terminated), bool(truncated)])
        if terminated or truncated:
            break
    record.append(info)  # the final info (the last step's, at the step budget)
    return record


def make_env(env_id: str) -> Any:
    """The env an id's fingerprint is taken from (the world model without its LPIPS network)."""
    import rollgym

    kwargs = {"lpips": False} if env_id.startswith("WorldModel") else {}
    with warnings.catch_warnings():  # superseded ids are fingerprinted on purpose: they must keep behaving
        warnings.simplefilter("ignore", rollgym.SupersededEnvWarning)
        return rollgym.make(env_id, **kwargs)


def step_budget(env_id: str) -> int:
    """How many steps an episode of ``env_id`` may take in the fingerprint."""
    import rollgym

    family = rollgym.env_info(env_id).family
    return next((n for key, n in STEP_BUDGET.items() if key == family or env_id.startswith(key)), MAX_STEPS)


def fingerprint(env_id: str) -> dict[str, str]:
    """The three digests of one id (``oracle`` is absent for an id without an oracle)."""
    import rollgym

    steps = step_budget(env_id)
    env = make_env(env_id)
    try:
        resets = [env.reset(seed=seed) for seed in RESET_SEEDS]
        out = {"reset": digest(resets)}
        if rollgym.env_info(env_id).oracle is not None:
            out["oracle"] = digest(play(env, env_id, "oracle", steps))
        out["random"] = digest(play(env, env_id, "random", steps))
        return out
    finally:
        env.close()


def record(ids: list[str] | None = None) -> dict[str, Any]:
    """Fingerprints of ``ids`` (every registered id by default; one that cannot be built here is left out)."""
    import rollgym

    result: dict[str, Any] = {}
    for env_id in ids or [info.id for info in rollgym.list_envs() if info.family != "test"]:
        start = time.perf_counter()
        try:
            result[env_id] = fingerprint(env_id)
        except Exception as exc:  # e.g. a binary or data set missing on this machine
            print(f"skipped {env_id}: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(f"{env_id} {time.perf_counter() - start:.2f}s", file=sys.stderr)
    return result


if __name__ == "__main__":
    import os

    os.environ.setdefault("ROLLGYM_DATA_DIR", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    args = sys.argv[1:]
    out = Path(args[args.index("--out") + 1]) if "--out" in args else FIXTURE
    chosen = [a for a in args if not a.startswith("--") and a != str(out)]
    data = record(chosen or None)
    if chosen and out.exists():  # named ids are added to (or replaced in) the recorded ones
        data = {**json.loads(out.read_text(encoding="utf-8")), **data}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(data)} ids to {out}")

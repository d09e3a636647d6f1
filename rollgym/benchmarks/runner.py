"""Run a suite with an agent into a results bundle, resumably.

:func:`run_suite` plays every runnable entry with :func:`~rollgym.rollout.collect`,
streaming each episode into ``transcripts/<entry>.jsonl``; when an entry is done,
the hidden answers are removed from its transcript. Interrupt it and run it
again with the same arguments: finished episodes are read back and skipped, and
the final summary is the same as an uninterrupted run's. A folder that holds a
different run (other suite hash, seed or agent) is refused with a sentence that
names the difference.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollgym.benchmarks.report import headline, ladder_ratings, summarize_entry
from rollgym.benchmarks.suite import SkippedEntry, Suite, SuiteEntry
from rollgym.bundles.format import (
    BUNDLE_FORMAT,
    MANIFEST,
    SUMMARY,
    TRANSCRIPTS,
    read_json,
    strip_results_file,
    write_json,
)
from rollgym.core.errors import ConfigError
from rollgym.rollout.curriculum import FixedLevel
from rollgym.rollout.types import RolloutGroup

EntryProgress = Callable[[str, int, int], None]

#: Manifest fields that must match for a run to resume into an existing bundle folder.
_IDENTITY = ("suite", "seed", "limit", "only", "agent")


@dataclass
class AgentSpec:
    """Which agent plays: a reference agent by name, or a model (folder, hub id, ``vllm:PATH`` or URL).

    Attributes:
        agent: ``"oracle"`` or ``"random"`` (or any name :func:`~rollgym.agents.make_agent` knows).
        model: A model for :func:`~rollgym.agents.backends.make_backend`; the agent is then a ChatAgent.
        sampling: Overrides of each entry's sampling settings (``temperature``, ``max_tokens``, ...).
        label: The name shown on the leaderboard; defaults to the agent or model.
        model_size_b: The model's parameters in billions, for the leaderboard's size plot.
    """

    agent: str | None = None
    model: str | None = None
    sampling: dict[str, Any] = field(default_factory=dict)
    label: str | None = None
    model_size_b: float | None = None
    _backend: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (self.agent is None) == (self.model is None):
            raise ConfigError("Pass exactly one of --agent (oracle, random) or --model (a folder, hub id or URL).")
        if self.agent is not None:
            from rollgym.agents import AGENTS

            choices = sorted(name for name in AGENTS if name != "human")
            if self.agent not in choices:
                raise ConfigError(f"Unknown agent {self.agent!r} for a benchmark; use one of {', '.join(choices)}.")

    @property
    def kind(self) -> str:
        """``"reference"`` or ``"model"``."""
        return "reference" if self.agent is not None else "model"

    def to_dict(self) -> dict[str, Any]:
        """The agent as the manifest records it."""
        return {
            "kind": self.kind,
            "agent": self.agent,
            "model": self.model,
            "sampling": dict(self.sampling),
            "label": self.label or self.agent or self.model,
            "model_size_b": self.model_size_b,
        }

    def build(self, entry: SuiteEntry) -> Any:
        """A fresh agent for one entry (LLM agents get the entry's generation limits)."""
        if self.agent is not None:
            from rollgym.agents import make_agent

            return make_agent(self.agent)
        from rollgym.agents.backends import make_backend
        from rollgym.agents.factory import build_llm_agent

        if self._backend is None:  # one backend for every entry's agent
            self._backend = make_backend(str(self.model))
        return build_llm_agent(str(self.model), sampling={**entry.sampling, **self.sampling}, backend=self._backend)


def machine_info() -> dict[str, Any]:
    """Where the run happened: OS, Python, CPU count (no user names or paths)."""
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def prepare_suite(suite: Suite, seed: int | None = None, limit: int | None = None,
                  only: list[str] | None = None) -> Suite:
    """The suite as run: with a replaced seed (hidden test seeds), a task limit and an entry subset applied."""
    if only:
        suite = suite.only(list(only))
    if seed is not None:
        suite = suite.with_seed(seed)
    if limit is not None:
        suite = suite.limited(limit)
    return suite


def build_manifest(
    suite: Suite,
    runnable: list[SuiteEntry],
    skipped: list[SkippedEntry],
    agent: AgentSpec,
    seed: int | None,
    limit: int | None,
    only: list[str] | None = None,
    spec_hashes: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The bundle's manifest (without ``complete`` and times).

    ``spec_hashes`` maps an entry's name to the spec hash its transcript was recorded under, where
    that is not its env's current one (see :func:`recorded_spec_hashes`).
    """
    from rollgym import __version__
    from rollgym.core.registration import env_info

    recorded = spec_hashes or {}

    return {
        "kind": "rollgym-bundle",
        "format": BUNDLE_FORMAT,
        "rollgym_version": __version__,
        "suite": {
            "name": suite.name,
            "version": suite.version,
            "label": suite.label,
            "task_hash": suite.task_hash(runnable, recorded),
        },
        "seed": seed,
        "limit": limit,
        "only": list(only) if only else None,
        "agent": agent.to_dict(),
        "entries": [
            {
                "name": e.name,
                "env_id": e.env_id,
                "spec_hash": recorded.get(e.name) or env_info(e.env_id).content_hash,
                "seed": e.seed,
                "split": e.split,
                "n_tasks": e.n_tasks,
                "group_size": e.group_size,
                "max_steps": e.max_steps,
                "env_kwargs": e.env_kwargs,
                "sampling": {**e.sampling, **agent.sampling} if agent.kind == "model" else {},
                "transcript": f"{TRANSCRIPTS}/{e.name}.jsonl",
            }
            for e in runnable
        ],
        "skipped": [dataclasses.asdict(s) for s in skipped],
        "machine": machine_info(),
    }


def compute_summary(suite: Suite, entries: list[SuiteEntry], groups: dict[str, list[RolloutGroup]]) -> dict[str, Any]:
    """The bundle's summary from its groups; verification recomputes it the same way."""
    per_entry = {e.name: summarize_entry(e, groups[e.name]) for e in entries}
    return {
        "suite": suite.label,
        "entries": per_entry,
        "ratings": ladder_ratings(entries, groups),
        "score": headline(per_entry),
    }


def recorded_spec_hashes(folder: Path, entries: list[SuiteEntry]) -> dict[str, str]:
    """The entries whose transcript in ``folder`` was recorded under their env's hash from before a
    re-pin, mapped to that hash: resuming such a run continues it under the hash it began with.
    """
    from rollgym.core.registration import earlier_hashes

    found = {}
    for entry in entries:
        path = folder / TRANSCRIPTS / f"{entry.name}.jsonl"
        try:
            with path.open("rb") as handle:
                header = json.loads(handle.readline())
        except (OSError, ValueError):
            continue
        spec_hash = header.get("spec_hash") if isinstance(header, dict) else None
        if spec_hash in earlier_hashes(entry.env_id):
            found[entry.name] = str(spec_hash)
    return found


def _check_resume(folder: Path, manifest: dict[str, Any], suite: Suite, runnable: list[SuiteEntry]) -> None:
    path = folder / MANIFEST
    if not path.exists():
        return
    old = read_json(path)
    diffs = [name for name in _IDENTITY if old.get(name) != manifest.get(name)
             and not (name == "suite" and _same_tasks_across_re_pins(old, manifest, suite, runnable))]
    if diffs:
        raise ConfigError(
            f"{folder} holds a different run ({', '.join(diffs)} differ); rerun with the same arguments to resume, "
            "or choose another --out folder."
        )


def _same_tasks_across_re_pins(old: dict[str, Any], manifest: dict[str, Any], suite: Suite,
                               runnable: list[SuiteEntry]) -> bool:
    """Whether a run's old manifest names the same suite and task set as ``manifest``, its task hash
    differing only because an env was re-pinned since (its old hash is in the id's lineage)."""
    from rollgym.core.registration import env_info, equivalent_hashes

    old_suite, new_suite = old.get("suite"), manifest.get("suite")
    if not isinstance(old_suite, dict) or not isinstance(new_suite, dict):
        return False
    if {**old_suite, "task_hash": None} != {**new_suite, "task_hash": None}:
        return False
    by_name = {e.name: e for e in runnable}
    hashes: dict[str, str] = {}
    for recorded in old.get("entries") or []:
        entry = by_name.get(str(recorded.get("name"))) if isinstance(recorded, dict) else None
        if entry is None or recorded.get("spec_hash") not in equivalent_hashes(env_info(entry.env_id)):
            return False
        hashes[entry.name] = str(recorded["spec_hash"])
    return bool(old_suite.get("task_hash") == suite.task_hash(runnable, hashes))


def run_suite(
    suite: Suite,
    agent: AgentSpec,
    out_dir: str | os.PathLike[str],
    *,
    seed: int | None = None,
    limit: int | None = None,
    only: list[str] | None = None,
    workers: int | None = 1,
    progress: EntryProgress | None = None,
    driver: str = "threads",
) -> dict[str, Any]:
    """Run ``suite`` with ``agent`` into the bundle folder ``out_dir`` and return the summary.

    Args:
        suite: The suite (see :func:`~rollgym.benchmarks.suite.load_suite`).
        agent: Who plays.
        out_dir: The bundle folder; an existing one from the same run is resumed.
        seed: Replace every entry's seed (a leaderboard's hidden test seed).
        limit: At most this many tasks per entry (a smaller task set, for smoke tests).
        only: Run only these entries (a partial run; the manifest records it).
        workers: Episodes played at once per entry (worth it for model servers); ``None``: the driver's default.
        progress: Called as ``progress(entry_name, done, total)`` after every episode.
        driver: How an entry's episodes run at once: ``"threads"`` or ``"async"`` (the episode engine's
            drivers, :func:`~rollgym.rollout.engine.run_spec`); results do not depend on it.

    Example:
        >>> from rollgym.benchmarks.suite import load_suite
        >>> summary = run_suite(load_suite("quick"), AgentSpec(agent="oracle"), "runs/oracle")  # doctest: +SKIP
        >>> summary["entries"]["countdown"]["accuracy"]["value"]  # doctest: +SKIP
        1.0
    """
    from rollgym.rollout.drivers import run_spec
    from rollgym.rollout.spec import RunSpec

    folder = Path(out_dir)
    run = prepare_suite(suite, seed, limit, only)
    runnable, skipped = run.partition()
    if not runnable:
        raise ConfigError(f"No entry of {suite.label} can run here: {'; '.join(s.reason for s in skipped)}")
    manifest = build_manifest(run, runnable, skipped, agent, seed, limit, only, recorded_spec_hashes(folder, runnable))
    _check_resume(folder, manifest, run, runnable)
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    if (folder / MANIFEST).exists():  # a resumed run keeps its start time
        started = str(read_json(folder / MANIFEST).get("started", started))
    write_json(folder / MANIFEST, {**manifest, "complete": False, "started": started})
    (folder / SUMMARY).unlink(missing_ok=True)

    groups: dict[str, list[RolloutGroup]] = {}
    for entry in runnable:
        callback = None
        if progress is not None:
            name = entry.name

            def callback(done: int, total: int, name: str = name) -> None:
                progress(name, done, total)

        spec = RunSpec.of(entry.env_id, entry.n_tasks, entry.group_size, split=entry.split, seed=entry.seed,
                          out=str(folder / TRANSCRIPTS / f"{entry.name}.jsonl"), env_kwargs=entry.env_kwargs,
                          max_steps=entry.max_steps)
        groups[entry.name] = run_spec(spec, agent.build(entry), driver=driver, parallel=workers, progress=callback,
                                      task_chooser=None if entry.level is None else FixedLevel(entry.level))
        # A bundle is published: its transcripts must not hand out the suite's answers.
        strip_results_file(folder / TRANSCRIPTS / f"{entry.name}.jsonl")
    summary = compute_summary(run, runnable, groups)
    write_json(folder / SUMMARY, summary)
    finished = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    write_json(folder / MANIFEST, {**manifest, "complete": True, "started": started, "finished": finished})
    return summary

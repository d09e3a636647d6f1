"""Benchmark suites: named, versioned lists of env configurations with fixed splits, seeds and sizes.

A suite is a YAML file (the built-in ones ship in ``rollgym/benchmarks/suites/``)::

    name: quick
    version: 1
    description: A few minutes on a CPU.
    seed: 0                      # the run seed of every entry (entries may override it)
    split: test
    entries:
      - name: countdown          # unique, used for file names and table rows
        env: Countdown-v0
        n_tasks: 20
        group_size: 4            # samples per task (k of pass@k, best-of-k, pass^k)
        max_steps: 100
        env_kwargs: {}
        sampling: {max_tokens: 1024, temperature: 1.0}   # for LLM agents; reference agents ignore it
        difficulty: difficulty.num_numbers               # dotted path into Task.meta, for per-difficulty tables
        level: level-1           # optional: play every task at this difficulty level (reset option 'difficulty')
        rating: {ladder: connect-four, opponent: random, elo: 0}   # game entries: the opponent's anchored Elo

Task ``i`` of an entry is the task that ``collect(..., seed=entry.seed)`` plays
as task ``i`` (env seed ``episode_seed(seed, i)``), so the same suite version
gives the same tasks everywhere. :meth:`Suite.task_hash` hashes every task id
with the env spec hashes and the entry configs; it changes exactly when the
task set does. An entry whose env id is not registered, or whose data or extra
is missing, is *skipped* with a note, never silently.

A suite's name alone means its newest version (``suites/NAME.yaml``). A version is
never edited once shipped: a change makes a new version, and the older one stays,
frozen, in ``suites/history/NAME.vN.yaml``, so that ``quick@v2`` still loads and a
bundle made on it still verifies (:func:`suite_versions`, :func:`builtin_suite`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rollgym.core.difficulty import DIFFICULTY_OPTION
from rollgym.core.errors import ConfigError, RollgymError
from rollgym.core.task import Task

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_ENTRY_KEYS = frozenset(
    {"name", "env", "n_tasks", "group_size", "max_steps", "split", "seed", "env_kwargs", "sampling", "difficulty",
     "level", "rating", "metrics", "note"}
)
_SUITE_KEYS = frozenset({"name", "version", "description", "seed", "split", "defaults", "entries", "protocol"})
DEFAULT_METRICS: tuple[str, ...] = ("accuracy", "mean_reward", "pass@k", "best_of_k", "pass^k")
_HISTORY = "history"
_FROZEN_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_\-]{0,63})\.v([1-9][0-9]{0,5})\.yaml$")


@dataclass(frozen=True)
class SuiteEntry:
    """One env configuration of a suite.

    Attributes:
        name: Unique within the suite; names the transcript file and the table row.
        env_id: The registered env id.
        n_tasks: Tasks played (groups).
        group_size: Samples per task.
        max_steps: Cap on agent actions per episode.
        split: The env split tasks come from.
        seed: The run seed given to :func:`~rollgym.rollout.collect`.
        env_kwargs: Constructor arguments for the env.
        sampling: Generation limits for LLM agents (``max_tokens``, ``temperature``, ...).
        difficulty: Dotted path into ``Task.meta`` whose value buckets the per-difficulty table.
        level: A difficulty level of the env (an index or a level name, see
            :mod:`rollgym.core.difficulty`): every task is drawn from it, as
            ``reset(options={"difficulty": level})`` draws. ``None``: the env's default draw.
        rating: For games: ``{"ladder", "opponent", "elo"}``; the agent gets an Elo per ladder.
        metrics: Names of the metrics the suite reports for this entry.
        note: Free text, e.g. the paper whose protocol the entry follows.
    """

    name: str
    env_id: str
    n_tasks: int
    group_size: int = 1
    max_steps: int = 100
    split: str = "test"
    seed: int = 0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    sampling: dict[str, Any] = field(default_factory=dict)
    difficulty: str | None = None
    level: int | str | None = None
    rating: dict[str, Any] | None = None
    metrics: tuple[str, ...] = DEFAULT_METRICS
    note: str = ""

    def config(self) -> dict[str, Any]:
        """Everything that defines the entry's tasks and how they are played, JSON-ready."""
        data = dataclasses.asdict(self)
        data["metrics"] = list(self.metrics)
        if self.level is None:  # absent rather than null, so entries made before levels keep their task hash
            del data["level"]
        return data

    def reset_options(self) -> dict[str, Any] | None:
        """The reset options every episode of the entry is played with (its level), or ``None``."""
        return None if self.level is None else {DIFFICULTY_OPTION: self.level}

    def difficulty_of(self, task: Task | None) -> str:
        """The entry's difficulty bucket of ``task`` (``"all"`` when the entry has no difficulty key)."""
        if not self.difficulty or task is None:
            return "all"
        value: Any = task.meta
        for part in self.difficulty.split("."):
            if not isinstance(value, dict) or part not in value:
                return "unknown"
            value = value[part]
        return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


@dataclass(frozen=True)
class SkippedEntry:
    """An entry that cannot run here, and why (one sentence)."""

    name: str
    env_id: str
    reason: str


@dataclass(frozen=True)
class Suite:
    """A named, versioned benchmark suite; load one with :func:`load_suite`.

    Example:
        >>> suite = load_suite("quick")
        >>> suite.name, suite.version >= 1
        ('quick', True)
    """

    name: str
    version: int
    description: str
    entries: tuple[SuiteEntry, ...]
    protocol: str = ""

    @property
    def label(self) -> str:
        """``name@vN``, how bundles and the leaderboard name a suite version."""
        return f"{self.name}@v{self.version}"

    def entry(self, name: str) -> SuiteEntry:
        """The entry called ``name``."""
        for entry in self.entries:
            if entry.name == name:
                return entry
        names = [e.name for e in self.entries]
        raise ConfigError(f"Suite {self.label} has no entry {name!r}; its entries are {names}.")

    def with_seed(self, seed: int) -> Suite:
        """The same suite with every entry's run seed replaced by ``seed`` (hidden test seeds)."""
        _check_int("seed", seed, 0)
        return dataclasses.replace(self, entries=tuple(dataclasses.replace(e, seed=seed) for e in self.entries))

    def limited(self, n_tasks: int) -> Suite:
        """The same suite with at most ``n_tasks`` tasks per entry (a smaller, different task set)."""
        _check_int("limit", n_tasks, 1)
        entries = tuple(dataclasses.replace(e, n_tasks=min(e.n_tasks, n_tasks)) for e in self.entries)
        return dataclasses.replace(self, entries=entries)

    def only(self, names: list[str]) -> Suite:
        """The same suite with only the named entries (a different task set)."""
        entries = tuple(self.entry(n) for n in names)
        return dataclasses.replace(self, entries=entries)

    def config(self) -> dict[str, Any]:
        """The suite's definition, JSON-ready."""
        return {"name": self.name, "version": self.version, "entries": [e.config() for e in self.entries]}

    def partition(self) -> tuple[list[SuiteEntry], list[SkippedEntry]]:
        """Split the entries into those that can run here and those skipped (with a reason)."""
        runnable: list[SuiteEntry] = []
        skipped: list[SkippedEntry] = []
        for entry in self.entries:
            reason = entry_unavailable(entry)
            if reason is None:
                runnable.append(entry)
            else:
                skipped.append(SkippedEntry(entry.name, entry.env_id, reason))
        return runnable, skipped

    def task_ids(self, entry: SuiteEntry) -> list[str]:
        """The ids of the entry's tasks, in task order."""
        return [t.id for t in entry_tasks(entry)]

    def task_hash(self, entries: list[SuiteEntry] | None = None, spec_hashes: dict[str, str] | None = None) -> str:
        """A 16-hex-digit hash of the task set: task ids, env spec hashes and entry configs.

        ``entries`` defaults to the runnable entries (see :meth:`partition`); ``spec_hashes`` maps an
        entry's name to the spec hash it was recorded under, where that is not its env's current one.
        """
        from rollgym.core.registration import env_info

        chosen = self.partition()[0] if entries is None else entries
        recorded = spec_hashes or {}
        return task_set_hash(
            self.name,
            self.version,
            [(e.config(), recorded.get(e.name) or env_info(e.env_id).content_hash, self.task_ids(e)) for e in chosen],
        )


def task_set_hash(name: str, version: int, parts: list[tuple[dict[str, Any], str, list[str]]]) -> str:
    """Hash ``(entry config, spec hash, task ids)`` triples of a suite into 16 hex digits."""
    h = hashlib.sha256()
    h.update(json.dumps([name, version], sort_keys=True).encode())
    for config, spec_hash, ids in parts:
        h.update(json.dumps(config, sort_keys=True, default=repr).encode())
        h.update(spec_hash.encode())
        h.update(json.dumps(ids).encode())
    return h.hexdigest()[:16]


_UNAVAILABLE: dict[str, str | None] = {}


def entry_unavailable(entry: SuiteEntry) -> str | None:
    """Why ``entry`` cannot run on this machine (one sentence), or ``None`` when it can.

    The answer is cached per process: probing an env whose data is missing can be slow.
    """
    key = json.dumps([entry.env_id, entry.split, entry.env_kwargs, entry.level], sort_keys=True, default=repr)
    if key not in _UNAVAILABLE:
        _UNAVAILABLE[key] = _probe(entry)
    return _UNAVAILABLE[key]


def _probe(entry: SuiteEntry) -> str | None:
    from rollgym.core.registration import env_info

    try:
        env_info(entry.env_id)
    except RollgymError:
        return f"{entry.env_id} is not registered in this rollgym; skipped."
    try:
        entry_tasks(entry, limit=1)
    except LevelError:
        raise  # the suite's mistake, not this machine's: never a skip
    except RollgymError as exc:
        return f"{entry.env_id} cannot make tasks here ({exc}); skipped."
    except ImportError as exc:
        return f"{entry.env_id} needs a package that is not installed ({exc}); skipped."
    return None


def entry_tasks(entry: SuiteEntry, limit: int | None = None) -> list[Task]:
    """Regenerate the entry's tasks exactly as :func:`~rollgym.rollout.collect` plays them.

    Envs with a task source (every :class:`~rollgym.core.env.TextEnv`) are asked for the task
    directly, the way ``reset(seed=...)`` picks it, so no browser or engine starts; other envs
    are reset.
    """
    from gymnasium.utils import seeding

    from rollgym.core.env import TextEnv
    from rollgym.core.registration import make
    from rollgym.rollout import episode_seed

    env = make(entry.env_id, split=entry.split, **entry.env_kwargs)
    tasks: list[Task] = []
    try:
        unwrapped = env.unwrapped
        count = entry.n_tasks if limit is None else min(limit, entry.n_tasks)
        for i in range(count):
            seed = episode_seed(entry.seed, i)
            if isinstance(unwrapped, TextEnv):
                source = unwrapped.source if entry.level is None else _level_source(entry, unwrapped)
                rng, _ = seeding.np_random(seed)
                size = source.size(unwrapped.split)
                index = int(rng.integers(0, size if size else 2**31))
                tasks.append(source.task(index, unwrapped.split))
            else:
                env.reset(seed=seed, options=entry.reset_options())
                task = getattr(unwrapped, "task", None)
                if not isinstance(task, Task):
                    raise ConfigError(
                        f"{entry.env_id} exposes no text Task (it is not a text env), so text agents cannot play it"
                    )
                tasks.append(task)
    finally:
        env.close()
    return tasks


class LevelError(ConfigError):
    """A suite entry names a difficulty level its env does not have."""


def _level_source(entry: SuiteEntry, env: Any) -> Any:
    try:
        return env.level_source(entry.level)
    except ConfigError as exc:
        raise LevelError(f"Suite entry {entry.name!r}: {exc}") from None


# -- loading ------------------------------------------------------------------------------------


def _check_int(name: str, value: Any, low: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ConfigError(f"{name} must be an integer >= {low}, got {value!r}.")
    return value


def _check_level(where: str, value: Any) -> int | str | None:
    if value is None or (isinstance(value, str) and value) or (
            isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise ConfigError(f"{where}: level must be a difficulty level index >= 0 or a level name, got {value!r}.")


def builtin_suites() -> list[str]:
    """Names of the suites shipped with rollgym."""
    folder = resources.files("rollgym.benchmarks") / "suites"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _frozen_files(name: str) -> dict[int, Any]:
    """``{version: file}`` of the older versions of built-in suite ``name`` (``suites/history/NAME.vN.yaml``)."""
    folder = resources.files("rollgym.benchmarks") / "suites" / _HISTORY
    if not folder.is_dir():
        return {}
    found = {}
    for item in folder.iterdir():
        match = _FROZEN_RE.match(item.name)
        if match and match.group(1) == name:
            found[int(match.group(2))] = item
    return found


def suite_versions(name: str) -> list[int]:
    """The versions of built-in suite ``name`` this rollgym ships, oldest first; the last is the newest.

    The newest is ``suites/NAME.yaml``; older versions stay, frozen, in ``suites/history/NAME.vN.yaml``
    so that bundles made on them still verify.

    Example:
        >>> suite_versions("quick")
        [2, 3, 4]
    """
    current = builtin_suite(name).version
    return sorted({*_frozen_files(name), current})


def versions_phrase(name: str, versions: list[int]) -> str:
    """The labels of ``versions`` of suite ``name`` for a sentence, saying which one the bare name means.

    Example:
        >>> versions_phrase("quick", [2, 3])
        "quick@v2 and quick@v3 (plain 'quick' is quick@v3)"
    """
    labels = [f"{name}@v{v}" for v in versions]
    if len(labels) == 1:
        return labels[0]
    return f"{', '.join(labels[:-1])} and {labels[-1]} (plain {name!r} is {labels[-1]})"


def _checked_name(where: str, data: dict[str, Any], allowed: set[str] | frozenset[str]) -> str:
    """``data``'s name, once ``data`` has no key beyond ``allowed`` and a name of the allowed characters."""
    unknown = set(data) - allowed
    if unknown:
        raise ConfigError(f"{where} has unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}.")
    name = data.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ConfigError(f"{where} needs a name of letters, digits, '.', '_' or '-', got {name!r}.")
    return name


def parse_suite(data: Any, source: str = "suite") -> Suite:
    """Build a :class:`Suite` from parsed YAML, validating every field with a clear message."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must be a YAML mapping with name, version and entries.")
    name = _checked_name(source, data, _SUITE_KEYS)
    version = _check_int(f"{source}: version", data.get("version"), 1)
    defaults = dict(data.get("defaults") or {})
    base = {"seed": data.get("seed", 0), "split": data.get("split", "test"), **defaults}
    raw_entries = data.get("entries")
    if not isinstance(raw_entries, list) or not raw_entries:
        raise ConfigError(f"{source} needs a non-empty list of entries.")
    entries: list[SuiteEntry] = []
    for position, raw in enumerate(raw_entries):
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: entry {position} must be a mapping.")
        merged = {**base, **raw}
        where = f"{source}: entry {merged.get('name', position)!r}"
        entry_name = _checked_name(where, merged, _ENTRY_KEYS)
        if not isinstance(merged.get("env"), str):
            raise ConfigError(f"{where} needs an env id (env: Countdown-v0).")
        rating = merged.get("rating")
        if rating is not None and (
            not isinstance(rating, dict) or {"ladder", "opponent", "elo"} - set(rating)
        ):
            raise ConfigError(f"{where}: rating needs ladder, opponent and elo.")
        metrics = merged.get("metrics", list(DEFAULT_METRICS))
        if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
            raise ConfigError(f"{where}: metrics must be a list of names.")
        for key in ("env_kwargs", "sampling"):
            if not isinstance(merged.get(key) or {}, dict):
                raise ConfigError(f"{where}: {key} must be a mapping.")
        entries.append(
            SuiteEntry(
                name=entry_name,
                env_id=merged["env"],
                n_tasks=_check_int(f"{where}: n_tasks", merged.get("n_tasks"), 1),
                group_size=_check_int(f"{where}: group_size", merged.get("group_size", 1), 1),
                max_steps=_check_int(f"{where}: max_steps", merged.get("max_steps", 100), 1),
                split=str(merged["split"]),
                seed=_check_int(f"{where}: seed", merged["seed"], 0),
                env_kwargs=dict(merged.get("env_kwargs") or {}),
                sampling=dict(merged.get("sampling") or {}),
                difficulty=merged.get("difficulty"),
                level=_check_level(where, merged.get("level")),
                rating=dict(rating) if rating else None,
                metrics=tuple(metrics),
                note=str(merged.get("note", "")),
            )
        )
    names = [e.name for e in entries]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"{source} has duplicate entry names {duplicates}; each entry needs its own name.")
    return Suite(name, version, str(data.get("description", "")), tuple(entries), str(data.get("protocol", "")))


def _parse_yaml(text: str, source: str) -> Suite:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        # The line and column only: YAML's own message quotes the offending text.
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ConfigError(f"{source} is not valid YAML{where}; fix the file.") from None
    return parse_suite(data, source)


def builtin_suite(name: str, version: int | None = None) -> Suite:
    """A suite shipped with rollgym, by registry name and (optionally) version; never a path.

    ``version=None`` is the newest version. This is the only loader for names that come from
    outside (a bundle's manifest, an upload's query string): it reads no file but the suite's
    own YAML inside the package, and its errors quote at most the first 64 characters of the
    name asked for.

    Raises:
        ConfigError: for a name that is not a built-in suite, or a version this rollgym does not ship
            (the sentence names the versions it ships).

    Example:
        >>> builtin_suite("quick", 2).label, builtin_suite("quick").label
        ('quick@v2', 'quick@v4')
    """
    names = builtin_suites()
    if not isinstance(name, str) or not _NAME_RE.match(name) or name not in names:
        shown = repr(name[:64]) if isinstance(name, str) else type(name).__name__
        raise ConfigError(f"Unknown suite {shown}; name one of this rollgym's built-in suites: {', '.join(names)}.")
    text = (resources.files("rollgym.benchmarks") / "suites" / f"{name}.yaml").read_text(encoding="utf-8")
    suite = _parse_yaml(text, f"suite {name!r}")
    if version is None or version == suite.version:
        return suite
    frozen = _frozen_files(name)
    if isinstance(version, bool) or not isinstance(version, int) or version not in frozen:
        shown = repr(version)[:32]
        known = sorted({*frozen, suite.version})
        raise ConfigError(f"Suite {name} has no version {shown}; this rollgym ships {versions_phrase(name, known)}.")
    old = _parse_yaml(frozen[version].read_text(encoding="utf-8"), f"suite {name}@v{version}")
    if (old.name, old.version) != (name, version):
        raise ConfigError(f"The frozen file of {name}@v{version} defines {old.label}; this rollgym is broken.")
    return old


def parse_suite_label(text: str) -> tuple[str, int | None]:
    """Split ``"quick@v2"`` (or ``"quick@2"``) into ``("quick", 2)``; a bare name gives ``(name, None)``.

    Raises:
        ConfigError: when the part after ``@`` is not a version number.

    Example:
        >>> parse_suite_label("quick@v2"), parse_suite_label("quick")
        (('quick', 2), ('quick', None))
    """
    name, at, version = text.partition("@")
    if not at:
        return name, None
    digits = version.removeprefix("v")
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 6:
        raise ConfigError(
            f"Suite version {version[:16]!r} is not a version number; write the suite as NAME or NAME@vN (quick@v2)."
        )
    return name, int(digits)


def load_suite(name_or_path: str) -> Suite:
    """Load a built-in suite by name (``"quick"``: the newest version; ``"quick@v2"``) or, for the command line,
    a YAML file by path.

    Untrusted names (from bundles or uploads) go through :func:`builtin_suite`, which reads no path.

    Raises:
        ConfigError: for an unknown name or version, a missing file or an invalid definition.
    """
    path = Path(name_or_path)
    if name_or_path.endswith((".yaml", ".yml")) or "/" in name_or_path or path.is_file():
        if not path.is_file():
            raise ConfigError(f"Suite file {path} does not exist; check the path.")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"Cannot read suite file {path} ({type(exc).__name__}); pass a YAML file.") from None
        return _parse_yaml(text, str(path))
    bare = name_or_path.partition("@")[0]
    if bare not in builtin_suites():
        raise ConfigError(
            f"Unknown suite {name_or_path[:64]!r}; use one of {', '.join(builtin_suites())} or a path to a YAML file."
        )
    return builtin_suite(*parse_suite_label(name_or_path))

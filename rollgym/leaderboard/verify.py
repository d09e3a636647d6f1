"""Re-verification of a results bundle: nothing a submitter claims is trusted.

:func:`verify_bundle` rebuilds the suite from this rollgym (by name and version),
checks the seeds and env spec hashes, regenerates every task from the suite's
seed, *replays* every transcript's recorded actions through a fresh env reset
with the same seed and compares the rewards, observations and outcome, and
finally recomputes the summary from the replayed episodes and compares it with
the claimed one. Replay works for single-turn and multi-turn envs alike, as long
as the env (and its opponent) is deterministic given the seed, which rollgym's are.

Hidden test seeds: a leaderboard keeps a secret and issues each submission the
seed :func:`hidden_seed` ``(secret, submission_id)``; it verifies the bundle with
``expected_seed=`` that seed, so a submitter cannot know the test tasks in advance.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollgym.benchmarks.runner import compute_summary, prepare_suite
from rollgym.benchmarks.suite import (
    Suite,
    SuiteEntry,
    builtin_suite,
    builtin_suites,
    suite_versions,
    task_set_hash,
    versions_phrase,
)
from rollgym.bundles.format import (
    DEFAULT_LIMITS,
    Bundle,
    BundleError,
    BundleLimits,
    clean_json,
    open_bundle,
    public_task,
)
from rollgym.core.deprecation import REMOVED_IN
from rollgym.core.errors import ConfigError
from rollgym.rollout.store import FORMAT_VERSION, EpisodeRecord
from rollgym.rollout.types import RolloutGroup, Trajectory, to_jsonable

MAX_REASONS = 20
#: Longest reason kept; reasons quote the submitter's values, which may be any size.
MAX_REASON_CHARS = 500


def hidden_seed(secret: str | bytes, submission_id: str) -> int:
    """The test seed a leaderboard issues to one submission: HMAC-SHA256(secret, id), as a 31-bit integer.

    Example:
        >>> hidden_seed("s3cret", "sub-1") == hidden_seed("s3cret", "sub-1") != hidden_seed("s3cret", "sub-2")
        True
    """
    key = secret.encode() if isinstance(secret, str) else secret
    digest = hmac.new(key, submission_id.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass
class VerificationReport:
    """The outcome of :func:`verify_bundle`.

    Attributes:
        ok: True when every check passed.
        reasons: One sentence per failed check (at most ``MAX_REASONS``).
        summary: The summary recomputed from the replayed episodes (``None`` when it could not be).
        manifest: The bundle's manifest.
        episodes: Episodes replayed.
    """

    ok: bool
    reasons: list[str] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    episodes: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return clean_json(
            {"ok": self.ok, "reasons": self.reasons, "summary": self.summary, "episodes": self.episodes}
        )  # type: ignore[no-any-return]


class _Rejected(Exception):
    """Raised to stop verification early with a reason."""


class ReplayAgent:
    """Plays back a transcript's recorded actions, in order; runs dry with an error, like a crashed agent."""

    name = "replay"

    def __init__(self, actions: list[str]) -> None:
        self.actions = list(actions)
        self.position = 0

    def reset(self, seed: int | None = None) -> None:
        """Start from the first action again."""
        self.position = 0

    def act(self, observation: str, info: dict[str, Any]) -> str:
        """The next recorded action."""
        if self.position >= len(self.actions):
            raise RuntimeError("the transcript has no more actions")
        action = self.actions[self.position]
        self.position += 1
        return action


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and math.isnan(a) and isinstance(b, float) and math.isnan(b):
        return True
    return abs(float(a) - float(b)) <= 1e-9


def _first_difference(claimed: Any, actual: Any, path: str = "") -> str | None:
    """The first path where two JSON values differ (numbers compared to 1e-9), or ``None``."""
    if isinstance(claimed, dict) and isinstance(actual, dict):
        for key in sorted(set(claimed) | set(actual)):
            if key not in claimed or key not in actual:
                return f"{path}{key}"
            found = _first_difference(claimed[key], actual[key], f"{path}{key}.")
            if found:
                return found
        return None
    if isinstance(claimed, list) and isinstance(actual, list):
        if len(claimed) != len(actual):
            return path.rstrip(".")
        for i, (a, b) in enumerate(zip(claimed, actual)):
            found = _first_difference(a, b, f"{path}{i}.")
            if found:
                return found
        return None
    numeric = (int, float)
    if isinstance(claimed, numeric) and isinstance(actual, numeric) and not isinstance(claimed, bool):
        return None if _close(claimed, actual) else path.rstrip(".")
    return None if claimed == actual else path.rstrip(".")


def _lookup(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


def _actions(trajectory: Trajectory) -> list[str]:
    # A transcript is untrusted: a missing or non-text content replays as text and then mismatches.
    actions = []
    for message in trajectory.messages:
        if message.get("role") == "assistant":
            content = message.get("content")
            actions.append(content if isinstance(content, str) else repr(content))
    return actions


def _replay_mismatch(recorded: Trajectory, replayed: Trajectory) -> str | None:
    if recorded.status != replayed.status:
        return f"status {recorded.status!r} is recorded but replaying its actions ends {replayed.status!r}"
    if not _close(recorded.reward, replayed.reward):
        return f"reward {recorded.reward} is recorded but the current verifier gives {replayed.reward}"
    if len(recorded.step_rewards) != len(replayed.step_rewards) or not all(
        _close(a, b) for a, b in zip(recorded.step_rewards, replayed.step_rewards)
    ):
        return "its step rewards differ from the replay's"
    if recorded.correct != replayed.correct:
        return f"correct={recorded.correct} is recorded but the replay gives correct={replayed.correct}"
    if recorded.messages != replayed.messages:
        return "its observations differ from what the env shows when its actions are replayed"
    return None


def _expected_seed_reason(manifest_seed: Any, expected_seed: int | None) -> str | None:
    if expected_seed is None and manifest_seed is not None:
        return (
            f"the bundle replaced the suite's seeds with {manifest_seed}; the public suite uses its own seeds "
            "(run without --seed)"
        )
    if expected_seed is not None and manifest_seed != expected_seed:
        return (
            f"the bundle was run with seed {manifest_seed!r}, "
            f"but the seed issued for this submission is {expected_seed}"
        )
    return None


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _BadResultsFile(Exception):
    """A bundle's results file that cannot be read as a complete one."""


def read_results_file(path: Path) -> tuple[dict[str, Any], list[EpisodeRecord]]:
    """Read a bundle's results file strictly: every line complete and valid, nothing dropped or merged.

    Unlike :func:`~rollgym.rollout.load_results` (made for resuming an interrupted run), a torn
    or repeated line is not forgiven here: the verifier must see every line the submitter sent.

    Raises:
        _BadResultsFile: with a sentence naming the line.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise _BadResultsFile(f"the bundle has no transcript {path.parent.name}/{path.name}") from None
    if raw and not raw.endswith(b"\n"):
        raise _BadResultsFile("its last line is cut off (the run was interrupted or the file truncated)")
    header: dict[str, Any] | None = None
    records: list[EpisodeRecord] = []
    for number, line in enumerate(raw.splitlines(), 1):
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            raise _BadResultsFile(f"line {number} is not valid JSON") from None
        if not isinstance(data, dict):
            raise _BadResultsFile(f"line {number} is not a JSON object")
        if number == 1:
            if data.get("kind") != "header" or data.get("format") != FORMAT_VERSION:
                raise _BadResultsFile(f"its first line is not a results header of format {FORMAT_VERSION}")
            header = data
            continue
        if data.get("kind") != "episode":
            raise _BadResultsFile(f"line {number} is not an episode (kind {_short(data.get('kind'))})")
        try:
            records.append(EpisodeRecord.from_json(data))
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
            raise _BadResultsFile(f"line {number} is not a valid episode ({type(exc).__name__})") from None
    if header is None:
        raise _BadResultsFile("it is empty")
    return header, records


def read_transcript(path: Path) -> tuple[dict[str, Any], list[EpisodeRecord]]:
    """Deprecated name of :func:`read_results_file` (it goes in rollgym 0.3.0)."""
    warnings.warn(f"rollgym.leaderboard.verify.read_transcript is now read_results_file (the old name goes in rollgym "
                  f"{REMOVED_IN}).", DeprecationWarning, stacklevel=2)
    return read_results_file(path)


def _verify_entry(
    bundle: Bundle, entry: SuiteEntry, recorded_entry: dict[str, Any], agent_name: str, reasons: list[str]
) -> tuple[list[RolloutGroup], list[str], int]:
    """Replay one entry; return its replayed groups, regenerated task ids and episodes replayed."""
    from rollgym.core.registration import env_info, equivalent_hashes, make
    from rollgym.rollout import episode_seed, run_episode

    def reject(text: str) -> None:
        reasons.append(f"entry {entry.name}: {text}.")

    info = env_info(entry.env_id)
    spec_hash = recorded_entry.get("spec_hash")
    if spec_hash not in equivalent_hashes(info):
        reject(
            f"it was run on {entry.env_id} with spec hash {_short(spec_hash)}, but this "
            f"rollgym's is {info.content_hash} (a stale env version); rerun it with the current rollgym"
        )
        return [], [], 0
    try:
        header, episodes_read = read_results_file(bundle.results_file(entry.name))
    except _BadResultsFile as exc:
        reject(f"its transcript cannot be read ({exc})")
        return [], [], 0
    expected_header = {
        "env_id": entry.env_id,
        "spec_hash": spec_hash,
        "split": entry.split,
        "seed": entry.seed,
        "group_size": entry.group_size,
        "env_kwargs": entry.env_kwargs,
        "max_steps": entry.max_steps,
    }
    for key, value in expected_header.items():
        if header.get(key) != value:
            what = "a stale env version" if key == "spec_hash" else f"the suite's {key} is {value!r}"
            reject(f"the transcript was run with {key}={_short(header.get(key))}, but {what}")
            return [], [], 0
    keys = [(r.task_index, r.trajectory.sample_idx) for r in episodes_read]
    repeated = sorted((k for k, n in Counter(keys).items() if n > 1), key=str)
    if repeated:
        reject(
            f"{len(repeated)} episode(s) appear on more than one line, e.g. task {repeated[0][0]} sample "
            f"{repeated[0][1]}; a transcript holds each episode once (a repeated line would hide extra attempts)"
        )
        return [], [], 0
    by_key = dict(zip(keys, episodes_read))
    wanted = {(i, j) for i in range(entry.n_tasks) for j in range(entry.group_size)}
    extra = sorted(set(by_key) - wanted, key=str)
    missing = sorted(wanted - set(by_key))
    if extra:
        reject(
            f"it has {len(extra)} episode(s) not in the suite's task set ({entry.n_tasks} task(s) x "
            f"{entry.group_size} sample(s)), e.g. task {_short(extra[0][0])} sample {_short(extra[0][1])}"
        )
        return [], [], 0
    if missing:
        reject(f"{len(missing)} episode(s) are missing, e.g. task {missing[0][0]} sample {missing[0][1]}")
        return [], [], 0
    leaked = sorted({i for (i, _), r in by_key.items() if r.task is not None and r.task.answer is not None})
    if leaked:
        reject(
            f"its transcript carries the hidden answer of {len(leaked)} task(s), e.g. task {leaked[0]}; a bundle "
            "must not publish answers: pack the folder again with `rollgym bench pack`, which removes them"
        )
        return [], [], 0

    env = make(entry.env_id, split=entry.split, **entry.env_kwargs)
    groups: list[RolloutGroup] = []
    task_ids: list[str] = []
    errors_before = len(reasons)
    episodes = 0
    try:
        for i in range(entry.n_tasks):
            seed = episode_seed(entry.seed, i)
            replayed_group: list[Trajectory] = []
            task = None
            for j in range(entry.group_size):
                record = by_key[(i, j)]
                recorded = record.trajectory
                replay, task = run_episode(
                    env, ReplayAgent(_actions(recorded)), seed=seed, traj_id=recorded.traj_id,
                    group_id=recorded.group_id, sample_idx=j, env_id=entry.env_id, max_steps=entry.max_steps,
                    options=entry.reset_options(),
                )
                episodes += 1
                if replay.status == "failed" and replay.info.get("failure", {}).get("stage") in {"reset", "step"}:
                    env.close()
                    env = make(entry.env_id, split=entry.split, **entry.env_kwargs)
                if task is None or record.task is None or _public(record.task.to_dict()) != _public(task.to_dict()):
                    claimed = record.task.id if record.task is not None else None
                    reject(
                        f"task {i} in the transcript is {claimed!r}, but the suite's seed gives "
                        f"{task.id if task else None!r} (a swapped task or a changed seed)"
                    )
                elif recorded.task_id != task.id or recorded.seed != seed:
                    reject(f"task {i} sample {j} was played with another task or seed than the suite's")
                else:
                    mismatch = _replay_mismatch(recorded, replay)
                    if mismatch:
                        reject(f"task {i} sample {j}: {mismatch}")
                replayed_group.append(replay)
                if len(reasons) - errors_before >= 5:
                    return [], [], episodes
            groups.append(RolloutGroup(replayed_group[0].group_id, task, entry.group_size, replayed_group))
            task_ids.append(task.id if task is not None else "")
    finally:
        env.close()
    if header.get("agent") != agent_name:
        reject(f"the transcript was played by {header.get('agent')!r}, but the manifest names {agent_name!r}")
    return groups, task_ids, episodes


def _public(task: dict[str, Any]) -> Any:
    """A task as a bundle records it (no hidden answer), normalised through JSON types."""
    return to_jsonable(public_task(task))


def verify_bundle(
    path: Any,
    *,
    expected_seed: int | None = None,
    allow_limit: bool = True,
    suite: Suite | None = None,
    limits: BundleLimits = DEFAULT_LIMITS,
) -> VerificationReport:
    """Verify a bundle folder or ``.tar.gz`` against this rollgym; never trusts the claimed summary.

    Args:
        path: The bundle folder or archive (or an open :class:`Bundle`).
        expected_seed: The seed the bundle must have been run with (a leaderboard's hidden
            seed); ``None`` means the suite's own seeds.
        allow_limit: Accept runs on a limited task set (``--limit``).
        suite: The suite to check against; by default the built-in suite the manifest names (by
            registry name, never a path).
        limits: What reading an archive may cost (the leaderboard passes the limits its server uses).

    Example:
        >>> report = verify_bundle("runs/oracle")  # doctest: +SKIP
        >>> report.ok, report.reasons  # doctest: +SKIP
        (True, [])
    """
    reasons: list[str] = []
    try:
        bundle = path if isinstance(path, Bundle) else open_bundle(path, limits)
    except BundleError as exc:
        return VerificationReport(False, [_clip(str(exc))])
    try:
        report = _verify(bundle, expected_seed, allow_limit, suite, reasons)
    except _Rejected as exc:
        report = VerificationReport(False, [*reasons, str(exc)], manifest=bundle.manifest)
    finally:
        if not isinstance(path, Bundle):
            bundle.close()
    report.reasons = [_clip(r) for r in report.reasons]
    return report


def _clip(reason: str) -> str:
    return reason if len(reason) <= MAX_REASON_CHARS else reason[: MAX_REASON_CHARS - 3] + "..."


def _verify(
    bundle: Bundle, expected_seed: int | None, allow_limit: bool, suite: Suite | None, reasons: list[str]
) -> VerificationReport:
    manifest = bundle.manifest
    try:
        suite = finished_suite(manifest, suite)
    except ConfigError as exc:
        raise _Rejected(str(exc)) from None
    claimed_suite = manifest.get("suite") or {}
    seed_reason = _expected_seed_reason(manifest.get("seed"), expected_seed)
    if seed_reason:
        raise _Rejected(f"Changed seed: {seed_reason}.")
    limit = manifest.get("limit")
    only = manifest.get("only")
    if limit is not None and not allow_limit:
        raise _Rejected(f"The bundle ran only {limit} task(s) per entry; this leaderboard needs the full suite.")
    if only is not None and not allow_limit:
        raise _Rejected(f"The bundle ran only the entries {only}; this leaderboard needs the full suite.")
    if only is not None and (not isinstance(only, list) or not all(isinstance(n, str) for n in only)):
        raise _Rejected("The manifest's list of entries run (only) is malformed.")
    try:
        run = prepare_suite(suite, expected_seed, limit, only)
    except ConfigError as exc:
        raise _Rejected(f"The manifest's limit or entry list is invalid ({exc})") from None
    runnable = run.partition()[0]
    claimed_entries = {str(e.get("name")): e for e in manifest.get("entries", []) if isinstance(e, dict)}
    runnable_names = [e.name for e in runnable]
    if sorted(claimed_entries) != sorted(runnable_names):
        left_out = sorted(set(runnable_names) - set(claimed_entries))
        unknown = sorted(set(claimed_entries) - set(runnable_names), key=str)
        detail = []
        if left_out:
            detail.append(f"it leaves out {left_out}, which run here")
        if unknown:
            detail.append(f"it has {unknown}, which this suite does not run here")
        raise _Rejected(f"The bundle's entries do not match {suite.label}: {'; '.join(detail)}.")
    agent_name = _agent_name(manifest.get("agent") or {})
    groups: dict[str, list[RolloutGroup]] = {}
    hash_parts = []
    episodes = 0
    for entry in runnable:
        entry_groups, task_ids, count = _verify_entry(bundle, entry, claimed_entries[entry.name], agent_name, reasons)
        episodes += count
        groups[entry.name] = entry_groups
        # the hash the bundle recorded: the current one, or one it had before a re-pin (checked above)
        hash_parts.append((entry.config(), str(claimed_entries[entry.name].get("spec_hash")), task_ids))
        if len(reasons) >= MAX_REASONS:
            break
    if reasons:
        return VerificationReport(False, reasons[:MAX_REASONS], manifest=manifest, episodes=episodes)
    task_hash = task_set_hash(run.name, run.version, hash_parts)
    if claimed_suite.get("task_hash") != task_hash:
        reasons.append(
            f"The manifest's task hash {claimed_suite.get('task_hash')} is not the hash of the regenerated tasks "
            f"({task_hash})."
        )
    summary = clean_json(compute_summary(run, runnable, groups))
    claimed = bundle.summary
    if claimed is None:
        reasons.append("The bundle has no summary.json.")
    else:
        diff = _first_difference(claimed, summary)
        if diff is not None:
            reasons.append(
                f"summary.json claims {diff} = {_lookup(claimed, diff)!r}, but the transcripts give "
                f"{_lookup(summary, diff)!r} (an edited score)."
            )
    return VerificationReport(not reasons, reasons, summary, manifest, episodes)


def finished_suite(manifest: dict[str, Any], suite: Suite | None = None) -> Suite:
    """The suite a bundle's run covered: ``suite``, or the built-in one its manifest names.

    Raises :class:`~rollgym.core.errors.ConfigError` with one sentence when the run did not
    finish, when the manifest names a suite this rollgym does not know, or when the manifest's
    ``suite`` field differs from the suite (:func:`suite_mismatch`).
    """
    if not manifest.get("complete"):
        raise ConfigError("The run did not finish (manifest.complete is false); resume it with `rollgym bench run`.")
    claimed = manifest.get("suite") or {}
    if suite is None:
        try:
            suite = claimed_builtin_suite(claimed)
        except ConfigError as exc:
            raise ConfigError(f"The bundle's suite is unknown here ({exc})") from None
    mismatch = suite_mismatch(claimed, suite)
    if mismatch:
        raise ConfigError(mismatch)
    return suite


def claimed_builtin_suite(claimed: dict[str, Any]) -> Suite:
    """The built-in suite a manifest's ``suite`` field names, in the version it names when this rollgym ships it.

    For a version this rollgym does not ship, the newest version (whose :func:`suite_mismatch` sentence
    then names the versions shipped). Reads no path: the name goes through :func:`builtin_suite`.

    Raises:
        ConfigError: for a name that is not a built-in suite.

    Example:
        >>> claimed_builtin_suite({"name": "quick", "version": 2}).label
        'quick@v2'
    """
    suite = builtin_suite(claimed.get("name"))  # type: ignore[arg-type]
    version = claimed.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version in suite_versions(suite.name):
        return builtin_suite(suite.name, version)
    return suite


def suite_mismatch(claimed: dict[str, Any], suite: Suite) -> str | None:
    """One sentence naming the manifest's suite field that differs from ``suite``, or ``None``.

    Example:
        >>> from rollgym.benchmarks.suite import builtin_suite
        >>> claimed = {"name": "quick", "version": 9, "label": "quick@v9"}
        >>> print(suite_mismatch(claimed, builtin_suite("quick")))  # doctest: +NORMALIZE_WHITESPACE
        The manifest's suite.version is 9, but this rollgym ships quick@v2, quick@v3 and quick@v4
        (plain 'quick' is quick@v4); rerun a shipped version.
    """
    if claimed.get("name") != suite.name:
        return (
            f"The manifest's suite.name is {_short(claimed.get('name'))}, but this rollgym ships {suite.name} "
            f"version {suite.version} ({suite.label}); rerun the current suite."
        )
    if claimed.get("version") != suite.version:
        shipped = suite.label
        if suite.name in builtin_suites():
            shipped = versions_phrase(suite.name, suite_versions(suite.name))
        return (
            f"The manifest's suite.version is {_short(claimed.get('version'))}, but this rollgym ships {shipped}; "
            "rerun a shipped version."
        )
    if claimed.get("label") is not None and claimed.get("label") != suite.label:
        return (
            f"The manifest's suite.label is {_short(claimed.get('label'))}, but its suite.name and suite.version "
            f"make {suite.label}; the manifest was edited."
        )
    return None


def _agent_name(agent: dict[str, Any]) -> str:
    """The name collect() records for the manifest's agent (the reference agent's name, or ``llm``)."""
    if agent.get("kind") == "reference":
        return str(agent.get("agent"))
    return "llm"

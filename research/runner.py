"""The experiment runner: arms x paired seeds, the same budget per arm, paired 95% intervals, a table and a plot.

An :class:`Experiment` names its arms, its baseline, the primary metric, a
``full`` and a ``quick`` configuration, a ``prepare`` step shared by every run
(e.g. a warmed-up model) and a ``run(context, arm, seed, config)`` that returns an
:class:`ArmResult`. :func:`run_experiment` runs every arm on every seed (seed ``s``
gives every arm the same tasks and sampling seeds, so differences are paired),
then reports per arm the mean and 95% t interval, and per comparison the mean
paired difference and its interval with a reading: "higher", "lower", or "no
detectable difference" when the interval contains 0, and its minimum detectable
effect (the paired difference found with 80% power at alpha 0.05 over these seeds,
:func:`~rollgym.train.stats.minimum_detectable_effect`). Each run records the starting point it began from, and
two arms are compared only when all their runs record the same one
(:mod:`~research.pairing`); otherwise the comparison is refused with one sentence.

Results are written as JSON after every run (an interrupted run resumes when
started again with the same settings), then rendered to Markdown and a PNG.
:func:`render_markdown` is a pure function of the JSON, so a committed table can
be checked against its committed JSON without rerunning anything.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from research.pairing import NOT_PAIRED, START_KEYS, data_pairing_problem, pairing_problem
from rollgym.core.doc_sections import replace_section, section_of
from rollgym.core.errors import ConfigError
from rollgym.train.figures import save_figure
from rollgym.train.stats import Estimate, estimate, minimum_detectable_effect

SCHEMA = 1
#: How the runner was started before it moved out of the installed library into the repository's ``research/``
#: tree; the results files written then record it, and the tables show today's command instead.
LEGACY_COMMAND = "python -m rollgym.train.experiments"
COMMAND = "python -m research"


@dataclass
class ArmResult:
    """What one arm measured on one seed.

    Attributes:
        metric: The primary metric at the end of the run.
        cost: The compute the arm spent (policy rollouts, tokens, steps, seconds...); arms of one
            experiment are built to spend the same budget, and the table shows it.
        curve: ``(x, metric)`` points along the run, for the plot.
        extras: Secondary measurements (summarised with intervals when the experiment lists them).
    """

    metric: float
    cost: dict[str, float] = field(default_factory=dict)
    curve: list[tuple[float, float]] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class Prepared:
    """What a ``prepare`` step made for every run: the model, its tokenizer, its starting weights (``start``, the
    state every run begins from; its hash is the run's recorded starting point) and the settings."""

    model: Any
    tokenizer: Any
    start: dict[str, Any]
    config: dict[str, Any]


@dataclass(frozen=True)
class Experiment:
    """One powered comparison; see the module docstring."""

    name: str
    title: str
    question: str
    metric: str
    arms: tuple[str, ...]
    baseline: str
    prepare: Callable[[dict[str, Any], Path], Any]
    run: Callable[[Any, str, int, dict[str, Any]], ArmResult]
    configs: dict[str, dict[str, Any]]
    comparisons: tuple[tuple[str, str], ...] = ()
    secondary: tuple[str, ...] = ()
    seeds: int = 8
    quick_seeds: int = 2
    x_label: str = "step"
    digits: int = 3
    notes: str = ""
    render_extra: Callable[[dict[str, Any]], str] | None = None
    plot_curves: bool = True
    warm_state: Callable[[Any], Any] | None = None

    def pairs(self) -> list[tuple[str, str]]:
        """The comparisons reported: the listed ones, else every arm against the baseline."""
        return list(self.comparisons) or [(arm, self.baseline) for arm in self.arms if arm != self.baseline]


def machine() -> dict[str, Any]:
    """Where a run happened (no user names or paths)."""
    import os

    info: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform(),
                            "cpu_count": os.cpu_count()}
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    except ImportError:
        pass
    return info


#: The CPU kernel level the experiment command pins (before torch loads): torch's own kernels, MKL's and
#: oneDNN's. A machine with AVX-512 would otherwise run other kernels than one with AVX2 only, and the
#: warm-up's weights differ in their last bits, which GRPO's sampling then amplifies.
# MKL's ",STRICT" makes its results bitwise reproducible where plain CNR modes still allow some differences
# (Intel documents it for memory alignment and a few functions); the APRIL warm-up differs between the two.
KERNEL_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2,STRICT", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def pin_kernels() -> bool:
    """Pin the CPU kernel level to AVX2 (:data:`KERNEL_ENV`) for this process; False when torch was loaded already.

    Torch reads these settings when it loads, so this must run before the first ``import torch``
    (the experiment command calls it first thing). The level a run really used is recorded in its
    ``starting_point`` as ``cpu_capability``.
    """
    import os
    import sys

    os.environ.update(KERNEL_ENV)
    return "torch" not in sys.modules


def pin_threads(threads: int = 1) -> None:
    """Fix torch's CPU threads (the experiment command does, to 1): the warm-up then does not depend on the
    OMP_NUM_THREADS / MKL_NUM_THREADS of the machine's environment."""
    import torch

    torch.set_num_threads(max(1, threads))


def state_hash(state: Any) -> str:
    """SHA-256 of a ``state_dict`` (names, dtypes, shapes and the exact bytes of every tensor, in name order)."""
    import torch

    digest = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name].detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _warm_state(exp: Experiment, context: Any) -> Any:
    """The prepared model's weights: ``exp.warm_state(context)``, else a ``start`` or ``warm`` state_dict (a
    :class:`Prepared` context's starting weights) or a ``net`` module."""
    if exp.warm_state is not None:
        return exp.warm_state(context)
    for key in ("start", "warm", "net", "model"):
        value = context.get(key) if isinstance(context, dict) else getattr(context, key, None)
        if value is None:
            continue
        return value.state_dict() if hasattr(value, "state_dict") else value
    return None


def cpu_model() -> str:
    """The CPU's vendor, family, model, stepping and name (``/proc/cpuinfo``), so a mismatch between machines says
    whether they were the same processor; ``platform.processor()`` where there is no ``/proc``."""

    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return platform.processor() or platform.machine()
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the first processor describes them all
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return " ".join(fields.get(k, "?") for k in ("vendor_id", "cpu family", "model", "stepping")) + \
        f" ({fields.get('model name', '?')})"


def starting_point(exp: Experiment, context: Any) -> dict[str, Any]:
    """What a run's starting point depends on: library versions, torch threads and CPU kernels, the warm-up's hash."""
    import numpy

    info: dict[str, Any] = {"numpy": numpy.__version__}
    try:
        import torch

        info.update(torch=torch.__version__, torch_threads=torch.get_num_threads(),
                    cpu_capability=torch.backends.cpu.get_cpu_capability(), mkl_cbwr=os.environ.get("MKL_CBWR"))
    except ImportError:
        pass
    info["cpu"] = cpu_model()
    for library in ("transformers", "tokenizers"):  # a tiny model's tokenizer is trained by the tokenizers library
        try:
            info[library] = importlib.import_module(library).__version__
        except ImportError:
            pass
    tokenizer = context.get("tokenizer") if isinstance(context, dict) else getattr(context, "tokenizer", None)
    if tokenizer is not None and hasattr(tokenizer, "get_vocab"):
        vocab = json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False).encode()
        info["tokenizer_sha256"] = hashlib.sha256(vocab).hexdigest()
    state = _warm_state(exp, context)
    info["warm_state_sha256"] = state_hash(state) if state is not None else None
    return info


def starting_point_moved(recorded: dict[str, Any] | None, current: dict[str, Any]) -> bool:
    """Whether the warm-up weights or the tokenizer differ from ``recorded`` (runs from the two are not paired)."""
    return recorded is not None and any(recorded.get(k) != current.get(k)
                                        for k in ("warm_state_sha256", "tokenizer_sha256"))


def check_starting_point(recorded: dict[str, Any] | None, current: dict[str, Any], what: str) -> str | None:
    """One sentence on how ``current`` differs from ``recorded`` (``None`` when it does not, or none was recorded)."""
    if not recorded:
        return None
    changed = [f"{k} {recorded.get(k)} -> {current.get(k)}" for k in sorted(set(recorded) | set(current))
               if not k.endswith("sha256") and recorded.get(k) != current.get(k)]
    if starting_point_moved(recorded, current):
        hashes = ", ".join(f"{k} {str(recorded.get(k))[:12]} -> {str(current.get(k))[:12]}"
                           for k in ("warm_state_sha256", "tokenizer_sha256") if recorded.get(k) != current.get(k))
        return (f"this machine's warm-up differs from the one {what} started from ({hashes}"
                + (f"; {', '.join(changed)}" if changed else "; same libraries, threads and CPU kernels") + ").")
    if changed:
        return f"the warm-up matches {what}, but {', '.join(changed)}."
    return None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def run_experiment(exp: Experiment, out: str | Path, *, quick: bool = False, seeds: int | None = None,
                   progress: bool = True, reference: str | Path | None = None,
                   arms: Sequence[str] | None = None) -> dict[str, Any]:
    """Run every arm on every seed, write ``<out>/<name>.json`` as it goes, and return the summary.

    ``arms`` runs only those arms (e.g. one arm per process, side by side on a machine with the cores for
    it); the file keeps every arm's finished runs, so runs copied in from another process's file of the
    same settings are resumed, not rerun.

    Runs already in an existing JSON with the same configuration are kept (resume); the
    resumed runs must have started from the same warm-up model (its hash is recorded as
    ``starting_point``), else a :class:`ConfigError` says so. ``reference``, a results
    file of the same settings (the committed one), only warns when its warm-up differs.
    """
    mode = "quick" if quick else "full"
    unknown = sorted(set(arms or ()) - set(exp.arms))
    if unknown:
        raise ConfigError(f"{exp.name} has no arm {', '.join(map(repr, unknown))}; its arms are {', '.join(exp.arms)}.")
    config = dict(exp.configs[mode])
    n_seeds = seeds if seeds is not None else (exp.quick_seeds if quick else exp.seeds)
    if n_seeds < 1:
        raise ConfigError(f"seeds must be at least 1, got {n_seeds}.")
    path = Path(out) / f"{exp.name}.json"
    command = f"{COMMAND} {exp.name}" + (" --quick" if quick else "") + (
        f" --seeds {n_seeds}" if n_seeds != (exp.quick_seeds if quick else exp.seeds) else "")
    runs: list[dict[str, Any]] = []
    start: dict[str, Any] | None = None  # the starting point the runs in the file came from
    current: dict[str, Any] = {}  # this process's starting point, recorded in every run it makes
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        if old.get("config") == config and old.get("mode") == mode:
            runs = [r for r in old.get("runs", []) if r["seed"] < n_seeds and r["arm"] in exp.arms]
            start = old.get("starting_point") if runs else None
    unknown_start = bool(runs) and start is None  # runs from before starting points were recorded
    compare: dict[str, Any] | None = None
    if reference is not None and Path(reference).exists() and Path(reference).resolve() != path.resolve():
        ref = json.loads(Path(reference).read_text(encoding="utf-8"))
        if ref.get("config") == config and ref.get("mode") == mode:
            compare = ref.get("starting_point")
    done = {(r["arm"], r["seed"]) for r in runs}
    started = time.perf_counter()
    context = None
    workdir = Path(tempfile.mkdtemp(prefix=f"rollgym-{exp.name}-"))  # models and scratch files, never the output
    for seed in range(n_seeds):
        for arm in exp.arms:
            if (arm, seed) in done or (arms and arm not in arms):
                continue
            if context is None:
                t0 = time.perf_counter()
                context = exp.prepare(config, workdir)
                if progress:
                    print(f"[{exp.name}] prepared in {time.perf_counter() - t0:.0f} s", flush=True)
                current = starting_point(exp, context)
                problem = check_starting_point(start, current, f"the runs in {path}")
                if problem is not None and starting_point_moved(start, current):
                    raise ConfigError(f"Cannot resume: {problem} Its seeds would not be paired with new ones; "
                                      f"run into another folder or delete {path}.")
                if problem is not None:
                    print(f"[{exp.name}] warning: {problem}", flush=True)
                warning = check_starting_point(compare, current, f"the reference results {reference}")
                if warning is not None:
                    print(f"[{exp.name}] warning: {warning} Arm means may fall outside the reference intervals.",
                          flush=True)
                start = None if unknown_start else current
            t0 = time.perf_counter()
            result = exp.run(context, arm, seed, config)
            seconds = time.perf_counter() - t0
            runs.append({"arm": arm, "seed": seed, "metric": float(result.metric), "cost": result.cost,
                         "curve": [list(p) for p in result.curve], "extras": result.extras,
                         "seconds": round(seconds, 2), "starting_point": {k: current.get(k) for k in START_KEYS}})
            if progress:
                print(f"[{exp.name}] seed {seed} {arm:<28} {exp.metric} {result.metric:.4f} ({seconds:.0f} s)",
                      flush=True)
            _write_json(path, summarize(exp, config, mode, runs, n_seeds, command,
                                        previous_seconds(path) + time.perf_counter() - started, start))
            started = time.perf_counter()
    shutil.rmtree(workdir, ignore_errors=True)
    data = summarize(exp, config, mode, runs, n_seeds, command, previous_seconds(path), start)
    _write_json(path, data)
    for c in data["comparisons"]:
        if c.get("refused"):
            print(f"[{exp.name}] warning: {c['refused']}", flush=True)
    return data


def previous_seconds(path: Path) -> float:
    """The run time recorded in an existing results file (0 when there is none)."""
    if not path.exists():
        return 0.0
    try:
        return float(json.loads(path.read_text(encoding="utf-8")).get("seconds", 0.0))
    except (ValueError, OSError):
        return 0.0


def by_arm(runs: Sequence[dict[str, Any]], arm: str, key: Callable[[dict[str, Any]], float | None]
            ) -> dict[int, float]:
    out = {}
    for r in runs:
        if r["arm"] == arm:
            value = key(r)
            if value is not None:
                out[r["seed"]] = float(value)
    return out


def extra(key: str) -> Callable[[dict[str, Any]], float | None]:
    def read(run: dict[str, Any]) -> float | None:
        value = run["extras"].get(key)
        return None if value is None else float(value)

    return read


def refused_comparison(a: str, b: str, metric: str, seeds: list[int], problem: str) -> dict[str, Any]:
    """A comparison the runner refuses to compute (its arms did not start from one recorded starting point)."""
    return {"a": a, "b": b, "metric": metric, "seeds": seeds, "mean": None, "half_width": None, "n": len(seeds),
            "low": None, "high": None, "verdict": NOT_PAIRED, "mde": None, "refused": problem}


def paired_comparison(a: str, b: str, metric: str, seeds: list[int], differences: list[float]) -> dict[str, Any]:
    """One comparison's JSON: the paired estimate of ``a - b``, its reading and its minimum detectable effect."""
    diff = estimate(differences)
    mde = minimum_detectable_effect(differences)
    return {"a": a, "b": b, "metric": metric, "seeds": seeds, **diff.to_dict(), "verdict": diff.verdict(),
            "mde": mde if math.isfinite(mde) else None}


def summarize(exp: Experiment, config: dict[str, Any], mode: str, runs: Sequence[dict[str, Any]], n_seeds: int,
              command: str, seconds: float, start: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON document of an experiment: settings, every run, per-arm estimates and paired comparisons."""
    arms: dict[str, Any] = {}
    for arm in exp.arms:
        values = by_arm(runs, arm, lambda r: r["metric"])
        seeds = sorted(values)
        costs: dict[str, float] = {}
        mine = [r for r in runs if r["arm"] == arm]
        for key in sorted({k for r in mine for k in r["cost"]}):
            vals = [float(r["cost"][key]) for r in mine if key in r["cost"]]
            costs[key] = sum(vals) / len(vals)
        secondary = {}
        for key in exp.secondary:
            sec = by_arm(runs, arm, extra(key))
            if sec:
                secondary[key] = estimate([sec[s] for s in sorted(sec)]).to_dict()
        arms[arm] = {"seeds": seeds, "per_seed": [values[s] for s in seeds],
                     "estimate": estimate([values[s] for s in seeds]).to_dict(), "cost": costs,
                     "secondary": secondary}
    comparisons = []
    for a, b in exp.pairs():
        left, right = by_arm(runs, a, lambda r: r["metric"]), by_arm(runs, b, lambda r: r["metric"])
        common = sorted(set(left) & set(right))
        problem = pairing_problem(runs, a, b, common, start)
        if problem is not None:  # never paired silently: no difference is computed
            comparisons.append(refused_comparison(a, b, exp.metric, common, problem))
            continue
        comparisons.append(paired_comparison(a, b, exp.metric, common, [left[s] - right[s] for s in common]))
        for key in exp.secondary:
            ls, rs = by_arm(runs, a, extra(key)), by_arm(runs, b, extra(key))
            both = sorted(set(ls) & set(rs))
            if both:
                comparisons.append(paired_comparison(a, b, key, both, [ls[s] - rs[s] for s in both]))
    return {
        "schema": SCHEMA, "experiment": exp.name, "title": exp.title, "question": exp.question,
        "metric": exp.metric, "baseline": exp.baseline, "arms_order": list(exp.arms), "mode": mode,
        "config": config, "n_seeds": n_seeds, "arms": arms, "comparisons": comparisons,
        "runs": sorted(runs, key=lambda r: (r["seed"], list(exp.arms).index(r["arm"]))),
        "seconds": round(seconds, 1), "machine": machine(), "command": command, "notes": exp.notes,
        "x_label": exp.x_label, "digits": exp.digits, "starting_point": start,
    }


def _fmt(value: float, digits: int, signed: bool = False) -> str:
    if not math.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _interval(d: dict[str, Any], digits: int, signed: bool = False) -> str:
    hw = d["half_width"]
    half = "n/a" if hw is None or not math.isfinite(hw) else f"{hw:.{digits}f}"
    return f"{_fmt(d['mean'], digits, signed)} ± {half}"


def mde_text(c: dict[str, Any], digits: int) -> str:
    """A comparison's MDE as the tables show it: none when the differences have no spread (every seed's
    difference the same: the formula gives 0, which is no statement about power) or too few seeds."""
    if c.get("mean") is None:
        return "-"
    half = c.get("half_width")
    if half is not None and abs(half) <= 1e-9 * max(1.0, abs(c["mean"])):  # sd 0 up to float rounding
        return "n/a (no spread)"
    return "n/a" if c.get("mde") is None else f"{c['mde']:.{digits}f}"


def difference_text(c: dict[str, Any], digits: int) -> str:
    """A comparison's paired difference, mean ± half-width (``not computed`` for a refused comparison)."""
    return "not computed" if c.get("mean") is None else _interval(c, digits, signed=True)


def unpaired_note(data: dict[str, Any]) -> str:
    """The note under a table whose comparisons are not shown paired (empty when every one is)."""
    problems = [p for p in (data_pairing_problem(data, c) for c in data["comparisons"]) if p]
    if not problems:
        return ""
    recorded = data.get("starting_point") or any(r.get("starting_point") for r in data.get("runs", []))
    if not recorded:
        return ("Not shown paired: this results file records no starting point (it predates the record), so its "
                "arms are not shown to have started from one warm-up; the differences are as recorded, with no "
                "reading. A rerun with `--doc` records one per run.")
    return "Not shown paired: " + " ".join(dict.fromkeys(problems))


#: What an MDE says and what it does not (the sentence under every table).
POWER_TEXT = ("Power: MDE is the paired difference a two-sided paired t test at alpha 0.05 detects with 80% "
              "probability over these {n} seeds, (t_0.975,n−1 + t_0.8,n−1) · sd(differences) / √n with the observed "
              "sd. It describes the design, not the effect: a \"no detectable difference\" does not rule out an "
              "effect of about the MDE (one that size is missed 1 time in 5, smaller ones more often); the 95% "
              "interval is what bounds the effect. With no spread in the differences (sd 0) there is no MDE.")


def _cost_text(cost: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:,.0f}" if abs(v) >= 10 else f"{k} {v:.2f}" for k, v in cost.items()) or "-"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A Markdown table's lines: the header row, its rule, then one line per row (cells as ``str`` gives them).

    Example:
        >>> markdown_table(["arm", "accuracy"], [["base", "0.25"]])
        ['| arm | accuracy |', '|---|---|', '| base | 0.25 |']
    """
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)]


def seeds_text(c: dict[str, Any]) -> str:
    """A comparison's seeds: how many, and their range."""
    return f"{len(c['seeds'])} ({c['seeds'][0]}-{c['seeds'][-1]})" if c["seeds"] else "0"


def today_command(command: str) -> str:
    """A recorded command as it is run today (a results file written before the move names the old module).

    Example:
        >>> today_command("python -m rollgym.train.experiments erils")
        'python -m research erils'
    """
    return COMMAND + command[len(LEGACY_COMMAND):] if command.startswith(LEGACY_COMMAND + " ") else command


def render_markdown(data: dict[str, Any]) -> str:
    """The Markdown table of an experiment's JSON (a pure function of it).

    Example:
        >>> md = render_markdown(json.load(open("docs/experiments/erils.json")))  # doctest: +SKIP
    """
    digits = int(data.get("digits", 3))
    lines = [f"**{data['title']}** ({data['experiment']}, {data['mode']} run). {data['question']}", ""]
    lines += [f"| arm | {data['metric']} (mean ± 95% CI) | per seed | compute per run (mean) |", "|---|---|---|---|"]
    for arm in data["arms_order"]:
        row = data["arms"][arm]
        per_seed = ", ".join(_fmt(v, digits) for v in row["per_seed"])
        lines.append(f"| {arm} | {_interval(row['estimate'], digits)} | {per_seed} | {_cost_text(row['cost'])} |")
    lines += ["", "| comparison | measure | paired difference (mean ± 95% CI) | MDE (80% power) | seeds | reading |",
              "|---|---|---|---|---|---|"]
    for c in data["comparisons"]:
        reading = NOT_PAIRED if data_pairing_problem(data, c) else c["verdict"]
        lines.append(f"| {c['a']} − {c['b']} | {c['metric']} | {difference_text(c, digits)} | {mde_text(c, digits)} "
                     f"| {seeds_text(c)} | {reading} |")
    note = unpaired_note(data)
    if note:
        lines += ["", note]
    lines += ["", POWER_TEXT.format(n=data["n_seeds"])]
    cfg = json.dumps(data["config"], sort_keys=True)
    command = today_command(data["command"] or f"python -m research {data['experiment']}")
    lines += ["", f"Settings: `{cfg}`; seeds 0-{data['n_seeds'] - 1} (paired: seed s gives every arm the same tasks "
                  f"and sampling seeds); reproduce with `{command}` (the run time and machine are in the JSON)."]
    start = data.get("starting_point")
    if start and start.get("warm_state_sha256"):
        libraries = ", ".join(f"{k} {start[k]}" for k in ("torch", "transformers", "tokenizers", "numpy") if k in start)
        lines += ["", f"Starting point: warm-up weights sha256 `{start['warm_state_sha256'][:16]}`"
                      f" ({libraries}; {start.get('torch_threads')} torch thread(s), {start.get('cpu_capability')} "
                      f"kernels); a rerun warns when its warm-up differs, and a resume from another warm-up stops."]
    live = _registered(data["experiment"])
    notes = live.notes if live is not None else data.get("notes", "")  # documentation: today's wording
    if notes:
        lines += ["", notes]
    if live is not None and live.render_extra is not None:
        text = live.render_extra(data)
        if text:
            lines += ["", text]
    return "\n".join(lines)


EXPERIMENTS: dict[str, str] = {
    "erils": "research.erils",
    "t3rl": "research.t3rl",
    "dynamic": "research.dynamic",
    "worldmodel": "research.worldmodel",
    "april": "research.april",
    "generalization": "research.generalization",
    "realmodel": "research.realmodel",
    "realmodel-trl": "research.realmodel_trl",
    "realmodel-qwen": "research.realmodel_qwen",
    "selfplay": "research.selfplay",
    "branching": "research.branching",
    "echo": "research.echo",
    "resum": "research.resum",
}
"""Every experiment's module by name. They are imported by name only when asked for (:func:`get`): each
imports this runner, which imports none of them, so the package's imports run one way."""


def get(name: str) -> Experiment:
    """The experiment called ``name``."""
    if name not in EXPERIMENTS:
        raise ConfigError(f"Unknown experiment {name!r}; choose one of {', '.join(EXPERIMENTS)}.")
    experiment: Experiment = importlib.import_module(EXPERIMENTS[name]).EXPERIMENT
    return experiment


def _registered(name: str) -> Experiment | None:
    return get(name) if name in EXPERIMENTS else None


def plot(data: dict[str, Any], path: str | Path) -> Path:
    """Mean curve per arm (left) and the final metric per arm with its 95% interval (right), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [3, 2]})
    names = data["arms_order"]
    live = _registered(data["experiment"])
    if (live is None or live.plot_curves) and any(r["curve"] for r in data["runs"]):
        for arm in names:
            curves = [r["curve"] for r in data["runs"] if r["arm"] == arm and r["curve"]]
            if not curves:
                continue
            width = min(len(c) for c in curves)
            xs = [sum(c[i][0] for c in curves) / len(curves) for i in range(width)]
            ys = [sum(c[i][1] for c in curves) / len(curves) for i in range(width)]
            left.plot(xs, ys, marker="o", markersize=3, label=arm)
        left.set_xlabel(live.x_label if live is not None else data.get("x_label", "step"))
        left.set_ylabel(f"{data['metric']} (mean over seeds)", fontsize=8)
    else:  # a paired design: one line per seed across the arms
        for seed in range(data["n_seeds"]):
            values = [next((r["metric"] for r in data["runs"] if r["arm"] == a and r["seed"] == seed), None)
                      for a in names]
            left.plot(range(len(names)), values, marker="o", markersize=3, alpha=0.7, label=f"seed {seed}")
        left.set_xticks(range(len(names)), names, fontsize=8)
        left.set_ylabel(f"{data['metric']} (per seed)", fontsize=8)
    left.grid(alpha=0.3)
    left.legend(fontsize=7)
    means = [data["arms"][a]["estimate"]["mean"] for a in names]
    errs = [data["arms"][a]["estimate"]["half_width"] for a in names]
    errs = [e if e is not None and math.isfinite(e) else 0.0 for e in errs]
    right.errorbar(range(len(names)), means, yerr=errs, fmt="o", capsize=4)
    for i, a in enumerate(names):
        right.scatter([i] * len(data["arms"][a]["per_seed"]), data["arms"][a]["per_seed"], s=8, alpha=0.4)
    right.set_xticks(range(len(names)), names, rotation=20, ha="right", fontsize=7)
    right.set_ylabel(f"{data['metric']} (95% CI)")
    right.grid(alpha=0.3)
    fig.suptitle(f"{data['title']} ({len(data['arms'][names[0]]['per_seed'])} seeds)", fontsize=10)
    return save_figure(fig, path)


def markers(name: str) -> tuple[str, str]:
    """The comment lines around an experiment's table in ``docs/experiments.md``."""
    return f"<!-- experiment:{name}:begin -->", f"<!-- experiment:{name}:end -->"


def write_doc_section(data: dict[str, Any], doc: str | Path) -> None:
    """Replace the text between the experiment's markers in ``doc`` with :func:`render_markdown`."""
    doc = Path(doc)
    begin, end = markers(data["experiment"])
    text = replace_section(doc.read_text(encoding="utf-8"), begin, end, render_markdown(data), where=str(doc))
    doc.write_text(text, encoding="utf-8")


def doc_section(doc: str | Path, name: str) -> str:
    """The text between an experiment's markers in ``doc`` (what :func:`write_doc_section` put there)."""
    return section_of(Path(doc).read_text(encoding="utf-8"), *markers(name))


def verdict_of(data: dict[str, Any], a: str, b: str, metric: str | None = None) -> Estimate:
    """The paired estimate of ``a - b`` recorded in ``data`` (for docs and tests)."""
    metric = metric or data["metric"]
    for c in data["comparisons"]:
        if c["a"] == a and c["b"] == b and c["metric"] == metric:
            if c.get("refused"):
                raise KeyError(c["refused"])
            half = c["half_width"]
            return Estimate(c["mean"], math.inf if half is None else half, c["n"])
    raise KeyError(f"{data['experiment']} has no comparison {a} - {b} on {metric}.")

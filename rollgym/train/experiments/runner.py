"""The experiment runner: arms x paired seeds, the same budget per arm, paired 95% intervals, a table and a plot.

An :class:`Experiment` names its arms, its baseline, the primary metric, a
``full`` and a ``quick`` configuration, a ``prepare`` step shared by every run
(e.g. a warmed-up model) and a ``run(context, arm, seed, config)`` that returns an
:class:`ArmResult`. :func:`run_experiment` runs every arm on every seed (seed ``s``
gives every arm the same tasks and sampling seeds, so differences are paired),
then reports per arm the mean and 95% t interval, and per comparison the mean
paired difference and its interval with a reading: "higher", "lower", or "no
detectable difference" when the interval contains 0.

Results are written as JSON after every run (an interrupted run resumes when
started again with the same settings), then rendered to Markdown and a PNG.
:func:`render_markdown` is a pure function of the JSON, so a committed table can
be checked against its committed JSON without rerunning anything.
"""

from __future__ import annotations

import importlib
import json
import math
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.train.stats import Estimate, estimate, paired

SCHEMA = 1


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


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def run_experiment(exp: Experiment, out: str | Path, *, quick: bool = False, seeds: int | None = None,
                   progress: bool = True) -> dict[str, Any]:
    """Run every arm on every seed, write ``<out>/<name>.json`` as it goes, and return the summary.

    Runs already in an existing JSON with the same configuration are kept (resume).
    """
    mode = "quick" if quick else "full"
    config = dict(exp.configs[mode])
    n_seeds = seeds if seeds is not None else (exp.quick_seeds if quick else exp.seeds)
    if n_seeds < 1:
        raise ConfigError(f"seeds must be at least 1, got {n_seeds}.")
    path = Path(out) / f"{exp.name}.json"
    command = f"python -m rollgym.train.experiments {exp.name}" + (" --quick" if quick else "") + (
        f" --seeds {n_seeds}" if n_seeds != (exp.quick_seeds if quick else exp.seeds) else "")
    runs: list[dict[str, Any]] = []
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        if old.get("config") == config and old.get("mode") == mode:
            runs = [r for r in old.get("runs", []) if r["seed"] < n_seeds and r["arm"] in exp.arms]
    done = {(r["arm"], r["seed"]) for r in runs}
    started = time.perf_counter()
    context = None
    workdir = Path(tempfile.mkdtemp(prefix=f"rollgym-{exp.name}-"))  # models and scratch files, never the output
    for seed in range(n_seeds):
        for arm in exp.arms:
            if (arm, seed) in done:
                continue
            if context is None:
                t0 = time.perf_counter()
                context = exp.prepare(config, workdir)
                if progress:
                    print(f"[{exp.name}] prepared in {time.perf_counter() - t0:.0f} s", flush=True)
            t0 = time.perf_counter()
            result = exp.run(context, arm, seed, config)
            seconds = time.perf_counter() - t0
            runs.append({"arm": arm, "seed": seed, "metric": float(result.metric), "cost": result.cost,
                         "curve": [list(p) for p in result.curve], "extras": result.extras,
                         "seconds": round(seconds, 2)})
            if progress:
                print(f"[{exp.name}] seed {seed} {arm:<28} {exp.metric} {result.metric:.4f} ({seconds:.0f} s)",
                      flush=True)
            _write_json(path, summarize(exp, config, mode, runs, n_seeds, command,
                                        previous_seconds(path) + time.perf_counter() - started))
            started = time.perf_counter()
    shutil.rmtree(workdir, ignore_errors=True)
    data = summarize(exp, config, mode, runs, n_seeds, command, previous_seconds(path))
    _write_json(path, data)
    return data


def previous_seconds(path: Path) -> float:
    """The run time recorded in an existing results file (0 when there is none)."""
    if not path.exists():
        return 0.0
    try:
        return float(json.loads(path.read_text(encoding="utf-8")).get("seconds", 0.0))
    except (ValueError, OSError):
        return 0.0


def _by_arm(runs: Sequence[dict[str, Any]], arm: str, key: Callable[[dict[str, Any]], float | None]
            ) -> dict[int, float]:
    out = {}
    for r in runs:
        if r["arm"] == arm:
            value = key(r)
            if value is not None:
                out[r["seed"]] = float(value)
    return out


def _extra(key: str) -> Callable[[dict[str, Any]], float | None]:
    def read(run: dict[str, Any]) -> float | None:
        value = run["extras"].get(key)
        return None if value is None else float(value)

    return read


def summarize(exp: Experiment, config: dict[str, Any], mode: str, runs: Sequence[dict[str, Any]], n_seeds: int,
              command: str, seconds: float) -> dict[str, Any]:
    """The JSON document of an experiment: settings, every run, per-arm estimates and paired comparisons."""
    arms: dict[str, Any] = {}
    for arm in exp.arms:
        values = _by_arm(runs, arm, lambda r: r["metric"])
        seeds = sorted(values)
        costs: dict[str, float] = {}
        mine = [r for r in runs if r["arm"] == arm]
        for key in sorted({k for r in mine for k in r["cost"]}):
            vals = [float(r["cost"][key]) for r in mine if key in r["cost"]]
            costs[key] = sum(vals) / len(vals)
        secondary = {}
        for key in exp.secondary:
            sec = _by_arm(runs, arm, _extra(key))
            if sec:
                secondary[key] = estimate([sec[s] for s in sorted(sec)]).to_dict()
        arms[arm] = {"seeds": seeds, "per_seed": [values[s] for s in seeds],
                     "estimate": estimate([values[s] for s in seeds]).to_dict(), "cost": costs,
                     "secondary": secondary}
    comparisons = []
    for a, b in exp.pairs():
        left, right = _by_arm(runs, a, lambda r: r["metric"]), _by_arm(runs, b, lambda r: r["metric"])
        common = sorted(set(left) & set(right))
        diff = paired([left[s] for s in common], [right[s] for s in common])
        entry = {"a": a, "b": b, "metric": exp.metric, "seeds": common, **diff.to_dict(), "verdict": diff.verdict()}
        comparisons.append(entry)
        for key in exp.secondary:
            ls, rs = _by_arm(runs, a, _extra(key)), _by_arm(runs, b, _extra(key))
            both = sorted(set(ls) & set(rs))
            if both:
                d = paired([ls[s] for s in both], [rs[s] for s in both])
                comparisons.append({"a": a, "b": b, "metric": key, "seeds": both, **d.to_dict(),
                                    "verdict": d.verdict()})
    return {
        "schema": SCHEMA, "experiment": exp.name, "title": exp.title, "question": exp.question,
        "metric": exp.metric, "baseline": exp.baseline, "arms_order": list(exp.arms), "mode": mode,
        "config": config, "n_seeds": n_seeds, "arms": arms, "comparisons": comparisons,
        "runs": sorted(runs, key=lambda r: (r["seed"], list(exp.arms).index(r["arm"]))),
        "seconds": round(seconds, 1), "machine": machine(), "command": command, "notes": exp.notes,
        "x_label": exp.x_label, "digits": exp.digits,
    }


def _fmt(value: float, digits: int, signed: bool = False) -> str:
    if not math.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _interval(d: dict[str, Any], digits: int, signed: bool = False) -> str:
    hw = d["half_width"]
    half = "n/a" if hw is None or not math.isfinite(hw) else f"{hw:.{digits}f}"
    return f"{_fmt(d['mean'], digits, signed)} ± {half}"


def _cost_text(cost: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:,.0f}" if abs(v) >= 10 else f"{k} {v:.2f}" for k, v in cost.items()) or "-"


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
    lines += ["", "| comparison | measure | paired difference (mean ± 95% CI) | seeds | reading |",
              "|---|---|---|---|---|"]
    for c in data["comparisons"]:
        seeds = f"{len(c['seeds'])} ({c['seeds'][0]}-{c['seeds'][-1]})" if c["seeds"] else "0"
        difference = _interval(c, digits, signed=True)
        lines.append(f"| {c['a']} − {c['b']} | {c['metric']} | {difference} | {seeds} | {c['verdict']} |")
    cfg = json.dumps(data["config"], sort_keys=True)
    command = data["command"] or f"python -m rollgym.train.experiments {data['experiment']}"
    lines += ["", f"Settings: `{cfg}`; seeds 0-{data['n_seeds'] - 1} (paired: seed s gives every arm the same tasks "
                  f"and sampling seeds); reproduce with `{command}` (the run time and machine are in the JSON)."]
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
    "erils": "rollgym.train.experiments.erils",
    "t3rl": "rollgym.train.experiments.t3rl",
    "dynamic": "rollgym.train.experiments.dynamic",
    "worldmodel": "rollgym.train.experiments.worldmodel",
    "april": "rollgym.train.experiments.april",
    "generalization": "rollgym.train.experiments.generalization",
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
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def markers(name: str) -> tuple[str, str]:
    """The comment lines around an experiment's table in ``docs/experiments.md``."""
    return f"<!-- experiment:{name}:begin -->", f"<!-- experiment:{name}:end -->"


def write_doc_section(data: dict[str, Any], doc: str | Path) -> None:
    """Replace the text between the experiment's markers in ``doc`` with :func:`render_markdown`."""
    doc = Path(doc)
    begin, end = markers(data["experiment"])
    text = doc.read_text(encoding="utf-8")
    if begin not in text or end not in text:
        raise ConfigError(f"{doc} has no {begin} ... {end} markers; add them where the table belongs.")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{begin}\n{render_markdown(data)}\n{end}{tail}", encoding="utf-8")


def doc_section(doc: str | Path, name: str) -> str:
    """The text between an experiment's markers in ``doc`` (what :func:`write_doc_section` put there)."""
    begin, end = markers(name)
    text = Path(doc).read_text(encoding="utf-8")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def verdict_of(data: dict[str, Any], a: str, b: str, metric: str | None = None) -> Estimate:
    """The paired estimate of ``a - b`` recorded in ``data`` (for docs and tests)."""
    metric = metric or data["metric"]
    for c in data["comparisons"]:
        if c["a"] == a and c["b"] == b and c["metric"] == metric:
            half = c["half_width"]
            return Estimate(c["mean"], math.inf if half is None else half, c["n"])
    raise KeyError(f"{data['experiment']} has no comparison {a} - {b} on {metric}.")

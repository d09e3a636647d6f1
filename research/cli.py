"""The experiment runner's command line, ``python -m research`` (from the root of a checkout)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from research import EXPERIMENTS, get
from research.runner import (
    pin_kernels,
    pin_threads,
    plot,
    render_markdown,
    run_experiment,
    write_doc_section,
)
from research.summary import write_summary_section
from rollgym.core.errors import ConfigError

DOC = Path("docs") / "experiments.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The runner's arguments."""
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"experiments to run: {', '.join(EXPERIMENTS)} or all")
    parser.add_argument("--quick", action="store_true", help="a small configuration that runs in seconds to minutes")
    parser.add_argument("--seeds", type=int, default=None, help="paired seeds (default: the experiment's, >= 5)")
    parser.add_argument("--out", default=None, help="folder for NAME.json, NAME.md and NAME.png (default: a new "
                                                    "temporary folder; never the repository)")
    parser.add_argument("--doc", action="store_true",
                        help="write the committed results: docs/experiments/NAME.json, docs/img/experiment_NAME.png "
                             "and the table in docs/experiments.md (full runs only)")
    parser.add_argument("--arms", default=None,
                        help="comma-separated arms to run (the others' finished runs stay in the results file)")
    parser.add_argument("--render", action="store_true", help="only re-render tables and plots from existing JSON")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: 1)")
    parser.add_argument("--native-kernels", action="store_true",
                        help="use the CPU's own kernel level (e.g. AVX-512) instead of AVX2, which every run pins by "
                             "default so that warm-ups match across machines")
    parser.add_argument("--list", action="store_true", help="list the experiments and exit")


def run_from_args(args: argparse.Namespace) -> int:
    """Run the experiments that ``args`` name; returns the exit status."""
    if not args.native_kernels and not pin_kernels():
        print("warning: torch was loaded before the experiment command could pin its CPU kernels to AVX2; this run "
              "uses the machine's own (its starting_point records which).", file=sys.stderr)
    if args.list or not args.names:
        for name in EXPERIMENTS:
            exp = get(name)
            print(f"{name:<11} {exp.title} ({len(exp.arms)} arms, {exp.seeds} seeds)")
        return 0
    names = list(EXPERIMENTS) if args.names == ["all"] else list(args.names)
    for name in names:
        get(name)  # one clear error for an unknown name, before any work
    if args.doc and args.quick:
        raise ConfigError("--doc writes the committed tables, which come from full runs; drop --quick, or use --out.")
    if args.seeds is not None and args.seeds < 1:
        raise ConfigError(f"--seeds must be at least 1, got {args.seeds}.")
    if args.doc:
        out = Path("docs") / "experiments"
        if not DOC.exists():
            raise ConfigError(f"--doc must run from the repository root ({DOC} not found here).")
    else:
        out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="rollgym-experiments-"))
    try:
        pin_threads(args.threads)
    except ImportError:  # pragma: no cover - the experiments themselves need torch
        pass
    for name in names:
        exp = get(name)
        json_path = out / f"{name}.json"
        if args.render:
            if not json_path.exists():
                raise ConfigError(f"{json_path} does not exist; run the experiment first.")
            data: dict[str, Any] = json.loads(json_path.read_text(encoding="utf-8"))
        else:
            data = run_experiment(exp, out, quick=args.quick, seeds=args.seeds,
                                  arms=[a.strip() for a in args.arms.split(",") if a.strip()] if args.arms else None,
                                  reference=Path("docs") / "experiments" / f"{name}.json")  # warns when it differs
        table = render_markdown(data)
        image = (Path("docs") / "img" / f"experiment_{name}.png") if args.doc else out / f"{name}.png"
        plot(data, image)
        if args.doc:
            write_doc_section(data, DOC)
        else:
            (out / f"{name}.md").write_text(table + "\n", encoding="utf-8")
        print(table)
        print(f"\nwrote {json_path} and {image}", flush=True)
    if args.doc:  # the summary at the top of the page, from every committed results file
        write_summary_section(out, DOC)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m research NAME [--quick] [--seeds N] [--out DIR | --doc]``."""
    parser = argparse.ArgumentParser(prog="python -m research",
                                     description="Powered experiments: arms x paired seeds, 95%% intervals.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_from_args(args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

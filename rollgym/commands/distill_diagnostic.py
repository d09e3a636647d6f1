"""``rollgym distill-diagnostic RESULTS``: where would each candidate teacher's distillation signal help or hurt?

Examples::

    rollgym eval Countdown-v0 --model smollm2-135m-instruct --n 8 --group-size 6 --out runs/cd.jsonl
    rollgym distill-diagnostic runs/cd.jsonl --student smollm2-135m-instruct \\
        --teacher self:answer --teacher self:sibling --out report.json --markdown report.md --plot report.png

A teacher is ``self`` (the student unchanged: a control whose signal is 0), ``self:answer`` (the
student with the task's reference answer as privileged context), ``self:sibling`` (with the
shortest successful other rollout of the group), or another model (a folder, a pulled model's
name or a hub id) that uses the student's tokenizer. :mod:`rollgym.train.distill_diagnostic`
has the definitions.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.markup import escape
from rich.table import Table

from rollgym.commands.console import stdout
from rollgym.commands.options import positive_int
from rollgym.core.errors import ConfigError

SELF_TEACHERS = ("self", "self:answer", "self:sibling")


def register(subparsers: Any) -> None:
    """Add the ``distill-diagnostic`` sub-command."""
    p = subparsers.add_parser("distill-diagnostic",
                              help="per-token teacher-vs-student signal on sampled rollouts: where it helps or hurts")
    p.add_argument("results", help="a results file with exact tokens (rollgym eval --model ... --out FILE)")
    p.add_argument("--student", required=True, metavar="PATH_OR_NAME",
                   help="the model that sampled the rollouts: a folder, a pulled model's name, or a hub id")
    p.add_argument("--teacher", action="append", required=True, metavar="SPEC",
                   help="self, self:answer, self:sibling, or another model with the student's tokenizer (repeatable)")
    p.add_argument("--limit", type=positive_int, default=None, help="score at most this many rollouts")
    p.add_argument("--out", default=None, help="write the report as JSON here")
    p.add_argument("--tokens", action="store_true", help="include every rollout's per-token values in --out")
    p.add_argument("--markdown", default=None, help="write the two tables as markdown here")
    p.add_argument("--plot", default=None, help="draw the report: a .png (matplotlib) or .svg path")
    p.set_defaults(func=run)


def resolve(spec: str) -> str:
    """A model argument as a loadable path: a known name's folder, a folder in the model cache, or ``spec``."""
    from pathlib import Path

    from rollgym.agents.backends.catalog import model_dir, resolve_model

    path = resolve_model(spec)
    if path == spec and not Path(spec).expanduser().exists() and "/" not in spec and model_dir(spec).is_dir():
        return str(model_dir(spec))
    return path


def _load_tokenizer(spec: str) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(resolve(spec))
    except ConfigError:
        raise
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"Cannot load a tokenizer from {spec!r} ({first}); pass a model folder, a pulled model's "
                          "name (rollgym models list) or a hub id.") from None


def _load_model(spec: str) -> Any:
    from transformers import AutoModelForCausalLM

    try:
        return AutoModelForCausalLM.from_pretrained(resolve(spec))
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"Cannot load a model from {spec!r} ({first}); pass a model folder, a pulled model's "
                          "name (rollgym models list) or a hub id.") from None


def run(args: argparse.Namespace) -> int:
    """Load the rollouts, the student and the teachers (tokenizers first), score, print and write the report."""
    from rollgym.train.distill_diagnostic import diagnose, load_groups, require_shared_tokenizer
    from rollgym.train.teacher import Teacher, answer_context, sibling_context

    groups = load_groups(args.results)
    if len(set(args.teacher)) != len(args.teacher):
        raise ConfigError("Each --teacher may be named once; drop the repeated one.")
    tokenizer = _load_tokenizer(args.student)
    others = {spec: _load_tokenizer(spec) for spec in args.teacher if spec not in SELF_TEACHERS}
    for spec, other in others.items():  # refuse a mismatched teacher before loading any weights
        require_shared_tokenizer(tokenizer, other, spec)
    student = _load_model(args.student)
    contexts = {"self": None, "self:answer": answer_context, "self:sibling": sibling_context}
    teachers = {}
    for spec in args.teacher:
        if spec in SELF_TEACHERS:
            teachers[spec] = Teacher(student, tokenizer, context=contexts[spec])
        else:
            teachers[spec] = Teacher(_load_model(spec))
    report = diagnose(student, tokenizer, groups, teachers, teacher_tokenizers=others, limit=args.limit)
    report.meta.update({"results": str(args.results), "student": args.student, "teachers": list(args.teacher)})
    stdout.print(_table(report))
    for path, what in ((args.out, "report"), (args.markdown, "tables"), (args.plot, "plot")):
        if path is None:
            continue
        if what == "report":
            written = report.write_json(path, tokens=args.tokens)
        elif what == "tables":
            from rollgym.core.io import write_bytes_atomic

            write_bytes_atomic(path, report.to_markdown().encode())
            written = path
        else:
            written = report.plot(path)
        stdout.print(f"Wrote the {what} to {escape(str(written))}.")
    return 0


def _table(report: Any) -> Table:
    table = Table(title=f"Distillation diagnostic · {report.meta.get('rollouts')} rollouts, "
                        f"{report.meta.get('questions')} questions")
    for column in ("Teacher", "Rollouts (correct)", "Tokens", "Aligned d·Δ", "Helps", "Hurts", "Reverse KL", "Verdict"):
        table.add_column(column, justify="left" if column in ("Teacher", "Verdict") else "right")
    for name, a in report.per_teacher().items():
        table.add_row(escape(name), f"{a.rollouts} ({a.correct})", str(a.tokens), f"{a.aligned:+.3f}",
                      f"{a.helps:.2f}", f"{a.hurts:.2f}", f"{a.reverse_kl:.3f}", a.verdict)
    return table

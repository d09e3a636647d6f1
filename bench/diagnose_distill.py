"""The per-token distillation diagnostic on real rollouts: SmolLM2-135M-Instruct on easy Countdown tasks.

Samples ``--n`` tasks x ``--group-size`` rollouts of the student (replies prefilled with
``<answer>`` so that they are graded; in the committed run none was correct), tries
Qwen2.5-Coder-0.5B-Instruct as a teacher (refused: another tokenizer; the sentence is recorded),
and scores every sampled token under the student itself with privileged context: the reference
answer (``self:answer``), the shortest successful sibling rollout (``self:sibling``) and a format
hint with a worked example on other numbers (``self:format``), with the unchanged student
(``self``) as the zero control.
Writes the rollouts (gzipped results file), the report (JSON) and its figure; docs/training.md's tables
are rendered from the JSON. ``--rollouts FILE`` scores an existing results file instead of sampling.

    python bench/diagnose_distill.py     # the committed run: ~50 minutes on 2 heavily shared CPU cores
    python bench/diagnose_distill.py --n 2 --group-size 2 --out /tmp/diag   # a quick look

Not part of ``bench/run_all.py`` (it measures a signal, not a speed).
"""

from __future__ import annotations

import argparse
import gzip
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EASY = {"num_numbers": 2, "max_value": 20, "min_target": 10, "max_target": 99, "usage": "at_most"}


def format_context(traj: object, group: object) -> str:
    """Privileged context that is not the answer: how a correct reply is written (one worked example)."""
    return ("Privileged hint (not shown to the student): reply with one arithmetic expression over the given "
            "numbers inside answer tags and nothing else, e.g. for the numbers 3, 5 and the target 8: "
            "<answer>3 + 5</answer>")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", default="smollm2-135m-instruct")
    parser.add_argument("--other", default="qwen2.5-coder-0.5b-instruct", help="an external teacher to try")
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--group-size", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rollouts", type=Path, default=None,
                        help="score this results file of the student instead of sampling new rollouts")
    parser.add_argument("--out", type=Path, default=None, help="folder for the report and figure (default: docs/)")
    args = parser.parse_args()

    import torch
    from transformers import AutoTokenizer

    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.backends.hf import TransformersBackend
    from rollgym.agents.chat import ChatAgent
    from rollgym.commands.distill_diagnostic import resolve
    from rollgym.core.errors import ConfigError
    from rollgym.rollout.stream import collect_async
    from rollgym.train.distill_diagnostic import diagnose, load_groups, require_shared_tokenizer
    from rollgym.train.teacher import Teacher, answer_context, sibling_context

    torch.manual_seed(args.seed)
    report_dir = args.out or ROOT / "docs" / "diagnostics"
    figure = (args.out or ROOT / "docs" / "img") / "distill_diagnostic.png"
    rollouts = args.rollouts or report_dir / "distill_countdown_smollm2_rollouts.jsonl"
    start = time.perf_counter()
    backend = TransformersBackend.from_pretrained(resolve(args.student))
    if args.rollouts is None:
        rollouts.unlink(missing_ok=True)
        agent = ChatAgent(backend, SamplingParams(max_tokens=args.max_tokens, temperature=args.temperature),
                          reply_prefix="<answer>")
        collect_async(agent, "Countdown-v0", args.n, args.group_size, split="test", seed=args.seed, concurrency=12,
                      max_steps=1, out=str(rollouts), env_kwargs=EASY)
        packed = rollouts.with_name(rollouts.name + ".gz")
        packed.write_bytes(gzip.compress(rollouts.read_bytes(), mtime=0))
        rollouts.unlink()
        rollouts = packed
    sampled_s = time.perf_counter() - start if args.rollouts is None else None
    groups = load_groups(rollouts)

    refused = {}
    try:
        require_shared_tokenizer(backend.tokenizer, AutoTokenizer.from_pretrained(resolve(args.other)),
                                 args.other)
    except ConfigError as exc:
        refused[args.other] = str(exc)
    student, tok = backend.model, backend.tokenizer
    teachers = {"self": Teacher(student, tok), "self:answer": Teacher(student, tok, context=answer_context),
                "self:sibling": Teacher(student, tok, context=sibling_context),
                "self:format": Teacher(student, tok, context=format_context)}
    report = diagnose(student, tok, groups, teachers)
    report.meta.update({
        "student": args.student, "env_id": "Countdown-v0", "env_kwargs": EASY, "split": "test", "seed": args.seed,
        "group_size": args.group_size, "max_tokens": args.max_tokens, "temperature": args.temperature,
        "reply_prefix": "<answer>", "refused_teachers": refused,
        "rollouts_file": str(rollouts.relative_to(ROOT)) if rollouts.is_relative_to(ROOT) else str(rollouts),
        "sample_s": None if sampled_s is None else round(sampled_s, 1),
        "score_s": round(time.perf_counter() - start - (sampled_s or 0.0), 1),
        "command": "python bench/diagnose_distill.py",
    })
    report.write_json(report_dir / "distill_countdown_smollm2.json")
    report.plot(figure)
    print(report.to_markdown())
    for name, sentence in refused.items():
        print(f"refused {name}: {sentence}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The tables of docs/baselines.md, generated from a verified ``ladders`` bundle.

    python bench/baselines.py docs/baselines/smollm2-135m-instruct-ladders.tar.gz --doc docs/baselines.md
    python bench/baselines.py docs/baselines/qwen2.5-coder-0.5b-instruct-ladders.tar.gz --doc docs/baselines.md \
        --section qwen2.5-coder-0.5b-instruct

The bundle is re-verified first (every episode replayed, the summary recomputed); the tables are
made from the recomputed summary, never the claimed one, and from the replayed transcripts' error
labels. Without ``--doc`` the tables are printed. ``tests/benchmarks/test_baselines_doc.py`` checks
that the committed doc holds exactly what this script makes from the committed bundle.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BEGIN, END = "<!-- baselines:ladders:begin -->", "<!-- baselines:ladders:end -->"


def markers(section: str | None = None) -> tuple[str, str]:
    """The begin and end markers of a model's tables in the doc (``None``: the first model's, SmolLM2's)."""
    if section is None:
        return BEGIN, END
    return f"<!-- baselines:ladders:{section}:begin -->", f"<!-- baselines:ladders:{section}:end -->"


@dataclass(frozen=True)
class Row:
    """One (env, level) of the ``ladders`` suite: its entries and where the level sits on the ladder."""

    family: str
    env: str
    level: str
    greedy: str
    sampled: str | None
    easiest: bool
    default: bool


#: The newest suite's entries, by family and level (the easiest level first in each family). A table shows the env
#: id each entry had in the bundle's own suite version (ladders@v2 played KuhnPoker-v0 and UserSim-v0).
ROWS = (
    Row("puzzles", "Countdown-v0", "n2 (2 numbers)", "countdown-n2-greedy", "countdown-n2-sampled", True, False),
    Row("puzzles", "Countdown-v0", "n4 (4 numbers)", "countdown-default-greedy", None, False, True),
    Row("puzzles", "Sudoku4x4-v0", "b4 (4 blanks)", "sudoku4x4-b4-greedy", "sudoku4x4-b4-sampled", True, False),
    Row("puzzles", "Sudoku4x4-v0", "b10 (10 blanks)", "sudoku4x4-default-greedy", None, False, True),
    Row("math", "MATH500-v1", "level 1", "math500-level1-greedy", "math500-level1-sampled", True, False),
    Row("math", "MATH500-v1", "level 2", "math500-level2-greedy", None, False, False),
    Row("math", "MATH500-v1", "all levels mixed", "math500-default-greedy", None, False, True),
    Row("games", "ConnectFour-v0", "random bot", "c4-random-greedy", "c4-random-sampled", True, True),
    Row("games", "Chess-v1", "random bot", "chess-random-greedy", "chess-random-sampled", True, True),
    Row("games", "Hex-v0", "5x5, random bot", "hex5-random-greedy", "hex5-random-sampled", True, False),
    Row("games", "Hex-v0", "default board and bot", "hex-default-greedy", None, False, True),
    Row("games", "KuhnPoker-v1", "random bot", "kuhn-random-greedy", "kuhn-random-sampled", True, False),
    Row("search", "Search-v1", "easy (1 hop)", "search-easy-greedy", "search-easy-sampled", True, False),
    Row("search", "Search-v1", "medium (2 hops)", "search-default-greedy", None, False, True),
    Row("tools", "ToolWorld-v1", "calls-2", "toolworld-calls2-greedy", "toolworld-calls2-sampled", True, False),
    Row("tools", "ToolWorld-v1", "all templates mixed", "toolworld-default-greedy", None, False, True),
    Row("tools", "ToolGen-v0", "lookup", "toolgen-lookup-greedy", "toolgen-lookup-sampled", True, False),
    Row("conversation", "UserSim-v1", "facts", "usersim-facts-greedy", "usersim-facts-sampled", True, False),
    Row("web", "WebShop-v2", "lookup", "webshop-lookup-greedy", "webshop-lookup-sampled", True, False),
    Row("code", "HumanEval-v0", "(no ladder)", "humaneval-greedy", "humaneval-sampled", True, True),
    Row("code", "CodeGen-v0", "steps-1", "codegen-steps1-greedy", "codegen-steps1-sampled", True, False),
    Row("code", "Terminal-v0", "(no ladder)", "terminal-greedy", None, True, True),
)


def _pct(stat: dict[str, Any] | None) -> str:
    if not stat:
        return "n/a"
    return f"{100 * stat['value']:.0f}% [{100 * stat['low']:.0f}, {100 * stat['high']:.0f}]"


def labels_of(transcript: Path) -> Counter[str]:
    """The env's error label of every episode (``correct`` for a solved one, ``truncated`` at the step cap)."""
    counts: Counter[str] = Counter()
    for line in transcript.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("kind") != "episode":
            continue
        traj = record["trajectory"]
        info = traj.get("info") or {}
        if traj.get("reward") is not None and info.get("correct"):
            counts["correct"] += 1
        elif traj.get("status") == "truncated":
            counts["truncated"] += 1
        else:
            counts[str(info.get("error") or info.get("outcome") or traj.get("status") or "unlabelled")] += 1
    return counts


def _labels(counts: Counter[str]) -> str:
    total = sum(counts.values())
    return ", ".join(f"`{k}` {v}/{total}" for k, v in counts.most_common(3)) if total else "n/a"


def tables(summary: dict[str, Any], transcripts: Path, env_ids: dict[str, str] | None = None) -> str:
    """The two Markdown tables: every (env, level) row, then per family the default level and the easiest
    level that scores above 0. ``env_ids`` maps an entry's name to the env id the bundle played it on."""
    entries = summary["entries"]
    played = env_ids or {}
    lines = ["| family | env | level | greedy accuracy | sampled accuracy (4 per task) | pass@4 | most common labels "
             "(greedy) |", "|---|---|---|---|---|---|---|"]
    for row in ROWS:
        greedy = entries[row.greedy]
        sampled = entries.get(row.sampled) if row.sampled else None
        where = {(True, False): " (easiest)", (False, True): " (default)", (True, True): " (easiest, default)",
                 (False, False): ""}[(row.easiest, row.default)]
        lines.append(
            f"| {row.family} | {played.get(row.greedy, row.env)} | {row.level}{where} | "
            f"{greedy['correct']}/{greedy['tasks']}: "
            f"{_pct(greedy['accuracy'])} | "
            + (f"{sampled['correct']}/{sampled['episodes']}: {_pct(sampled['accuracy'])} | "
               f"{_pct((sampled.get('pass_at_k') or {}).get('4'))}" if sampled else "not run | not run")
            + f" | {_labels(labels_of(transcripts / f'{row.greedy}.jsonl'))} |")
    lines += ["", "| family | env | accuracy at the default level (greedy) | easiest level scoring above 0 |",
              "|---|---|---|---|"]
    for env in dict.fromkeys(r.env for r in ROWS):
        rows = [r for r in ROWS if r.env == env]
        default = next((r for r in rows if r.default), None)
        scoring = next((r for r in rows if entries[r.greedy]["correct"] > 0 or (
            r.sampled and entries[r.sampled]["correct"] > 0)), None)
        lowest = rows[0]
        easiest = (f"{scoring.level}" if scoring is not None else
                   "none: it has no ladder and scores 0" if lowest.level == "(no ladder)" else
                   f"none: the easiest level, {lowest.level}, scores 0")
        at_default = _pct(entries[default.greedy]["accuracy"]) if default is not None else "not in the suite"
        lines.append(f"| {rows[0].family} | {played.get(lowest.greedy, env)} | {at_default} | {easiest} |")
    return "\n".join(lines)


def write_doc(doc: Path, text: str, section: str | None = None) -> None:
    """Replace the text between the markers of ``doc`` (those of ``section``, see :func:`markers`)."""
    begin, end = markers(section)
    content = doc.read_text(encoding="utf-8")
    head, _, rest = content.partition(begin)
    _, _, tail = rest.partition(end)
    if not rest:
        raise SystemExit(f"{doc} has no {begin} marker; add the two marker lines where the tables go.")
    doc.write_text(f"{head}{begin}\n{text}\n{end}{tail}", encoding="utf-8")


def generate(bundle_path: str | Path) -> str:
    """Verify the bundle and make its tables (a ``SystemExit`` with the reasons when it does not verify)."""
    from rollgym.benchmarks.suite import builtin_suite
    from rollgym.bundles.format import open_bundle
    from rollgym.leaderboard.verify import verify_bundle

    with open_bundle(bundle_path) as bundle:
        report = verify_bundle(bundle)
        if not report.ok or report.summary is None:
            raise SystemExit(f"{bundle_path} does not verify: " + "; ".join(report.reasons))
        if bundle.manifest["suite"]["name"] != "ladders":
            suite = bundle.manifest["suite"]["name"]
            raise SystemExit(f"{bundle_path} is a run of {suite!r}, not of the ladders suite.")
        suite = builtin_suite("ladders", bundle.manifest["suite"]["version"])  # verified: a shipped version
        env_ids = {entry.name: entry.env_id for entry in suite.entries}
        return tables(report.summary, bundle.root / "transcripts", env_ids)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", help="a ladders bundle (folder or .tar.gz)")
    parser.add_argument("--doc", default=None, help="write the tables into this Markdown file between the markers")
    parser.add_argument("--section", default=None,
                        help="the model's markers in the doc (<!-- baselines:ladders:SECTION:begin -->); "
                             "default: the first model's (<!-- baselines:ladders:begin -->)")
    args = parser.parse_args(argv)
    text = generate(args.bundle)
    if args.doc:
        write_doc(Path(args.doc), text, args.section)
        print(f"wrote the tables into {args.doc}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

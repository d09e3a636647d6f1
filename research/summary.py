"""The summary table at the top of ``docs/experiments.md``: every comparison of every committed results file.

Like each experiment's own table it is a pure function of the JSON (:func:`render_summary`), written between
markers (:func:`write_summary_section`, by ``python -m research all --render --doc``) and
checked against the committed files by a test, so no finding in it can drift from its numbers.

Example:
    >>> table = render_summary(committed_results("docs/experiments"))  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from research.pairing import NOT_PAIRED, data_pairing_problem
from research.runner import EXPERIMENTS, difference_text, mde_text, seeds_text
from rollgym.core.doc_sections import replace_section, section_of

MARKERS = ("<!-- experiments-summary:begin -->", "<!-- experiments-summary:end -->")

#: The name each experiment has in the summary (else its title) ...
NAMES: dict[str, str] = {
    "realmodel": "Real model (SmolLM2-135M)", "realmodel-trl": "Real model, TRL's trainer",
    "realmodel-qwen": "Real model (Qwen2.5-Coder-0.5B), CodeGen", "erils": "ERILS", "t3rl": "T^3RL",
    "dynamic": "Dynamic sampling", "worldmodel": "World model", "april": "APRIL", "generalization": "Generalization",
    "selfplay": "Self-play", "branching": "Branching",
}
#: ... and its section's anchor in ``docs/experiments.md``, where that is not its own name.
ANCHORS: dict[str, str] = {"realmodel-trl": "realmodel"}


def _order(data: dict[str, Any]) -> int:
    names = list(EXPERIMENTS)
    return names.index(data["experiment"]) if data["experiment"] in names else len(names)


def render_summary(results: Sequence[dict[str, Any]]) -> str:
    """One row per comparison in ``results`` (results files), in the runner's order of experiments."""
    lines = ["| experiment | comparison | measure | paired difference (mean ± 95% CI) | MDE (80% power) | seeds "
             "| reading |", "|---|---|---|---|---|---|---|"]
    unpaired = []
    for data in sorted(results, key=_order):
        name = NAMES.get(data["experiment"], data["title"])
        anchor = ANCHORS.get(data["experiment"], data["experiment"])
        digits = int(data.get("digits", 3))
        first = True
        for c in data["comparisons"]:
            problem = data_pairing_problem(data, c)
            if problem and name not in unpaired:
                unpaired.append(name)
            measure = "primary: " + c["metric"] if c["metric"] == data["metric"] else c["metric"]
            lines.append(f"| {f'[{name}](#{anchor})' if first else ''} | {c['a']} − {c['b']} | {measure} "
                         f"| {difference_text(c, digits)} | {mde_text(c, digits)} | {seeds_text(c)} "
                         f"| {NOT_PAIRED if problem else c['verdict']} |")
            first = False
    lines += ["", "Generated from `docs/experiments/*.json` by `render_summary` (every comparison each file holds; "
                  "`python -m research all --render --doc` rewrites it). A reading of "
                  f"\"{NOT_PAIRED}\" marks a comparison whose arms' runs do not record one starting point"
                  + (f" ({', '.join(unpaired)}: see each table's note)" if unpaired else "")
                  + "; its difference, where the file recorded one, is shown with no reading."]
    return "\n".join(lines)


def committed_results(folder: str | Path) -> list[dict[str, Any]]:
    """The results files of the registered experiments in ``folder`` (``docs/experiments``)."""
    paths = [Path(folder) / f"{name}.json" for name in EXPERIMENTS]
    return [json.loads(p.read_text(encoding="utf-8")) for p in paths if p.exists()]


def write_summary_section(folder: str | Path, doc: str | Path) -> None:
    """Replace the summary between :data:`MARKERS` in ``doc`` with :func:`render_summary` of ``folder``'s files."""
    doc = Path(doc)
    text = replace_section(doc.read_text(encoding="utf-8"), *MARKERS, render_summary(committed_results(folder)),
                           where=str(doc))
    doc.write_text(text, encoding="utf-8")


def summary_section(doc: str | Path) -> str:
    """The text between :data:`MARKERS` in ``doc``."""
    return section_of(Path(doc).read_text(encoding="utf-8"), *MARKERS)

"""The task source of the search envs: questions drawn per ``(split, index)`` over one cached world."""

from __future__ import annotations

import random
from dataclasses import asdict
from typing import Any

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, draw_in_split
from rollgym.core.sources import UnboundedSource
from rollgym.core.task import Task
from rollgym.envs.search.corpus import get_corpus
from rollgym.envs.search.questions import Question, QuestionSpec, generate_question, plan_key

PROMPT_SUFFIX = (
    "\n\nUse the search, open and find tools to look things up in the encyclopaedia; the facts are fictional, "
    "so do not answer from memory. When you know the answer, reply with <answer>...</answer> holding only the "
    "name or year."
)
DIFFICULTIES: dict[str, QuestionSpec] = {
    "easy": QuestionSpec("chain", 1, 0),
    "medium": QuestionSpec("chain", 2, 1),
    "hard": QuestionSpec("chain", 3, 2),
    "expert": QuestionSpec("tree", 3, 2),
}
QA_MIX: tuple[tuple[QuestionSpec, float], ...] = (
    (QuestionSpec("chain", 1, None), 0.35),
    (QuestionSpec("intersection", 1, None), 0.1),
    (QuestionSpec("chain", 2, None), 0.25),
    (QuestionSpec("tree", 2, None), 0.1),
    (QuestionSpec("chain", 3, None), 0.15),
    (QuestionSpec("tree", 3, None), 0.05),
)


def search_difficulty(specs: list[tuple[QuestionSpec, float]]) -> Difficulty:
    """The presets of :data:`DIFFICULTIES` as levels, easiest first; ``default`` is the preset ``specs`` is, if one."""
    levels = tuple(
        Level(name, {"topology": s.topology, "hops": s.hops, "dispersion": s.dispersion, "constraints": s.constraints},
              f"{s.topology} of {s.hops} hop{'s' if s.hops > 1 else ''}, dispersion {s.dispersion}")
        for name, s in DIFFICULTIES.items())
    only = specs[0][0] if len(specs) == 1 else None
    default = next((i for i, level in enumerate(levels)
                    if only is not None and QuestionSpec(**level.knobs, min_distractors=only.min_distractors) == only),
                   None)
    return Difficulty(levels, default=default, grows="evidence articles per question (hops), and how far the "
                                                   "facts are spread (dispersion)")


def reference_rounds(question: Question) -> int:
    """The tool-round budget a competent agent needs: a search and a read per evidence article."""
    return 2 * question.documents


class SearchTaskSource(UnboundedSource):
    """Questions over the world ``(world_size, world_seed)``, each drawn from a weighted mix of specs.

    Splits are disjoint by question plan (see :func:`rollgym.core.seeding.draw_in_split`); the world and its
    corpus are shared by every split.
    """

    family = "search"

    def __init__(self, specs: list[tuple[QuestionSpec, float]], world_size: int, world_seed: int,
                 env_id: str = "Search-v0") -> None:
        if not specs or any(w <= 0 for _, w in specs):
            raise ConfigError("A search task source needs at least one question spec with a positive weight.")
        self.specs = specs
        self.world_size, self.world_seed = world_size, world_seed
        self.env_id = env_id
        self.corpus = get_corpus(world_size, world_seed)
        self.stream = f"search/{world_size}/{world_seed}/" + "|".join(
            f"{w}:{sorted(asdict(s).items())}" for s, w in specs)

    def task(self, index: int, split: str = "train") -> Task:
        """Question ``index`` of ``split``, the same every time."""
        world = self.corpus.world
        weights = [w for _, w in self.specs]

        def candidate(np_rng: Any) -> Question:
            rng = random.Random(int(np_rng.integers(2**63)))
            spec = rng.choices([s for s, _ in self.specs], weights)[0]
            return generate_question(world, self.corpus, spec, rng)

        question, _ = draw_in_split(self.stream, split, index, candidate, lambda q: plan_key(q.plan))
        meta = {
            "topology": question.plan["topology"], "hops": question.hops, "dispersion": question.dispersion,
            "documents": question.documents, "distractors": question.distractors,
            "constraints": len(question.plan.get("constraints", [])), "answer_kind": question.answer_kind,
            "plan": question.plan, "reference_rounds": reference_rounds(question),
            "world_size": self.world_size, "world_seed": self.world_seed,
        }
        answer = {"text": question.answer, "aliases": question.aliases, "entity_id": question.answer_id,
                  "evidence": question.evidence}
        task_id = f"{self.env_id}/{split}/{index}/{content_digest(plan_key(question.plan))}"
        return Task(task_id, self.env_id, question.text + PROMPT_SUFFIX, answer, meta)

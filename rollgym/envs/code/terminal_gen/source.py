"""``TerminalGenSource``: thousands of generated terminal tasks over 21 kinds, 7 of them held out.

Task ``i`` of a split is kind ``i mod k`` of the split's ``k`` kinds, drawn at level
``(i // k) mod 4`` (or the configured level) from a seeded stream, so every kind and level is
equally represented. ``train``, ``validation`` and ``test`` draw the 14 seen kinds and are
disjoint by content (:func:`~rollgym.core.seeding.draw_in_split`, keyed on kind, files and
checks); ``test_unseen`` draws only the 7 held-out kinds, which no other split ever draws.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, draw_in_split, task_rng
from rollgym.core.task import Task
from rollgym.envs.code.config import as_meta, check_choices
from rollgym.envs.code.terminal_gen import program_kinds as programs
from rollgym.envs.code.terminal_gen import state_kinds as states
from rollgym.envs.code.terminal_gen.spec import Spec

FAMILY = "code-terminal-gen"
DEFAULT_ENV_ID = "TerminalGen-v0"
Draw = Callable[[np.random.Generator, int], Spec]

#: Kind name -> (category, drawer); the order is the order of ``kinds``.
SEEN_KINDS: dict[str, tuple[str, Draw]] = {
    "move_ext": ("files", states.move_ext),
    "rename_prefix": ("files", states.rename_prefix),
    "count_word": ("text", states.count_word),
    "csv_sum": ("text", states.csv_sum),
    "sort_uniq": ("text", states.sort_uniq),
    "replace_text": ("text", states.replace_text),
    "chmod_set": ("permissions", states.chmod_set),
    "gzip_logs": ("archives", states.gzip_logs),
    "tar_create": ("archives", states.tar_create),
    "script_stats": ("scripts", programs.script_stats),
    "script_grep": ("scripts", programs.script_grep),
    "exit_codes": ("processes", programs.exit_codes),
    "count_failures": ("processes", programs.count_failures),
    "kv_service": ("services", programs.kv_service),
}
#: Kinds only ``test_unseen`` draws: one per category.
HELD_OUT_KINDS: dict[str, tuple[str, Draw]] = {
    "dedupe": ("files", states.dedupe),
    "top_ip": ("text", states.top_ip),
    "private_dir": ("permissions", states.private_dir),
    "backup_each": ("archives", states.backup_each),
    "script_args": ("scripts", programs.script_args),
    "trap_term": ("processes", programs.trap_term),
    "transform_service": ("services", programs.transform_service),
}
ALL_KINDS = (*SEEN_KINDS, *HELD_OUT_KINDS)
SPLITS = ("train", "validation", "test", "test_unseen")
#: Tasks per split: a fixed, finite catalogue (validated whole by ``bench/validate_terminal_gen.py``).
SPLIT_SIZES = {"train": 3000, "validation": 280, "test": 280, "test_unseen": 700}
LEVELS = 4


@dataclass(frozen=True)
class TerminalGenConfig:
    """How ``TerminalGen-v0`` tasks are drawn.

    Attributes:
        kinds: Task kinds (default all 21); a split draws those of them it may (``test_unseen``: held-out only).
        level: 0-3 to draw every task at one level; ``None`` (default) cycles through the four.

    Example:
        >>> TerminalGenConfig(kinds=["csv_sum", "dedupe"], level=1).kinds
        ('csv_sum', 'dedupe')
    """

    kinds: tuple[str, ...] = ALL_KINDS
    level: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", check_choices("kinds", self.kinds, ALL_KINDS))
        if self.level is not None and (isinstance(self.level, bool) or self.level not in range(LEVELS)):
            raise ConfigError(f"level must be None or an integer from 0 to {LEVELS - 1}, got {self.level!r}.")


def kinds_of(split: str, kinds: Sequence[str]) -> list[str]:
    """The kinds among ``kinds`` that ``split`` draws (held-out kinds only in ``test_unseen``)."""
    return [k for k in kinds if (k in HELD_OUT_KINDS) == (split == "test_unseen")]


def _key(spec: Spec) -> str:
    return json.dumps([spec["kind"], spec["files"], spec["checks"]], sort_keys=True)


class TerminalGenSource:
    """The task source of ``TerminalGen-v0``.

    Example:
        >>> task = TerminalGenSource().task(0, "test_unseen")
        >>> task.meta["kind"], task.meta["unseen"]
        ('dedupe', True)
    """

    family = FAMILY
    extra_splits = ("test_unseen",)

    def __init__(self, config: TerminalGenConfig | None = None, env_id: str = DEFAULT_ENV_ID) -> None:
        self.config = config or TerminalGenConfig()
        self.env_id = env_id

    def size(self, split: str) -> int | None:
        """The number of tasks in ``split`` (0 when the configured kinds include none the split draws)."""
        if split not in SPLIT_SIZES:
            return 0
        return SPLIT_SIZES[split] if kinds_of(split, self.config.kinds) else 0

    def spec(self, index: int, split: str = "train") -> Spec:
        """The plain-data spec of task ``index`` of ``split`` (see :mod:`.spec`)."""
        if split not in SPLITS:
            raise ConfigError(f"Unknown split {split!r}; use one of {', '.join(SPLITS)}.")
        kinds = kinds_of(split, self.config.kinds)
        if not kinds:
            where = "held-out" if split == "test_unseen" else "seen"
            raise ConfigError(f"Split {split!r} draws {where} kinds; this env has only {list(self.config.kinds)}.")
        if not 0 <= index < SPLIT_SIZES[split]:
            raise ConfigError(f"Task index must be from 0 to {SPLIT_SIZES[split] - 1} in {split!r}, got {index}.")
        kind = kinds[index % len(kinds)]
        level = self.config.level if self.config.level is not None else (index // len(kinds)) % LEVELS
        draw = (SEEN_KINDS | HELD_OUT_KINDS)[kind][1]
        if split == "test_unseen":  # held-out kinds: no other split draws them
            return draw(task_rng(f"{FAMILY}/test_unseen/{kind}", "test", index), level)
        spec, _ = draw_in_split(f"{FAMILY}/{kind}", split, index, lambda rng: draw(rng, level), key=_key)
        return spec

    def task(self, index: int, split: str = "train") -> Task:
        """Task ``index`` of ``split``."""
        spec = self.spec(index, split)
        return Task(
            id=f"{self.env_id}:{split}:{index}:{content_digest(_key(spec))}",
            env_id=self.env_id,
            prompt=prompt_of(spec),
            answer={"instruction": spec["instruction"], "files": spec["files"], "modes": spec["modes"],
                    "solution": spec["solution"],
                    "wrong": spec["wrong"], "checks": spec["checks"]},
            meta={"kind": spec["kind"], "category": spec["category"], "level": spec["level"],
                  "difficulty": {"kind": spec["kind"], "level": spec["level"], "n_files": len(spec["files"])},
                  "unseen": split == "test_unseen", "config": as_meta(self.config)},
        )


def prompt_of(spec: Spec) -> str:
    """The agent's first message: the instruction and the starting files (with modes other than 644)."""
    modes = spec.get("modes", {})
    listing = "\n".join(f"{p}{f' (mode {modes[p]:o})' if p in modes else ''}" for p in sorted(spec["files"]))
    return (f"Task: {spec['instruction']}\n\nThe working folder (/sandbox/work) holds:\n{listing or '(nothing)'}\n\n"
            "Run shell commands with the bash tool; reply without a tool call when you are done. The final state "
            "of the folder is checked (and what you write may be run on inputs you have not seen).")


def spec_of(task: Task) -> Spec:
    """A task's spec back from the task (for checks and exports)."""
    return {"kind": task.meta["kind"], "category": task.meta["category"], "level": task.meta["level"], **task.answer}


def catalogue() -> dict[str, Any]:
    """Counts for ``rollgym list --stats``: kinds, categories and tasks per split."""
    categories = sorted({c for c, _ in (SEEN_KINDS | HELD_OUT_KINDS).values()})
    return {"terminal_gen_kinds": len(ALL_KINDS), "terminal_gen_held_out_kinds": len(HELD_OUT_KINDS),
            "terminal_gen_categories": categories, "terminal_gen_levels": LEVELS,
            **{f"terminal_gen_tasks_{s}": n for s, n in SPLIT_SIZES.items()},
            "terminal_gen_tasks": sum(SPLIT_SIZES.values())}

"""Tasks on the generated websites: the template registry, the task source with its splits, and grading.

:data:`TEMPLATES` holds every template of every kind (``"shop.cheapest_in_department"``, ...).
:class:`GenTaskSource` turns ``(index, split)`` into a task:

* ``train``, ``validation`` and ``test`` play on the training sites (``gen-<kind>-NN``); a task
  belongs to a split by the hash of its content (site, template and parameters), so ``test``
  has the same sites as ``train`` and none of its tasks;
* ``test_unseen`` plays only on the held-out sites (``gen-<kind>-hN``): held-out seeds, held-out
  themes and held-out vocabulary.

Grading is the shared state-diff grader's: a question's answer is read by type
(:mod:`.answers`); a change's required rows must appear; and the whole-site gate
``site_unchanged_beyond_task`` zeroes the reward when any row of any table changed
beyond what the task requires or tolerates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, stable_int
from rollgym.core.task import Score, Task
from rollgym.envs.genworld.diff import ExpectedState, diff_world, grade_world, world_rubric
from rollgym.envs.genworld.draw import draw_instance
from rollgym.envs.genworld.templates import WorldTemplate
from rollgym.envs.web.gen import changes
from rollgym.envs.web.gen import mechanisms as m
from rollgym.envs.web.gen.domain import site_keys, site_spec
from rollgym.envs.web.gen.kinds import KINDS, Kind, TemplateSpec
from rollgym.envs.web.server import query_base, site
from rollgym.envs.web.tasks.base import SITE_GATE
from rollgym.verifiers.rubric import Criterion, Rubric
from rollgym.verifiers.statediff import Query, Rule, snapshot
from rollgym.verifiers.web import matches

MECHANISMS: dict[str, m.Mechanism] = {mechanism.operation: mechanism for mechanism in (
    m.Extreme(), m.Kth(), m.Lookup(), m.FindByCode(), m.ChainCode(), m.MyRecordValue(),
    changes.CreateRecord(), changes.CreateRecordExtreme(), changes.CancelRecord(), changes.UpdateRecord(),
    changes.BulkCancel(), changes.FavoriteAdd(), changes.FavoriteRemove(), changes.ProfileUpdate(),
    changes.EditItem(), changes.ArchiveItem(), changes.CreateItem())}
"""Every mechanism, by the name templates use (its ``operation``)."""

GEN_SPLITS = ("train", "validation", "test", "test_unseen")
"""The splits of the generated sites; ``test_unseen`` plays on held-out sites only."""
MAX_ATTEMPTS = 2000


@dataclass(frozen=True)
class GenTemplate(WorldTemplate):
    """One template: a kind, a :class:`~.kinds.TemplateSpec` and its mechanism (the generated-world core's
    template kind, :attr:`template_kind`)."""

    kind: Kind
    spec: TemplateSpec

    @property
    def name(self) -> str:
        """``"<kind>.<template>"``."""
        return f"{self.kind.key}.{self.spec.name}"

    @property
    def mechanism(self) -> m.Mechanism:
        """The mechanism that implements it."""
        return MECHANISMS[self.spec.mechanism]

    @property
    def template_kind(self) -> m.Mechanism:
        """The mechanism: what the task does to the site."""
        return self.mechanism

    @property
    def task_kind(self) -> str:
        """``"info"`` or ``"transaction"``."""
        return self.mechanism.kind


TEMPLATES: dict[str, GenTemplate] = {f"{k.key}.{t.name}": GenTemplate(k, t) for k in KINDS.values()
                                     for t in k.templates}
"""Every template of every kind, by ``"<kind>.<name>"``."""


@cache
def context(site_key: str) -> m.Ctx:
    """The mechanisms' view of a site (its object and seeded database)."""
    from rollgym.envs.web.gen.site import GeneratedSite

    obj = site(site_key)
    if not isinstance(obj, GeneratedSite):
        raise ConfigError(f"{site_key!r} is not a generated site.")
    return m.Ctx(obj)


def split_sites(split: str, kinds: tuple[str, ...], sites: tuple[str, ...] | None = None) -> list[str]:
    """The site keys a split plays on, for some kinds (and optionally only some sites)."""
    if split not in GEN_SPLITS:
        raise ConfigError(f"Unknown split {split!r}; use one of {', '.join(GEN_SPLITS)}.")
    keys = [key for kind in kinds for key in site_keys(kind, split == "test_unseen")]
    if sites is not None:
        keys = [k for k in keys if k in sites]
        if not keys:
            raise ConfigError(f"None of the sites {list(sites)} belongs to split {split!r} of kinds {list(kinds)}; "
                              f"{'held-out sites (gen-<kind>-hN)' if split == 'test_unseen' else 'training sites'} "
                              "serve it.")
    return keys


def template_of(task: Task) -> GenTemplate:
    """The template that made ``task``."""
    name = task.meta.get("template")
    if name not in TEMPLATES:
        raise ConfigError(f"Task {task.id!r} names no generated-site template; use a task from a WebGen source.")
    return TEMPLATES[name]


def _rng(split: str, index: int, attempt: int) -> np.random.Generator:
    seq = np.random.SeedSequence(entropy=stable_int("webgen"), spawn_key=(GEN_SPLITS.index(split), index, attempt))
    return np.random.Generator(np.random.PCG64(seq))


class GenTaskSource:
    """Tasks on the generated sites, indexed and deterministic; see the module docstring.

    Args:
        env_id: The env id tasks carry.
        kinds: Domain kinds to draw from (all by default).
        sites: Only these site keys (e.g. one site, to check it alone).
        templates: Only these template names.

    Example:
        >>> source = GenTaskSource("WebGen-v0", kinds=("wiki",))
        >>> source.task(3, "test_unseen").meta["site"].startswith("gen-wiki-h")
        True
    """

    family = "web"
    extra_splits = ("test_unseen",)

    def __init__(self, env_id: str, kinds: tuple[str, ...] | None = None, sites: tuple[str, ...] | None = None,
                 templates: tuple[str, ...] | None = None) -> None:
        kinds = tuple(KINDS) if kinds is None else tuple(kinds)
        unknown = [k for k in kinds if k not in KINDS]
        if unknown or not kinds:
            raise ConfigError(f"Unknown site kind(s) {unknown}; use some of {', '.join(KINDS)}.")
        if sites is not None:
            for key in sites:
                site_spec(key)
            kinds = tuple(k for k in kinds if any(site_spec(s).kind.key == k for s in sites))
        if templates is not None:
            bad = [t for t in templates if t not in TEMPLATES or TEMPLATES[t].kind.key not in kinds]
            if bad:
                raise ConfigError(f"Unknown template(s) {bad} for kinds {list(kinds)}; `rollgym list --stats` counts "
                                  "them and docs/web.md lists them.")
        self.env_id = env_id
        self.kinds = kinds
        self.sites = tuple(sites) if sites is not None else None
        self.templates = tuple(templates) if templates is not None else None

    def size(self, split: str) -> int | None:
        """``None`` (unbounded) for every split of :data:`GEN_SPLITS`, 0 for any other."""
        return None if split in GEN_SPLITS else 0

    def task(self, index: int, split: str = "train") -> Task:
        """Task ``index`` of ``split``."""
        if not isinstance(index, int) or index < 0:
            raise ConfigError(f"Task index must be a non-negative integer, got {index!r}.")
        keys = split_sites(split, self.kinds, self.sites)

        def candidate(rng: np.random.Generator) -> tuple[str, GenTemplate, dict[str, Any], Any] | None:
            key = keys[int(rng.integers(len(keys)))]
            spec = site_spec(key)
            names = [f"{spec.kind.key}.{t.name}" for t in spec.kind.templates]
            if self.templates is not None:
                names = [n for n in names if n in self.templates]
                if not names:
                    return None
            template = TEMPLATES[names[int(rng.integers(len(names)))]]
            drawn = template.mechanism.sample(context(key), template.spec.options, rng)
            return None if drawn is None else (key, template, *drawn)

        key, template, params, answer = draw_instance(
            lambda attempt: _rng(split, index, attempt), candidate, split=split,
            key=None if split == "test_unseen" else lambda c: json.dumps([c[0], c[1].name, c[2]], sort_keys=True),
            max_attempts=MAX_ATTEMPTS,
            failure=f"Could not draw a {split} task in {MAX_ATTEMPTS} attempts; widen kinds, sites or templates.")
        return self._make(key, template, params, answer)

    def _make(self, key: str, template: GenTemplate, params: dict[str, Any], answer: Any) -> Task:
        spec = site_spec(key)
        ctx = context(key)
        meta = {"template": template.name, "site": key, "gen_site": True, "domain": spec.kind.key,
                "theme": spec.theme.key, "kind": template.task_kind, "mechanism": template.spec.mechanism,
                "params": params}
        digest = content_digest(key, template.name, json.dumps(params, sort_keys=True))
        goal = template.mechanism.goal(ctx, template.spec.options, params)
        return Task(f"{key}/{template.name}:{digest}", self.env_id, goal, answer, meta)


# -- grading --------------------------------------------------------------------------------------------------------


def expected_state(task: Task) -> ExpectedState:
    """What ``task`` expects of the site: the changes it requires, those it tolerates (its user's sign-ins
    included) and, for a question, the answer criterion."""
    template = template_of(task)
    ctx = context(task.meta["site"])
    opt, p = template.spec.options, task.meta["params"]
    tolerated = template.mechanism.tolerated(ctx, opt, p, task.answer)
    if "username" in p:
        uid = ctx.rows("SELECT id FROM users WHERE username = ?", (p["username"],))[0]["id"]
        tolerated = [*tolerated, *m.sessions(int(uid))]
    answer = None
    if template.mechanism.asks:
        kind, unit = template.mechanism.answer_type(ctx, opt, p)
        expected = task.answer
        answer = Criterion("answer_correct", 1.0, lambda graded: matches(kind, expected, graded.answer, unit),
                           "the answer is the value the site holds")
    return ExpectedState(template.mechanism.required(ctx, opt, p, task.answer), tolerated, answer)


def rules_of(task: Task) -> list[Rule]:
    """Every change ``task`` requires or tolerates, its user's sign-ins included (the site gate's allow-list)."""
    return expected_state(task).rules


def rubric_of(task: Task) -> Rubric:
    """The rubric of a generated task: its answer or its required changes, and the whole-site gate."""
    expected = expected_state(task)
    if expected.answer is not None:
        return world_rubric(expected, goal=None, gate=SITE_GATE,
                            gate_description="no row of any table changed beyond the user's sign-ins")
    return world_rubric(expected, goal="goal_reached", gate=SITE_GATE,
                        gate_description="no row of any table of the site changed beyond what the task allows")


@cache
def _base_snapshot(site_key: str) -> Any:
    return snapshot(lambda sql, params=(): query_base(site_key, sql, params))


def grade_answer(task: Task, answer: str | None, db: Query) -> Score:
    """Grade an episode of a generated task from its final ``answer`` and its database (queried through ``db``)."""
    key = task.meta["site"]
    diff = diff_world(_base_snapshot(key), db)
    return grade_world(rubric_of(task), diff, answer, db=db,
                       base=lambda sql, params=(): query_base(key, sql, params))


#: Difficulty tier of each mechanism, by the reference solution's browser actions (measured on two train tasks
#: each): 0 finds and reports a fact (3-7 actions), 1 makes one short change (7-9: cancel or change a record,
#: save or unsave an item, edit one's account), 2 fills forms or repeats changes (9-16: a new record, an
#: editor's change, archive or new item, cancelling several records).
MECHANISM_TIERS: dict[str, int] = {
    "extreme": 0, "kth": 0, "lookup": 0, "find_by_code": 0, "chain_code": 0, "my_record_value": 0,
    "cancel_record": 1, "update_record": 1, "favorite_add": 1, "favorite_remove": 1, "profile_update": 1,
    "create_record": 2, "create_record_extreme": 2, "bulk_cancel": 2, "edit_item": 2, "archive_item": 2,
    "create_item": 2,
}
_TIERS = (("lookup", "find and report a fact"), ("short-change", "one short change of the site's state"),
          ("long-change", "forms filled or changes repeated over several pages"))


def gen_difficulty(templates: tuple[str, ...]) -> Difficulty | None:
    """Levels over ``templates`` by their mechanism's :data:`MECHANISM_TIERS` (empty tiers left out).

    A level's knob is ``templates``: the templates of its tier. ``None`` when one tier remains.

    Example:
        >>> ladder = gen_difficulty(tuple(TEMPLATES))
        >>> ladder.names, "shop.cheapest_in_department" in ladder.levels[0].knobs["templates"]
        (('lookup', 'short-change', 'long-change'), True)
    """
    tiers: dict[int, list[str]] = {}
    for name in templates:
        tiers.setdefault(MECHANISM_TIERS[TEMPLATES[name].spec.mechanism], []).append(name)
    if len(tiers) < 2:
        return None
    levels = tuple(Level(_TIERS[t][0], {"templates": tiers[t]}, f"{_TIERS[t][1]} ({len(tiers[t])} templates)")
                   for t in sorted(tiers))
    return Difficulty(levels, default=None, grows="the reference solution's browser actions")


def count_templates() -> dict[str, int]:
    """How many templates there are: in all, of each task kind, and mechanisms."""
    kinds = [t.task_kind for t in TEMPLATES.values()]
    return {"templates": len(TEMPLATES), "info": kinds.count("info"), "transaction": kinds.count("transaction"),
            "mechanisms": len(MECHANISMS)}


__all__ = ["GEN_SPLITS", "MECHANISMS", "MECHANISM_TIERS", "TEMPLATES", "GenTaskSource", "GenTemplate",
           "count_templates", "expected_state", "gen_difficulty", "grade_answer", "rubric_of", "rules_of",
           "split_sites", "template_of"]

"""Web task templates and the task source that turns (split, index) into a task.

Every site has four templates (:data:`TEMPLATES`); a task source for a set
of sites interleaves their templates, so task ``i`` of a split uses template
``i % n`` and that template's ``i // n``-th draw. Each draw comes from
:func:`rollgym.core.seeding.draw_in_split` with the template's parameters as
the content key, so train, validation and test never share a task.
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache, cached_property
from typing import Any

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, draw_in_split
from rollgym.core.sources import UnboundedSource
from rollgym.core.task import Score, Task
from rollgym.envs.web.server import query_base
from rollgym.envs.web.tasks import forum, shop, travel
from rollgym.envs.web.tasks.base import SITE_GATE, TaskTemplate
from rollgym.verifiers.rubric import Criterion, GradeContext, Rubric
from rollgym.verifiers.statediff import Query, Snapshot, StateDiff, diff_snapshots, snapshot

TEMPLATES: dict[str, TaskTemplate] = {t.name: t for t in [*shop.TEMPLATES, *forum.TEMPLATES, *travel.TEMPLATES]}
SITE_KEYS = ("shop", "forum", "travel")

#: Difficulty tier of each template, by the reference solution's actions through the browser (measured on three
#: tasks each): 0 looks something up (6-7 actions), 1 makes one short change (8-10: cancel an order or a hotel,
#: upvote), 2 fills forms over several pages (11-15: reply, moderate, book, purchase). A template missing here
#: (a new one) counts by its kind: an ``info`` template as tier 0, a ``transaction`` as tier 2.
TEMPLATE_TIERS: dict[str, int] = {
    "shop_extreme_price": 0, "shop_order_total": 0, "forum_top_reply": 0, "travel_cheapest_flight": 0,
    "shop_cancel_order": 1, "travel_cancel_hotel": 1, "forum_upvote": 1,
    "forum_reply": 2, "forum_moderate": 2, "travel_book_hotel": 2, "shop_purchase": 2, "travel_book_flight": 2,
}
_TIERS = (("lookup", "find and report a fact"), ("short-change", "one short change of the site's state"),
          ("long-change", "forms filled over several pages"))


def web_difficulty(templates: list[TaskTemplate]) -> Difficulty | None:
    """Levels over ``templates`` by :data:`TEMPLATE_TIERS` (empty tiers left out); ``None`` when one remains."""
    tiers: dict[int, list[str]] = {}
    for template in templates:
        tier = TEMPLATE_TIERS.get(template.name, 0 if template.kind == "info" else 2)
        tiers.setdefault(tier, []).append(template.name)
    if len(tiers) < 2:
        return None
    levels = tuple(Level(_TIERS[t][0], {"templates": tiers[t]}, f"{_TIERS[t][1]} ({len(tiers[t])} templates)")
                   for t in sorted(tiers))
    return Difficulty(levels, default=None, grows="the reference solution's browser actions")


def template_of(task: Task) -> TaskTemplate:
    """The template that made ``task``."""
    name = task.meta.get("template")
    if name not in TEMPLATES:
        raise ConfigError(f"Task {task.id!r} names no known web template; use a task from a web env's task source.")
    return TEMPLATES[name]


def rubric_of(task: Task) -> Rubric:
    """The rubric that grades ``task`` (with the whole-site gate for tasks of the ``-v2`` ids)."""
    return template_of(task).rubric(task.meta["params"], task.answer, site_gate=bool(task.meta.get("site_gate")))


@cache
def base_snapshot(site: str) -> Snapshot:
    """Every row of a site's seeded database, read once per process (the seeded database never changes)."""
    return snapshot(lambda sql, params=(): query_base(site, sql, params))


def site_diff(site: str, db: Query) -> StateDiff:
    """Every row added, changed or deleted in any table of ``site`` since reset, read through ``db``."""
    base = base_snapshot(site)
    return diff_snapshots(base, snapshot(db, base.schema))


def grade_task(task: Task, ctx: GradeContext) -> Score:
    """Grade ``task`` by its rubric from ``ctx.answer`` and the episode database ``ctx.db``.

    The diff of every table of the site is computed here from ``ctx.db`` (whatever ``ctx.diff`` holds). The
    collateral-damage gates count unless the task comes from a ``-v0`` id.
    """
    ctx = dataclasses.replace(ctx, diff=site_diff(template_of(task).site, ctx.db))
    return rubric_of(task).grade(ctx, gates=bool(task.meta.get("collateral_gates", False)))


def grade_answer(task: Task, answer: str | None, db: Query) -> Score:
    """Grade an episode of ``task``: its final ``answer`` and its database, queried through ``db(sql, params)``."""
    site = template_of(task).site
    return grade_task(task, GradeContext(answer=answer, db=db,
                                         base=lambda sql, params=(): query_base(site, sql, params)))


class WebTaskSource(UnboundedSource):
    """Tasks for one or more sites, indexed and deterministic.

    ``collateral_gates`` and ``site_gate`` pick the scoring: both on (the default) is ``-v2`` (per-table gates
    and the whole-site gate), ``site_gate=False`` is ``-v1``, ``collateral_gates=False`` is ``-v0``.

    Example:
        >>> source = WebTaskSource(("shop",), env_id="WebShop-v2")
        >>> source.task(5, "train") == source.task(5, "train")
        True
    """

    family = "web"

    def __init__(self, sites: tuple[str, ...], env_id: str, templates: tuple[str, ...] | None = None, *,
                 collateral_gates: bool = True, site_gate: bool | None = None) -> None:
        unknown = [s for s in sites if s not in SITE_KEYS]
        if unknown or not sites:
            raise ConfigError(f"Unknown site(s) {unknown}; use some of {', '.join(SITE_KEYS)}.")
        chosen = [t for t in TEMPLATES.values() if t.site in sites]
        if templates is not None:
            bad = [n for n in templates if n not in TEMPLATES or TEMPLATES[n].site not in sites]
            if bad:
                raise ConfigError(f"Unknown template(s) {bad} for these sites; choose from {[t.name for t in chosen]}.")
            chosen = [TEMPLATES[n] for n in templates]
        self.sites = sites
        self.env_id = env_id
        site_gate = collateral_gates if site_gate is None else site_gate
        if site_gate and not collateral_gates:
            raise ConfigError("site_gate=True needs collateral_gates=True (the -v2 scoring builds on -v1's gates).")
        self.collateral_gates = collateral_gates
        self.site_gate = site_gate
        self.templates = chosen

    def task(self, index: int, split: str = "train") -> Task:
        """Task ``index`` of ``split``."""
        template = self.templates[index % len(self.templates)]
        sub = index // len(self.templates)
        (params, answer), _ = draw_in_split(
            f"web/{template.name}",
            split,
            sub,
            template.sample,
            key=lambda value: template.name + json.dumps(value[0], sort_keys=True),
        )
        digest = content_digest(template.name, json.dumps(params, sort_keys=True))
        meta: dict[str, Any] = {
            "template": template.name,
            "site": template.site,
            "kind": template.kind,
            "params": params,
        }
        if self.collateral_gates:  # v0 tasks carry no such key, so they stay exactly as they were
            meta["collateral_gates"] = True
        if self.site_gate:  # likewise v1 tasks carry no site_gate key
            meta["site_gate"] = True
        return Task(f"{template.name}:{digest}", self.env_id, template.goal(params), answer, meta)

    @cached_property
    def template_names(self) -> list[str]:
        """Names of the templates this source draws from, in order."""
        return [t.name for t in self.templates]


__all__ = [
    "SITE_GATE",
    "TEMPLATES",
    "TEMPLATE_TIERS",
    "Criterion",
    "GradeContext",
    "Rubric",
    "TaskTemplate",
    "WebTaskSource",
    "base_snapshot",
    "grade_answer",
    "grade_task",
    "rubric_of",
    "site_diff",
    "template_of",
    "web_difficulty",
]

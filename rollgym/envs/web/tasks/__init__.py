"""Web task templates and the task source that turns (split, index) into a task.

Every site has four templates (:data:`TEMPLATES`); a task source for a set
of sites interleaves their templates, so task ``i`` of a split uses template
``i % n`` and that template's ``i // n``-th draw. Each draw comes from
:func:`rollgym.core.seeding.draw_in_split` with the template's parameters as
the content key, so train, validation and test never share a task.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, draw_in_split
from rollgym.core.task import Score, Task
from rollgym.envs.web.tasks import forum, shop, travel
from rollgym.envs.web.tasks.base import TaskTemplate
from rollgym.envs.web.tasks.rubric import Criterion, GradeContext, Rubric

TEMPLATES: dict[str, TaskTemplate] = {t.name: t for t in [*shop.TEMPLATES, *forum.TEMPLATES, *travel.TEMPLATES]}
SITE_KEYS = ("shop", "forum", "travel")


def template_of(task: Task) -> TaskTemplate:
    """The template that made ``task``."""
    name = task.meta.get("template")
    if name not in TEMPLATES:
        raise ConfigError(f"Task {task.id!r} names no known web template; use a task from a web env's task source.")
    return TEMPLATES[name]


def rubric_of(task: Task) -> Rubric:
    """The rubric that grades ``task``."""
    return template_of(task).rubric(task.meta["params"], task.answer)


def grade_task(task: Task, ctx: GradeContext) -> Score:
    """Grade ``task`` by its rubric: with collateral-damage gates unless the task comes from a ``-v0`` id."""
    return rubric_of(task).grade(ctx, gates=bool(task.meta.get("collateral_gates", False)))


class WebTaskSource:
    """Tasks for one or more sites, indexed and deterministic.

    Example:
        >>> source = WebTaskSource(("shop",), env_id="WebShop-v1")
        >>> source.task(5, "train") == source.task(5, "train")
        True
    """

    family = "web"

    def __init__(self, sites: tuple[str, ...], env_id: str, templates: tuple[str, ...] | None = None, *,
                 collateral_gates: bool = True) -> None:
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
        self.collateral_gates = collateral_gates
        self.templates = chosen

    def size(self, split: str) -> int | None:
        """Generated tasks are unbounded; ``None``."""
        return None

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
        return Task(f"{template.name}:{digest}", self.env_id, template.goal(params), answer, meta)

    @cached_property
    def template_names(self) -> list[str]:
        """Names of the templates this source draws from, in order."""
        return [t.name for t in self.templates]


__all__ = [
    "TEMPLATES",
    "Criterion",
    "GradeContext",
    "Rubric",
    "TaskTemplate",
    "WebTaskSource",
    "grade_task",
    "rubric_of",
    "template_of",
]

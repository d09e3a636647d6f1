"""The task source of ``ToolGen``: seeded tasks over the generated apps, with ``test_unseen`` on held-out apps.

A task is a template (one kind on one target of one app, or a cross-app kind over two to
four apps), its public parameters and the *world* it runs in: the task's apps plus
``distractors`` other apps of the same split, in a seeded order, so that the agent has to
pick the right tools and the whole-world gate watches apps the task does not name.

* ``train``, ``validation`` and ``test`` draw from the 208 seen apps and are disjoint
  by content (:func:`~rollgym.envs.genworld.draw.draw_instance` on the template and parameters);
* ``test_unseen`` draws from the 48 apps of the six held-out domains only.

``generation=1`` (``ToolGen-v1``) draws from the 1,024-app pool instead (832 seen apps, 192 in
``test_unseen``); the split of a task's content is decided the same way in both generations.

Each draw picks a scenario group uniformly (lookup, edit, action, chain, cross_app), then
an app, a kind of that group and a target; an instance that doing nothing with a constant
answer would pass (see :data:`~rollgym.verifiers.tools.CONSTANT_ANSWERS`) is redrawn.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, task_rng
from rollgym.core.sources import UnboundedSource
from rollgym.core.task import Task
from rollgym.envs.genworld.draw import draw_instance
from rollgym.envs.tools.generated import catalog
from rollgym.envs.tools.generated.crossapp import CROSS_KINDS
from rollgym.envs.tools.generated.kinds import KINDS
from rollgym.envs.tools.generated.store import NOW
from rollgym.envs.tools.generated.templates import GROUPS, GenTemplate
from rollgym.verifiers.tools import Expectation, is_degenerate

FAMILY = "ToolGen"
MAX_ATTEMPTS = 10_000
Candidate = tuple[str, dict[str, Any], list[str]]


def expectation_of(task: Task) -> Expectation:
    """The hidden required end state of a task (computed from the base databases)."""
    template = catalog.template(task.meta["template"])
    return template.expect({a: catalog.app(a) for a in template.apps}, task.meta["params"])


#: Difficulty levels over the scenario groups, easiest first, by the reference solution's mean tool calls over
#: 80 tasks each: lookup 2.3, edit 2.9, chain 3.8 and action 4.1 (one level: too close to order), cross_app 6.1.
GROUP_LEVELS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("lookup", ("lookup",), "questions answered from one app (a value, a name or a list)"),
    ("edit", ("edit",), "updates, creations and deletions of one record"),
    ("multi-step", ("chain", "action"), "dependent steps in one app, or domain actions with preconditions"),
    ("cross_app", ("cross_app",), "one person followed through 2-4 apps"),
)


def toolgen_difficulty(groups: Sequence[str] | None) -> Difficulty | None:
    """The levels of :data:`GROUP_LEVELS` over ``groups`` (all by default); ``None`` when fewer than two remain."""
    levels = []
    for name, members, summary in GROUP_LEVELS:
        kept = [g for g in members if groups is None or g in groups]
        if kept:
            levels.append(Level(name, {"groups": kept}, summary))
    if len(levels) < 2:
        return None
    return Difficulty(tuple(levels), default=None, grows="the reference solution's tool calls")


def opening(world: Sequence[str], prompt: str) -> str:
    """The first observation: the apps at hand, the frozen clock and the request."""
    apps = "; ".join(f"{catalog.schema(a).title} (tools {a}_*)" for a in world)
    return (f"You operate these apps: {apps}. It is {NOW:%A %Y-%m-%d %H:%M}.\n\nTask: {prompt}\n\nUse the tools to "
            "do it, then call complete_task (with an answer if the task asks a question).")


class ToolGenTaskSource(UnboundedSource):
    """Tasks over the generated apps; ``task(index, split)`` is deterministic.

    Args:
        env_id: The id written into tasks.
        groups: Scenario groups to draw from (default all of ``lookup``, ``edit``, ``action``, ``chain``,
            ``cross_app``).
        apps: Only these app ids (each must belong to the split it is drawn for).
        distractors: Other apps of the split added to each task's world.
        kinds: Only templates of these kinds (single-app kinds such as ``create_party``, or cross-app kinds;
            default all). The scenario groups keep only those that hold one of them.
        generation: The app pool: 0 (256 apps, ``ToolGen-v0``) or 1 (1,024 apps, ``ToolGen-v1``).
    """

    extra_splits = ("test_unseen",)

    def __init__(self, env_id: str = "ToolGen-v0", groups: Sequence[str] | None = None,
                 apps: Sequence[str] | None = None, distractors: int = 1,
                 kinds: Sequence[str] | None = None, generation: int = 0) -> None:
        if generation not in catalog.GENERATIONS:
            raise ConfigError(f"generation must be one of {list(catalog.GENERATIONS)}, got {generation!r}.")
        chosen = list(groups) if groups is not None else list(GROUPS)
        unknown = [g for g in chosen if g not in GROUPS]
        if unknown or not chosen:
            raise ConfigError(f"Unknown scenario group(s) {unknown}; choose from {', '.join(GROUPS)}.")
        if kinds is not None:
            kinds = _check_kinds(kinds)
            chosen = [g for g in chosen if any(kind_group(k) == g for k in kinds)]
            if not chosen:
                raise ConfigError(f"No scenario group of {list(groups or GROUPS)} holds the kinds {kinds}; pass "
                                  "groups that include them (or leave groups out).")
        if apps is not None:
            if isinstance(apps, str) or not apps:
                raise ConfigError("apps must be a non-empty list of generated app ids, e.g. ['maple_bakery'].")
            for a in apps:
                catalog.schema(a)  # a clear error for an unknown id
        if not isinstance(distractors, int) or not 0 <= distractors <= 4:
            raise ConfigError(f"distractors must be an integer from 0 to 4, got {distractors!r}.")
        self.family = FAMILY
        self.env_id = env_id
        self.groups = chosen
        self.apps = list(apps) if apps is not None else None
        self.distractors = distractors
        self.kinds = list(kinds) if kinds is not None else None
        self.generation = generation

    def pool(self, split: str) -> list[str]:
        """The apps a split's tasks may use (after the ``apps`` restriction)."""
        available = catalog.split_apps(split, self.generation)
        if self.apps is None:
            return list(available)
        outside = [a for a in self.apps if a not in available]
        if outside:
            other = "test_unseen" if split != "test_unseen" else "train, validation and test"
            raise ConfigError(f"App(s) {outside} do not belong to the {split} split (they are {other} apps); "
                              "pick apps of that split or change the split.")
        return list(self.apps)

    def _single(self, group: str, apps: list[str], rng: np.random.Generator) -> tuple[GenTemplate, Any] | None:
        app_id = apps[int(rng.integers(len(apps)))]
        by_kind: dict[str, list[GenTemplate]] = {}
        for t in catalog.templates(app_id).values():
            if t.group == group and (self.kinds is None or t.kind in self.kinds):
                by_kind.setdefault(t.kind, []).append(t)
        if not by_kind:
            return None
        kinds = sorted(by_kind)
        options = by_kind[kinds[int(rng.integers(len(kinds)))]]
        template = options[int(rng.integers(len(options)))]
        return template, template.sample({app_id: catalog.app(app_id)}, rng)

    def _cross(self, apps: list[str], rng: np.random.Generator) -> tuple[GenTemplate, Any] | None:
        kinds = sorted(k for k in CROSS_KINDS if self.kinds is None or k in self.kinds)
        cls = CROSS_KINDS[kinds[int(rng.integers(len(kinds)))]]
        size = int(cls.sizes[int(rng.integers(len(cls.sizes)))])
        person = int(rng.integers(64))
        having = [a for a in apps if person in catalog.members(a)]
        lacking = [a for a in apps if person not in catalog.members(a)]
        if cls.excludes_holder:
            if not having or not lacking:
                return None
            chosen = [having[int(rng.integers(len(having)))], lacking[int(rng.integers(len(lacking)))]]
        else:
            if len(having) < size:
                return None
            chosen = [having[int(i)] for i in rng.choice(len(having), size=size, replace=False)]
        template = catalog.template(f"x:{cls.kind}:{'+'.join(chosen)}")
        return template, template.sample({a: catalog.app(a) for a in chosen}, rng)

    def _candidate(self, split: str, rng: np.random.Generator) -> Candidate:
        apps = self.pool(split)
        groups = [g for g in self.groups if g != "cross_app" or len(apps) >= 2]
        if not groups:
            raise ConfigError("Cross-app tasks need at least two apps; pass more apps or other groups.")
        for _ in range(200):
            group = groups[int(rng.integers(len(groups)))]
            drawn = self._cross(apps, rng) if group == "cross_app" else self._single(group, apps, rng)
            if drawn is None or drawn[1] is None:
                continue
            template, params = drawn
            params = json.loads(json.dumps(params))  # the task carries JSON: drop tuples and numpy scalars
            expectation = template.expect({a: catalog.app(a) for a in template.apps}, params)
            if is_degenerate(expectation):
                continue
            others = [a for a in catalog.split_apps(split, self.generation) if a not in template.apps]
            picked = [others[int(i)] for i in rng.choice(len(others), size=min(self.distractors, len(others)),
                                                         replace=False)] if self.distractors else []
            world = [*template.apps, *picked]
            world = [world[int(i)] for i in rng.permutation(len(world))]
            return template.name, params, world
        raise ConfigError(f"No {split} task found in 200 draws for groups {self.groups} and apps {self.apps}.")

    def task(self, index: int, split: str = "train") -> Task:
        """Task ``index`` of ``split`` (``train``, ``validation``, ``test`` or ``test_unseen``)."""
        if split not in catalog.SPLITS:
            raise ConfigError(f"Unknown split {split!r}; use one of {', '.join(catalog.SPLITS)}.")
        unseen = split == "test_unseen"  # every unseen app is outside train already: any draw will do
        name, params, world = draw_instance(
            (lambda _: task_rng(f"{FAMILY}/test_unseen", "test", index)) if unseen
            else (lambda attempt: task_rng(FAMILY, split, index, attempt)),
            lambda rng: self._candidate(split, rng), split=split,
            key=None if unseen else lambda c: json.dumps([c[0], c[1]], sort_keys=True),
            max_attempts=1 if unseen else MAX_ATTEMPTS,
            failure=f"Could not draw a {split} instance for {FAMILY} in {MAX_ATTEMPTS} attempts; the configuration "
                    "allows too few distinct instances.")
        template = catalog.template(name)
        expectation = template.expect({a: catalog.app(a) for a in template.apps}, params)
        digest = content_digest(name, json.dumps(params, sort_keys=True), length=8)
        meta = {"template": name, "kind": template.kind, "group": template.group, "apps": list(template.apps),
                "world": world, "params": params, "question": expectation.answer_kind != "none",
                "unseen": split == "test_unseen", "now": f"{NOW:%Y-%m-%d %H:%M}"}
        return Task(id=f"{FAMILY}/{split}/{index}/{name}-{digest}", env_id=self.env_id,
                    prompt=opening(world, template.prompt(params)), answer=expectation.answer, meta=meta)


def kinds() -> list[str]:
    """Every template kind, single-app and cross-app."""
    return [*KINDS, *CROSS_KINDS]


def kind_group(kind: str) -> str:
    """The scenario group of a template kind."""
    return KINDS[kind].group if kind in KINDS else CROSS_KINDS[kind].group


def _check_kinds(chosen: Sequence[str]) -> list[str]:
    if isinstance(chosen, str) or not chosen:
        raise ConfigError("kinds must be a non-empty list of template kinds, e.g. ['create_party'].")
    unknown = [k for k in chosen if k not in KINDS and k not in CROSS_KINDS]
    if unknown:
        raise ConfigError(f"Unknown template kind(s) {unknown}; choose from {', '.join(kinds())}.")
    return list(chosen)

"""The task source: seeded tasks drawn from templates over a few cached base worlds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.errors import ConfigError
from rollgym.core.seeding import content_digest, draw_in_split
from rollgym.core.task import Task
from rollgym.envs.tools.tasks.base import TEMPLATES, VERSIONS, TaskTemplate, templates_of
from rollgym.envs.tools.world import World, base_world
from rollgym.verifiers.tools import is_degenerate

N_WORLDS = 16
WORLD_SEED_BASE = 5000


def world_seed(index: int) -> int:
    """The seed of base world ``index`` (0 <= index < N_WORLDS)."""
    return WORLD_SEED_BASE + index % N_WORLDS


def task_world(task: Task) -> World:
    """The cached base world a task is set in."""
    return base_world(world_seed(int(task.meta["world"])))


def opening(world: World, prompt: str) -> str:
    """The first observation: who the agent acts for, the frozen clock, and the request."""
    return (f"You are acting for {world.me.name} <{world.me.email}>. It is {world.now:%A %Y-%m-%d %H:%M}.\n\n"
            f"Task: {prompt}\n\nUse the tools to do it, then call complete_task (with an answer if the task "
            "asks a question).")


#: The reference solution's tool calls per template (``complete_task`` included), measured as the mean over 12
#: tasks each (``bench/bench_difficulty.py --families`` re-measures the levels). Difficulty levels group the
#: templates by it; a template missing here (a new one) counts as 3 calls per app it spans.
REFERENCE_CALLS: dict[str, float] = {
    "calendar_cancel": 3, "calendar_count_day": 2, "calendar_create": 3, "calendar_day_events": 2,
    "calendar_invite": 4, "calendar_move": 3, "calendar_next_with": 4, "contacts_add": 2,
    "contacts_birthday_emails": 5.9, "contacts_birthdays_today": 3, "contacts_count_relationship": 2,
    "contacts_remove": 3, "contacts_update_phone": 3, "contacts_with_relationship": 2, "email_archive_from": 7,
    "email_forward": 5, "email_reply_latest": 4, "email_send": 3, "email_trash_newsletter": 9,
    "email_unread_count": 3, "email_unread_subjects": 3, "invite_by_relationship": 7.4, "notes_append": 4,
    "notes_count_folder": 2, "notes_create": 2, "notes_delete_folder": 6.8, "notes_in_folder": 3, "notes_share": 5,
    "pay_back_dinner": 6.4, "payments_balance": 2, "payments_cancel_my_requests": 4.2, "payments_decline_above": 8.8,
    "payments_pay_requests_from": 4.1, "payments_received_total": 3, "payments_request": 3, "payments_send": 3,
    "refund_and_tell_support": 4, "request_split_from_attendees": 6.2, "reschedule_and_email": 6,
    "share_note_with_attendees": 7.1, "shop_buy": 4, "shop_cancel_placed": 3, "shop_cheapest": 2,
    "shop_refund_damaged": 3, "shop_spent_since": 2,
}
_CALL_TIERS = (("calls-2", "one look-up, then complete", 2.0), ("calls-3", "about three calls", 3.0),
               ("calls-4-5", "four or five calls", 5.0), ("calls-6+", "six or more calls", float("inf")))


def toolworld_difficulty(templates: Sequence[str]) -> Difficulty | None:
    """Levels over ``templates`` by the reference solution's tool calls (:data:`REFERENCE_CALLS`): 2, 3, 4-5, 6+.

    Levels without a template among ``templates`` are left out; ``None`` when fewer than two remain.
    ``default`` is the level holding exactly ``templates``, if one does.
    """
    tiers: dict[int, list[str]] = {}
    for name in templates:
        calls = REFERENCE_CALLS.get(name, 3.0 * len(TEMPLATES[name].apps))
        tier = next(i for i, (_, _, most) in enumerate(_CALL_TIERS) if calls <= most)
        tiers.setdefault(tier, []).append(name)
    if len(tiers) < 2:
        return None
    levels = tuple(Level(_CALL_TIERS[t][0], {"templates": sorted(tiers[t])},
                         f"{_CALL_TIERS[t][1]} ({len(tiers[t])} templates)") for t in sorted(tiers))
    default = next((i for i, level in enumerate(levels) if set(level.knobs["templates"]) == set(templates)), None)
    return Difficulty(levels, default=default, grows="the reference solution's tool calls")


class ToolTaskSource:
    """Tasks of some templates; ``task(index, split)`` is deterministic and splits are disjoint by content.

    ``version`` picks the task rules: version 0 draws every instance in which doing nothing with no answer
    fails; version 1 (the default) also redraws any instance that a constant answer (``"0"``, ``""``,
    ``"yes"``, ... see :data:`~rollgym.verifiers.tools.CONSTANT_ANSWERS`) would solve without a call, and
    asks for the items instead of a count.
    """

    def __init__(self, templates: Sequence[str] | None = None, family: str = "ToolWorld",
                 env_id: str = "ToolWorld-v1", version: int = 1) -> None:
        if version not in VERSIONS:
            raise ConfigError(f"version must be one of {list(VERSIONS)}, got {version!r}.")
        available = templates_of(version)
        names = list(templates) if templates is not None else available
        unknown = [n for n in names if n not in available]
        if unknown or not names:
            raise ConfigError(f"Unknown template(s) {unknown} for ToolWorld version {version}; choose from "
                              f"{', '.join(available)}.")
        self.templates = names
        self.family = family
        self.env_id = env_id
        self.version = version

    def size(self, split: str) -> int | None:
        """Generated tasks are unbounded."""
        return None

    def _candidate(self, rng: np.random.Generator) -> tuple[str, int, dict[str, Any]]:
        for _ in range(100):
            name = self.templates[int(rng.integers(len(self.templates)))]
            world = int(rng.integers(N_WORLDS))
            template = TEMPLATES[name]
            params = template.sample(base_world(world_seed(world)), rng)
            if params is None:
                continue
            expectation = template.expect(base_world(world_seed(world)), params)
            # a task that doing nothing would pass is no task: v0 knew only the empty answer; v1 also
            # redraws tasks that a constant answer solves (a count of 0, a total of 0.00)
            empty = not (expectation.updates or expectation.deletes or expectation.inserts)
            free = is_degenerate(expectation) if self.version >= 1 else empty and expectation.answer_kind == "none"
            if not free:
                return name, world, params
        raise ConfigError(f"The templates {self.templates} found no instance in 100 tries.")

    def task(self, index: int, split: str = "train") -> Task:
        """Task ``index`` of ``split``."""
        (name, world_index, params), _ = draw_in_split(
            self.family, split, index, self._candidate, key=lambda c: json.dumps(c, sort_keys=True))
        template: TaskTemplate = TEMPLATES[name]
        world = base_world(world_seed(world_index))
        expectation = template.expect(world, params)
        digest = content_digest(name, str(world_index), json.dumps(params, sort_keys=True), length=8)
        meta = {"template": name, "scenario": f"{name}@w{world_index}", "family": template.scenario,
                "apps": list(template.apps), "world": world_index, "now": f"{world.now:%Y-%m-%d %H:%M}",
                "params": params, "question": template.answer_kind != "none"}
        return Task(id=f"{self.family}/{split}/{index}/{name}-{digest}", env_id=self.env_id,
                    prompt=opening(world, template.prompt(params)), answer=expectation.answer, meta=meta)

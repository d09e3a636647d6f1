"""Generated websites (WebGen-v0): seeded domains rendered into server-rendered sites, with held-out ones.

``schema`` and ``kinds`` describe the eleven domain kinds; ``words`` the train and held-out
vocabularies; ``themes`` and ``render`` the eight layout themes; ``domain`` turns a site key
into a spec and a database; ``site`` and ``forms`` serve it; ``mechanisms``, ``changes``,
``answers`` and ``tasks`` make and grade its tasks; ``driver`` and ``reference`` solve them
through the pages; ``env`` is the Gymnasium env; ``stats`` counts it all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rollgym.envs.web.families import SiteFamily, register_family

if TYPE_CHECKING:
    from rollgym.core.task import Score, Task
    from rollgym.envs.web.sites.base import Site
    from rollgym.verifiers.statediff import Query


def _site(key: str) -> Site:
    from rollgym.envs.web.gen.domain import site_spec
    from rollgym.envs.web.gen.site import GeneratedSite

    return GeneratedSite(site_spec(key))


def _grade(task: Task, answer: str | None, db: Query) -> Score:
    from rollgym.envs.web.gen.tasks import grade_answer

    return grade_answer(task, answer, db)


register_family(SiteFamily("gen-", _site, _grade))

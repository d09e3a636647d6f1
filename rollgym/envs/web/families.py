"""Site families that plug into the web server and the episode: a key prefix, its sites, its grader.

The hand-written sites (:data:`rollgym.envs.web.sites.SITES`) are known to the server directly. The
generated ones (``gen-shop-03``) live in :mod:`rollgym.envs.web.gen`, which is built on the server, the
episode and the env (it serves its sites through them), so those modules may not import it back. The
``gen`` package registers its family here when it is imported instead, and this package's ``__init__``
imports it, so a generated key always resolves: imports run one way, ``gen`` -> server -> ``families``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rollgym.core.task import Score, Task
    from rollgym.envs.web.sites.base import Site
    from rollgym.verifiers.statediff import Query


@dataclass(frozen=True)
class SiteFamily:
    """Sites whose keys start with ``prefix``: how to build one from its key, and how to grade its tasks."""

    prefix: str
    site: Callable[[str], Site]
    """The site object of a key (raises ``ConfigError`` for a key the family does not hold)."""
    grade: Callable[[Task, str | None, Query], Score]
    """Grade an episode from its task, its final answer and its database (queried through the third argument)."""


FAMILIES: dict[str, SiteFamily] = {}
"""Every registered family, by key prefix."""


def register_family(family: SiteFamily) -> None:
    """Make the server and the episode resolve keys that start with ``family.prefix``."""
    FAMILIES[family.prefix] = family


def family_of(key: str) -> SiteFamily | None:
    """The family whose prefix starts ``key``, or ``None`` for a hand-written site's key (or no site's)."""
    return next((f for prefix, f in FAMILIES.items() if key.startswith(prefix)), None)

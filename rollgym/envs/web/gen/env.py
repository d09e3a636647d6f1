"""WebGen-v0: tasks on generated websites, with held-out sites for testing generalisation."""

from __future__ import annotations

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import TaskSource
from rollgym.envs.web.env import WebEnv
from rollgym.envs.web.gen.tasks import TEMPLATES, GenTaskSource, gen_difficulty


class WebGenEnv(WebEnv):
    """Complete tasks on generated websites (11 kinds, 8 layout themes) through a real headless Chromium.

    ## Description
    165 server-rendered sites, each generated from a seed: a shop, a forum, a room-booking
    site, a wiki, an admin console, a library, an events site, a job board, a recipe site, a
    rentals site or a course catalogue, drawn in one of eight layout themes that differ in
    navigation (top bar, sidebar, tabs, footer, banner, right column, left rail, menu page),
    listings (cards, tables, lists), filtering (drop-downs or facet links), sorting
    (drop-down, links, column headers), paging, labels, URLs, date and money formats. Each
    site keeps its content in SQLite with users, items, per-user records, favourites and
    sign-in sessions; every episode gets its own copy. 232 task templates (17 mechanisms
    applied to each kind's own fields and words) ask questions (an extreme, the n-th in an
    order, a field, a code, a value of one's own record) and ask for changes (create,
    cancel and change records, favourites, profile, and editors' changes, archiving and new
    items). The same server, browser, safeguards and observation format as the Web* envs.

    ## Splits
    ``train``, ``validation`` and ``test`` play on the 132 training sites (12 per kind, six
    themes); a task belongs to a split by the hash of its content, so ``test`` has the same
    sites as ``train`` and none of its tasks. ``test_unseen`` plays only on the 33 held-out
    sites (3 per kind): held-out seeds, the two held-out themes, and names drawn from a
    held-out vocabulary, so none of their content appears on a training site.

    ## Action Space
    As the Web* envs: ``click(id)``, ``fill(id, "text")``, ``select(id, "option")``,
    ``check(id)``, ``press("Enter")``, ``scroll("down")``, ``goto("/path")``, ``go_back()``,
    ``answer("text")``; in the screenshot modes also ``click_at(x, y)``, ``type("text")`` and
    ``scroll_at(x, y, "down")``.

    ## Observation Space
    As the Web* envs, by ``obs_mode``: the page as text, or a ``Dict`` of a screenshot
    (uint8, 860x1280x3) and a text (the header only, or the whole page text).

    ## Starting State
    A fresh browser context on the site's home page, signed out, with the seeded data.

    ``reset(options={"difficulty": k})`` draws from one level of templates, easiest first: ``lookup``,
    ``short-change``, ``long-change`` (by the reference solution's browser actions: 3-7, 7-9, 9-16).

    ## Rewards
    0.0 on every step except the last. The last step gets 1.0 when the answer is right (read
    by type: a name, an amount in any of the themes' formats, a number, a date) or the
    required rows were written, and nothing else on the site changed; otherwise 0.0. The gate
    ``site_unchanged_beyond_task`` diffs every table of the site against the task's
    allow-list, so an extra order, an edited account, a favourite removed, a record of
    another user, or a sign-in as someone else zeroes the reward. Graded by the shared
    state-diff grader from the server's database, never from the page.

    ## Episode End
    Terminated by ``answer(...)``; truncated after ``max_steps`` actions (graded as it stands).

    ## Information
    As the Web* envs; ``task_meta`` has ``template``, ``site``, ``domain`` (the kind), ``theme``,
    ``kind`` (``info`` or ``transaction``), ``mechanism`` and ``params``.

    ## Arguments
    ``kinds``: some of the 11 kinds (all by default); ``sites``: only these site keys (e.g.
    ``("gen-shop-03",)``); ``templates``: only these template names; ``split`` (``train``,
    ``validation``, ``test`` or ``test_unseen``); ``max_steps`` (default 40); ``step_timeout``;
    ``render_mode``; ``obs_mode`` (``"text"``, ``"screenshot"`` or ``"both"``).

    ## Version History
    * v0: initial release.
    """

    default_env_id = "WebGen-v0"

    def __init__(
        self,
        kinds: tuple[str, ...] | list[str] | None = None,
        *,
        sites: tuple[str, ...] | list[str] | None = None,
        templates: tuple[str, ...] | list[str] | None = None,
        split: str = "train",
        max_steps: int = 40,
        step_timeout: float = 60.0,
        render_mode: str | None = None,
        obs_mode: str = "text",
    ) -> None:
        self._check_options(max_steps, step_timeout, obs_mode)
        self._gen_args = (
            tuple(kinds) if kinds is not None else None,
            tuple(sites) if sites is not None else None,
            tuple(templates) if templates is not None else None,
        )
        self._setup(split=split, render_mode=render_mode, max_steps=max_steps, step_timeout=step_timeout,
                    obs_mode=obs_mode)

    def _make_source(self, env_id: str) -> TaskSource:
        kinds, sites, templates = self._gen_args
        return GenTaskSource(env_id, kinds=kinds, sites=sites, templates=templates)

    @property
    def difficulty(self) -> Difficulty | None:
        """Levels by template: ``lookup``, ``short-change``, ``long-change`` (those the env's templates fill)."""
        source = self.source
        assert isinstance(source, GenTaskSource)
        names = source.templates or tuple(n for n, t in TEMPLATES.items() if t.kind.key in source.kinds)
        return gen_difficulty(names)

    def _level_source(self, env_id: str, level: Level) -> TaskSource:
        kinds, sites, _ = self._gen_args
        return GenTaskSource(env_id, kinds=kinds, sites=sites, templates=tuple(level.knobs["templates"]))

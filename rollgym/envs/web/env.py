"""The web envs: WebShop-v2, WebForum-v2, WebTravel-v2 and WebGym-v2 (all three sites), and their -v1s and -v0s."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from gymnasium import spaces

from rollgym.core.difficulty import Difficulty, Level
from rollgym.core.env import StepResult, TaskSource, TextEnv
from rollgym.core.errors import ConfigError
from rollgym.core.spaces import TextSpace
from rollgym.core.task import Task
from rollgym.envs.web.actions import ACTION_HELP, COORDINATE_HELP, tool_schemas
from rollgym.envs.web.tasks import SITE_KEYS, WebTaskSource, web_difficulty

SYSTEM_PROMPT = f"""You are operating a web browser to complete a task on a website.
Each observation shows the task, the page's URL path, the page's text, and interactive elements
marked with an id in brackets, e.g. [12] link "Cart" or [7] textbox "Username" value="".
Reply with exactly one action per turn.

{ACTION_HELP}"""

SCREENSHOT_SYSTEM_PROMPT = f"""You are operating a web browser to complete a task on a website.
Each observation is a screenshot of the visible part of the page (1280x860 pixels) with a short text header:
the task, the page's URL path, its title, the last action's error and the step counter.
Reply with exactly one action per turn.

{COORDINATE_HELP}
  press("Enter")              press a key (Enter, Tab, Escape, Backspace, arrows, PageUp, PageDown)
  scroll("down")              scroll the page up or down
  goto("/path")               open a page of this site by its path
  go_back()                   go back to the previous page
  answer("text")              finish the task: the requested information, or "done" for tasks that change something"""

BOTH_SYSTEM_PROMPT = f"""{SYSTEM_PROMPT}

Each observation also has a screenshot of the visible part of the page (1280x860 pixels); you may act on it too.
{COORDINATE_HELP}"""

OBS_MODES = ("text", "screenshot", "both")
SCREEN_SHAPE = (860, 1280, 3)
"""Height, width and channels of a screenshot observation (the browser's viewport)."""


class WebEnv(TextEnv):
    """Complete tasks on realistic, server-rendered websites through a real headless Chromium.

    ## Description
    Three practice sites run in-process on 127.0.0.1: Northwind Market (an online shop
    with catalogue filters, cart, checkout and order history), Commons Q&A (a forum with
    boards, replies, votes and moderation) and Wayfarer Travel (flight and hotel search by
    date, booking and cancellation). Their content is seeded into SQLite; every episode
    gets its own in-memory copy, so episodes never see each other. Twelve task templates
    (four per site) generate information-seeking tasks (the answer is checked) and
    transactions (the database is checked), each graded by a rubric of named, weighted
    criteria.

    ## Action Space
    A string holding one action of an allowlist: ``click(id)``, ``fill(id, "text")``,
    ``select(id, "option")``, ``check(id)``, ``press("Enter")``, ``scroll("down")``,
    ``goto("/path")`` (this site only), ``go_back()`` and ``answer("text")``, written as a
    call or as a Hermes ``<tool_call>``. In the screenshot modes also ``click_at(x, y)``,
    ``type("text")`` and ``scroll_at(x, y, "down")`` on the screenshot's pixels. Actions are
    parsed, never executed as code; ``javascript:`` URLs and other hosts are refused.

    ## Observation Space
    With ``obs_mode="text"`` (the default) a string: the task, the URL path, the page title,
    the last action's error (if any), the step counter, then a compact DOM-derived text of
    the page with ``[id]`` on each link, button, text box, drop-down and checkbox.
    With ``obs_mode="screenshot"`` a ``Dict`` of ``"screenshot"`` (a ``Box`` of uint8,
    860x1280x3, the visible page) and ``"text"`` (the header only: task, URL, title, error,
    step); with ``"both"`` the same ``Dict`` whose ``"text"`` is the whole page text.
    ``screenshot()`` returns an RGB array and ``page_html()`` the raw HTML. Text that comes
    from URL parameters or from members (names, posts, reviews) is prefixed ``[user text]``
    in the page text, so it cannot pass as the site's own words (a "grader note" in a
    query string or a post is shown as what it is).

    ## Starting State
    A fresh browser context on the site's home page, signed out, with the seeded data.
    ``reset(options={"difficulty": k})`` draws from the templates of level ``k``: ``lookup`` (6-7 reference
    actions), ``short-change`` (8-10), ``long-change`` (11-15), among the env's templates.

    ## Rewards
    0.0 on every step except the last. The last step (an ``answer`` or the step cap)
    gets the rubric's weighted score in [0, 1], computed from the server's database and
    the answer text only, by the shared state-diff grader (:mod:`rollgym.verifiers.statediff`).
    Doing nothing scores 0. An episode that changes anything beyond what the task allows
    scores 0: the gate ``site_unchanged_beyond_task`` diffs every table of the site (rows
    added, changed, deleted) against the task's allow-list, so votes cast as other members,
    an edited account, items left in the cart, a new thread or an extra booking all fail it,
    as do the per-table gates (say, cancelling every order to be sure of the right one);
    ``details["partial_reward"]`` keeps the weighted share.

    ## Episode End
    Terminated by ``answer(...)``; truncated after ``max_steps`` actions (graded as it
    stands). Bad actions never raise: the observation reports the error and the step counts.

    ## Information
    ``task_id``, ``env_id``, ``task_meta`` (template, site, kind, public parameters),
    ``episode_id``, ``episode_step``, ``url``, ``action_error``; at the end the score's fields
    ``reward`` (float), ``correct`` (bool), ``parsed`` (the answer text), ``error`` and ``details``
    (``criteria``: each criterion's verdict, ``reasons`` of failed ones, ``diff``: rows changed per
    table). ``blocked_requests`` lists requests to other hosts or ports that the browser
    refused before sending (none of them left the page). ``success`` is a deprecated alias of
    ``correct``, kept until rollgym 0.3.0.

    ## Arguments
    ``sites``: tuple of ``"shop"``, ``"forum"``, ``"travel"``; ``templates``: optional template
    names; ``collateral_gates`` (default ``True``; ``False`` is the -v0 scoring); ``site_gate``
    (default ``True``: the whole-site gate of -v2; ``False`` is the -v1 scoring); ``split``;
    ``max_steps`` (default 30); ``step_timeout`` seconds (default 60); ``render_mode``: ``"ansi"``,
    ``"human"`` or ``"rgb_array"``; ``obs_mode``: ``"text"``, ``"screenshot"`` or ``"both"``. The
    ``timings`` property gives the last reset's or step's latency in milliseconds.

    ## Version History
    * v2: a whole-site gate: every table the site can write is diffed against what the task
      allows (its own sign-ins, and the rows its goal needs). Under v1 the gates looked only
      at the target table, so ``forum_upvote`` plus 113 down-votes cast as other members, or
      ``shop_purchase`` plus a rewritten account and 5 items left in the cart, scored 1.0.
      Information tasks get the gate too. Gate names now say their scope (``nothing_else``
      became ``orders_one_new_none_changed``, ...). Graded by the shared state-diff grader.
    * v1: collateral-damage criteria are gates: when one fails the reward is 0, not the
      weighted share of the rest (under v0, cancelling every pending order scored 0.7).
    * v0: initial release.

    ``obs_mode`` (screenshots and the screen verbs) was added to every version as an option;
    with the default ``"text"`` observations, actions, tasks and scores are exactly as before.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 4}  # noqa: RUF012
    default_env_id = "WebGym-v2"
    system_prompt = SYSTEM_PROMPT

    def __init__(
        self,
        sites: tuple[str, ...] | list[str] = SITE_KEYS,
        *,
        split: str = "train",
        templates: tuple[str, ...] | list[str] | None = None,
        collateral_gates: bool = True,
        site_gate: bool | None = None,
        max_steps: int = 30,
        step_timeout: float = 60.0,
        render_mode: str | None = None,
        obs_mode: str = "text",
    ) -> None:
        self._check_options(max_steps, step_timeout, obs_mode)
        site_gate = collateral_gates if site_gate is None else site_gate
        self._source_args = (tuple(sites), tuple(templates) if templates is not None else None, collateral_gates,
                             site_gate)
        self._setup(split=split, render_mode=render_mode, max_steps=max_steps, step_timeout=step_timeout,
                    obs_mode=obs_mode)

    @staticmethod
    def _check_options(max_steps: Any, step_timeout: Any, obs_mode: Any) -> None:
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ConfigError(f"max_steps must be a positive integer, got {max_steps!r}.")
        if step_timeout <= 0:
            raise ConfigError(f"step_timeout must be positive seconds, got {step_timeout!r}.")
        if obs_mode not in OBS_MODES:
            raise ConfigError(f"obs_mode must be one of {', '.join(OBS_MODES)}, got {obs_mode!r}.")

    def _setup(self, *, split: str, render_mode: str | None, max_steps: int, step_timeout: float,
               obs_mode: str) -> None:
        """Everything but the task source (:meth:`_make_source` builds it): the base env, limits, the observations."""
        super().__init__(split=split, render_mode=render_mode, max_observation_length=20_000, max_action_length=20_000)
        self.max_steps = max_steps
        self.step_timeout = step_timeout
        self.obs_mode = obs_mode
        if obs_mode != "text":
            self.observation_space = spaces.Dict(  # type: ignore[assignment]
                {"text": TextSpace(20_000), "screenshot": spaces.Box(0, 255, SCREEN_SHAPE, np.uint8)})
            self.system_prompt = SCREENSHOT_SYSTEM_PROMPT if obs_mode == "screenshot" else BOTH_SYSTEM_PROMPT
        self._episode: Any = None
        self._episode_info: dict[str, Any] = {}

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of the browser actions (the screen verbs too in the screenshot modes)."""
        return tool_schemas(coordinates=self.obs_mode != "text")

    def _observation(self, text: str) -> Any:
        """The observation of ``obs_mode``: the text, or a dict of text and screenshot."""
        if self.obs_mode == "text":
            return text
        shot = self._episode.last_screenshot if self._episode is not None else None
        if shot is None or shot.shape != SCREEN_SHAPE:  # the episode is over: a blank frame
            shot = np.zeros(SCREEN_SHAPE, np.uint8)
        return {"text": text, "screenshot": shot}

    def _runtime(self) -> Any:
        from rollgym.envs.web.browser import get_runtime

        return get_runtime()

    def _make_source(self, env_id: str) -> TaskSource:
        return self._web_source(env_id, self._source_args[1])

    def _web_source(self, env_id: str, templates: tuple[str, ...] | None) -> WebTaskSource:
        sites, _, collateral_gates, site_gate = self._source_args
        # older scorings' tasks keep the env id they always carried, so that they stay exactly as they were
        task_env_id = env_id if site_gate else ("WebGym-v1" if collateral_gates else "WebGym-v0")
        return WebTaskSource(sites, task_env_id, templates, collateral_gates=collateral_gates, site_gate=site_gate)

    @property
    def difficulty(self) -> Difficulty | None:
        """Levels by template: ``lookup``, ``short-change``, ``long-change`` (those the env's templates fill)."""
        source = self.source
        assert isinstance(source, WebTaskSource)
        return web_difficulty(source.templates)

    def _level_source(self, env_id: str, level: Level) -> TaskSource:
        return self._web_source(env_id, tuple(level.knobs["templates"]))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None  # type: ignore[override]
              ) -> tuple[Any, dict[str, Any]]:
        observation, info = super().reset(seed=seed, options=options)
        return self._observation(observation), copy.deepcopy({**info, **self._episode_info})

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:  # type: ignore[override]
        observation, reward, terminated, truncated, info = super().step(action)
        return self._observation(observation), reward, terminated, truncated, copy.deepcopy(info)

    def _start(self, task: Task) -> str:
        from rollgym.envs.web.episode import WebEpisode

        self._close_episode(wait=False)
        runtime = self._runtime()
        # one key per env instance: reference policies restart their plan at step 0
        self._episode = WebEpisode(runtime, task, max_steps=self.max_steps, episode_id=f"env-{id(self):x}",
                                   obs_mode=self.obs_mode)
        observation, self._episode_info = runtime.call(self._episode.start(), timeout=self.step_timeout)
        return str(observation)

    def _advance(self, action: str) -> StepResult:
        runtime = self._runtime()
        observation, reward, terminated, truncated, info = runtime.call(
            self._episode.step(action), timeout=self.step_timeout
        )
        return observation, reward, terminated, truncated, info

    # -- extras -------------------------------------------------------------
    @property
    def timings(self) -> dict[str, float]:
        """Milliseconds spent in the last reset (``reset_ms``) or step (``action_ms``, ``observe_ms``)."""
        return dict(self._episode.timings) if self._episode is not None else {}

    def screenshot(self) -> np.ndarray:
        """The current page as an ``(H, W, 3)`` uint8 RGB array."""
        if self._episode is None:
            raise RuntimeError("Call reset() first.")
        return self._runtime().call(self._episode.screenshot(), timeout=self.step_timeout)  # type: ignore[no-any-return]

    def element_boxes(self) -> list[dict[str, Any]]:
        """The page's interactive elements with their boxes on the screenshot (``id``, ``tag``, ``text``, ``x``,
        ``y``, ``width``, ``height``), e.g. to draw set-of-marks labels or to aim ``click_at``."""
        if self._episode is None:
            raise RuntimeError("Call reset() first.")
        return self._runtime().call(self._episode.element_boxes(), timeout=self.step_timeout)  # type: ignore[no-any-return]

    def page_html(self) -> str:
        """The current page's raw HTML."""
        if self._episode is None:
            raise RuntimeError("Call reset() first.")
        return self._runtime().call(self._episode.html(), timeout=self.step_timeout)  # type: ignore[no-any-return]

    def render(self) -> Any:  # type: ignore[override]
        if self.render_mode == "rgb_array":
            return self.screenshot()
        return super().render()

    def _close_episode(self, wait: bool = True) -> None:
        if self._episode is not None:
            episode, self._episode = self._episode, None
            if not wait:  # a reset need not wait for the old context to shut down
                self._runtime().submit(episode.close())
                return
            try:
                self._runtime().call(episode.close(), timeout=30)
            except Exception:  # closing must never mask the caller's own error
                pass

    def close(self) -> None:
        """Close the episode's browser context and server state (the shared browser stays up)."""
        self._close_episode()
        super().close()

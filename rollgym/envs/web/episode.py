"""One web episode, async: a server-side database copy, a browser context, the action loop and the grade.

:class:`WebEpisode` is what both the Gymnasium env (through the runtime's
event-loop thread) and the vectorised runner drive. Grading reads the
episode's database on the server and the text of ``answer(...)``; nothing the
page shows, and nothing the agent can type into it, reaches the grader.

Tasks of the hand-written sites are graded by :mod:`rollgym.envs.web.tasks`, tasks of
generated sites (``task.meta["gen_site"]``) by :mod:`rollgym.envs.web.gen.tasks` (looked up in
:mod:`rollgym.envs.web.families`, where the ``gen`` package registers it); both
with the shared state-diff grader. In the screenshot modes (``obs_mode`` ``"screenshot"``
or ``"both"``) each observation also takes a screenshot (:attr:`WebEpisode.last_screenshot`)
and the screen verbs ``click_at``, ``type`` and ``scroll_at`` are allowed.
"""

from __future__ import annotations

import io
import itertools
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from rollgym.core.task import Score, Task
from rollgym.envs.web.actions import Action, ActionError, parse_action
from rollgym.envs.web.browser import SETTLE_TIMEOUT_MS, VIEWPORT, OpenedEpisode, WebRuntime
from rollgym.envs.web.families import family_of
from rollgym.envs.web.observation import OBSERVE_JS, format_observation
from rollgym.envs.web.tasks import grade_answer, template_of

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page

StepOutcome = tuple[str, float, bool, bool, dict[str, Any]]
_EPISODE_IDS = itertools.count(1)
_NAVIGATING = frozenset({"click", "press", "goto", "go_back", "click_at"})
LEFT_SITE = "That navigation would leave the site and was blocked."
NEW_WINDOW = "That opened a new window, which this environment does not use; it was closed and this page is unchanged."
OBS_MODES = ("text", "screenshot", "both")
"""``text``: the page as text; ``screenshot``: a screenshot and a text header (task, URL, title, error, step);
``both``: a screenshot and the page as text."""
SCREENSHOT_NOTE = "(The page is shown in the screenshot.)"
_BOXES_JS = r"""() => Array.from(document.querySelectorAll('[data-rg-id]')).map((el) => {
  const r = el.getBoundingClientRect();
  const label = el.id ? document.querySelector('label[for="' + CSS.escape(el.id) + '"]') : null;
  const text = (el.getAttribute('aria-label') || (label && label.textContent) || el.getAttribute('placeholder')
    || (el.tagName === 'SELECT' ? '' : el.value) || el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 80);
  return {id: Number(el.getAttribute('data-rg-id')), tag: el.tagName.toLowerCase(), text: text,
          x: r.left, y: r.top, width: r.width, height: r.height};
}).filter((b) => b.width > 0 && b.height > 0)"""


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:240]


class WebEpisode:
    """An episode of ``task`` on its site.

    Args:
        runtime: The process's :class:`~rollgym.envs.web.browser.WebRuntime`.
        task: A task from a :class:`~rollgym.envs.web.tasks.WebTaskSource`.
        max_steps: Actions allowed before the episode is truncated (and graded as it stands).
        episode_id: Key that reference policies use to keep per-episode state; unique by default.
        obs_mode: One of :data:`OBS_MODES`.
    """

    def __init__(self, runtime: WebRuntime, task: Task, *, max_steps: int = 30, episode_id: str | None = None,
                 obs_mode: str = "text") -> None:
        self.runtime = runtime
        self.task = task
        self.generated = bool(task.meta.get("gen_site"))
        self.template = None if self.generated else template_of(task)
        self.site_key: str = str(task.meta["site"]) if self.generated else self.template.site  # type: ignore[union-attr]
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}.")
        self.obs_mode = obs_mode
        self.last_screenshot: np.ndarray | None = None
        self.max_steps = max_steps
        self.episode_id = episode_id or f"web-{next(_EPISODE_IDS)}"
        self.steps = 0
        self.answer: str | None = None
        self.done = False
        self.score: Score | None = None
        self.token: str | None = None
        self._opened: OpenedEpisode | None = None
        self._blocked: list[str] = []
        self._last_good_url = "/"
        self.timings: dict[str, float] = {}

    # -- lifecycle ----------------------------------------------------------
    @property
    def page(self) -> Page:
        """The episode's browser page."""
        if self._opened is None:
            raise RuntimeError("The episode has not started; await start() first.")
        return self._opened.page

    async def start(self) -> tuple[str, dict[str, Any]]:
        """Create the server-side state and the browser context, open the home page; returns ``(obs, info)``."""
        t0 = time.perf_counter()
        self._opened = await self.runtime.open_episode(self.site_key)
        self.token = self._opened.token
        observation = await self.observe(None)
        self.timings = {"reset_ms": (time.perf_counter() - t0) * 1000}
        return observation, self.info()

    async def close(self) -> None:
        """Close the browser context and drop the episode's database."""
        if self._opened is not None:
            try:
                await self._opened.context.close()
            except Exception:  # the browser may already be gone at interpreter exit
                pass
            self._opened = None
        if self.token is not None:
            self.runtime.server.close_episode(self.token)
            self.token = None

    # -- observation --------------------------------------------------------
    def path(self) -> str:
        """The page's URL relative to the site (``/search?q=x``)."""
        url = self.page.url
        base = self.runtime.server.base_url
        return url[len(base) :] or "/" if url.startswith(base) else url

    async def observe(self, error: str | None) -> str:
        """The observation text of the current page (in the screenshot modes, also :attr:`last_screenshot`).

        In ``screenshot`` mode the text is only the header: task, URL, title, error and step.
        """
        try:
            data = await self.page.evaluate(OBSERVE_JS)
        except Exception as exc:  # a page mid-navigation: wait once and retry
            await self._settle()
            try:
                data = await self.page.evaluate(OBSERVE_JS)
            except Exception:
                data = {"title": "", "lines": [f"(the page could not be read: {_short(exc)})"]}
        if self.obs_mode != "text":
            self.last_screenshot = await self.screenshot()
            if self.obs_mode == "screenshot":
                data = {"title": data["title"], "lines": [SCREENSHOT_NOTE]}
        return format_observation(
            goal=self.task.prompt,
            path=self.path(),
            title=data["title"],
            lines=data["lines"],
            error=error,
            step=self.steps,
            max_steps=self.max_steps,
        )

    async def screenshot(self) -> np.ndarray:
        """The visible page as an ``(H, W, 3)`` uint8 RGB array (no text caret, so a page looks the same twice)."""
        from PIL import Image

        png = await self.page.screenshot(type="png", caret="hide", animations="disabled")
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))

    async def element_boxes(self) -> list[dict[str, Any]]:
        """Where the marked elements of the last observation are on the screenshot: ``id``, ``tag``, ``text``
        (label, value or text, shortened) and ``x``, ``y``, ``width``, ``height`` in pixels of the visible page."""
        boxes: list[dict[str, Any]] = await self.page.evaluate(_BOXES_JS)
        return boxes

    async def html(self) -> str:
        """The page's current HTML."""
        return await self.page.content()

    def info(self) -> dict[str, Any]:
        """Per-step facts: episode id, step count and URL (timings stay in :attr:`timings`, so infos replay).

        After a step in which the browser tried to reach another host or port,
        ``blocked_requests`` lists those URLs (none of them was sent).
        """
        info: dict[str, Any] = {
            "episode_id": self.episode_id,
            "episode_step": self.steps,
            "url": self.path(),
            "max_steps": self.max_steps,
        }
        if self._blocked:
            info["blocked_requests"] = list(self._blocked)
        return info

    # -- acting -------------------------------------------------------------
    def _element(self, element_id: int) -> Locator:
        return self.page.locator(f'[data-rg-id="{element_id}"]')

    async def _settle(self) -> None:
        try:
            await self.page.wait_for_load_state("load", timeout=SETTLE_TIMEOUT_MS)
        except Exception:  # a page that never finishes loading is observed as it is
            pass

    async def _perform(self, action: Action) -> None:
        verb, args = action.verb, action.args
        page = self.page
        if verb in {"click", "fill", "select", "check"}:
            loc = self._element(args[0])
            if await loc.count() == 0:
                raise ActionError(f"There is no element [{args[0]}] on this page; use an id from the latest page text.")
            if verb == "click":
                await loc.click()
            elif verb == "fill":
                await loc.fill(args[1])
            elif verb == "check":
                await loc.check()
            else:
                await self._select(loc, args[1])
        elif verb == "press":
            key = " " if args[0] == "Space" else args[0]
            focused = page.locator("*:focus")
            if await focused.count() == 1:  # a locator press waits for a navigation it starts (Enter in a form)
                await focused.press(key)
            else:
                await page.keyboard.press(key)
        elif verb == "scroll":
            await page.mouse.wheel(0, 600 if args[0] == "down" else -600)
        elif verb in {"click_at", "scroll_at", "type"}:
            await self._perform_on_screen(action)
        elif verb == "goto":
            await page.goto(self.runtime.server.base_url + args[0], wait_until="load")
        elif verb == "go_back":
            if await page.go_back(wait_until="load") is None and self.path() == self._last_good_url:
                raise ActionError("There is no previous page to go back to.")
        if verb in _NAVIGATING:
            await self._settle()

    def _point(self, x: int, y: int) -> None:
        width, height = VIEWPORT["width"], VIEWPORT["height"]
        if not (0 <= x < width and 0 <= y < height):
            raise ActionError(f"({x}, {y}) is outside the {width}x{height} screenshot; use a point inside it.")

    async def _perform_on_screen(self, action: Action) -> None:
        """``click_at``, ``scroll_at`` and ``type``: real mouse and keyboard input at screenshot pixels."""
        page = self.page
        if action.verb == "scroll_at":
            x, y, direction = action.args
            self._point(x, y)
            await page.mouse.move(x, y)
            await page.mouse.wheel(0, 600 if direction == "down" else -600)
            return
        if action.verb == "click_at":
            x, y = action.args
            self._point(x, y)
            # the element under the point, clicked there by a locator so that a navigation it starts is awaited
            box = await page.evaluate(
                "([x, y]) => { document.querySelectorAll('[data-rg-point]').forEach(e => e.removeAttribute("
                "'data-rg-point')); const el = document.elementFromPoint(x, y); if (!el) return null;"
                " el.setAttribute('data-rg-point', '1'); const r = el.getBoundingClientRect();"
                " return {x: r.left, y: r.top}; }", [x, y])
            if box is None:
                raise ActionError(f"There is nothing to click at ({x}, {y}).")
            await page.locator("[data-rg-point]").click(position={"x": x - box["x"], "y": y - box["y"]})
            return
        focused = page.locator("*:focus")
        if await focused.count() != 1:
            raise ActionError("Nothing has the focus; click a text box first, e.g. click_at(x, y).")
        tag = await focused.evaluate("el => el.tagName")
        if tag == "SELECT":
            await self._select(focused, action.args[0])
        elif tag in {"INPUT", "TEXTAREA"}:
            await focused.fill(action.args[0])
        else:
            await page.keyboard.type(action.args[0])

    async def _select(self, loc: Locator, option: str) -> None:
        labels: list[str] = await loc.evaluate(
            "el => el.tagName === 'SELECT' ? Array.from(el.options).map(o => o.text) : null"
        )
        if labels is None:
            raise ActionError("select only works on a drop-down (a select element).")
        wanted = " ".join(option.split()).casefold()
        normal = [" ".join(label.split()).casefold() for label in labels]
        if wanted in normal:
            index = normal.index(wanted)
        else:
            partial = [i for i, label in enumerate(normal) if wanted and wanted in label]
            if len(partial) != 1:
                raise ActionError(f"No single option matches {option!r}; the options are {labels}.")
            index = partial[0]
        await loc.select_option(index=index)

    def _on_site(self, url: str) -> bool:
        return url.startswith(self.runtime.server.base_url + "/")

    async def _guard_site(self) -> str | None:
        """Close new windows, return to the last on-site page if the page left the site; the error text, if any.

        Requests off the site never leave the browser (see :mod:`.browser`); this
        waits for what the step set off to end, labels the attempt and makes sure
        the agent is back on the site. Every wait is for an event (a window
        reported, a page loaded) with a bound, never a fixed sleep.
        """
        if self._opened is None:
            return None
        try:
            windows = await self._opened.windows.close_all(SETTLE_TIMEOUT_MS)
        except Exception:  # the browser lost the page's DevTools session: the observation will say the page is gone
            windows = []
        # taken after the windows were reported: a window's stopped first navigation is recorded by then
        blocked = self._opened.guard.take()
        self._blocked += blocked.urls
        if not self._on_site(self.page.url):  # a redirect off the site, answered by the site server as proxy
            try:
                await self.page.goto(self.runtime.server.base_url + self._last_good_url, wait_until="load")
            except Exception:  # under heavy load; the step checks the page again before it returns
                pass
            return LEFT_SITE
        self._last_good_url = self.path()
        if self.page.main_frame in blocked.frames or blocked.window_navigations:
            return LEFT_SITE
        if any(url not in {"", "about:blank"} and not self._on_site(url) for url in windows):
            return LEFT_SITE  # a window whose first page was off the site (its error page) or left it by a redirect
        if windows:
            return NEW_WINDOW
        if blocked.urls:
            return f"The page asked for {blocked.urls[0]}, which is off this site; it was blocked, not sent."
        return None

    async def step(self, text: str) -> StepOutcome:
        """Apply one action; returns ``(observation, reward, terminated, truncated, info)``.

        When it returns, whatever the action set off has ended: navigations have
        committed or been stopped, new windows have been reported, labelled and
        closed, and the page is on the site.
        """
        if self.done:
            raise RuntimeError("The episode is over; start a new one.")
        t0 = time.perf_counter()
        self.steps += 1
        self._blocked = []
        error: str | None = None
        action: Action | None = None
        try:
            action = parse_action(text, coordinates=self.obs_mode != "text")
        except ActionError as exc:
            error = str(exc)
        if action is not None and action.verb == "answer":
            self.answer = action.args[0]
            return self._finish(terminated=True, truncated=False, action=action, t0=t0)
        if action is not None:
            try:
                await self._perform(action)
            except ActionError as exc:
                error = str(exc)
            except Exception as exc:  # Playwright errors become feedback, never crashes
                error = f"{action.verb} failed: {_short(exc)}"
                await self._settle()
        guard = await self._guard_site()  # also after a bad action: the page may have moved on its own
        error = (guard or error) if action is not None else (error or guard)
        t1 = time.perf_counter()
        observation = await self.observe(error)
        for _ in range(3):  # the page left the site while it was read (a timed refresh): back, and read again
            if self._on_site(self.page.url):
                break
            error = await self._guard_site() or error
            observation = await self.observe(error)
        self.timings = {"action_ms": (t1 - t0) * 1000, "observe_ms": (time.perf_counter() - t1) * 1000}
        if self.steps >= self.max_steps:
            return self._finish(
                terminated=False, truncated=True, action=action, t0=t0, observation=observation, error=error
            )
        info = {**self.info(), "action": str(action) if action else None, "action_error": error}
        return observation, 0.0, False, False, info

    def _finish(
        self,
        *,
        terminated: bool,
        truncated: bool,
        action: Action | None,
        t0: float,
        observation: str = "",
        error: str | None = None,
    ) -> StepOutcome:
        self.done = True
        self.score = self.grade()
        self.timings = {"action_ms": (time.perf_counter() - t0) * 1000}
        info = {
            **self.info(),
            "action": str(action) if action else None,
            "action_error": error,
            **self.score.to_info(),
            "success": self.score.correct,  # deprecated alias of "correct", kept until rollgym 0.3.0
        }
        if not observation:
            observation = f"Episode finished. Your answer was recorded: {self.answer!r}." if terminated else ""
        return observation, self.score.reward, terminated, truncated, info

    # -- grading ------------------------------------------------------------
    def grade(self) -> Score:
        """Grade the episode from the server's database (every table, diffed against the seeded one) and the
        final answer, with the shared state-diff grader."""
        if self.token is None:
            raise RuntimeError("The episode has no server state; grade before close().")
        episode = self.runtime.server.episode(self.token)
        if episode is None:
            raise RuntimeError("The episode's server state is gone.")
        if not self.generated:
            return grade_answer(self.task, self.answer, episode.query)
        family = family_of(self.site_key)
        if family is None:
            raise RuntimeError(f"No site family is registered for the generated site {self.site_key!r}.")
        return family.grade(self.task, self.answer, episode.query)

"""The browser side: the system Chromium driven by async Playwright, on one event-loop thread per process.

:class:`WebRuntime` owns, per process, one HTTP server (:mod:`.server`), one
Playwright driver and one headless Chromium. Every episode gets a fresh
browser context (its own cookies and cache) whose ``rg_episode`` cookie
selects the episode's database on the server.

The browser can reach the episode's site and nothing else, by three layers:

* contexts run with page JavaScript and service workers disabled, so neither
  ``javascript:`` URLs nor text injected into a page can run script, open
  sockets, fetch or open popups;
* every context routes each request whose URL is not on the site (another
  host, another port of 127.0.0.1, another scheme) to an :class:`OffSiteGuard`
  that stops it before it is sent and records it for the episode's ``info``
  (a frame's navigation is answered with an empty ``204`` from inside the
  browser, so the frame stays on its page; anything else is aborted);
* the browser's proxy is the site server itself, loopback included, so a
  request that routing does not see (Playwright does not route the targets of
  redirects) still reaches only our server, which serves its own origin and
  refuses every other host and port without contacting it.

Every new window (``target="_blank"``) is reported to the episode by :class:`NewWindows`,
which the episode uses to wait for, label and close each one before a step returns.

Synchronous callers (the Gymnasium env) submit coroutines to the runtime's
loop with :meth:`WebRuntime.call`; async callers (the vectorised runner) run
directly on that loop through :meth:`WebRuntime.submit`.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from rollgym.core.errors import MissingDependencyError
from rollgym.envs.web.server import EPISODE_COOKIE, WebServer

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, CDPSession, Frame, Page, Playwright, Route

T = TypeVar("T")

LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CANDIDATES = [
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
    "/snap/bin/chromium",
]
VIEWPORT = {"width": 1280, "height": 860}
SETTLE_TIMEOUT_MS = 10_000
ACTION_TIMEOUT_MS = 10_000


def find_chromium() -> str:
    """The Chromium binary: ``$ROLLGYM_CHROMIUM``, else the system package's binary.

    Raises:
        MissingDependencyError: when no Chromium is found.
    """
    env = os.environ.get("ROLLGYM_CHROMIUM")
    if env:
        if os.access(env, os.X_OK):
            return env
        raise MissingDependencyError(
            f"ROLLGYM_CHROMIUM={env!r} is not an executable file; point it at a Chromium binary."
        )
    for path in CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    raise MissingDependencyError(
        "Chromium is not installed; run `apt-get install chromium` or set ROLLGYM_CHROMIUM to a Chromium binary."
    )


def require_playwright() -> None:
    """Raise a clear error when the ``playwright`` package is missing."""
    try:
        import playwright.async_api  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            "The web envs need Playwright; run `pip install 'rollgym[web]'` (no `playwright install` needed)."
        ) from exc


class Blocked(NamedTuple):
    """What an :class:`OffSiteGuard` stopped since it was last asked."""

    urls: list[str]
    """The URLs, oldest first (at most :attr:`OffSiteGuard.MAX_KEPT`)."""
    frames: list[Frame]
    """The frames whose navigation was stopped (each stayed on its page)."""
    window_navigations: int
    """First navigations of new windows that were stopped (such a window has no frame yet)."""


class OffSiteGuard:
    """Stops every request of one browser context that is not for the episode's site, before it is sent.

    Registered with ``context.route(guard.pattern, guard.handle)``: the pattern
    matches only URLs outside ``base_url``, so requests to the site itself are
    not slowed by a round trip to Python.

    The request is recorded before the handler first awaits, so the record is in
    place before the browser learns the request's fate: whatever waits for a
    navigation to end (a click, a new window's first load) finds it in
    :meth:`take` afterwards.

    Example:
        >>> guard = OffSiteGuard("http://127.0.0.1:8000")
        >>> bool(guard.pattern.match("http://127.0.0.1:8001/x")), bool(guard.pattern.match("http://127.0.0.1:8000/x"))
        (True, False)
    """

    MAX_KEPT = 20

    def __init__(self, base_url: str) -> None:
        self.pattern = re.compile("^(?!" + re.escape(base_url + "/") + ")")
        self._urls: list[str] = []
        self._frames: list[Frame] = []
        self._window_navigations = 0

    async def handle(self, route: Route) -> None:
        """Record the request, then stop it: a frame's navigation gets an empty 204, anything else is aborted.

        A 204 ends a navigation without committing anything, so the frame keeps
        its page and history gains no error page. A new window's first navigation
        has no frame yet; it is aborted, so the window commits an error page,
        which is when Playwright reports the window (see :class:`NewWindows`).
        """
        request = route.request
        if len(self._urls) < self.MAX_KEPT:
            self._urls.append(request.url[:300])
        frame: Frame | None = None
        if request.is_navigation_request():
            try:
                frame = request.frame
            except Exception:  # the first navigation of a new window: its frame does not exist yet
                self._window_navigations += 1
            else:
                self._frames.append(frame)
        try:
            if frame is not None:
                await route.fulfill(status=204, body="")
            else:
                await route.abort("blockedbyclient")
        except Exception:  # the page or context closed meanwhile: nothing was sent either way
            pass

    def take(self) -> Blocked:
        """What was stopped since the last call."""
        blocked = Blocked(self._urls, self._frames, self._window_navigations)
        self._urls, self._frames, self._window_navigations = [], [], 0
        return blocked


class NewWindows:
    """The windows a browser context opens besides the episode's page, to be waited for, closed and named.

    With page JavaScript off, a window opens only from a link or form with a
    ``target`` (``target="_blank"``), activated by a click or a key. Chromium
    creates the window while it handles that input, before the input action
    returns, so the browser's list of targets, asked for after the action, holds
    every window the action opened: that is the barrier. Playwright reports a
    window as a page only once its first navigation has ended (committed, or
    stopped by the :class:`OffSiteGuard`), so waiting for the report is waiting
    for the window's outcome.

    Call :meth:`attach` once before use.
    """

    def __init__(self, context: BrowserContext, page: Page) -> None:
        self._context = context
        self._page = page
        self._reported = asyncio.Event()
        self._session: CDPSession | None = None
        self._target_id = ""
        self._context_id = ""
        context.on("page", lambda _page: self._reported.set())

    async def attach(self) -> None:
        """Open the DevTools session that lists the browser's targets and learn which one is the episode's page."""
        self._session = await self._context.new_cdp_session(self._page)
        info = (await self._session.send("Target.getTargetInfo"))["targetInfo"]
        self._target_id, self._context_id = info["targetId"], info.get("browserContextId", "")

    async def _listed(self) -> list[str]:
        """Target ids of this context's pages other than the episode's page, as the browser lists them now."""
        if self._session is None:
            raise RuntimeError("NewWindows.attach() was not awaited.")
        targets = (await self._session.send("Target.getTargets"))["targetInfos"]
        mine = [t for t in targets if t["type"] == "page" and t.get("browserContextId") == self._context_id]
        return [t["targetId"] for t in mine if t["targetId"] != self._target_id]

    def _others(self) -> list[Page]:
        return [p for p in self._context.pages if p is not self._page]

    async def close_all(self, timeout_ms: float) -> list[str]:
        """Wait until every window opened so far has been reported (at most ``timeout_ms``), close them all.

        Returns:
            The URL each window was on when it was closed; ``""`` for a window
            that was still not reported at the deadline (it is closed all the same).
        """
        listed = await self._listed()
        if not listed:
            return []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        while True:
            self._reported.clear()
            if len(self._others()) >= len(listed) or loop.time() >= deadline:
                break
            try:
                await asyncio.wait_for(self._reported.wait(), deadline - loop.time())
            except asyncio.TimeoutError:
                pass
        urls = []
        for window in self._others():
            urls.append(window.url)
            try:
                await window.close()
            except Exception:  # already closed
                pass
        assert self._session is not None
        for target_id in await self._listed():  # never reported: close it in the browser
            urls.append("")
            try:
                await self._session.send("Target.closeTarget", {"targetId": target_id})
            except Exception:  # it closed meanwhile
                pass
        return urls


@dataclass(frozen=True)
class OpenedEpisode:
    """A new episode's browser side: server token, context, page (home page loaded) and its watchers."""

    token: str
    context: BrowserContext
    page: Page
    guard: OffSiteGuard
    windows: NewWindows


Blank = tuple["BrowserContext", "Page", OffSiteGuard, NewWindows]
"""A fresh context with its empty page, off-site guard and window watcher, before any episode is attached."""


class WebRuntime:
    """One event-loop thread, one HTTP server and one Chromium, shared by every web episode of a process."""

    def __init__(self, chromium: str | None = None) -> None:
        require_playwright()
        self.executable = chromium or find_chromium()
        self.server = WebServer().start()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name="rollgym-web-loop", daemon=True)
        self._thread.start()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._browser_lock: asyncio.Lock | None = None
        self.spares_per_site = 1
        self._spares: dict[str, list[asyncio.Future[OpenedEpisode]]] = {}
        self._blanks: list[asyncio.Future[Blank]] = []

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    # -- calling into the loop ---------------------------------------------
    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedule a coroutine on the runtime's loop and return a concurrent future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = 120.0) -> T:
        """Run a coroutine on the runtime's loop and wait for its result (from any other thread)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("WebRuntime.call() cannot be used from the runtime's own loop; await the coroutine.")
        return self.submit(coro).result(timeout)

    # -- browser ------------------------------------------------------------
    async def browser(self) -> Browser:
        """The shared Chromium, launched on first use."""
        if self._browser_lock is None:
            self._browser_lock = asyncio.Lock()
        async with self._browser_lock:
            if self._browser is None or not self._browser.is_connected():
                from playwright.async_api import async_playwright

                if self._playwright is None:
                    self._playwright = await async_playwright().start()
                try:
                    # Every request, loopback included (Playwright adds <-loopback> when nothing is bypassed),
                    # goes to our own server as a proxy request; it serves its own origin and refuses the rest.
                    self._browser = await self._playwright.chromium.launch(
                        executable_path=self.executable,
                        args=LAUNCH_ARGS,
                        headless=True,
                        proxy={"server": self.server.base_url},
                    )
                except Exception as exc:
                    raise MissingDependencyError(
                        f"Could not start Chromium at {self.executable} ({type(exc).__name__}); "
                        "reinstall it with `apt-get install chromium` or set ROLLGYM_CHROMIUM."
                    ) from exc
            return self._browser

    async def _blank(self) -> Blank:
        """A fresh context (its own cookies and cache, JavaScript off, the off-site guard) with an empty page."""
        browser = await self.browser()
        base = self.server.base_url
        guard = OffSiteGuard(base)
        context = await browser.new_context(
            java_script_enabled=False,
            viewport=VIEWPORT,  # type: ignore[arg-type]
            base_url=base,
            service_workers="block",
        )
        try:
            context.set_default_timeout(ACTION_TIMEOUT_MS)
            context.set_default_navigation_timeout(2 * SETTLE_TIMEOUT_MS)
            await context.route(guard.pattern, guard.handle)
            page = await context.new_page()
            windows = NewWindows(context, page)
            await windows.attach()
        except BaseException:
            await context.close()
            raise
        return context, page, guard, windows

    async def _attach(self, site_key: str, blank: Blank) -> OpenedEpisode:
        """Give a blank context a new episode of ``site_key`` and open its home page."""
        context, page, guard, windows = blank
        base = self.server.base_url
        token = self.server.create_episode(site_key)
        try:
            await context.add_cookies([{"name": EPISODE_COOKIE, "value": token, "url": base}])
            await page.goto(base + "/", wait_until="load")
        except BaseException:
            self.server.close_episode(token)
            await context.close()
            raise
        return OpenedEpisode(token, context, page, guard, windows)

    async def _open(self, site_key: str) -> OpenedEpisode:
        return await self._attach(site_key, await self._blank())

    async def open_episode(self, site_key: str) -> OpenedEpisode:
        """A new episode of ``site_key``: server state, a fresh context, and the home page loaded.

        Opening a context and its first page costs most of a reset, so the runtime keeps
        ``spares_per_site`` episodes of each hand-written site used so far opened ahead in the
        background. A spare has only loaded the home page of its own fresh database, exactly
        what a new episode starts on, so taking one is the same as opening one. Generated sites
        are too many to keep a spare each: for them the runtime keeps ``spares_per_site`` blank
        contexts (no site, no cookie yet) and attaches the episode when it is taken.
        """
        if site_key.startswith("gen-"):
            return await self._attach(site_key, await self._take_blank())
        spares = self._spares.setdefault(site_key, [])
        opened: OpenedEpisode | None = None
        while spares and opened is None:
            try:
                opened = await spares.pop(0)
            except Exception:  # a spare that failed to open is replaced below
                opened = None
        for _ in range(self.spares_per_site - len(spares)):
            spares.append(asyncio.ensure_future(self._open(site_key)))
        if opened is None:
            opened = await self._open(site_key)
        return opened

    async def _take_blank(self) -> Blank:
        blank: Blank | None = None
        while self._blanks and blank is None:
            try:
                blank = await self._blanks.pop(0)
            except Exception:  # a blank context that failed to open is replaced below
                blank = None
        for _ in range(self.spares_per_site - len(self._blanks)):
            self._blanks.append(asyncio.ensure_future(self._blank()))
        return blank if blank is not None else await self._blank()

    async def aclose(self) -> None:
        """Close the browser and the Playwright driver."""
        for spares in self._spares.values():
            for spare in spares:
                spare.cancel()
            for spare in spares:
                try:
                    await (await spare).context.close()
                except BaseException:  # cancelled or failed spares hold nothing to close
                    pass
        self._spares.clear()
        for blank in self._blanks:
            blank.cancel()
        for blank in self._blanks:
            try:
                context = (await blank)[0]
                await context.close()
            except BaseException:  # cancelled or failed blanks hold nothing to close
                pass
        self._blanks.clear()
        if self._browser is not None:
            await self._browser.close()
            self._browser = None
        if self._playwright is not None:
            await self._playwright.stop()
            self._playwright = None

    def close(self) -> None:
        """Close the browser, stop the server and the loop thread."""
        if self.loop.is_running():
            try:
                self.call(self.aclose(), timeout=30)
            finally:
                self.loop.call_soon_threadsafe(self.loop.stop)
                self._thread.join(timeout=10)
        self.server.stop()


_RUNTIME: WebRuntime | None = None
_RUNTIME_LOCK = threading.Lock()


def get_runtime() -> WebRuntime:
    """The process-wide :class:`WebRuntime`, created on first use."""
    global _RUNTIME
    with _RUNTIME_LOCK:
        if _RUNTIME is None:
            _RUNTIME = WebRuntime()
        return _RUNTIME


def shutdown_runtime() -> None:
    """Close the process-wide runtime, if any (tests and the CLI call this at exit)."""
    global _RUNTIME
    with _RUNTIME_LOCK:
        if _RUNTIME is not None:
            _RUNTIME.close()
            _RUNTIME = None

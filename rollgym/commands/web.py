"""``rollgym web``: open a practice website in your own browser, sample its tasks, or screenshot its pages.

Examples::

    rollgym web serve shop --port 8000      # then open http://127.0.0.1:8000/
    rollgym web serve gen-wiki-h1           # a generated site (keys: gen-<kind>-NN, held out gen-<kind>-hN)
    rollgym web tasks travel -n 5           # print five travel tasks
    rollgym web screenshot forum            # PNGs in ./screenshots (--out docs/img regenerates the docs' pictures)
"""

from __future__ import annotations

import argparse
from typing import Any

from rollgym.core.errors import ConfigError

SITE_CHOICES = ("shop", "forum", "travel")

# The pages shown in the docs, per site: (file suffix, path, sign in first as this user).
SHOWCASE: dict[str, list[tuple[str, str, str | None]]] = {
    "shop": [
        ("home", "/", None),
        ("catalogue", "/search?category=kitchen&sort=price_asc", None),
        ("product", "/product/40", None),
        ("orders", "/orders", "alice"),
    ],
    "forum": [("home", "/", None), ("board", "/b/cycling", None), ("thread", "/t/12?sort=votes", "ada")],
    "travel": [
        ("home", "/", None),
        ("flights", "/flights?from=LIS&to=BER&date=2026-03-12", None),
        ("hotels", "/hotels?city=Vienna&check_in=2026-03-10&check_out=2026-03-13&stars=3", None),
        ("bookings", "/bookings", "amara"),
    ],
}


def register(subparsers: Any) -> None:
    """Add the ``web`` sub-command."""
    parser = subparsers.add_parser(
        "web",
        help="the practice websites behind the Web* envs",
        description="Serve a practice website, print sample tasks, or take screenshots.",
    )
    sub = parser.add_subparsers(dest="web_command", metavar="{serve,tasks,screenshot}")
    sub.required = True

    serve = sub.add_parser("serve", help="serve a site on 127.0.0.1 for a person to use in a browser")
    serve.add_argument("site", type=_site_key, help=f"{', '.join(SITE_CHOICES)}, or a generated site such as "
                       "gen-shop-03 (`rollgym list --stats` counts them)")
    serve.add_argument("--port", type=int, default=8000, help="TCP port (0 picks a free one; default 8000)")
    serve.set_defaults(func=cmd_serve)

    tasks = sub.add_parser("tasks", help="print sample tasks of a site")
    tasks.add_argument("site", choices=(*SITE_CHOICES, "all"))
    tasks.add_argument("-n", type=int, default=8, help="how many tasks (default 8)")
    tasks.add_argument("--split", default="train", choices=("train", "validation", "test"))
    tasks.set_defaults(func=cmd_tasks)

    shot = sub.add_parser("screenshot", help="save PNG screenshots of a site's main pages (needs Chromium)")
    shot.add_argument("site", choices=(*SITE_CHOICES, "all"))
    shot.add_argument("--out", default="screenshots",
                      help="folder for web_<site>_<page>.png (default screenshots; "
                           "--out docs/img regenerates the docs' pictures)")
    shot.set_defaults(func=cmd_screenshot)


def _site_key(value: str) -> str:
    """A hand-written site or a generated site's key, else argparse's one-line error."""
    if value in SITE_CHOICES:
        return value
    from rollgym.envs.web.gen.domain import site_spec

    try:
        site_spec(value)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(f"{value!r} is neither {', '.join(SITE_CHOICES)} nor a generated site "
                                         "(gen-shop-03, gen-wiki-h1, ...)") from exc
    return value


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve one site until Ctrl-C; each browser gets its own copy of the seeded data."""
    from rollgym.envs.web.server import WebServer

    if not 0 <= args.port < 65536:
        raise ConfigError(f"--port must be between 0 and 65535, got {args.port}.")
    server = WebServer(port=args.port, open_site=args.site)
    try:
        server.start()
    except OSError as exc:
        raise ConfigError(f"Cannot listen on port {args.port} ({exc.strerror}); pick another with --port.") from exc
    print(f"Serving the {args.site} site at {server.base_url}/  (every user's password is <username>123; "
          "Ctrl-C stops)", flush=True)
    try:
        if server._thread is not None:
            server._thread.join()
    except KeyboardInterrupt:
        print("Stopped.")
    finally:
        server.stop()
    return 0


def cmd_tasks(args: argparse.Namespace) -> int:
    """Print sample tasks with their template and kind."""
    from rollgym.envs.web.tasks import SITE_KEYS, WebTaskSource

    if args.n < 1:
        raise ConfigError(f"-n must be at least 1, got {args.n}.")
    sites = SITE_KEYS if args.site == "all" else (args.site,)
    source = WebTaskSource(tuple(sites), "WebGym-v2")
    for i in range(args.n):
        task = source.task(i, args.split)
        print(f"[{task.meta['template']}, {task.meta['kind']}] {task.prompt}")
    return 0


def take_screenshots(site: str, out: str) -> list[str]:
    """Save screenshots of a site's showcase pages into ``out``; returns the file paths."""
    import os

    from rollgym.envs.web.browser import get_runtime
    from rollgym.envs.web.episode import WebEpisode
    from rollgym.envs.web.tasks import WebTaskSource

    os.makedirs(out, exist_ok=True)
    runtime = get_runtime()
    source = WebTaskSource((site,), "WebGym-v2")
    paths: list[str] = []

    async def shoot() -> None:
        episode = WebEpisode(runtime, source.task(0), max_steps=100)
        await episode.start()
        try:
            signed_in = False
            for name, path, user in SHOWCASE[site]:
                if user and not signed_in:
                    page = episode.page
                    await page.goto(runtime.server.base_url + "/login")
                    await page.fill("#username", user)
                    await page.fill("#password", user + "123")
                    await page.click("button[type=submit] >> text=Sign in")
                    await page.wait_for_load_state("load")
                    signed_in = True
                await episode.page.goto(runtime.server.base_url + path, wait_until="load")
                file = os.path.join(out, f"web_{site}_{name}.png")
                await episode.page.screenshot(path=file, full_page=False)
                paths.append(file)
        finally:
            await episode.close()

    runtime.call(shoot(), timeout=120)
    return paths


def cmd_screenshot(args: argparse.Namespace) -> int:
    """Save screenshots of the main pages."""
    sites = SITE_CHOICES if args.site == "all" else (args.site,)
    for site in sites:
        for path in take_screenshots(site, args.out):
            print(path)
    return 0

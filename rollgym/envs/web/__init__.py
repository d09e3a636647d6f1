"""Web envs: three practice websites served in-process and driven through the system Chromium.

Importing this package only registers the ids; Playwright, the sites and the
browser load when an env is first reset.
"""

from rollgym.core.registration import register_env

_COMPONENTS = [
    "rollgym.envs.web.env",
    "rollgym.envs.web.episode",
    "rollgym.envs.web.actions",
    "rollgym.envs.web.observation",
    "rollgym.envs.web.sites.base",
    "rollgym.envs.web.sites.shop",
    "rollgym.envs.web.sites.forum",
    "rollgym.envs.web.sites.travel",
    "rollgym.envs.web.tasks",
    "rollgym.envs.web.tasks.base",
    "rollgym.envs.web.tasks.rubric",
    "rollgym.envs.web.tasks.shop",
    "rollgym.envs.web.tasks.forum",
    "rollgym.envs.web.tasks.travel",
]

for _id, _sites, _what in [
    ("WebShop-v0", ("shop",), "a practice online shop: catalogue filters, cart, checkout, order history"),
    ("WebForum-v0", ("forum",), "a practice Q&A forum: threads, replies, votes, moderation"),
    ("WebTravel-v0", ("travel",), "a practice travel site: flight and hotel search by date, booking, cancelling"),
    ("WebGym-v0", ("shop", "forum", "travel"), "all three practice websites (shop, forum, travel) mixed"),
]:
    register_env(
        _id,
        "rollgym.envs.web.env:WebEnv",
        description=f"Browser tasks on {_what} (real Chromium).",
        family="web",
        components=_COMPONENTS,
        kwargs={"sites": _sites},
        oracle="rollgym.envs.web.reference:reference_policy",
        random_policy="rollgym.envs.web.reference:random_action",
    )

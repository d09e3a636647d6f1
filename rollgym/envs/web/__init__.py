"""Web envs: practice websites served in-process and driven through the system Chromium.

Ids: WebShop-v2, WebForum-v2, WebTravel-v2, WebGym-v2 (three hand-written sites), and their -v1 and -v0
predecessors (older scoring); WebGen-v0 (165 generated sites of 11 kinds in 8 themes, with held-out sites).

Importing this package only registers the ids; Playwright, the sites and the
browser load when an env is first reset.
"""

from rollgym.core.registration import register_env
from rollgym.envs.web import gen as _gen  # noqa: F401  (registers the generated sites' family with the server)

_COMPONENTS = [
    "rollgym.envs.web.env",
    "rollgym.envs.web.episode",
    "rollgym.envs.web.actions",
    "rollgym.envs.web.observation",
    "rollgym.envs.web.sites.base",
    "rollgym.envs.web.sites.page",
    "rollgym.envs.web.sites.shop",
    "rollgym.envs.web.sites.forum",
    "rollgym.envs.web.sites.travel",
    "rollgym.envs.web.tasks",
    "rollgym.envs.web.tasks.base",
    "rollgym.envs.web.tasks.shop",
    "rollgym.envs.web.tasks.forum",
    "rollgym.envs.web.tasks.travel",
    "rollgym.verifiers.statediff", "rollgym.verifiers.rubric", "rollgym.verifiers.web",
]

_SITES = [
    ("WebShop", ("shop",), "a practice online shop: catalogue filters, cart, checkout, order history"),
    ("WebForum", ("forum",), "a practice Q&A forum: threads, replies, votes, moderation"),
    ("WebTravel", ("travel",), "a practice travel site: flight and hotel search by date, booking, cancelling"),
    ("WebGym", ("shop", "forum", "travel"), "all three practice websites (shop, forum, travel) mixed"),
]
_VERSIONS = [
    ("v2", True, True, ""),
    ("v1", True, False, " Superseded by -v2: its gates look at the target table only."),
    ("v0", False, False, " Superseded by -v2: no collateral-damage gates."),
]
for _name, _sites, _what in _SITES:
    for _version, _gates, _site_gate, _note in _VERSIONS:
        register_env(
            f"{_name}-{_version}",
            "rollgym.envs.web.env:WebEnv",
            description=f"Browser tasks on {_what} (real Chromium).{_note}",
            family="web",
            components=_COMPONENTS,
            kwargs={"sites": _sites, "collateral_gates": _gates, "site_gate": _site_gate},
            oracle="rollgym.envs.web.reference:reference_policy",
            random_policy="rollgym.envs.web.reference:random_action",
            private_state="rollgym.core.private:task_answer",
            grader="pure",  # a diff of the site's database, read by the server, never by the page
            cost="heavy",  # a real Chromium per episode
            superseded_by=f"{_name}-v2" if _version != "v2" else None,
        )

_GEN_COMPONENTS = [
    *_COMPONENTS,
    "rollgym.envs.web.gen",  # its __init__ registers the generated sites and their grader (rollgym.envs.web.families)
    "rollgym.envs.web.gen.env",
    "rollgym.envs.web.gen.schema",
    "rollgym.envs.web.gen.kinds",
    "rollgym.envs.web.gen.words",
    "rollgym.envs.web.gen.themes",
    "rollgym.envs.web.gen.domain",
    "rollgym.envs.web.gen.render",
    "rollgym.envs.web.gen.site",
    "rollgym.envs.web.gen.forms",
    "rollgym.envs.web.gen.driver",
    "rollgym.envs.web.gen.mechanisms",
    "rollgym.envs.web.gen.changes",
    "rollgym.envs.web.gen.tasks",
]
register_env(
    "WebGen-v0",
    "rollgym.envs.web.gen.env:WebGenEnv",
    description="Browser tasks on 165 generated websites (11 kinds, 8 layout themes); split test_unseen plays on "
    "held-out sites and themes (real Chromium).",
    family="web",
    components=_GEN_COMPONENTS,
    oracle="rollgym.envs.web.gen.reference:reference_policy",
    random_policy="rollgym.envs.web.reference:random_action",
    private_state="rollgym.core.private:task_answer",
    grader="pure",
    cost="heavy",
)

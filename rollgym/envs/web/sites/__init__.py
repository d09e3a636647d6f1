"""The practice websites: one module per site, plus the shared layout and stylesheet.

:data:`SITES` maps a site key (``"shop"``, ``"forum"``, ``"travel"``) to its class.
"""

from __future__ import annotations

from rollgym.envs.web.sites.base import Request, Response, Site
from rollgym.envs.web.sites.forum import ForumSite
from rollgym.envs.web.sites.shop import ShopSite
from rollgym.envs.web.sites.travel import TravelSite

SITES: dict[str, type[Site]] = {"shop": ShopSite, "forum": ForumSite, "travel": TravelSite}

__all__ = ["SITES", "ForumSite", "Request", "Response", "ShopSite", "Site", "TravelSite"]

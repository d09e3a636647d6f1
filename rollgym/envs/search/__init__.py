"""Search family: multi-hop QA with search tools over a generated encyclopaedia of fictional entities.

Importing this package registers ``Search-v0`` and ``SearchQA-v0``; the world, the corpus and the BM25
index (``bm25s``, the ``search`` extra) are built only when an env is made, once per process.
"""

from typing import Any

from rollgym.core.registration import register_env

_COMPONENTS = ["rollgym.envs.search.names", "rollgym.envs.search.world", "rollgym.envs.search.corpus",
               "rollgym.envs.search.index", "rollgym.envs.search.tools", "rollgym.envs.search.questions",
               "rollgym.envs.search.source", "rollgym.envs.search.scoring", "rollgym.envs.search.env"]
_POLICIES: dict[str, Any] = {"oracle": "rollgym.envs.search.policies:oracle_policy",
             "random_policy": "rollgym.envs.search.policies:random_policy"}

register_env("Search-v0", "rollgym.envs.search.env:SearchEnv", family="search", components=_COMPONENTS,
             description="Multi-hop questions over a fictional encyclopaedia with search/open/find tools; "
                         "difficulty by hops, topology and evidence dispersion.", **_POLICIES)
register_env("SearchQA-v0", "rollgym.envs.search.env:SearchQAEnv", family="search", components=_COMPONENTS,
             description="Search QA mix from single-hop to multi-hop questions over a fictional encyclopaedia.",
             **_POLICIES)

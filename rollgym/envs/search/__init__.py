"""Search family: multi-hop QA with search tools over a generated encyclopaedia of fictional entities.

Importing this package registers ``Search-v1``, ``SearchQA-v1`` (and their ``-v0``s) and ``SearchParallel-v0``;
the world, the corpus and the BM25
index (``bm25s``, the ``search`` extra) are built only when an env is made, once per process.
"""

from typing import Any

from rollgym.core.registration import register_env

_POLICIES: dict[str, Any] = {"oracle": "rollgym.envs.search.policies:oracle_policy",
             "random_policy": "rollgym.envs.search.policies:random_policy",
             "private_state": "rollgym.envs.search.private:search_private", "grader": "pure"}

_SUPERSEDED = " Superseded by -v1: F1 partial credit without the hedge guard."
for _version, _guard, _note in [("v1", True, ""), ("v0", False, _SUPERSEDED)]:
    register_env(f"Search-{_version}", "rollgym.envs.search.env:SearchEnv", family="search",
                 kwargs={"hedge_guard": _guard},
                 description="Multi-hop questions over a fictional encyclopaedia with search/open/find tools; "
                             f"difficulty by hops, topology and evidence dispersion.{_note}",
                 superseded_by="Search-v1" if _note else None, **_POLICIES)
    register_env(f"SearchQA-{_version}", "rollgym.envs.search.env:SearchQAEnv", family="search",
                 kwargs={"hedge_guard": _guard},
                 description="Search QA mix from single-hop to multi-hop questions over a fictional "
                             f"encyclopaedia.{_note}", superseded_by="SearchQA-v1" if _note else None, **_POLICIES)

register_env("SearchParallel-v0", "rollgym.envs.search.parallel:ParallelSearchEnv", family="search",
             description="Which of A, B and C came first? Comparison questions over the fictional encyclopaedia "
                         "whose look-ups are independent (parallel tool calls in a round); optional reward for "
                         "fewer rounds at equal accuracy.",
             oracle="rollgym.envs.search.parallel_policies:parallel_oracle",
             random_policy="rollgym.envs.search.policies:random_policy",
             private_state="rollgym.envs.search.private:search_private", grader="pure")

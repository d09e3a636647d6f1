"""What the search envs hide from the agent: their ``private_state`` hook.

The answer names the entity and the documents that hold the evidence; the relations along the way
are the question's own (``task_meta["plan"]``), so they are not secret. No env imports this module,
so it is not part of any id's content hash (see :mod:`rollgym.core.private`).
"""

from __future__ import annotations

from typing import Any

from rollgym.core.private import task_answer

__all__ = ["search_private"]


def search_private(env: Any) -> dict[str, Any]:
    """The answer's text, aliases and entity, and the ids of the evidence documents.

    Example:
        >>> import rollgym
        >>> env = rollgym.make("SearchQA-v1")
        >>> _ = env.reset(seed=0)
        >>> sorted(search_private(env.unwrapped))
        ['aliases', 'answer', 'entity_id', 'evidence_docs']
    """
    answer = task_answer(env)["answer"]
    if not isinstance(answer, dict):
        return {"answer": answer}
    return {"answer": answer.get("text"), "aliases": answer.get("aliases"), "entity_id": answer.get("entity_id"),
            "evidence_docs": [e.get("doc_id") for e in answer.get("evidence") or [] if isinstance(e, dict)]}

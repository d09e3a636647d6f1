"""The three search tools: ``search``, ``open`` and ``find``, over one world's corpus.

Each tool is a typed method whose signature and docstring are the single source
of its OpenAI schema (:mod:`rollgym.core.toolschema`). :meth:`SearchSession.call`
validates arguments against the schema and never raises: every problem comes
back as ``{"error": "..."}``. Results are deterministic functions of the world
and the arguments. A session also records which documents the agent read.
"""

from __future__ import annotations

from typing import Any, Literal

from rollgym.core.toolschema import check_arguments, coerce_arguments, function_schema
from rollgym.envs.search.corpus import Corpus, sentences
from rollgym.envs.search.index import SearchIndex
from rollgym.envs.search.world import KINDS

Kind = Literal["person", "city", "region", "organisation", "work", "event"]
MAX_K = 20
MAX_QUERY_CHARS = 500
MAX_FIND_MATCHES = 50


class SearchSession:
    """One episode's use of the tools: the corpus, its index, and what was read."""

    TOOL_NAMES = ("search", "open", "find")

    def __init__(self, corpus: Corpus, index: SearchIndex) -> None:
        self.corpus = corpus
        self.index = index
        self.read: set[str] = set()

    # -- the tools ----------------------------------------------------------
    def search(self, query: str, k: int = 5, type: Kind | None = None) -> dict[str, Any]:
        """Search the encyclopaedia by keywords (BM25); returns the best articles, each with its best-matching sentence.

        Args:
            query: Keywords to look for, e.g. a name and a relation word.
            k: How many results to return (1 to 20).
            type: Only return articles of this type: person, city, region, organisation, work or event.
        """
        if not query.strip():
            return {"error": "query is empty; pass some keywords, e.g. a name."}
        if len(query) > MAX_QUERY_CHARS:
            return {"error": f"query is longer than {MAX_QUERY_CHARS} characters; shorten it."}
        if not 1 <= k <= MAX_K:
            return {"error": f"k must be between 1 and {MAX_K}, got {k}."}
        if type is not None and type not in KINDS:
            return {"error": f"type must be one of {', '.join(KINDS)}, got {type[:40]!r}."}
        hits = self.index.search(query, k, type)
        docs = self.corpus.docs
        return {"query": query, "results": [{"doc_id": docs[i].doc_id, "title": docs[i].title, "type": docs[i].kind,
                                             "snippet": self.index.snippet(i, query)} for i, _ in hits]}

    def open(self, doc_id: str, page: int = 1) -> dict[str, Any]:
        """Read one page of an article; long articles have several pages.

        Args:
            doc_id: The article's id (e.g. "d00042") or its exact title, as written inside [[...]] links.
            page: Which page to read, starting at 1.
        """
        doc = self.corpus.resolve(doc_id)
        if doc is None:
            return {"error": f"no article {doc_id[:100]!r}; use a doc_id from search results or an exact title."}
        if not 1 <= page <= len(doc.pages):
            return {"error": f"page {page} does not exist; {doc.doc_id} has pages 1 to {len(doc.pages)}."}
        self.read.add(doc.doc_id)
        return {"doc_id": doc.doc_id, "title": doc.title, "page": page, "pages": len(doc.pages),
                "text": doc.pages[page - 1]}

    def find(self, doc_id: str, text: str) -> dict[str, Any]:
        """Find the sentences of an article that contain some text (case-insensitive), with their page numbers.

        Args:
            doc_id: The article's id or exact title.
            text: The text to look for, e.g. a name.
        """
        doc = self.corpus.resolve(doc_id)
        if doc is None:
            return {"error": f"no article {doc_id[:100]!r}; use a doc_id from search results or an exact title."}
        needle = text.strip().lower()
        if not needle:
            return {"error": "text is empty; pass the words to look for."}
        self.read.add(doc.doc_id)
        matches = [{"page": number, "sentence": sentence} for number, page_text in enumerate(doc.pages, start=1)
                   if needle in page_text.lower() for sentence in sentences(page_text) if needle in sentence.lower()]
        return {"doc_id": doc.doc_id, "title": doc.title, "text": text, "count": len(matches),
                "matches": matches[:MAX_FIND_MATCHES]}

    # -- dispatch -----------------------------------------------------------
    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run tool ``name`` with JSON ``arguments``; problems come back as ``{"error": ...}``."""
        schemas = tool_schemas_by_name()
        if name not in schemas:
            return {"error": f"unknown tool {name[:60]!r}; the tools are {', '.join(self.TOOL_NAMES)}. "
                             "Give your final answer as <answer>...</answer>."}
        problem = check_arguments(schemas[name], arguments)
        if problem is not None:
            return {"error": f"{name}: {problem}."}
        result: dict[str, Any] = getattr(self, name)(**coerce_arguments(schemas[name], arguments))
        return result


_SCHEMAS: dict[str, dict[str, Any]] = {}


def tool_schemas_by_name() -> dict[str, dict[str, Any]]:
    """OpenAI function schemas of the three tools, by name (built once)."""
    if not _SCHEMAS:
        for name in SearchSession.TOOL_NAMES:
            _SCHEMAS[name] = function_schema(getattr(SearchSession, name), skip=["self"])
    return _SCHEMAS


def tool_schemas() -> list[dict[str, Any]]:
    """The tools' schemas as the list that ``info["tools"]`` carries."""
    return list(tool_schemas_by_name().values())

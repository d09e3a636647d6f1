"""BM25 ranking over a corpus, with the ``bm25s`` library (the ``search`` extra).

The index is built once per world per process (:func:`get_index`); ranking is
deterministic: ties are broken by document order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from rollgym.core.errors import MissingDependencyError
from rollgym.envs.search.corpus import Corpus, get_corpus, sentences

_TOKEN = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her his in is it its of on or she that the "
    "their them there these they this to was were what when where which who whom whose why will with".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens without stopwords.

    Example:
        >>> tokenize("Where was Ana Vel born?")
        ['ana', 'vel', 'born']
    """
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


@dataclass
class SearchIndex:
    """A BM25 index of one corpus."""

    corpus: Corpus
    model: Any  # bm25s.BM25
    vocab: dict[str, int]
    kinds: np.ndarray  # each document's entity kind, for type filters
    _sentences: dict[int, list[tuple[str, frozenset[str]]]] = field(default_factory=dict)

    def snippet(self, doc_index: int, query: str) -> str:
        """The sentence of a document that shares the most distinct words with ``query`` (the first on ties)."""
        if doc_index not in self._sentences:
            doc = self.corpus.docs[doc_index]
            self._sentences[doc_index] = [(s, frozenset(tokenize(s))) for s in sentences(doc.text)]
        wanted = set(tokenize(query))
        best, best_overlap = self.corpus.docs[doc_index].summary, 0
        for sentence, words in self._sentences[doc_index]:
            overlap = len(wanted & words)
            if overlap > best_overlap:
                best, best_overlap = sentence, overlap
        return best

    def search(self, query: str, k: int = 5, kind: str | None = None) -> list[tuple[int, float]]:
        """The ``k`` best ``(document index, score)`` pairs for ``query``, best first; only positive scores.

        ``kind`` keeps only articles about one kind of entity (``"person"``, ``"city"``, ...).
        """
        tokens = [t for t in tokenize(query) if t in self.vocab]
        if not tokens or k <= 0:
            return []
        scores = np.asarray(self.model.get_scores(tokens), dtype=np.float64)
        if kind is not None:
            scores = np.where(self.kinds == kind, scores, 0.0)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        # stable order: higher score first, then lower document index
        top = top[np.lexsort((top, -scores[top]))]
        return [(int(i), round(float(scores[i]), 4)) for i in top if scores[i] > 0]


def build_index(corpus: Corpus) -> SearchIndex:
    """Index every article's text (title included) with BM25 (k1=1.5, b=0.75)."""
    try:
        import bm25s
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "The search envs need the bm25s package; install it with `pip install 'rollgym[search]'`."
        ) from exc
    model = bm25s.BM25(k1=1.5, b=0.75)
    model.index([tokenize(doc.text) for doc in corpus.docs], show_progress=False)
    return SearchIndex(corpus, model, dict(model.vocab_dict), np.array([doc.kind for doc in corpus.docs]))


@lru_cache(maxsize=4)
def get_index(size: int, seed: int = 0) -> SearchIndex:
    """The cached index of the world ``(size, seed)``: built once per process."""
    return build_index(get_corpus(size, seed))

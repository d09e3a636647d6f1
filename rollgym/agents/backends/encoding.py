"""Fast, exact tokenization of chat prompts: encode what repeats once, then reuse its ids.

Chat prompts repeat most of their text: every episode of a run starts with the
same system prompt and tool list, and every rollout of a GRPO group with the same
first user turn. :class:`PromptEncoder` splits a rendered prompt just before each
special token (``<|im_start|>`` ...), encodes each piece once and caches its ids,
so a new prompt costs only the tokenization of its new pieces.

It is exact: the ids equal ``tokenizer(text, add_special_tokens=False)["input_ids"]``.
A Hugging Face fast tokenizer first cuts its input at every added token (leftmost,
longest match) and then normalizes, pre-tokenizes and merges each piece on its
own, so the ids of a text are the ids of its pieces laid end to end, provided the
cut falls where the tokenizer cuts too. The encoder cuts only before added tokens
that match verbatim (``normalized=False``) and do not swallow the whitespace before
them (``lstrip=False``), finds them the way the tokenizer does (a longest-first
alternation of every verbatim added token), and steps aside, encoding whole texts,
for tokenizers where the argument does not hold: slow tokenizers,
``split_special_tokens=True``, or any ``single_word`` added token. The first
``verify`` encodings are also compared with a whole-text encoding (fewer when
earlier encoders in the process already compared as many with the same tokenizer
and cuts); a difference switches the splitting off for good
(``encoder.exact_pieces`` turns ``False``).
"""

from __future__ import annotations

import re
import weakref
from typing import Any

#: Most cached pieces before the cache is emptied (a piece is a turn's text, a few hundred bytes).
MAX_CACHED_PIECES = 8192

#: Per tokenizer, how many comparisons with a whole-text encoding each way of cutting has passed in
#: this process: a new encoder (every ``ChatAgent`` has one) skips the comparisons already made.
_PASSED: weakref.WeakKeyDictionary[Any, dict[tuple[str, frozenset[str]], int]] = weakref.WeakKeyDictionary()


def _passed_checks(tokenizer: Any) -> dict[tuple[str, frozenset[str]], int] | None:
    """The comparisons passed with ``tokenizer`` so far; ``None`` for a tokenizer that cannot be weakly keyed."""
    try:
        return _PASSED.setdefault(tokenizer, {})
    except TypeError:
        return None


class PromptEncoder:
    """Token ids of prompt texts, with each piece between special tokens encoded once.

    Args:
        tokenizer: A Hugging Face tokenizer (fast or slow).
        verify: How many encodings to check against a whole-text encoding first.

    Example:
        >>> encoder = PromptEncoder(tokenizer)  # doctest: +SKIP
        >>> encoder.encode(text) == tokenizer(text, add_special_tokens=False)["input_ids"]  # doctest: +SKIP
        True
    """

    def __init__(self, tokenizer: Any, *, verify: int = 4) -> None:
        self.tokenizer = tokenizer
        self.verify = verify
        self.verify_total = verify
        self._pieces: dict[str, list[int]] = {}
        self._backend = getattr(tokenizer, "backend_tokenizer", None)
        self._splitter: re.Pattern[str] | None = None
        self._cut_before: frozenset[str] = frozenset()
        self.exact_pieces = False
        if self._backend is not None and not getattr(tokenizer, "split_special_tokens", False):
            added = list(getattr(tokenizer, "added_tokens_decoder", {}).values())
            verbatim = [t for t in added if not getattr(t, "normalized", True)]
            if added and not any(getattr(t, "single_word", False) for t in added) and verbatim:
                contents = sorted({t.content for t in verbatim}, key=len, reverse=True)
                self._splitter = re.compile("|".join(re.escape(c) for c in contents))
                self._cut_before = frozenset(t.content for t in verbatim if not getattr(t, "lstrip", False))
                self.exact_pieces = True

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` without added special tokens (BOS/EOS), as the tokenizer gives them."""
        if not self.exact_pieces:
            return self._encode_whole(text)
        ids: list[int] = []
        start = 0
        splitter, cut_before = self._splitter, self._cut_before
        assert splitter is not None
        for match in splitter.finditer(text):
            if match.group() in cut_before and match.start() > start:
                ids += self._piece(text[start : match.start()])
                start = match.start()
        if start < len(text):
            ids += self._piece(text[start:])
        if self.verify > 0:
            self.verify -= 1
            passed = _passed_checks(self.tokenizer)
            cuts = (splitter.pattern, cut_before)
            if passed is None or passed.get(cuts, 0) < self.verify_total:
                whole = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
                if whole != ids:  # the tokenizer does not cut where this encoder assumed: stop cutting
                    self.exact_pieces = False
                    self._pieces.clear()
                    return whole
                if passed is not None:
                    passed[cuts] = passed.get(cuts, 0) + 1
        return ids

    def _piece(self, piece: str) -> list[int]:
        cached = self._pieces.get(piece)
        if cached is None:
            if len(self._pieces) >= MAX_CACHED_PIECES:
                self._pieces.clear()
            cached = self._pieces[piece] = self._encode_whole(piece)
        return cached

    def _encode_whole(self, text: str) -> list[int]:
        backend = self._backend
        # The Rust tokenizer directly, when it is set up as the wrapper would set it: no padding, no truncation.
        if backend is not None and backend.padding is None and backend.truncation is None and not getattr(
                backend, "encode_special_tokens", False) and not getattr(self.tokenizer, "split_special_tokens", False):
            return list(backend.encode(text, add_special_tokens=False).ids)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

"""Shared prompt prefixes for the transformers backend: prefill a prefix once, reuse its KV cache.

Two kinds of reuse make RL rollouts cheaper on a local model:

- **Within a group.** The G samples of a prompt arrive in one batch (``n=G``, or G episodes
  whose calls the backend merges): the prompt is prefilled once and its cache expanded to G rows.
- **Across calls.** Every prefilled prompt, and every row's prompt plus its sampled tokens, is
  kept in a :class:`PrefixStore`. A later prompt that starts with stored tokens (the next
  sample of a group played one episode at a time; the next turn of an episode, whose context
  is the conversation so far when the chat template preserves prefixes) prefills only the
  tokens after the longest stored prefix.

The store is an LRU bounded by bytes (:data:`DEFAULT_MAX_BYTES`, 512 MiB, by default). An entry
that extends a stored one keeps only its own tokens' keys and values and points at the stored
one (the G continuations of a prompt share the prompt's tensors); only entries nothing extends
are evicted. Matching is by longest common token prefix, so any stored sequence serves as the
prefix of a prompt that shares its first tokens (a causal model's keys and values of a prefix do
not depend on what follows it).

Exactness: a reused prefix's keys and values are those the uncached path computes for the same
tokens at the same positions, up to float rounding between batch shapes, so greedy output is the
same tokens, seeded sampling the same tokens, and logprobs agree to ~1e-5 (the tests check both).

The cache is emptied whenever the weights may have changed (a trainer's optimizer step, a
``load_state_dict``, a new ``policy_version``): the fingerprint is the backend's
``policy_version`` plus every parameter's storage address, autograd version counter and a few
sampled values. It is refused (every call runs uncached) for models whose cache is not a plain
growing key/value cache per layer: sliding-window, chunked, recurrent or quantized caches cannot
be cut to an arbitrary prefix; :attr:`PrefixCache.refused` says why.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rollgym.core.errors import ConfigError

#: The store's default memory bound: keys and values of every kept prefix, in bytes.
DEFAULT_MAX_BYTES = 512 * 2**20

#: ``forward(input_ids, attention_mask, position_ids, past) -> (cache, last-position logits)``.
Forward = Callable[[Any, Any, Any, Any], tuple[Any, Any]]


class _Entry:
    """Keys and values of ``ids``: those of ``base`` for its tokens, then this entry's own for the rest."""

    __slots__ = ("array", "base", "children", "ids", "keys", "nbytes", "start", "values")

    def __init__(self, ids: tuple[int, ...], base: _Entry | None, keys: list[Any], values: list[Any]) -> None:
        self.ids = ids
        self.array = np.asarray(ids, dtype=np.int64)
        self.base = base
        self.start = len(base.ids) if base is not None else 0
        self.keys = keys  # per layer, (heads, len(ids) - start, head_dim)
        self.values = values
        self.nbytes = sum(t.numel() * t.element_size() for t in (*keys, *values))
        self.children = 0


class PrefixStore:
    """An LRU of key/value caches keyed by token ids, bounded by ``max_bytes``; looked up by longest common prefix.

    Example:
        >>> store = PrefixStore(max_bytes=2**20)
        >>> store.match([1, 2, 3])
        (None, 0)
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 0:
            raise ConfigError(f"prefix_cache_bytes must be an integer >= 0, got {max_bytes!r}.")
        self.max_bytes = max_bytes
        self.nbytes = 0
        self.evictions = 0
        self._entries: OrderedDict[tuple[int, ...], _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()
        self.nbytes = 0

    def match(self, ids: Sequence[int]) -> tuple[_Entry | None, int]:
        """The entry sharing the longest common prefix with ``ids``, and that prefix's length (0: none)."""
        query = np.asarray(ids, dtype=np.int64)
        best, best_len = None, 0
        for entry in self._entries.values():
            n = min(len(query), len(entry.array))
            if n <= best_len:
                continue
            same = query[:n] == entry.array[:n]
            common = n if bool(same.all()) else int(np.argmin(same))
            if common > best_len:
                best, best_len = entry, common
        if best is not None:
            self._touch(best)
        return best, best_len

    def kv(self, entry: _Entry, length: int) -> tuple[list[Any], list[Any]]:
        """Per layer, the keys and values of ``entry``'s first ``length`` tokens, each ``(heads, length, dim)``."""
        chain: list[_Entry] = []
        node: _Entry | None = entry
        while node is not None:
            if node.start < length:
                chain.append(node)
            node = node.base
        chain.reverse()
        import torch

        layers = len(entry.keys)
        keys = [torch.cat([e.keys[i][:, : length - e.start] for e in chain], dim=1) for i in range(layers)]
        values = [torch.cat([e.values[i][:, : length - e.start] for e in chain], dim=1) for i in range(layers)]
        return keys, values

    def put(self, ids: Sequence[int], keys: list[Any], values: list[Any]) -> None:
        """Keep the keys and values (per layer ``(heads, len(ids), dim)``, copied here) of ``ids``.

        The entry points at the longest stored entry that is a prefix of ``ids`` and copies only
        the keys and values after it. Then the least recently used entries that nothing extends
        are evicted until the store fits ``max_bytes``.
        """
        key = tuple(ids)
        if not key:
            return
        if key in self._entries:
            self._touch(self._entries[key])
            return
        found, common = self.match(key)
        base = found
        while base is not None and len(base.ids) > common:
            base = base.base
        start = len(base.ids) if base is not None else 0
        own_k = [k[:, start:].clone(memory_format=_contiguous()) for k in keys]
        own_v = [v[:, start:].clone(memory_format=_contiguous()) for v in values]
        entry = _Entry(key, base, own_k, own_v)
        if entry.nbytes > self.max_bytes:
            return
        if base is not None:
            base.children += 1
        self._entries[key] = entry
        self.nbytes += entry.nbytes
        self._touch(entry)
        self._evict()

    def _touch(self, entry: _Entry) -> None:
        # An entry's bases are at least as recent as it, so a leaf goes before the prefixes it extends.
        node: _Entry | None = entry
        while node is not None:
            if node.ids in self._entries:
                self._entries.move_to_end(node.ids)
            node = node.base

    def _evict(self) -> None:
        while self.nbytes > self.max_bytes:
            victim = next((e for e in self._entries.values() if e.children == 0), None)
            if victim is None:  # pragma: no cover - a chain always ends in a leaf
                return
            del self._entries[victim.ids]
            self.nbytes -= victim.nbytes
            self.evictions += 1
            if victim.base is not None:
                victim.base.children -= 1


def _contiguous() -> Any:
    import torch

    return torch.contiguous_format


def refusal(model: Any) -> str | None:
    """Why ``model``'s KV cache cannot be reused by prefix, or ``None`` when it can.

    Only a plain cache (one growing key/value layer per attention layer) can be cut to any
    prefix; a sliding-window, chunked, recurrent or KV-sharing model gets another kind of layer.
    """
    config = getattr(model, "config", None)
    if config is None:
        return "the model has no config to tell its cache layout"
    if getattr(config, "is_encoder_decoder", False):
        return "it is an encoder-decoder model"
    try:
        from transformers import DynamicCache

        probe = DynamicCache(config=config)
    except Exception as exc:  # an architecture whose cache cannot be built from its config
        return f"its cache layout is unknown ({type(exc).__name__}: {exc})"
    kinds = sorted({type(layer).__name__ for layer in probe.layers})
    if kinds != ["DynamicLayer"]:
        return (f"its cache has {', '.join(kinds)} layers (sliding-window, chunked, recurrent or shared "
                "layers cannot be cut to a prefix)")
    return None


def _plain_cache(cache: Any) -> bool:
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    return type(cache) is DynamicCache and all(type(layer) is DynamicLayer for layer in cache.layers)


def weights_fingerprint(model: Any, policy_version: int) -> tuple[Any, ...]:
    """What changes when the weights do: ``policy_version``, each parameter's storage, version counter, samples."""
    import torch

    addresses, samples = [], []
    for p in model.parameters():
        addresses.append((p.data_ptr(), p._version))
        flat = p.detach().reshape(-1)
        samples.append(flat[:: max(1, flat.numel() // 4)][:4].float())
    sampled = torch.cat(samples).tolist() if samples else []
    return (policy_version, tuple(addresses), tuple(sampled))


class PrefixCache:
    """The prefix store plus the prefill that reads and fills it (one per :class:`TransformersBackend`).

    Args:
        max_bytes: The store's memory bound (keys and values of the kept prefixes).

    ``stats()`` counts what it saved: ``reused_tokens`` (prompt tokens whose keys and values
    came from the store), ``shared_rows`` (rows of a batch that took another row's prefill),
    ``prefilled_tokens`` (prompt tokens computed), ``hits``/``lookups``, ``evictions`` and
    ``invalidations`` (the weights changed).
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.store = PrefixStore(max_bytes)
        self.refused: str | None = None
        self._checked_model: int | None = None
        self._verified = False
        self._fingerprint: tuple[Any, ...] | None = None
        self.counts = {"lookups": 0, "hits": 0, "reused_tokens": 0, "shared_rows": 0, "prefilled_tokens": 0,
                       "invalidations": 0}

    def stats(self) -> dict[str, Any]:
        """Counters since the backend was built, and the store's size now."""
        return {**self.counts, "evictions": self.store.evictions, "entries": len(self.store),
                "bytes": self.store.nbytes, "max_bytes": self.store.max_bytes, "refused": self.refused}

    def usable(self, model: Any) -> bool:
        """Whether this model's cache can be reused (checked once per model)."""
        if self._checked_model != id(model):
            self._checked_model, self._verified = id(model), False
            self.refused = refusal(model)
            self.store.clear()
        return self.refused is None

    def prefill(self, model: Any, forward: Forward, prompts: list[list[int]], pad_id: int, device: Any,
                policy_version: int) -> tuple[Any, Any]:
        """Prefill ``prompts`` (left-padded to the longest) reusing stored prefixes; the batch cache and logits.

        The returned cache and last-position logits are those a plain prefill of the whole batch
        gives (same width, same left padding), so decoding continues unchanged.
        """
        import torch

        fingerprint = weights_fingerprint(model, policy_version)
        if fingerprint != self._fingerprint:
            if self._fingerprint is not None and len(self.store):
                self.counts["invalidations"] += 1
            self.store.clear()
            self._fingerprint = fingerprint
        width = max(len(p) for p in prompts)
        if not self._verified:  # the first call runs the plain prefill and checks the cache it returns
            ids, attention, positions = _left_padded(torch, prompts, width, pad_id, device)
            past, logits = forward(ids, attention, positions, None)
            self.counts["prefilled_tokens"] += sum(len(p) for p in prompts)
            if not _plain_cache(past):
                self.refused = f"the model returned a {type(past).__name__} that cannot be cut to a prefix"
                return past, logits
            self._verified = True
            self._keep(prompts, past, width, width)
            return past, logits

        unique: dict[tuple[int, ...], int] = {}
        rows = [unique.setdefault(tuple(p), len(unique)) for p in prompts]
        distinct = [list(p) for p in unique]
        self.counts["shared_rows"] += len(prompts) - len(distinct)
        matches = [self.store.match(p) for p in distinct]
        self.counts["lookups"] += len(distinct)
        # at least the last token is computed: its logits start the decode
        reusable = [min(common, len(p) - 1) for p, (_, common) in zip(distinct, matches)]
        fresh = max(len(p) - r for p, r in zip(distinct, reusable))  # columns every row computes
        cached = width - fresh
        ids, attention, positions = _left_padded(torch, distinct, width, pad_id, device)
        past_in = None
        if cached > 0:
            used = [max(0, len(p) - fresh) for p in distinct]
            self.counts["hits"] += sum(1 for u in used if u > 0)
            self.counts["reused_tokens"] += sum(used)
            past_in = self._batch_prefix(torch, matches, used, cached, device)
            ids, positions = ids[:, cached:], positions[:, cached:]
            self.counts["prefilled_tokens"] += sum(len(p) - u for p, u in zip(distinct, used))
        else:
            self.counts["prefilled_tokens"] += sum(len(p) for p in distinct)
        past, logits = forward(ids, attention, positions, past_in)
        self._keep(distinct, past, width, width)
        if len(distinct) < len(prompts):  # expand the distinct rows' cache to the batch
            index = torch.tensor(rows, dtype=torch.long, device=logits.device)
            for layer in past.layers:
                layer.keys = layer.keys.index_select(0, index.to(layer.keys.device))
                layer.values = layer.values.index_select(0, index.to(layer.values.device))
            logits = logits.index_select(0, index)
        return past, logits

    def _batch_prefix(self, torch: Any, matches: list[tuple[_Entry | None, int]], used: list[int], cached: int,
                      device: Any) -> Any:
        """A cache ``cached`` columns wide: row ``u``'s first ``used[u]`` stored tokens, right-aligned."""
        from transformers import DynamicCache

        parts = [self.store.kv(entry, n) if entry is not None and n > 0 else None
                 for (entry, _), n in zip(matches, used)]
        sample = next(p for p in parts if p is not None)
        layers = []
        for i in range(len(sample[0])):
            heads, _, dim = sample[0][i].shape
            k = sample[0][i].new_zeros((len(parts), heads, cached, dim))
            v = sample[1][i].new_zeros((len(parts), heads, cached, dim))
            for u, part in enumerate(parts):
                if part is not None:
                    k[u, :, cached - used[u]:] = part[0][i]
                    v[u, :, cached - used[u]:] = part[1][i]
            layers.append((k.to(device), v.to(device)))
        return DynamicCache(ddp_cache_data=layers)

    def _keep(self, prompts: list[list[int]], past: Any, width: int, end: int) -> None:
        for u, p in enumerate(prompts):
            start = width - len(p)
            self.store.put(p, [layer.keys[u, :, start:end] for layer in past.layers],
                           [layer.values[u, :, start:end] for layer in past.layers])

    def remember(self, prompts: list[list[int]], outputs: list[list[int]], past: Any, width: int) -> None:
        """After decoding: keep each row's prompt and sampled tokens (all but the last, never fed to the model)."""
        if not self._verified or self.refused is not None:
            return
        for i, (p, out) in enumerate(zip(prompts, outputs)):
            fed = len(out) - 1
            if fed <= 0:
                continue
            start = width - len(p)
            self.store.put(list(p) + list(out[:-1]), [layer.keys[i, :, start:width + fed] for layer in past.layers],
                           [layer.values[i, :, start:width + fed] for layer in past.layers])


def _left_padded(torch: Any, prompts: list[list[int]], width: int, pad_id: int, device: Any) -> tuple[Any, Any, Any]:
    """Input ids, attention mask and position ids of ``prompts`` left-padded to ``width``."""
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = torch.tensor(p, dtype=torch.long)
        attention[i, width - len(p):] = 1
    ids, attention = ids.to(device), attention.to(device)
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    return ids, attention, positions


def kv_bytes_per_token(model: Any) -> int:
    """Bytes of keys and values one token takes in the cache (for sizing ``prefix_cache_bytes``)."""
    config = model.config.get_text_config(decoder=True)
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    element = next(model.parameters()).element_size()
    return int(2 * config.num_hidden_layers * heads * dim * element)


__all__ = ["DEFAULT_MAX_BYTES", "PrefixCache", "PrefixStore", "kv_bytes_per_token", "refusal",
           "weights_fingerprint"]

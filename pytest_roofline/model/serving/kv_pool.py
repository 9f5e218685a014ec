"""vLLM V1's KV block pool with its prefix cache, block by block (``vllm/v1/core/block_pool.py`` and
``kv_cache_manager.py`` at v0.32.0), for the simulator of a V1 engine with prefix caching on (its default).

What it reproduces:

* **The free queue.** Free blocks wait in one queue; a new block is taken from its head. A request's blocks are
  freed tail first (``SingleTypeKVCacheManager.free``: "reversed"); of those, the cached ones go to the queue's
  end, to be reused last (LRU), and the others (a partial last block) to its head, to be reused first
  (``BlockPool.free_blocks``: ``append_n`` and ``prepend_n``; earlier releases appended both). A freed cached block
  keeps its content: until it is taken again it can still be hit.
* **What is cached.** A block is cached (its content findable) as soon as it is full and scheduled:
  ``allocate_slots`` caches the full blocks of ``num_computed_tokens + num_new_tokens`` when it allocates, so a
  block scheduled this step is a hit for a request looked up later in the same step. A cached block taken from the
  free queue loses its content (evicted). Two blocks may hold the same content (two requests that missed each
  other); a look-up finds the first.
* **A look-up** (``get_computed_blocks``) is the longest run of the request's leading blocks that are cached, at
  most ``num_tokens - 1`` tokens (the last token is always computed). A hit block that sits in the free queue
  (no request holds it) is taken out of the queue when the request is admitted, so admitting it costs a free
  block (``get_num_blocks_to_allocate``: ``num_evictable_blocks``); a block another request holds costs nothing.

A block's content is one of two kinds, standing for vLLM's chained block hashes (two requests share block ``j``
exactly when their first ``(j + 1) x block_size`` tokens are the same): block ``j`` of the prefix every request
of the point shares (:meth:`PrefixCachePool.cache_prefix`), or block ``j`` of one request's own tokens
(:meth:`PrefixCachePool.cache_own`), which only that request finds again, after a preemption.

Checked step by step against vLLM's own ``Scheduler`` and ``KVCacheManager`` with prefix caching on
(tests/integration/test_scheduler_equivalence.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

__all__ = ["PrefixCachePool"]

#: a block's content key: none; ``_PREFIX - j`` for the shared prefix's block j; ``own_key(i, j) >= 0`` otherwise
_NONE = -1
_PREFIX = -2
#: own keys pack (request, block) into one int: block j < 2**32 (a request of more tokens than that is not simulated)
_OWN_SHIFT = 32


def own_key(request: int, j: int) -> int:
    """The content key of block ``j`` of request ``request``'s own tokens."""
    return (request << _OWN_SHIFT) | j


class PrefixCachePool:
    """``num_blocks`` usable KV blocks of ``block_size`` tokens (vLLM's null block left out) with a prefix cache."""

    __slots__ = ("block_size", "num_blocks", "_fresh", "_front", "_queue", "_gen", "_free", "_ref", "_key",
                 "_prefix")

    def __init__(self, num_blocks: int, block_size: int) -> None:
        self.block_size = int(block_size)
        self.num_blocks = int(num_blocks)
        #: the queue's order, head first: the blocks with no content put in front (``_front``, the head its last
        #: item), then the blocks never used (``_fresh`` .. ``num_blocks - 1``, in order), then cached blocks as
        #: they were freed (``_queue``: (block, its generation when queued); a hit taken out of the middle bumps
        #: its block's generation, which voids the entry)
        self._front: list[int] = []
        self._fresh = 0
        self._queue: deque[tuple[int, int]] = deque()
        self._gen = [0] * self.num_blocks
        self._free = self.num_blocks
        self._ref = [0] * self.num_blocks
        self._key = [_NONE] * self.num_blocks
        #: shared-prefix block j -> the blocks that hold it, first cached first
        self._prefix: dict[int, list[int]] = {}

    @property
    def num_free(self) -> int:
        """Blocks in the free queue (never used, or freed, a cached one with its content still findable)."""
        return self._free

    def lookup(self, request: int, prefix_blocks: int, blocks: int, own: Sequence[int]) -> list[int]:
        """The cached blocks of the longest run of ``request``'s first ``blocks`` blocks that are cached: the
        shared prefix's first ``prefix_blocks`` wherever they are held, then its own, found only in the blocks
        ``own`` it held before (a preempted request's) and only if not taken since."""
        hits = []
        key = self._key
        for j in range(blocks):
            if j < prefix_blocks:
                holders = self._prefix.get(j)
                if not holders:
                    break
                hits.append(holders[0])
            else:
                if j >= len(own) or key[own[j]] != own_key(request, j):
                    break
                hits.append(own[j])
        return hits

    def evictable(self, blocks: Sequence[int]) -> int:
        """How many of ``blocks`` (hits) sit in the free queue: admitting them takes them out of it."""
        ref = self._ref
        return sum(1 for b in blocks if ref[b] == 0)

    def touch(self, blocks: Sequence[int]) -> None:
        """A request takes ``blocks`` (its hits): each held once more, out of the free queue if it was there."""
        for b in blocks:
            if self._ref[b] == 0:  # a cached block in the queue's back part: its entry is voided
                self._gen[b] += 1
                self._free -= 1
            self._ref[b] += 1

    def allocate(self, n: int) -> list[int]:
        """``n`` blocks from the head of the free queue, each losing whatever content it held."""
        if n > self._free:
            raise ValueError(f"{n} blocks asked of a free queue of {self._free}")
        self._free -= n
        front, ref = self._front, self._ref
        out: list[int] = []
        if front:
            take = min(n, len(front))
            out = front[:-take - 1:-1] if take < len(front) else front[::-1]
            del front[len(front) - take:]
        fresh = min(n - len(out), self.num_blocks - self._fresh)
        if fresh > 0:
            out.extend(range(self._fresh, self._fresh + fresh))
            self._fresh += fresh
        if len(out) < n:
            queue, gen, key = self._queue, self._gen, self._key
            for _ in range(n - len(out)):
                b, g = queue.popleft()
                while g != gen[b]:
                    b, g = queue.popleft()
                gen[b] += 1
                k = key[b]
                if k <= _PREFIX:
                    holders = self._prefix[_PREFIX - k]
                    holders.remove(b)
                    if not holders:
                        del self._prefix[_PREFIX - k]
                key[b] = _NONE
                out.append(b)
        for b in out:
            ref[b] = 1
        return out

    def cache_prefix(self, block: int, j: int) -> None:
        """``block`` is full with the shared prefix's block ``j``: findable by every request from now on."""
        if self._key[block] == _NONE:
            self._key[block] = _PREFIX - j
            self._prefix.setdefault(j, []).append(block)

    def cache_own(self, blocks: Sequence[int], request: int, first: int, end: int) -> None:
        """``blocks[first:end]`` are full with blocks ``first`` .. ``end - 1`` of ``request``'s own tokens."""
        key, base = self._key, request << _OWN_SHIFT
        for j in range(first, end):
            b = blocks[j]
            if key[b] == _NONE:
                key[b] = base | j

    def free(self, blocks: Sequence[int]) -> None:
        """A request lets go of ``blocks`` (in its order), tail first: each block no request holds any more goes to
        the end of the queue with its content (cached) or to its head (no content), in that order."""
        uncached = []
        ref, key = self._ref, self._key
        for b in reversed(blocks):
            ref[b] -= 1
            if ref[b] == 0:
                self._free += 1
                if key[b] == _NONE:
                    uncached.append(b)
                else:
                    self._queue.append((b, self._gen[b]))
        self._front.extend(reversed(uncached))  # uncached[0] ends at the head

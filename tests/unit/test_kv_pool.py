"""The prefix-cache block pool (model/serving/kv_pool.py): vLLM 0.32's free queue and prefix cache, by known
answers worked out from vllm/v1/core/block_pool.py (free_blocks: cached blocks appended, the rest prepended, a
request's blocks tail first; get_new_blocks: from the head, evicting), and what the simulator does with it."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_roofline.model import serving as sv
from pytest_roofline.model.serving.kv_pool import PrefixCachePool
from pytest_roofline.model.setup import build_setup


@pytest.fixture(scope="module")
def a100():
    return build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b",
                       engine={"name": "vllm", "version": "0.26.0"}, workload={"input_len": 512, "output_len": 256})


def test_new_blocks_come_from_the_head_in_order():
    pool = PrefixCachePool(6, 16)
    assert pool.allocate(2) == [0, 1]
    assert pool.allocate(1) == [2]
    assert pool.num_free == 3
    with pytest.raises(ValueError, match="4 blocks asked of a free queue of 3"):
        pool.allocate(4)


def test_freed_blocks_without_content_are_reused_first_and_cached_ones_last():
    pool = PrefixCachePool(8, 16)
    a = pool.allocate(3)  # 0, 1, 2: blocks 0 and 1 full (cached), 2 partial
    pool.cache_own(a, 7, 0, 2)
    pool.free(a)  # tail first: 2 (no content) to the head; 1 then 0 to the end
    assert pool.num_free == 8
    # head: 2, then the never-used 3..7, then the cached 1 and 0 (freed tail first)
    assert pool.allocate(8) == [2, 3, 4, 5, 6, 7, 1, 0]


def test_a_cached_block_is_found_until_it_is_taken_again():
    pool = PrefixCachePool(4, 16)
    a = pool.allocate(2)
    pool.cache_prefix(a[0], 0)
    pool.cache_prefix(a[1], 1)
    assert pool.lookup(0, 2, 2, []) == a  # held by a request: found, costs nothing
    assert pool.evictable(a) == 0
    pool.free(a)
    assert pool.lookup(5, 2, 2, []) == a  # freed: still found, now in the free queue
    assert pool.evictable(a) == 2
    pool.allocate(2)  # the never-used 2 and 3
    assert pool.lookup(5, 2, 2, []) == a
    pool.allocate(1)  # the queue's next block is a[1] (freed first): its content is gone, and the run stops there
    assert pool.lookup(5, 2, 2, []) == [a[0]]


def test_a_hit_taken_from_the_free_queue_leaves_it():
    pool = PrefixCachePool(4, 16)
    a = pool.allocate(1)
    pool.cache_prefix(a[0], 0)
    pool.free(a)
    assert pool.num_free == 4
    pool.touch(a)
    assert pool.num_free == 3
    assert pool.allocate(3) == [1, 2, 3]  # the hit is skipped, not handed out again
    pool.free(a)
    assert pool.allocate(1) == a


def test_own_blocks_are_found_only_by_their_request_and_only_where_it_left_them():
    pool = PrefixCachePool(6, 16)
    a = pool.allocate(3)
    pool.cache_own(a, 4, 0, 3)
    pool.free(a)
    assert pool.lookup(4, 0, 3, a) == a
    assert pool.lookup(9, 0, 3, a) == []  # another request's content
    assert pool.lookup(4, 0, 2, a) == a[:2]  # at most the blocks asked for (num_tokens - 1 tokens)
    pool.allocate(4)  # 3, 4, 5, then a[2] (freed first) is taken: the run of a[0], a[1] is left
    assert pool.lookup(4, 0, 3, a) == a[:2]


def _closed(n, c, inp, out, **kw):
    return sv.Workload(input_len=sv.LengthDist(inp), output_len=sv.LengthDist(out), num_requests=n, concurrency=c,
                       **kw)


def test_a_shared_prefix_is_held_once(a100):
    """Eight requests sharing a 480-token prefix (30 blocks) of 512-token prompts hold the prefix once: the peak
    KV use is the prefix plus each request's own blocks, not eight prefixes (what the pool without sharing
    allocated)."""
    eng = dataclasses.replace(sv.EngineConfig.from_setup(a100), num_gpu_blocks=2000, async_scheduling=False)
    shared = sv.simulate(a100, _closed(8, 8, 512, 16, shared_prefix_len=480), engine=eng)
    alone = sv.simulate(a100, _closed(8, 8, 512, 16), engine=eng)
    usable = eng.usable_blocks
    # 8 requests of 512 + 16 tokens: 33 blocks each, 264 without sharing; with it 30 shared + 8 x 3 own = 54
    assert round(alone.max_kv_usage * usable) == 264
    assert round(shared.max_kv_usage * usable) == 54
    assert shared.prefix_cache_hit_rate == pytest.approx(7 * 480 / (8 * 512))


def test_a_preempted_request_resumes_on_what_is_left_of_its_blocks(a100):
    """With prefix caching (vLLM V1's default) a preempted request finds its own blocks that nobody took since,
    and recomputes only the rest: fewer prefill tokens than a full recompute (prefix caching off)."""
    base = dataclasses.replace(sv.EngineConfig.from_setup(a100), num_gpu_blocks=200, async_scheduling=False)
    w = _closed(40, 16, 512, 256)
    on = sv.simulate(a100, w, engine=base, _bulk=False, trace=(t_on := []))
    off = sv.simulate(a100, w, engine=dataclasses.replace(base, enable_prefix_caching=False), _bulk=False,
                      trace=(t_off := []))
    assert on.preemptions > 0 and off.preemptions > 0
    prefilled_on = sum(s.prefill_tokens for s in t_on)
    prefilled_off = sum(s.prefill_tokens for s in t_off)
    assert prefilled_on < prefilled_off

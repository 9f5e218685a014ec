"""``prefix_cache_hit_rate`` has a serving-model value (trial s23b M3): the prefix cache block by block
(model/serving/kv_pool.py), the tokens each request found cached when admitted ÷ its prompt tokens. Known answers on
the CPU engine, whose KV blocks are 128 tokens: 384-token prompts sharing 256 tokens (two whole blocks), the
warm-up having computed them: every request finds 256 of 384, 2/3; sharing 64 tokens (half a block): none."""

from __future__ import annotations

import pytest

from pytest_roofline import scoring
from pytest_roofline.format.spec import loads_spec

FILE = ("hardware: cpu\nmodel: roofline-tiny\nengine: {name: vllm, version: \"0.32.0\", cpu_kvcache_space: 1 GiB}\n"
        "workload: {input_len: 384, output_len: 16, shared_prefix_len: %d}\nsweep: {concurrency: [4], warmup: 4}\n"
        "predictions:\n  - {id: hits, quantity: prefix_cache_hit_rate, at: {concurrency: 4}, predicted: model}\n")


@pytest.mark.parametrize(("shared", "rate"), [(256, 2 / 3), (64, 0.0)])
def test_the_hit_rate_has_the_pools_value(shared, rate):
    spec = loads_spec(FILE % shared, file="hits.yaml")
    [pred] = spec.predictions
    v = scoring.score(spec, pred, "math")
    assert v.serving_value == pytest.approx(rate, abs=1e-12)

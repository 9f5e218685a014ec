"""Invariants of the analytical model, over generated inputs (hypothesis)."""

from __future__ import annotations

import math

from hypothesis import assume, given
from hypothesis import strategies as st

from pytest_roofline.model import analytical as an


def pos(lo: float, hi: float):
    return st.floats(min_value=lo, max_value=hi, allow_nan=False, allow_infinity=False)


weight_bytes = pos(1e8, 1e12)
flop_per_token = pos(1e8, 1e12)
kv_bytes_per_seq = pos(1e4, 1e10)
bandwidth = pos(1e10, 1e13)
peak = pos(1e12, 1e16)
batch = st.integers(min_value=1, max_value=4096)


def model(w, f, kv, bw, pk):
    return dict(weight_bytes=w, flop_per_token=f, kv_bytes_per_seq=kv, hbm_bytes_per_s=bw, peak_flop_per_s=pk)


@given(weight_bytes, flop_per_token, kv_bytes_per_seq, bandwidth, peak, batch, batch)
def test_intensity_below_asymptote_and_increasing(w, f, kv, bw, pk, b1, b2):
    assume(b1 != b2)
    lo, hi = sorted((b1, b2))
    m = model(w, f, kv, bw, pk)
    s_lo, s_hi = an.decode_step(lo, **m), an.decode_step(hi, **m)
    asymptote = an.intensity_asymptote_flop_per_byte(f, kv)
    assert s_lo.intensity_flop_per_byte < asymptote
    assert s_hi.intensity_flop_per_byte < asymptote
    assert s_hi.intensity_flop_per_byte > s_lo.intensity_flop_per_byte
    assert s_lo.intensity_flop_per_byte < s_lo.weight_only_intensity_flop_per_byte


@given(weight_bytes, flop_per_token, kv_bytes_per_seq, bandwidth, peak, batch, batch)
def test_throughput_increasing_and_under_both_roofs(w, f, kv, bw, pk, b1, b2):
    assume(b1 != b2)
    lo, hi = sorted((b1, b2))
    m = model(w, f, kv, bw, pk)
    s_lo, s_hi = an.decode_step(lo, **m), an.decode_step(hi, **m)
    rel = 1e-12
    # non-decreasing everywhere; strictly increasing while memory-bound
    assert s_hi.throughput_tok_per_s >= s_lo.throughput_tok_per_s * (1 - rel)
    if s_hi.bound == "memory":
        assert s_hi.throughput_tok_per_s > s_lo.throughput_tok_per_s
    for s in (s_lo, s_hi):
        assert s.throughput_tok_per_s < an.throughput_asymptote_tok_per_s(bw, kv)
        assert s.throughput_tok_per_s <= an.compute_roof_tok_per_s(pk, f) * (1 + rel)
        assert s.per_request_tok_per_s * s.batch == s.throughput_tok_per_s or math.isclose(
            s.per_request_tok_per_s * s.batch, s.throughput_tok_per_s, rel_tol=1e-12)


@given(weight_bytes, flop_per_token, kv_bytes_per_seq, bandwidth, peak, batch)
def test_step_time_is_the_max_of_both_terms(w, f, kv, bw, pk, b):
    s = an.decode_step(b, **model(w, f, kv, bw, pk))
    assert s.t_step_s >= s.t_mem_s and s.t_step_s >= s.t_comp_s
    assert s.t_step_s in (s.t_mem_s, s.t_comp_s)
    assert (s.bound == "compute") == (s.t_comp_s > s.t_mem_s)
    # the closed forms agree with the step
    assert math.isclose(s.t_mem_s, an.t_mem_intercept_s(w, bw) + b * an.t_mem_per_seq_s(kv, bw), rel_tol=1e-9)
    assert math.isclose(s.t_comp_s, b * an.t_comp_per_seq_s(f, pk), rel_tol=1e-9)


@given(weight_bytes, flop_per_token, kv_bytes_per_seq, bandwidth, peak)
def test_half_saturation_gives_half_the_asymptote(w, f, kv, bw, pk):
    b_half = an.half_saturation_batch(w, kv)
    assume(b_half > 0)
    s = an.decode_step(b_half, **model(w, f, kv, bw, pk))
    assume(s.bound == "memory")
    assert math.isclose(s.throughput_tok_per_s, an.throughput_asymptote_tok_per_s(bw, kv) / 2, rel_tol=1e-9)
    assert math.isclose(s.kv_total_bytes, w, rel_tol=1e-9)


@given(weight_bytes, flop_per_token, st.one_of(st.just(0.0), kv_bytes_per_seq), bandwidth, peak)
def test_knee_none_iff_asymptote_at_or_below_ridge(w, f, kv, bw, pk):
    m = model(w, f, kv, bw, pk)
    knee = an.roofline_knee(**m)
    asymptote = an.intensity_asymptote_flop_per_byte(f, kv)
    ridge = an.ridge_flop_per_byte(pk, bw)
    assert (knee.batch is None) == (asymptote <= ridge)
    assert knee.reason
    if knee.batch is None:
        assert knee.reason.startswith("no knee")
    else:
        assert knee.batch > 0
        assert knee.batch >= knee.weight_only_batch * (1 - 1e-9)  # KV traffic only pushes the knee out
        at = an.decode_step(knee.batch, **m)
        assert math.isclose(at.t_comp_s, at.t_mem_s, rel_tol=1e-6)
    if kv > 0:
        ctx_max = an.max_context_for_knee_tokens(flop_per_token=f, kv_bytes_per_token=kv, hbm_bytes_per_s=bw,
                                                 peak_flop_per_s=pk)
        # max_context is expressed per unit of the kv argument: a knee exists iff 1 "token" of kv is below it
        if not math.isclose(ctx_max, 1.0, rel_tol=1e-9):
            assert (knee.batch is not None) == (ctx_max > 1.0)


@given(st.lists(st.integers(min_value=0, max_value=100_000), min_size=1, max_size=64))
def test_padding_ratio_in_unit_interval(lengths):
    assume(max(lengths) > 0)
    p = an.static_batch_padding(lengths)
    assert 0 <= p.padded_ratio < 1
    assert p.allocated_slots == p.useful_tokens + p.padded_slots
    assert (p.padded_ratio == 0) == (min(lengths) == max(lengths))


@given(pos(1e-6, 1e6), pos(1e-6, 1e6))
def test_littles_law_identity(throughput, latency):
    l_value = an.littles_law_l(throughput, latency)
    assert math.isclose(l_value / throughput, latency, rel_tol=1e-12)
    assert math.isclose(l_value / latency, throughput, rel_tol=1e-12)


@given(pos(0.1, 1e4), st.integers(min_value=2, max_value=300), pos(0.001, 0.999))
def test_erlang_quantile_inverts_the_cdf(rate, target_batch, q):
    t = an.erlang_wait_quantile_s(rate, target_batch, q)
    assert t > 0
    assert math.isclose(an.erlang_cdf(t, rate, target_batch - 1), q, abs_tol=1e-9)


@given(pos(1e-4, 1.0), st.integers(min_value=1, max_value=512))
def test_deterministic_wait_mean_is_half_the_max(spacing, target_batch):
    w = an.deterministic_aggregation_wait(spacing, target_batch)
    assert math.isclose(w.mean_s, w.max_s / 2, rel_tol=1e-9, abs_tol=1e-15)
    assert math.isclose(w.max_s, an.poisson_first_wait_s(1 / spacing, target_batch), rel_tol=1e-9, abs_tol=1e-15)


@given(st.integers(1, 4096), st.integers(1, 16384), st.integers(1, 16384))
def test_projection_activations_only_lower_intensity(b, k, m):
    p = an.projection_traffic(b, k, m)
    assert p.intensity_flop_per_byte < p.weight_only_intensity_flop_per_byte
    assert 0 < p.activation_share_of_traffic < 1


@given(pos(1e9, 2e11), pos(0.5, 1.0), pos(0, 1e11), st.integers(1, 10**6), st.sampled_from([16, 32, 128]))
def test_kv_accounting_blocks_fill_the_available_memory(total, util, weights, page, block_size):
    acc = an.vllm_kv_accounting(total_memory_bytes=total, gpu_memory_utilization=util, weight_bytes=weights,
                                activation_bytes=0, non_torch_bytes=0, cuda_graph_bytes=0,
                                bytes_per_block=page, block_size=block_size)
    assert acc.budget_bytes == math.ceil(total * util)
    if acc.available_kv_bytes >= 0:
        assert acc.num_blocks * page <= acc.available_kv_bytes < (acc.num_blocks + 1) * page
    else:
        assert acc.num_blocks == 0
    assert acc.kv_tokens == acc.num_blocks * block_size


@given(pos(1, 1e12), pos(1, 1e9), st.integers(0, 10_000))
def test_pool_sizing_consistent(pool, per_seq, b):
    s = an.kv_pool_sizing(pool, per_seq, b)
    assert s.fits == (b <= s.max_sequences) or math.isclose(b * per_seq, pool)
    assert s.shortfall_bytes == 0 or not s.fits

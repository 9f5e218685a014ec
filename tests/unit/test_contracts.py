"""The typed contracts between the layers: verdict status/mode, quantity and prediction kinds as enums; the
results file's records as TypedDicts; the Measurement, MeasurementProvider and Target protocols.

The enums are str-valued, so what a user reads (JSON, JUnit properties, the terminal table) is the same text as
before; these tests pin that down, and that each implementation offers what its protocol declares (mypy checks
the signatures statically: `python -m mypy`)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from pathlib import Path

import pytest
from support.paths import DAY3_RESULTS

from pytest_roofline.errors import PointError
from pytest_roofline.format.spec import PredictedKind, Prediction, Spec, loads_spec
from pytest_roofline.measure.results import RecordedMeasurement, ResultsData, RunSetup, load_results
from pytest_roofline.measure.target import MeasurementProvider, ReplayProvider, Target
from pytest_roofline.quantities import measurement as m
from pytest_roofline.quantities.registry import QUANTITIES, Quantity, QuantityKind, QuantityPoints
from pytest_roofline.scoring import Verdict, VerdictMode, VerdictStatus, score

SPEC = """
hardware: a100-sxm4-80gb
model: qwen3-8b
workload: {input_len: 1024, output_len: 1024, kv_context: 1000}
predictions:
  - {id: ridge, quantity: ridge_point, predicted: 153 FLOP/byte}
  - {id: ridge-far, quantity: ridge_point, predicted: 300 FLOP/byte}
  - {id: bound, quantity: decode_bound, at: {batch: 1}, predicted: memory}
  - {id: fits, quantity: kv_pool_fits, at: {pool: 30 GiB, batch: 4}, predicted: true}
  - {id: knee, quantity: knee_concurrency, predicted: model}
  - {id: ttft-knee, quantity: ttft_knee_concurrency, predicted: none}
  - {id: tput-c16, quantity: output_throughput, at: {concurrency: 16}, predicted: 1742 tok/s, tolerance: ±10%}
"""


@pytest.fixture(scope="module")
def spec() -> Spec:
    return loads_spec(SPEC)


def _pred(spec: Spec, pid: str) -> Prediction:
    return next(p for p in spec.predictions if p.id == pid)


# ---- verdicts ---------------------------------------------------------------------------------------------------
def test_verdict_status_and_mode_are_enums_that_read_as_before(spec: Spec) -> None:
    ok, miss = (score(spec, _pred(spec, i), "math") for i in ("ridge", "ridge-far"))
    assert ok.status is VerdictStatus.PASS and miss.status is VerdictStatus.FAIL
    assert ok.mode is VerdictMode.MATH
    assert ok.status == "pass" and f"{miss.status}" == "fail" and miss.status.upper() == "FAIL"
    d = miss.to_dict()
    # plain str on the way out: it travels on pytest reports, across xdist (execnet refuses enum members)
    assert type(d["status"]) is str and type(d["mode"]) is str
    assert json.loads(json.dumps(d))["status"] == "fail"
    text = miss.explain()
    assert text.startswith("ridge-far: ridge_point [math]\n") and "\n  verdict   : FAIL — model " in text


def test_verdict_dict_crosses_xdist() -> None:
    execnet = pytest.importorskip("execnet")
    spec = loads_spec(SPEC)
    d = score(spec, _pred(spec, "ridge"), "math").to_dict()
    assert execnet.loads(execnet.dumps(d)) == d


def test_a_scored_verdict_is_final(spec: Spec) -> None:
    v = score(spec, _pred(spec, "ridge"), "math")
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.status = VerdictStatus.FAIL  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.reason = "edited later"
    assert v.status is VerdictStatus.PASS
    # a copy with changes is a new, unfinished verdict
    assert dataclasses.replace(v, reason="x").reason == "x"


def test_verdict_fields_take_the_values_by_name_and_refuse_others() -> None:
    v = Verdict(id="a", quantity="ridge_point", dimension="intensity", mode="measured", status="skip", reason="")
    assert v.status is VerdictStatus.SKIP and v.mode is VerdictMode.MEASURED
    with pytest.raises(ValueError):
        Verdict(id="a", quantity="q", dimension="count", mode="math", status="passed", reason="")
    with pytest.raises(ValueError):
        Verdict(id="a", quantity="q", dimension="count", mode="gpu", status="pass", reason="")


def test_error_verdict_for_a_point_error_keeps_the_log_tail(spec: Spec) -> None:
    pred = _pred(spec, "tput-c16")
    v = Verdict.for_error(pred, PointError("point closed-c16 could not be measured: engine died", "OOM killed"),
                          mode="measured")
    assert (v.status, v.mode, v.dimension) == (VerdictStatus.ERROR, VerdictMode.MEASURED, "throughput")
    assert v.reason == "point closed-c16 could not be measured: engine died" and v.log_tail == "OOM killed"
    assert (v.file, v.line) == (pred.file, pred.line)
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.status = VerdictStatus.PASS  # type: ignore[misc]


def test_error_verdict_for_an_invalid_prediction() -> None:
    spec = loads_spec("hardware: a100-sxm4-80gb\nmodel: qwen3-8b\npredictions:\n"
                      "  - {id: typo, quantity: ridge_pointt, predicted: 153 FLOP/byte}\n")
    pred = spec.predictions[0]
    assert pred.error is not None
    v = Verdict.for_error(pred, pred.error, mode="math")
    assert v.status is VerdictStatus.ERROR and v.dimension == "count" and "ridge_pointt" in v.reason


# ---- kinds --------------------------------------------------------------------------------------------------------
def test_quantity_kinds_and_points_are_enums() -> None:
    assert all(isinstance(q.kind, QuantityKind) for q in QUANTITIES.values())
    assert all(q.points is None or isinstance(q.points, QuantityPoints) for q in QUANTITIES.values())
    assert QUANTITIES["decode_bound"].kind is QuantityKind.ENUM
    assert QUANTITIES["kv_pool_fits"].kind is QuantityKind.BOOL
    assert QUANTITIES["knee_concurrency"].kind is QuantityKind.OPTIONAL_NUMBER
    assert QUANTITIES["knee_concurrency"].points is QuantityPoints.ALL
    assert QUANTITIES["ttft_p99"].points is QuantityPoints.AT and QUANTITIES["ttft_p99"].kind == "number"
    assert Quantity("x", "count", "d", kind="bool", points="batch1").kind is QuantityKind.BOOL  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Quantity("x", "count", "d", kind="boolean")  # type: ignore[arg-type]


def test_prediction_kinds(spec: Spec) -> None:
    kinds = {p.id: p.predicted.kind for p in spec.predictions}
    assert kinds == {"ridge": PredictedKind.NUMBER, "ridge-far": PredictedKind.NUMBER, "bound": PredictedKind.WORD,
                     "fits": PredictedKind.BOOL, "knee": PredictedKind.MODEL, "ttft-knee": PredictedKind.NONE,
                     "tput-c16": PredictedKind.NUMBER}
    assert _pred(spec, "fits").predicted.value is True and _pred(spec, "bound").predicted.value == "memory"


# ---- the results file's records ----------------------------------------------------------------------------------
def _keys(td: type) -> set[str]:
    return set(typing.get_type_hints(td))


def test_the_typed_records_cover_the_recorded_file() -> None:
    """Every key the recorded notebook run holds is declared in the TypedDicts (so the types document the file)."""
    data = load_results(DAY3_RESULTS)
    assert set(data) <= _keys(ResultsData)
    assert set(data["setup"]) <= _keys(RunSetup)
    assert data["engine_report"] is not None and set(data["engine_report"]) <= _keys(m.EngineReport)
    for p in data["points"]:
        assert set(p) <= _keys(m.PointRecord), p["id"]
        assert set(p["client"]) <= _keys(m.ClientStats), p["id"]
        for key in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "per_request_output_tok_s"):
            assert set(p["client"].get(key) or {}) <= _keys(m.Distribution)
        assert set(m.server_stats(p)) <= _keys(m.ServerStats)


def test_accessors_read_missing_and_null_alike() -> None:
    transcribed: m.PointRecord = {"id": "closed-c8", "concurrency": 8, "client": {"ttft_ms": {"p50": 75.0}},
                                  "server": None}
    assert m.client_value(transcribed, "ttft_ms", "p50") == 75.0
    assert m.client_value(transcribed, "ttft_ms", "p99") is None
    assert m.client_value(transcribed, "tpot_ms", "p50") is None
    assert m.server_value(transcribed, "queue_ms", "mean") is None and m.server_stats(transcribed) == {}
    assert m.prefix_cache_hit_rate(transcribed) is None
    assert m.point_mode(transcribed) is m.PointMode.CLOSED and m.is_sweep_point(transcribed)
    assert m.concurrency(transcribed) == 8 and m.point_id(transcribed) == "closed-c8"
    assert not m.is_sweep_point({"id": "batch1", "concurrency": 1})
    assert not m.is_sweep_point({"id": "open-r2", "mode": "open", "rate_req_s": 2.0, "concurrency": None})
    assert m.point_mode({"mode": "spiky"}) is None


# ---- protocols ----------------------------------------------------------------------------------------------------
def _members(proto: type) -> set[str]:
    return {n for n in dir(proto) if not n.startswith("_")}


def test_recorded_and_replayed_measurements_are_measurements() -> None:
    rec = RecordedMeasurement(load_results(DAY3_RESULTS))
    assert isinstance(rec, m.Measurement)
    assert m.point_id(rec.point(concurrency=16)) == "closed-c16"
    provider = ReplayProvider(rec)
    assert isinstance(provider, MeasurementProvider)
    assert provider.for_spec(loads_spec(SPEC)) is rec and provider.detected_gpu is None


def test_live_provider_and_measurement_implement_their_protocols(tmp_path: Path) -> None:
    from pytest_roofline.measure import sweep

    provider = sweep.Measurements(mode="engine", gpu="cpu", endpoint=None, endpoint_key_env=None, out_dir=tmp_path,
                                  reanchor=False, plans={})
    assert isinstance(provider, MeasurementProvider) and provider.detected_gpu is None
    run = sweep._Run(loads_spec(SPEC), [])
    assert isinstance(run.measurement(), m.Measurement)


@pytest.mark.parametrize("cls_name", ["Engine", "Endpoint"])
def test_engine_and_endpoint_offer_every_target_member(cls_name: str) -> None:
    from pytest_roofline.measure import engine

    cls = getattr(engine, cls_name)
    # Engine declares every member on the class; an Endpoint sets base_url when it is made (no connection yet)
    obj = cls if cls_name == "Engine" else engine.Endpoint("http://127.0.0.1:9")
    missing = {n for n in _members(Target) if inspect.getattr_static(obj, n, None) is None
               and n not in getattr(cls, "__annotations__", {})}
    assert not missing, f"{cls_name} lacks {missing}"
    for name in ("check_alive", "log_tail", "report", "launch_info", "stop", "is_alive"):
        assert callable(getattr(cls, name))

"""A replayed results file that is not a measurement never passes anything and never ends pytest in a traceback.

The base is the project's own recorded CPU-engine run (``predictions/recorded/cpu-tiny-2026-12-01.results.json``),
each case one mutation of it: NaN figures, numbers as strings, ``client`` as a string, a point as a string,
``engine_report`` as a list, a directory, an unreadable file, non-UTF-8 bytes, 100k-deep nesting. Each is refused
by ``load_results`` with the file and the field (``--replay``: a usage error, exit 4), or — where a provider
serves such a figure without the reader (a live sweep, a hand-built measurement) — scored as an ERROR naming it.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.paths import RECORDED
from support.pytest_run import NO_HTML
from support.recordings import starved_recording_path

from pytest_roofline.errors import PointError, ResultsError
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.results import RecordedMeasurement, load_results
from pytest_roofline.quantities import registry as qreg
from pytest_roofline.quantities.analysis import Thresholds
from pytest_roofline.scoring import VerdictStatus, score

BASE = starved_recording_path("cpu-tiny")

YAML = """\
hardware: cpu
model: roofline-tiny
engine: {name: vllm, version: "0.32.0", cpu_kvcache_space: 1 GiB, args: {max_model_len: 1024, max_num_seqs: 8}}
workload: {input_len: 128, output_len: 64}
sweep: {concurrency: [1, 2, 4, 8, 16, 32], requests_per_point: 16x, warmup: 4}
thresholds: {ttft_knee_ratio: 20}   # the recorded p99/p50 peaks at 9.0 (C=1): no TTFT knee, "none" passes
predictions:
  - id: knee
    quantity: ttft_knee_concurrency
    predicted: none
  - id: tput-c1
    quantity: output_throughput
    at: {concurrency: 1}
    predicted: 328 tok/s
    tolerance: ±10%
  - id: kv-tokens
    quantity: kv_cache_tokens
    predicted: 2,097,152
    tolerance: exact
"""


def _base() -> dict[str, Any]:
    return json.loads(BASE.read_text())


def _nan_ttft(d: dict[str, Any]) -> None:
    for p in d["points"]:
        p["client"]["ttft_ms"]["p50"] = float("nan")
        p["client"]["ttft_ms"]["p99"] = float("nan")


def _string_number(d: dict[str, Any]) -> None:
    d["points"][0]["client"]["output_throughput_tok_s"] = "123.4"


def _client_string(d: dict[str, Any]) -> None:
    d["points"][0]["client"] = "fast"


def _point_string(d: dict[str, Any]) -> None:
    d["points"][0] = "closed-c1"


def _engine_report_list(d: dict[str, Any]) -> None:
    d["engine_report"] = [1, 2]


def _inf_blocks(d: dict[str, Any]) -> None:
    d["engine_report"]["num_gpu_blocks"] = float("inf")


MUTATIONS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "nan-figures": (_nan_ttft, "points[0].client.ttft_ms.p50: nan is not a measured value (a figure that was not "
                               "measured is null, with the reason)"),
    "number-as-string": (_string_number, "points[0].client.output_throughput_tok_s: expected a number or null, "
                                         "got the string '123.4'"),
    "client-as-string": (_client_string, "points[0].client: expected an object or null, got the string 'fast'"),
    "point-as-string": (_point_string, "points[0]: expected an object (a sweep point), got the string 'closed-c1'"),
    "engine-report-list": (_engine_report_list, "engine_report: expected an object or null, got a list"),
    "infinite-blocks": (_inf_blocks, "engine_report.num_gpu_blocks: inf is not a measured value (a figure that was "
                                     "not measured is null, with the reason)"),
}


def _write(path: Path, mutate: Callable[[dict[str, Any]], None]) -> Path:
    d = _base()
    mutate(d)
    path.write_text(json.dumps(d))  # Python's json writes NaN / Infinity, as a careless writer would
    return path


# ---- the reader ------------------------------------------------------------------------------------------------
def test_the_recorded_runs_are_read_unchanged() -> None:
    for f in sorted(RECORDED.glob("*.results.json")):
        assert load_results(f)["points"] == json.loads(f.read_text())["points"]


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_a_bad_field_is_refused_naming_the_file_and_the_field(tmp_path: Path, case: str) -> None:
    mutate, message = MUTATIONS[case]
    path = _write(tmp_path / "r.json", mutate)
    with pytest.raises(ResultsError) as info:
        load_results(path)
    assert str(info.value) == f"{path}: {message}"


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="is a directory, not a results file"):
        load_results(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a mode-000 file")
def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "r.json"
    p.write_text(BASE.read_text())
    p.chmod(0)
    try:
        with pytest.raises(ResultsError, match="cannot be read \\(permission denied\\)"):
            load_results(p)
    finally:
        p.chmod(0o600)


def test_a_permission_error_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same as a mode-000 file, where the tests run as root (root reads it)."""
    p = tmp_path / "r.json"
    p.write_text(BASE.read_text())

    def denied(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(ResultsError, match="cannot be read \\(permission denied\\)"):
        load_results(p)


def test_non_utf8_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "r.json"
    p.write_bytes(b'{"schema": "pytest-roofline/results", "x": "\xff"}')
    with pytest.raises(ResultsError, match=r"not UTF-8 text \(byte 44: b'\\xff'\); a results file is UTF-8 JSON"):
        load_results(p)


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "r.json"
    p.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ResultsError, match="nested too deeply"):
        load_results(p)


# ---- through pytest: a usage error, exit 4, never a traceback ------------------------------------------------------
def _replay(pytester: pytest.Pytester, results: str) -> pytest.RunResult:
    pytester.makefile(".yaml", tiny=YAML)
    return pytester.runpytest_subprocess(*NO_HTML, "tiny.yaml", "--replay", results, timeout=120)


@pytest.mark.parametrize("case", ["nan-figures", "number-as-string", "engine-report-list", "point-as-string"])
def test_replay_of_a_bad_file_is_a_usage_error(pytester: pytest.Pytester, case: str) -> None:
    mutate, message = MUTATIONS[case]
    _write(pytester.path / "r.json", mutate)
    result = _replay(pytester, "r.json")
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: --replay: r.json: {message}" in err
    assert "Traceback" not in err + result.stdout.str() and "INTERNALERROR" not in err + result.stdout.str()


@pytest.mark.slow
def test_replay_of_a_directory_is_a_usage_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "runs").mkdir()
    result = _replay(pytester, "runs")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ERROR: --replay: runs: is a directory" in result.stderr.str()
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()


@pytest.mark.slow
def test_replay_of_the_good_file_passes_and_ends_with_the_summary(pytester: pytest.Pytester) -> None:
    """The control: the unmutated file scores (so the cases above fail for their mutation alone)."""
    (pytester.path / "r.json").write_text(BASE.read_text())
    result = _replay(pytester, "r.json")
    result.assert_outcomes(passed=3)


# ---- a provider that serves such figures without the reader: an ERROR naming the field ----------------------------
SPEC = loads_spec(YAML, file="tiny.yaml")


def _verdicts(data: dict[str, Any]) -> dict[str, Any]:
    meas = RecordedMeasurement(data)
    return {p.id: score(SPEC, p, "measured", meas) for p in SPEC.predictions}


def test_nan_figures_never_pass_the_knee() -> None:
    """A TTFT knee predicted "none" passed on NaN percentiles (NaN > 2 × NaN is false at every point)."""
    d = _base()
    _nan_ttft(d)
    v = _verdicts(d)["knee"]
    assert v.status is VerdictStatus.ERROR
    assert "client.ttft_ms.p50 is nan, not a measured value" in v.reason


@pytest.mark.parametrize("value", ["123.4", True, [1.0], float("nan"), float("inf")])
def test_a_throughput_that_is_not_a_number_is_an_error(value: Any) -> None:
    d = _base()
    d["points"][0]["client"]["output_throughput_tok_s"] = value
    v = _verdicts(d)["tput-c1"]
    assert v.status is VerdictStatus.ERROR
    assert "point closed-c1: client.output_throughput_tok_s is" in v.reason


def test_an_engine_report_list_is_an_error() -> None:
    d = _base()
    d["engine_report"] = [1, 2]
    v = _verdicts(d)["kv-tokens"]
    assert v.status is VerdictStatus.ERROR and "engine_report is a list" in v.reason


def test_the_good_file_passes_in_process() -> None:
    verdicts = _verdicts(_base())
    assert {k: v.status for k, v in verdicts.items()} == {k: VerdictStatus.PASS for k in verdicts}


def test_a_measured_nan_from_any_quantity_is_an_error() -> None:
    """The scorer's own guard: whatever a quantity's measure function returns, NaN is never compared."""
    pred = SPEC.predictions[1]
    q = pred.q
    nan_q = qreg.Quantity(q.name, q.dimension, q.description, at=q.at, model=q.model, points=q.points,
                          measure=lambda m, a, s, t: qreg.MeasuredValue(math.nan, ("closed-c1",)))
    pred2 = copy.copy(pred)
    original = qreg.QUANTITIES[q.name]
    qreg.QUANTITIES[q.name] = nan_q
    try:
        v = score(SPEC, pred2, "measured", RecordedMeasurement(_base()))
    finally:
        qreg.QUANTITIES[q.name] = original
    assert v.status is VerdictStatus.ERROR and "nan" in v.reason


def test_goodput_refuses_a_string_percentile() -> None:
    d = _base()
    d["points"][1]["client"]["tpot_ms"]["p99"] = "5"
    meas = RecordedMeasurement(d)
    with pytest.raises(PointError, match="point closed-c2: client.tpot_ms.p99 is '5'"):
        qreg.get_quantity("goodput").measure(meas, {"ttft": 1.0, "tpot": 1.0, "percentile": "p99"}, None,
                                             Thresholds())  # type: ignore[arg-type]

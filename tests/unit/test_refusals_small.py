"""The smaller refusals of issue 23: ``at: {concurrency: 1e40}`` (the fuzzer's OverflowError in model/workload.py)
and a sweep concurrency the serving model cannot simulate in bounded time are refused at their YAML line;
``roofline report`` on a prediction file holding ``1e999`` renders the error rows and exits non-zero (case 7.24);
the two per-point costs of ``roofline report`` on 10,000 files are paid once (case 9.39)."""

from __future__ import annotations

import pytest

from pytest_roofline import cli
from pytest_roofline.errors import SpecError
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.model.presets import get_model
from pytest_roofline.report import svg

HEAD = "hardware: a100-sxm4-80gb\nmodel: qwen3-8b\n"


def test_at_concurrency_1e40_is_refused_at_its_line():
    spec = loads_spec(
        HEAD + "predictions:\n  - id: p\n    quantity: output_throughput\n"
        "    at: {concurrency: 9999999999999999999999999999999999999999}\n    predicted: 5,060 tok/s\n",
        file="p.yaml",
    )
    [p] = spec.predictions
    assert p.error is not None and "at.concurrency" in str(p.error) and "outside [0, 10,000]" in str(p.error)
    assert p.error.line == 6


def test_a_sweep_concurrency_over_the_bound_is_refused():
    with pytest.raises(SpecError, match=r"sweep.concurrency values must be <= 10,000"):
        loads_spec(
            HEAD + "sweep: {concurrency: [1, 100000]}\npredictions:\n  - id: r\n    quantity: ridge_point\n"
            "    predicted: 153 FLOP/byte\n",
            file="p.yaml",
        )


def test_report_exits_non_zero_on_a_prediction_file_with_errors(tmp_path, capsys):
    f = tmp_path / "p.yaml"
    f.write_text(HEAD + "predictions:\n  - id: p\n    quantity: max_num_seqs\n    predicted: 1e999\n")
    rc = cli.main(["report", str(f), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert rc == 1 and (tmp_path / "r.html").is_file()  # the page is written, with the error row
    assert "too large for a number" in err and "1 prediction(s) with errors" in err


def test_active_param_count_is_worked_out_once_per_shape(monkeypatch):
    arch = get_model("qwen3-8b")
    first = arch.active_param_count()
    calls = []
    monkeypatch.setattr(type(arch), "layer_param_count", lambda *a, **k: calls.append(a) or 0)
    assert arch.active_param_count() == first and calls == []


def test_a_charts_subtitle_is_wrapped_once_per_subtitle_and_width():
    chart = svg.Chart(x=svg.Axis(0, 1), y=svg.Axis(0, 1), title="t", subtitle="a subtitle of several words " * 8)
    lines = chart._subtitle_lines()
    assert len(lines) > 1
    chart.__dict__["_wrapped"] = ("kept",)  # what px/py read on every later call: the stored wrap
    assert chart._subtitle_lines() == ["kept"]
    chart.subtitle = "another"  # a new subtitle is wrapped again
    assert chart._subtitle_lines() == ["another"]

"""``roofline calibrate`` after trial 22: TTFT-only points are not promised all three decode-step terms from two
loads (L4: two loads fix the step time's line in the batch size, two quantities), and the rms line says which
fitted values it is over (L6), with the residual lines read at the fitted constants themselves.

Expectations are worked out here: the step-time line (intercept and slope: two numbers for three terms), and the
log-residual of the printed values."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

from pytest_roofline import cli

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "predictions" / "recorded" / "cpu-tiny-2026-12-05.results.json"
SPEC = REPO / "predictions" / "cpu-tiny.yaml"
#: the wording the TPOT path already used (calibration._step_advice), now the one wording for all three terms
TWO_OF_THREE = "loads far apart part two of the three decode-step terms at most"


def _calibrate(capsys, results: Path, points: str) -> str:
    rc = cli.main(["calibrate", str(results), "--points", points, "--predictions", str(SPEC)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out + err


def _ttft_only(tmp_path: Path) -> Path:
    """The recorded run with every decode-side client figure removed (TPOT, ITL, E2E, per-request and aggregate
    output throughput): what a TTFT-only source reports."""
    doc = json.loads(RECORDED.read_text(encoding="utf-8"))
    out = copy.deepcopy(doc)
    for pt in out["points"]:
        client = pt["client"]
        for key in ("tpot_ms", "itl_ms", "e2e_ms", "per_request_output_tok_s", "output_throughput_tok_s",
                    "total_throughput_tok_s", "request_throughput_req_s"):
            client.pop(key, None)
    path = tmp_path / "ttft-only.results.json"
    path.write_text(json.dumps(out), encoding="utf-8")
    return path


def test_ttft_only_advice_says_two_loads_fix_two_of_the_three_step_terms(capsys, tmp_path):
    text = _calibrate(capsys, _ttft_only(tmp_path), "C=1")
    [advice] = [ln for ln in text.splitlines() if "two batch sizes far apart" in ln]
    assert "would identify two of hbm_efficiency, step_overhead_s, per_seq_overhead_s" in advice
    assert TWO_OF_THREE in advice and "at another context length" in advice
    assert "would identify hbm_efficiency, step_overhead_s, per_seq_overhead_s apart" not in advice
    # the TPOT path's advice (two of the three left) keeps the same wording
    text = _calibrate(capsys, RECORDED, "C=1")
    [advice] = [ln for ln in text.splitlines() if "two batch sizes far apart" in ln]
    assert TWO_OF_THREE in advice


def _residuals(text: str, label: str) -> dict[str, tuple[float, float]]:
    line = next(ln for ln in text.splitlines() if ln.startswith(f"  {label} "))
    return {m[1]: (float(m[2].replace(",", "")), float(m[3].replace(",", "")))
            for m in re.finditer(r"(tok/s|TPOT p50 ms|TTFT p50 ms) ([\d,.]+) vs ([\d,.]+)", line)}


def test_the_rms_line_names_the_fitted_values_it_is_over(capsys):
    text = _calibrate(capsys, RECORDED, "C=1")
    [rms] = [ln for ln in text.splitlines() if ln.startswith("rms log-residual")]
    assert "(of the fitted values only)" in rms
    assert "over 1 TPOT p50 ms value (the decode-step terms)" in rms
    assert "over 1 TTFT p50 ms value (the TTFT terms)" in rms
    assert "tok/s not fitted: its residuals above are not in it" in rms
    # each fitted metric's printed residual is the rms its stage reports (one value: |log(predicted ÷ measured)|,
    # to the printed 4 significant figures), read at the fitted constants (the TTFT line showed +0.7% against an rms
    # of 0 when it was read at a held constant moved)
    printed = _residuals(text, "C=1")
    stages = {metric: value for value, metric in re.findall(r"([\d.]+) over 1 (TPOT p50 ms|TTFT p50 ms) value", rms)}
    for metric in ("TPOT p50 ms", "TTFT p50 ms"):
        predicted, measured = printed[metric]
        weight = 0.5 if metric.startswith("TTFT") else 1.0  # calibration.DEFAULT_WEIGHTS
        assert abs(weight * math.log(predicted / measured)) <= float(stages[metric]) + 1e-3, metric
    # the throughput, not fitted, keeps a visible residual the rms is not over
    predicted, measured = printed["tok/s"]
    assert abs(predicted / measured - 1) > 0.01

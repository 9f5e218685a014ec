"""Issue 20: a measured figure a user can put next to ``vllm bench serve``'s, and verdicts that never rest on a
definition. Each test here is one of the newcomer's reproducers (``docs/explanation/measured-figures.md``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_roofline import cli
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
    assert "|0.00 -100%" in row  # measured 0 against the predicted TPOT: (0 − p) ÷ p
    rc, out, err = run(capsys, "predict", "--simulate", "predictions/cpu-tiny.yaml", "--results", str(results),
                       "--concurrency", "1", "--json")
    assert rc == 0, err
    row = json.loads(out.splitlines()[0])
    pred, meas = row["tpot_p50_ms"], row["measured"]["tpot_p50_ms"]
    assert meas == 0.0 and row["error"]["tpot_p50_ms"] == pytest.approx((0.0 - pred) / pred)
    assert row["ratio"]["output_throughput_tok_per_s"] == pytest.approx(
        doc["output_throughput"] / row["output_throughput_tok_per_s"])
    assert math.isfinite(row["error"]["output_throughput_tok_per_s"])

"""Trial s25c #5: a fit whose held-out residuals dwarf its fitted ones says so, naming the worst held-out value; a
held-out set that the constants carry to adds no line."""

from __future__ import annotations

import math

from pytest_roofline.model.calibration import FitResult, PointFit


def _point(label: str, tok_s: float, tok_s_pred: float) -> PointFit:
    return PointFit(id=label, label=label, measured={"output_throughput_tok_per_s": tok_s},
                    predicted={"output_throughput_tok_per_s": tok_s_pred},
                    residuals={"output_throughput_tok_per_s": math.log(tok_s_pred / tok_s)})


def _fit(held: tuple[PointFit, ...]) -> FitResult:
    return FitResult(constants=None, fitted=(), values={}, uncertainty={}, log_sd={},  # type: ignore[arg-type]
                     points=(_point("C=1", 326.2, 330.0),), rms_log_residual=0.027, iterations=3, held_out=held)


def test_held_out_points_the_constants_do_not_carry_to_are_named() -> None:
    # the trial's C = 4: predicted 1,196 tok/s, measured 853.6: ln(1,196 / 853.6) = 0.337; measured ÷ predicted − 1
    # = −28.6 %
    text = _fit((_point("C=2", 747.8, 760.0), _point("C=4", 853.6, 1196.0))).describe()
    rms = math.sqrt((math.log(760.0 / 747.8) ** 2 + math.log(1196.0 / 853.6) ** 2) / 2)
    line = next(ln for ln in text.splitlines() if ln.startswith("warning: the held-out points miss"))
    assert f"rms log-residual {rms:.3f}" in line and f"{rms / 0.027:.0f}× the fitted 0.027" in line
    assert "(worst: C=4 tok/s -28.6%)" in line


def test_held_out_points_the_constants_carry_to_add_no_line() -> None:
    text = _fit((_point("C=2", 747.8, 760.0), _point("C=4", 853.6, 880.0))).describe()
    assert "the held-out points miss" not in text

"""A 0 ms TTFT ink on the log TTFT axis (notes/s16/review.md L6): drawn at the axis floor, labelled."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from support.specs import serving_h100_head
from support.svg_markers import NS, markers

from pytest_roofline.format.spec import load_spec
from pytest_roofline.report.environment import spec_setup
from pytest_roofline.report.scorecard import _figures, _with_outcomes, score_spec

ZERO_TTFT_INK = serving_h100_head([1, 4, 16, 64]) + """\
  - {id: ttft-c1, quantity: ttft_p50, at: {concurrency: 1}, predicted: 35 ms}
  - {id: ttft-zero, quantity: ttft_p50, at: {concurrency: 4}, predicted: 0 ms}
"""


def test_a_0_ms_ttft_ink_is_drawn_at_the_log_axis_floor_labelled_0(tmp_path: Path) -> None:
    # L6: a `0 ms` TTFT ink has no place on the log TTFT axis and was left off the chart (no marker, no label),
    # while the caption says each value in ink is drawn: it is now a down arrowhead at the axis floor (below the
    # axis), with its tooltip, labelled with its value as written
    path = tmp_path / "zero.yaml"
    path.write_text(ZERO_TTFT_INK, encoding="utf-8")
    spec = load_spec(path)
    rows = _with_outcomes(spec, score_spec(spec, None))
    [fig] = [f for f in _figures(spec, spec_setup(spec), None, rows) if f.key == "ttft"]
    root = ET.fromstring(fig.svg)
    drawn = {m["tip"].split(": ink ", 1)[0]: m for m in markers(root) if (m["tip"] or "").startswith("ttft-")}
    assert sorted(drawn) == ["ttft-c1", "ttft-zero"]
    assert drawn["ttft-c1"]["shape"] == "diamond"
    zero = drawn["ttft-zero"]
    assert zero["shape"] == "triangle"  # an arrowhead: off the axis
    area = next(e for e in root.iter(f"{NS}rect") if e.get("fill") == "#fcfcfd")  # the plot area
    floor = float(area.get("y", 0)) + float(area.get("height", 0))
    assert zero["cy"] == pytest.approx(floor, abs=8)  # at the axis floor (the arrowhead's centre, just above it)
    assert zero["cy"] > drawn["ttft-c1"]["cy"]
    labels = [t.text or "" for t in root.iter(f"{NS}text")]
    assert "0 ms" in labels and "35 ms" in labels


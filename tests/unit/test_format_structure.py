"""format/ as issue 19 asks: one concept per module behind spec.py, the kinds typed, one field table per section.

The front door re-exports what callers import; a kind's words live in its Literal (or PointMode) and the field
tables take them from there; nested sections (``engine.reserves``, ``serving``, a prediction's ``setup:``) are
read through the same tables the schema reads.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

import pytest

from pytest_roofline.format import _fields, _types, spec
from pytest_roofline.quantities.measurement import PointMode

FORMAT_DIR = Path(spec.__file__).parent

HEAD = """\
hardware: h100-sxm
model: llama-3.1-8b
"""
PRED = """\
predictions:
  - id: ridge
    quantity: ridge_point
    predicted: 295.2 FLOP/byte
"""


def test_no_format_module_is_over_800_lines_without_saying_why() -> None:
    for path in FORMAT_DIR.glob("*.py"):
        lines = path.read_text(encoding="utf-8").count("\n")
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        assert lines <= 800 or "one concept" in doc, f"{path.name}: {lines} lines"


def test_every_format_module_says_what_it_holds() -> None:
    for path in FORMAT_DIR.glob("*.py"):
        if path.name == "__init__.py":
            continue
        assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), path.name


def test_the_front_door_exports_every_name_its_callers_use() -> None:
    for name in ("Spec", "Prediction", "Predicted", "PredictedKind", "Expectation", "Sweep", "SpecError", "Limits",
                 "load_spec", "loads_spec", "json_schema", "TOP_FIELDS", "PREDICTION_FIELDS", "WORKLOAD_FIELDS",
                 "plain_scalar", "AmbiguousScalar", "parse_drift_threshold"):
        assert name in spec.__all__ and hasattr(spec, name), name


def test_no_field_lists_its_allowed_values_only_in_a_comment() -> None:
    """A field whose words are written ``x: str  # a | b`` is a Literal (or an enum) instead."""
    comment_enum = re.compile(r"^\s+\w+: [\w |]+(= [^#]+)?#.*\b\w+ \| \w+")
    for path in FORMAT_DIR.glob("*.py"):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not comment_enum.match(line), f"{path.name}:{i}: {line.strip()}"


def test_the_field_tables_take_their_words_from_the_kinds() -> None:
    assert _fields.SWEEP_FIELDS["mode"].enum == tuple(m.value for m in PointMode)
    assert _fields.SWEEP_FIELDS["steady_state"].enum == get_args(_types.SteadyState)
    assert _fields.XFAIL_FIELDS["mode"].enum == get_args(_types.XfailCheck)
    assert _fields.TOP_FIELDS["model_column"].enum == get_args(_types.ModelColumn)
    assert _fields.ENGINE_FIELDS["entrypoint"].enum == get_args(_fields.Entrypoint)
    assert _fields.WORKLOAD_FIELDS["api"].enum == get_args(_fields.Api)
    assert _fields.SLO_FIELDS["percentile"].enum == get_args(_fields.SloPercentile)
    kinds = set(get_args(_fields.FieldKind))
    tables = [v for k, v in vars(_fields).items() if k.endswith("_FIELDS")] + [_fields.serving_field_table()]
    for table in tables:
        for name, f in table.items():
            assert f.kind in kinds, name
            assert f.doc, f"{name}: a field without a doc"


def test_a_loaded_sweep_mode_is_the_one_point_mode() -> None:
    s = spec.loads_spec(HEAD + "sweep: {mode: open, rates: [1, 2]}\n" + PRED)
    assert s.sweep.mode is PointMode.OPEN
    assert spec.Sweep().mode is PointMode.CLOSED
    assert f"{s.sweep.mode} loop" == "open loop"


def test_engine_reserves_are_read_through_their_field_table() -> None:
    s = spec.loads_spec(HEAD + "engine: {reserves: {activation: 1 GiB, cuda_graphs: 0.5 GiB}}\n" + PRED)
    assert s.engine["reserves"] == {"activation": 2**30, "cuda_graphs": 2**29}
    with pytest.raises(spec.SpecError, match="unknown key 'activations'") as exc:
        spec.loads_spec(HEAD + "engine: {reserves: {activations: 1 GiB}}\n" + PRED)
    assert "activation" in (exc.value.hint or "")
    assert set(_fields.RESERVES_FIELDS) == {"activation", "non_torch", "cuda_graphs"}


def test_the_serving_section_and_its_schema_share_one_table() -> None:
    table = _fields.serving_field_table()
    assert set(spec.json_schema()["properties"]["serving"]["properties"]) == set(table)
    assert "step_overhead" in table and "step_overhead_s" in table


def test_the_gemm_overlap_exponent_is_a_plain_number_of_at_least_one() -> None:
    """``serving.linear_overlap_p`` is an exponent, not a share of the peak: 1.5 is read as 1.5 (a share would refuse
    it), and a value below 1 (more than perfect overlap) is refused at its line with the fix."""
    s = spec.loads_spec(HEAD + "serving: {linear_overlap_p: 1.5}\n" + PRED)
    assert s.serving_overrides == {"linear_overlap_p": 1.5}
    with pytest.raises(spec.SpecError, match=r"serving.linear_overlap_p: 0.5 is not a number >= 1") as exc:
        spec.loads_spec(HEAD + "serving: {linear_overlap_p: 0.5}\n" + PRED)
    assert "1.75" in (exc.value.hint or "")
    with pytest.raises(spec.SpecError, match=r"serving.linear_overlap_p: 1.5 ms is not a number >= 1"):
        spec.loads_spec(HEAD + "serving: {linear_overlap_p: 1.5 ms}\n" + PRED)
    assert "a number >= 1" in _fields.serving_field_table()["linear_overlap_p"].doc

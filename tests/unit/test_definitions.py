"""Every measured verdict says how its figure is defined: the ``vllm bench serve`` figure it equals, or why it is
none (a newcomer's replayed verdicts never said "whole run, as `vllm bench serve` defines it"). One home
(``quantities/definitions.py``), one ``definition`` row in the verdict's explanation rows (the terminal's failure
text, pytest-html and the scorecard all render those rows), and the doc page's table generated from the same home."""

from __future__ import annotations

import json
import re

import pytest
from support.paths import CPU_TINY, PEERS, REPO
from support.recordings import recording_path
from support.specs import DEFINITION_MISSES

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.quantities.definitions import (
    DEFINITIONS,
    DOC_BEGIN,
    DOC_END,
    STEADY_TEXT,
    definition_text,
    definitions_markdown,
)
from pytest_roofline.quantities.registry import QUANTITIES
from pytest_roofline.report.common import explain_html
from pytest_roofline.report.scorecard import render_scorecard
from pytest_roofline.scoring import Verdict, score

DOC = REPO / "docs" / "explanation" / "measured-figures.md"
VLLM_RESULT = PEERS / "cpu-tiny-vllm-bench" / "sweep_c1.json"

EXTRA = DEFINITION_MISSES + """  - id: def-tput-c4-steady
    quantity: output_throughput
    at: {concurrency: 4}
    predicted: 1 tok/s
    window: steady
  - id: def-preemptions-c4
    quantity: preemptions
    at: {concurrency: 4}
    predicted: 0
    tolerance: exact
"""


@pytest.fixture(scope="module")
def verdicts() -> dict[str, Verdict]:
    spec = loads_spec(CPU_TINY.read_text(encoding="utf-8") + EXTRA, file="cpu-tiny.yaml")
    meas = RecordedMeasurement(json.loads(recording_path("cpu-tiny").read_text(encoding="utf-8")))
    return {p.id: score(spec, p, "measured", meas) for p in spec.predictions if p.error is None}


def test_every_measured_quantity_has_one_definition_and_only_those_have_one() -> None:
    measured = {name for name, q in QUANTITIES.items() if q.measure is not None}
    assert set(DEFINITIONS) == measured
    for name in measured:
        text = definition_text(name)
        assert text and "`vllm bench serve`" in text, name
        said = f"— the whole run, as `vllm bench serve` defines `{DEFINITIONS[name].vllm}`"
        assert (said in text) if DEFINITIONS[name].vllm else ("— not a `vllm bench serve` figure: " in text), name
    assert definition_text("ridge_point") == ""  # a model-only quantity is never measured


def test_each_named_vllm_figure_is_a_key_vllm_bench_serve_writes() -> None:
    written = set(json.loads(VLLM_RESULT.read_text(encoding="utf-8")))  # --percentile-metrics …, default percentiles
    for name, d in DEFINITIONS.items():
        if d.vllm:  # p95 needs --metric-percentiles 95, which the stored run did not ask for
            assert d.vllm in written or re.fullmatch(r"p\d+_(ttft|tpot|itl|e2el)_ms", d.vllm), (name, d.vllm)
    assert DEFINITIONS["output_throughput"].vllm == "output_throughput"
    assert DEFINITIONS["ttft_p50"].vllm == "median_ttft_ms"
    assert DEFINITIONS["tpot_p99"].vllm == "p99_tpot_ms" and DEFINITIONS["e2e_mean"].vllm == "mean_e2el_ms"
    assert "(E2E − TTFT) ÷ (output tokens − 1)" in DEFINITIONS["tpot_p50"].what
    assert "gaps between consecutive content chunks" in DEFINITIONS["itl_p50"].what
    for why in ("littles_law_ratio", "preemptions", "num_gpu_blocks", "knee_concurrency", "goodput"):
        assert not DEFINITIONS[why].vllm and DEFINITIONS[why].why, why


def test_a_measured_verdict_shows_its_definition_in_its_explanation_rows(verdicts: dict[str, Verdict]) -> None:
    for vid, quantity in (("def-tput-c4", "output_throughput"), ("def-ttft-c4", "ttft_p50"),
                          ("def-preemptions-c4", "preemptions")):
        v = verdicts[vid]
        assert v.mode == "measured" and v.status in ("fail", "pass", "inconclusive"), (vid, v.status, v.reason)
        rows = dict(v.explanation_rows())
        assert rows["definition"] == definition_text(quantity) == v.definition
        labels = [label for label, _ in v.explanation_rows()]
        assert labels.index("definition") == labels.index("measured") + 1
        assert f"  definition: {v.definition}" in v.explain()  # the terminal's failure text
    tput = verdicts["def-tput-c4"].definition
    assert "÷ the run's duration" in tput and "the whole run, as `vllm bench serve` defines `output_throughput`" in tput
    assert "as `vllm bench serve` defines `median_ttft_ms`" in verdicts["def-ttft-c4"].definition


def test_a_steady_window_verdict_says_it_is_not_the_whole_run(verdicts: dict[str, Verdict]) -> None:
    v = verdicts["def-tput-c4-steady"]
    assert v.definition == definition_text("output_throughput", "steady")
    assert STEADY_TEXT in v.definition and "its `output_throughput` is the whole run's" in v.definition
    # a server counter is not read through a window
    assert definition_text("preemptions", "steady") == definition_text("preemptions")


def test_a_math_verdict_has_no_definition_row(verdicts: dict[str, Verdict]) -> None:
    v = verdicts["kv-bytes-per-token"]
    assert v.mode == "math" and not v.definition
    assert "definition" not in dict(v.explanation_rows())


def test_the_definition_travels_with_the_verdict(verdicts: dict[str, Verdict]) -> None:
    v = verdicts["def-tput-c4"]
    back = Verdict.from_dict(json.loads(json.dumps(v.to_dict())))  # across xdist, into the history
    assert back.definition == v.definition
    assert Verdict.from_dict({k: x for k, x in v.to_dict().items() if k != "definition"}).definition == ""


def test_pytest_html_and_the_scorecard_show_it(verdicts: dict[str, Verdict]) -> None:
    v = verdicts["def-tput-c4"]
    html = explain_html(v, "failed")  # pytest-html's extra and the scorecard's details both render this
    assert "<th>definition</th>" in html and "vllm bench serve" in html
    spec = loads_spec(CPU_TINY.read_text(encoding="utf-8") + EXTRA, file="cpu-tiny.yaml")
    data = json.loads(recording_path("cpu-tiny").read_text(encoding="utf-8"))
    page = render_scorecard(spec, list(verdicts.values()), data)
    assert "as `vllm bench serve` defines `output_throughput`" in page


def test_the_doc_page_lists_the_same_definitions() -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(DOC_BEGIN), text.index(DOC_END) + len(DOC_END)
    assert text[start:end] == definitions_markdown(), (
        "docs/explanation/measured-figures.md differs from quantities/definitions.py: paste the output of "
        "`python -m pytest_roofline.quantities.definitions` between its markers")
    for name in DEFINITIONS:
        assert f"| `{name}` | {definition_text(name).replace('|', chr(92) + '|')} |" in text

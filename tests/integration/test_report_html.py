"""pytest-html integration: columns, sort keys, extras and the environment table, parsed from real reports."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from support.html_pages import parse_cell, parse_fragment, parse_report
from support.notebook import write_notebook_results
from support.pytest_run import NO_CACHE, NO_HTML
from support.specs import NOTEBOOK_REPORT

from pytest_roofline.pytest_plugin.html import COLUMNS, row_cells  # noqa: E402
from pytest_roofline.report.common import explain_lines, sort_key  # noqa: E402
from pytest_roofline.scoring import Verdict  # noqa: E402

pytest.importorskip("pytest_html")

N_PREDICTIONS = 10  # NOTEBOOK_REPORT's 7 entries, littles-law expands to 3, bad-quantity is one error item


# ----------------------------------------------------------------------------------------------------------------
# parsing helpers (stdlib html.parser only)
# ----------------------------------------------------------------------------------------------------------------
def _rows(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(nodeid, t) for nodeid, tests in data["tests"].items() for t in tests]


# ----------------------------------------------------------------------------------------------------------------
# the runs
# ----------------------------------------------------------------------------------------------------------------
@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", preds=NOTEBOOK_REPORT)
    pytester.makefile(".yaml", broken="predictions: [\n  - id: x\n    quantity: : :\n")
    write_notebook_results(pytester.path / "results.json")
    return pytester


@pytest.mark.slow
@pytest.mark.parametrize("self_contained", [False, True], ids=["assets", "self-contained"])
def test_columns_extras_environment(project: pytest.Pytester, self_contained: bool) -> None:
    args = [*NO_CACHE, "--continue-on-collection-errors", "--replay", "results.json", "--html",
            "out/report.html", "preds.yaml",
            "broken.yaml"]
    if self_contained:
        args.append("--self-contained-html")
    result = project.runpytest_subprocess(*args)
    # weights, ridge, ttft, 3 × littles-law pass; c64 fails; c16, kv-blocks xfail; bad-quantity and broken.yaml error
    result.assert_outcomes(passed=6, failed=1, xfailed=2, errors=2)
    report = project.path / "out" / "report.html"
    parser, data = parse_report(report)
    assets = project.path / "out" / "assets"
    if self_contained:
        assert not assets.exists()
        assert not parser.links
    else:
        assert sorted(p.name for p in assets.iterdir()) == ["style.css"]  # the extras are inline, not assets

    # headers: our columns right after Result and Test, all sortable with their data key
    types = [h["attrs"].get("data-column-type") for h in parser.headers]
    keys = [k for k, _, _ in COLUMNS]
    assert types[:2] == ["result", "testId"]
    assert types[2:2 + len(keys)] == keys
    for h in parser.headers[2:2 + len(keys)]:
        assert "sortable" in (h["attrs"].get("class") or "")
    assert [" ".join(h["text"].split()) for h in parser.headers[2:5]] == ["Quantity", "Predicted (ink)", "Model"]

    rows = _rows(data)
    assert len([r for r in rows if "preds.yaml" in r[0]]) == N_PREDICTIONS
    assert any("broken.yaml" in nodeid for nodeid, _ in rows), "the collection error has a row"
    for nodeid, t in rows:
        cells = t["resultsTableRow"]
        assert len(cells) == len(parser.headers), f"{nodeid}: columns misaligned"
        for i, key in enumerate(keys):
            c = parse_cell(cells[2 + i])
            assert c.cls == f"col-{key}"
            assert c.key, "every roofline cell carries a sort key"
            assert t[key] == cells[2 + i][cells[2 + i].index(">") + 1:cells[2 + i].rindex("</td>")]

    by_id = {nodeid.split("::")[-1]: t for nodeid, t in rows}
    c64 = {key: parse_cell(by_id["throughput-c64"]["resultsTableRow"][2 + i]).text for i, key in enumerate(keys)}
    assert c64["rl_quantity"] == "output_throughput @ concurrency=64"
    assert c64["rl_predicted"] == "5,060 tok/s"
    assert c64["rl_model"].endswith("tok/s") and c64["rl_model"].startswith("5,05")
    assert c64["rl_measured"].startswith("2,504.6 tok/s")
    # relative to the ink (the reference), with measured ÷ predicted beside it: (2,504.6 − 5,060) ÷ 5,060 = −50.50%,
    # 2,504.6 ÷ 5,060 = 0.495 (the ink's error measured against the measurement read +102.03% before issue 20)
    assert c64["rl_error"] == "-50.50% ×0.495"
    assert c64["rl_abserr"] == "−2,555.4 tok/s"  # measured − ink
    assert c64["rl_tolerance"] == "±15%"
    assert "outside ±15%" in c64["rl_reason"]
    weights = {key: parse_cell(by_id["weights"]["resultsTableRow"][2 + i]).text for i, key in enumerate(keys)}
    assert weights["rl_measured"] == "" and weights["rl_model"] == "16.381 GB"

    # error rows: a collection error has empty cells, still sortable; an invalid prediction has its ERROR verdict,
    # whose reason cell carries the loader's message (and no value cell claims a number)
    for nodeid, t in rows:
        if "bad-quantity" in nodeid or "broken.yaml" in nodeid:
            assert t["result"] == "Error"
            texts = {key: parse_cell(t["resultsTableRow"][2 + i]).text for i, key in enumerate(keys)}
            if "broken.yaml" in nodeid:
                assert all(text == "" for text in texts.values())
            else:
                assert "unknown quantity 'not_a_quantity'" in texts["rl_reason"]
                assert all(texts[k] == "" for k in ("rl_predicted", "rl_measured", "rl_error", "rl_abserr"))

    # sort keys: the strings pytest-html compares order the rows by the numbers shown
    scored = [(t["rl_error"], abs(float(parse_cell(t["resultsTableRow"][2 + keys.index("rl_error")]).text
                                        .split()[0].rstrip("%").replace(",", "")))) for _, t in rows
              if parse_cell(t["resultsTableRow"][2 + keys.index("rl_error")]).text]
    assert len(scored) >= 8
    by_string = [v for _, v in sorted(scored, key=lambda kv: kv[0])]
    assert by_string == sorted(by_string)
    tput = [(t["rl_predicted"], float(parse_cell(t["resultsTableRow"][3]).text.split()[0].replace(",", "")))
            for nodeid, t in rows if "throughput-c" in nodeid]
    assert [v for _, v in sorted(tput)] == [1742.0, 5060.0]

    # extras: one html extra per scored prediction, inline (also without --self-contained-html)
    for nodeid, t in rows:
        extras = [e for e in t["extras"] if e["format_type"] == "html"]
        if "broken.yaml" in nodeid:
            assert not extras
            continue
        if "bad-quantity" in nodeid:  # its ERROR verdict explained: the loader's message and the YAML line
            assert len(extras) == 1 and "not_a_quantity" in extras[0]["content"]
            assert "preds.yaml:" in extras[0]["content"]
            continue
        assert len(extras) == 1, nodeid
        frag = parse_fragment(extras[0]["content"])
        classes = [a.get("class") for _, a in frag.tags]
        assert "rl-explain" in classes
    miss = parse_fragment(by_id["throughput-c64"]["extras"][0]["content"])
    assert ("svg", ) == tuple(t for t, _ in miss.tags if t == "svg")  # the tolerance-band chart, inline
    text = " ".join(miss.text.split())
    # relative to the ink, as the error column: (2,504.6 − 5,060) ÷ 5,060 = −50.5 %
    assert "Measured gives 2,504.6 tok/s (point closed-c64), 50.5% below the ink's 5,060 tok/s" in text
    assert "allows [4,301 tok/s, 5,819 tok/s]; measured is below it by 1,796.4 tok/s" in text
    assert "the measurement is 49.6% of the model" in text
    assert "hbm_bandwidth" in text and "2,039 GB/s" in text  # the model's inputs
    blocks = " ".join(parse_fragment(by_id["kv-blocks"]["extras"][0]["content"]).text.split())
    assert "Diagnosis" in blocks and "KV pool = utilisation" in blocks and "Expected to miss" in blocks
    assert "rl-badge rl-xfailed" in by_id["kv-blocks"]["extras"][0]["content"]

    # environment table
    env = data["environment"]
    for key in ("Roofline mode", "GPU (declared)", "GPU (detected)", "GPU driver", "Engine", "Model", "Workload",
                "Commit", "Results file"):
        assert key in env, key
    assert env["GPU (declared)"].startswith("a100-sxm4-80gb")
    assert env["Engine"].startswith("vllm 0.26.0")
    assert "input_len=1024" in env["Workload"]
    assert env["Roofline mode"].startswith("replay")

    # the summary line
    html = report.read_text(encoding="utf-8")
    assert "Roofline predictions:" in html


@pytest.mark.slow
def test_math_mode_report_has_no_measured_values(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*NO_CACHE, "--html", "r.html", "--self-contained-html",
                                          "preds.yaml")
    result.assert_outcomes(passed=4, skipped=4, xfailed=1, errors=1)
    _, data = parse_report(project.path / "r.html")
    keys = [k for k, _, _ in COLUMNS]
    for _nodeid, t in _rows(data):
        meas = parse_cell(t["resultsTableRow"][2 + keys.index("rl_measured")])
        assert meas.text == ""
    env = data["environment"]
    assert env["Roofline mode"].startswith("math")
    assert env["GPU (detected)"].startswith("none needed")


@pytest.mark.slow
def test_run_without_pytest_html_prints_no_warnings(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*NO_HTML, "-W", "error", "preds.yaml",
                                          "--replay", "results.json")
    result.assert_outcomes(passed=6, failed=1, xfailed=2, errors=1)
    out = result.stdout.str() + result.stderr.str()
    assert "warnings" not in result.parseoutcomes()
    assert "warnings summary" not in out
    assert re.search(r"\w+Warning\b", out) is None
    assert "roofline predictions" in out
    assert not (project.path / "assets").exists()


@pytest.mark.slow
def test_html_option_absent_adds_no_extras(project: pytest.Pytester) -> None:
    project.makeconftest("""
        import pytest
        seen = []
        @pytest.hookimpl(trylast=True)
        def pytest_runtest_logreport(report):
            if getattr(report, "roofline", None) is not None:
                seen.append(len(getattr(report, "extras", [])))
        def pytest_sessionfinish(session):
            print("EXTRAS", sum(seen), len(seen))
    """)
    result = project.runpytest_subprocess(*NO_CACHE, "-s", "preds.yaml")
    result.stdout.fnmatch_lines(["*EXTRAS 0 *"])


# ----------------------------------------------------------------------------------------------------------------
# unit level
# ----------------------------------------------------------------------------------------------------------------
def test_sort_key_orders_numbers_as_strings() -> None:
    rng = random.Random(7)
    values: list[float] = [0.0, -0.0, 1.0, -1.0, 9.99999999, 10.0, 1e-300, -1e-300, 1e300, -1e300, 0.053, 0.05,
                           float("inf"), float("-inf"), 5060.0, 1742.0, 123.4, 2**30, -2555.4]
    values += [rng.uniform(-1e6, 1e6) for _ in range(300)]
    values += [10 ** rng.uniform(-20, 20) * rng.choice((1, -1)) for _ in range(300)]
    keys = [sort_key(v) for v in values]
    assert len({len(k) for k in keys}) == 1, "fixed width"
    by_key = [v for _, v in sorted(zip(keys, values), key=lambda kv: kv[0])]
    assert by_key == sorted(values)
    missing = [sort_key(None), sort_key(float("nan")), sort_key("none"), sort_key(True)]
    assert len(set(missing)) == 1 and min(keys) < missing[0] and max(keys) < missing[0]


def test_row_cells_without_a_verdict_are_empty_and_aligned() -> None:
    cells = row_cells(None)
    assert len(cells) == len(COLUMNS)
    for (key, _, _), cell in zip(COLUMNS, cells):
        c = parse_cell(cell)
        assert c.cls == f"col-{key}" and c.text == "" and c.key
        assert "\n" not in cell
        m = re.search(r"<td.*?>(.*?)</td>", cell)  # pytest-html's own extraction
        assert m is not None and m.group(1).startswith('<span class="rl-sk" hidden>')


def test_explain_lines_math_check() -> None:
    v = {"id": "x", "quantity": "ridge_point", "dimension": "intensity", "mode": "math", "status": "pass",
         "unit": "FLOP/byte", "predicted_text": "161 FLOP/byte", "predicted_value": 161.0, "reference_value": 161.0,
         "checked_value": 161.24, "model_value": 161.24, "lo": 160.5, "hi": 161.5, "tolerance_text": "±0.5 FLOP/byte",
         "reason": "model 161.24 FLOP/byte is within ±0.5 FLOP/byte of predicted 161"}
    lines = explain_lines(Verdict.from_dict(v))  # the report reads Verdicts, as a report's dict is turned back
    # the gap relative to the ink, as the error column: (161.24 − 161) ÷ 161 = +0.15 %
    assert lines[0] == "The model gives 161.24 FLOP/byte, 0.15% above the ink's 161 FLOP/byte (+0.24 FLOP/byte)."
    assert lines[1] == ("The tolerance ±0.5 FLOP/byte around the ink allows [160.5 FLOP/byte, 161.5 FLOP/byte]; "
                        "the model is inside, at 74% of the band's width.")


@pytest.mark.slow
def test_plain_pytest_project_keeps_its_environment_table(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_ok():\n    assert True\n")
    result = pytester.runpytest_subprocess(*NO_CACHE, "--html", "r.html", "--self-contained-html")
    result.assert_outcomes(passed=1)
    parser, data = parse_report(pytester.path / "r.html")
    assert not any(k.startswith(("Roofline", "GPU")) for k in data["environment"])
    (nodeid, t), = _rows(data)
    assert len(t["resultsTableRow"]) == len(parser.headers)  # the (empty) roofline cells stay aligned

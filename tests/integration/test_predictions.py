"""The shipped prediction files, run the way a user runs them (pytester over a copy of ``predictions/``).

Oracles are the seeds' own numbers (described in ``docs/sources.md``): the lesson "Batching and Throughput" (002: a
nominal 8B model, P = 8.0e9, FP16, 32 layers × 8 KV heads × 128 dims, S = 1024, on an H100 SXM at 3.35 TB/s and
989 TFLOP/s) and the notebook "Day 3 — Benchmark the Endpoint" (000: Qwen3-8B on an A100-SXM4-80GB, vLLM 0.26.0,
with its recorded run transcribed into ``predictions/recorded/day3-2026-07-31.results.json``).
"""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import hypothesis  # noqa: F401  (imported here once: pytester's inline runs would re-import it each time)
import pytest
import yaml
from support.paths import PREDICTIONS
from support.pytest_run import run_pytest

RECORDED = "predictions/recorded/day3-2026-07-31.results.json"
DAY3 = "predictions/day3.yaml"
LESSON = "predictions/batching-and-throughput.yaml"

# the predictions the YAML documents as known misses of the *math* check (xfail without mode: measured)
MATH_XFAILS = {
    DAY3: {"kv-blocks", "kv-tokens"},
    LESSON: {"sweep-b64-intensity-as-printed", "script-b256-as-printed[batch=256:t_comp]",
             "script-b256-as-printed[batch=256:decode_intensity]"},
}
# ... and of the measured check, scored against the notebook's recorded run
REPLAY_XFAILS = {"throughput-c1", "throughput-c16", "throughput-c64", "per-request-c64", "throughput-c128",
                 "per-request-c128", "post-draft-c64", "kv-blocks", "kv-tokens", "ttft-knee"}
# quantities only a measurement gives: skipped in CPU-only mode (batch1-fraction, 75% of the ceiling ±10%, is
# checked against the serving model's batch-1 value since the CPU-only check reads every banded quantity: its
# tolerance covers it)
DAY3_MEASURED_ONLY = {f"littles-law[concurrency={c}]" for c in (1, 2, 4, 8, 16, 32, 64, 128)} | {
    "ttft-knee", "goodput-p99", "goodput-p50"}


# --------------------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------------------
class Case:
    def __init__(self, el: ET.Element):
        self.file = el.get("file")
        self.line = int(el.get("line")) + 1  # pytest locations are 0-based
        self.name = el.get("name")
        tags = {c.tag for c in el} - {"properties", "system-out", "system-err"}
        if "error" in tags:
            self.outcome = "error"
        elif "failure" in tags:
            self.outcome = "failed"
        elif "skipped" in tags:
            skipped = el.find("skipped")
            self.outcome = "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
            self.message = skipped.get("message", "")
        else:
            self.outcome = "passed"
        self.props = {p.get("name").removeprefix("roofline_"): p.get("value") for p in el.iter("property")}


def run_junit(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[tuple[str, str], Case]]:
    xml = pytester.path / "junit.xml"
    result = run_pytest(pytester, f"--junitxml={xml}", "-o", "junit_family=xunit1", *args)
    cases = [Case(el) for el in ET.parse(xml).getroot().iter("testcase")]
    return result, {(c.file, c.name): c for c in cases}


def number(text: str) -> float:
    """'1,139.6 tok/s' -> 1139.6; '71.021 %' -> 71.021; '-10.46% (−2,681)' -> -10.46."""
    m = re.match(r"\s*([-+−]?[\d,]*\.?\d+)", text)
    assert m, text
    return float(m.group(1).replace(",", "").replace("−", "-"))


def yaml_line(relpath: str, pid: str) -> int:
    lines = (PREDICTIONS.parent / relpath).read_text(encoding="utf-8").splitlines()
    return next(i + 1 for i, line in enumerate(lines) if re.fullmatch(rf"\s*- id: {re.escape(pid)}\s*", line))


def documented_math_xfails(path: Path) -> set[str]:
    """Base ids of predictions whose YAML carries an xfail that applies to the math check."""
    out = set()
    for p in yaml.safe_load(path.read_text(encoding="utf-8"))["predictions"]:
        x = p.get("xfail")
        if x is not None and (isinstance(x, str) or x.get("mode", "both") in ("math", "both")):
            out.add(str(p["id"]))
    return out


@pytest.fixture
def shipped(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(PREDICTIONS, pytester.path / "predictions")
    return pytester


# --------------------------------------------------------------------------------------------------------------
# the lesson's table, from its formula (no plugin involved): the oracle for the table predictions below
# --------------------------------------------------------------------------------------------------------------
SEED_SWEEP = """\
1	4.82	0.02	0.99	207.6
2	4.86	0.03	1.97	411.8
4	4.94	0.06	3.87	810.3
8	5.10	0.13	7.50	1,569.7
16	5.42	0.26	14.11	2,953.6
32	6.06	0.52	25.23	5,282.1
64	7.34	1.04	41.65	8,719.0
128	9.90	2.07	61.72	12,923.5
256	15.03	4.14	81.33	17,029.5
"""


def _lesson_row(b: int) -> tuple[float, float, float, float]:
    weights, flop_per_token = 2 * 8.0e9, 2 * 8.0e9
    kv_per_seq = 1024 * (2 * 32 * 8 * 128 * 2)  # 134,217,728 B
    t_mem = (weights + b * kv_per_seq) / 3.35e12
    t_comp = b * flop_per_token / 989e12
    return t_mem * 1e3, t_comp * 1e3, b * flop_per_token / (weights + b * kv_per_seq), b / max(t_mem, t_comp)


def _half_ulp(text: str) -> float:
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0**-decimals


def test_lesson_sweep_table_follows_from_its_formula_and_the_yaml_copies_it():
    # BaseLoader keeps every scalar as written ("7.50", not the float 7.5)
    table = yaml.load((PREDICTIONS / "batching-and-throughput.yaml").read_text(), Loader=yaml.BaseLoader)
    [sweep] = [p for p in table["predictions"] if p["id"] == "sweep"]
    yaml_rows = {int(row[0]): [c.split()[0] for c in row[1:]] for row in sweep["table"]["rows"]}
    for line in SEED_SWEEP.splitlines():
        b, *printed = line.split("\t")
        exact = _lesson_row(int(b))
        for text, value, col in zip(printed, exact, ("t_mem", "t_comp", "intensity", "throughput")):
            ok = abs(float(text.replace(",", "")) - value) <= _half_ulp(text)
            if (b, col) == ("64", "intensity"):
                # the lesson prints 41.65; 1,024e9 / 24.590e9 = 41.643: the YAML carries 41.64 and an xfail
                assert not ok and f"{value:.2f}" == "41.64"
                assert yaml_rows[int(b)][2] == "41.64"
                continue
            assert ok, (b, col, text, value)
            assert yaml_rows[int(b)][("t_mem", "t_comp", "intensity", "throughput").index(col)] == text


# --------------------------------------------------------------------------------------------------------------
# CPU-only mode
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_predictions_directory_passes_in_cpu_only_mode(shipped):
    result, cases = run_junit(shipped, "predictions/")
    assert result.ret == pytest.ExitCode.OK
    outcomes = result.parseoutcomes()
    assert "failed" not in outcomes and "errors" not in outcomes and "xpassed" not in outcomes
    assert "warnings" not in outcomes
    assert {c.outcome for c in cases.values()} <= {"passed", "xfailed", "skipped"}

    # xfails only where the YAML documents them, and exactly those
    for relpath, expected in MATH_XFAILS.items():
        xfailed = {name for (f, name), c in cases.items() if f == relpath and c.outcome == "xfailed"}
        assert xfailed == expected, relpath
    for path in sorted(PREDICTIONS.glob("*.yaml")):
        rel = f"predictions/{path.name}"
        documented = documented_math_xfails(path)
        for (f, name), c in cases.items():
            if f == rel and c.outcome == "xfailed":
                assert name.split("[")[0] in documented, (rel, name)

    # a measured-only quantity is skipped, saying how to measure it; nothing else is
    day3_skipped = {name for (f, name), c in cases.items() if f == DAY3 and c.outcome == "skipped"}
    assert day3_skipped == DAY3_MEASURED_ONLY
    assert all("--replay" in cases[(DAY3, n)].message for n in day3_skipped)
    assert not any(c.outcome == "skipped" for (f, _), c in cases.items() if f == LESSON)


def test_every_lesson_table_row_is_reproduced_to_its_printed_digits(shipped):
    _, cases = run_junit(shipped, LESSON)
    spec = yaml.safe_load((PREDICTIONS / "batching-and-throughput.yaml").read_text())
    tables = [p for p in spec["predictions"] if "table" in p]
    assert {t["id"] for t in tables} >= {"projection", "sweep", "script", "static", "sizing-step-times",
                                         "exercise-1", "exercise-3", "takeaway-slopes"}
    for t in tables:
        items = [c for (f, name), c in cases.items() if name.startswith(t["id"] + "[")]
        assert len(items) == len(t["table"]["rows"]) * len(t["table"]["quantities"]), t["id"]
        want = "xfailed" if "xfail" in t else "passed"
        for c in items:
            assert c.outcome == want, (c.name, c.props)
            if want == "passed":
                # checked to the digits printed (a word exactly), not within some looser default
                assert c.props["tolerance"].endswith("(precision written)") or (
                    c.props["tolerance"] == "exact" and "predicted" in c.props), (c.name, c.props)  # a word
        # each cell is its own item, at its row's line
        assert {c.line for c in items} <= set(range(yaml_line(LESSON, t["id"]), yaml_line(LESSON, t["id"]) + 30))

    # the sweep table's cells are the lesson's printed digits
    sweep = {c.name: c.props for (f, _), c in cases.items() if c.name.startswith("sweep[")}
    assert sweep["sweep[batch=1:t_mem]"]["predicted_ms"] == "4.82"
    assert sweep["sweep[batch=256:output_throughput]"]["predicted_tok_per_s"] == "17029.5"
    assert sweep["sweep[batch=64:decode_intensity]"]["predicted_flop_per_byte"] == "41.64"
    assert float(sweep["sweep[batch=8:output_throughput]"]["model_tok_per_s"]) == pytest.approx(_lesson_row(8)[3],
                                                                                                 abs=0.05)


@pytest.mark.slow
def test_day3_kv_blocks_ink_value_is_flagged_by_the_math_check(shipped):
    _, cases = run_junit(shipped, DAY3)
    kv = cases[(DAY3, "kv-blocks")]
    assert kv.outcome == "xfailed"
    assert kv.props["predicted_count"] == "22959"
    # the model's own num_gpu_blocks for the notebook's setup lies within ±3% of the log's 25,640
    model_blocks = float(kv.props["model_count"])
    assert abs(model_blocks - 25_640) / 25_640 <= 0.03, model_blocks
    assert model_blocks == int(model_blocks)  # a count of blocks
    assert kv.line == yaml_line(DAY3, "kv-blocks")


def test_day3_kv_blocks_with_runxfail_fails_and_explains(shipped):
    result = run_pytest(shipped, DAY3, "--runxfail", "-k", "kv-blocks", "--no-roofline-summary")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    line = yaml_line(DAY3, "kv-blocks")
    assert f"{DAY3}:{line}: PredictionMismatch" in out
    m = re.search(r"model\s+: ([\d,]+)", out)
    assert m, out
    model_blocks = int(m.group(1).replace(",", ""))
    result.stdout.fnmatch_lines([
        "*kv-blocks: num_gpu_blocks*[[]math[]]*",
        "*predicted : 22,959*",
        f"*model     : {model_blocks:,}*",
        "*error     : +1*% (*relative to the ink; model ÷ ink ×1.1*",  # the model is ~12% over 22,959
        "*verdict   : FAIL*",
        "*model inputs:*",
        "*memory*80 GiB = 85.899 GB*",  # the GiB-vs-GB slip is in plain sight
        "*kv_bytes_per_token*147,456 B*",
    ])
    # the error shown is relative to the ink (the prediction is the reference): (model − 22,959) / 22,959
    err = number(re.search(r"error\s+: (\S+)", out).group(1))
    assert err == pytest.approx((model_blocks - 22_959) / 22_959 * 100, abs=0.01)


# --------------------------------------------------------------------------------------------------------------
# replay of the notebook's recorded run
# --------------------------------------------------------------------------------------------------------------
@pytest.fixture
def replayed(shipped) -> tuple[pytest.RunResult, dict[str, Case]]:
    result, cases = run_junit(shipped, "--replay", RECORDED, DAY3)
    return result, {name: c for (f, name), c in cases.items() if f == DAY3}


def test_replay_verdicts(replayed):
    result, cases = replayed
    assert result.ret == pytest.ExitCode.OK
    xfailed = {n for n, c in cases.items() if c.outcome == "xfailed"}
    assert xfailed == REPLAY_XFAILS
    assert {c.outcome for n, c in cases.items() if n not in REPLAY_XFAILS} == {"passed"}
    result.assert_outcomes(passed=len(cases) - len(REPLAY_XFAILS), xfailed=len(REPLAY_XFAILS))


def test_replay_knee_none_holds(replayed):
    _, cases = replayed
    knee = cases["knee"]
    assert knee.outcome == "passed"
    assert knee.props["predicted"] == "none" and knee.props["measured"] == "none"


def test_replay_littles_law_holds_at_every_point(replayed):
    _, cases = replayed
    ll = {n: c for n, c in cases.items() if n.startswith("littles-law[")}
    assert set(ll) == {f"littles-law[concurrency={c}]" for c in (1, 2, 4, 8, 16, 32, 64, 128)}
    for name, c in ll.items():
        assert c.outcome == "passed", name
        assert abs(float(c.props["measured_ratio"]) - 1.0) <= 0.02, (name, c.props)


def test_replay_batch1_fraction_within_tolerance(replayed):
    _, cases = replayed
    c = cases["batch1-fraction"]
    assert c.outcome == "passed"
    ceiling = 2.039e12 / (2 * 8_190_735_360)  # 124.47 tok/s: A100-SXM4 bandwidth ÷ Qwen3-8B bf16 weights
    assert float(c.props["measured_ratio"]) == pytest.approx(88.4 / ceiling, abs=1e-4)  # the notebook's 71.0%
    assert abs(88.4 / ceiling - 0.75) <= 0.10 * 0.75


@pytest.mark.parametrize("pid,ink,measured,share", [
    ("throughput-c1", 123.4, 88.8, 0.72),
    ("throughput-c16", 1742, 1139.6, 0.65),  # the notebook: "measured is 65% of model at C=16"
    ("throughput-c64", 5060, 2504.6, 0.49),
    ("throughput-c128", 7415, 3088.2, 0.42),
    ("per-request-c64", 79.1, 39.1, 0.49),
    ("post-draft-c64", 4802, 2504.6, 0.52),  # "64 users → ~4,800 agg" vs 2,505 measured
])
def test_replay_throughput_misses_by_the_notebooks_amounts(replayed, pid, ink, measured, share):
    _, cases = replayed
    c = cases[pid]
    assert c.outcome == "xfailed"
    assert float(c.props["predicted_tok_per_s"]) == ink
    assert float(c.props["measured_tok_per_s"]) == pytest.approx(measured)
    assert round(measured / ink, 2) == share
    # the error is relative to the ink, (measured − ink) ÷ ink, with measured ÷ ink beside it
    assert float(c.props["error_pct"]) == pytest.approx((measured - ink) / ink * 100, abs=0.01)
    assert float(c.props["ratio"]) == pytest.approx(measured / ink, rel=1e-9)


def test_replay_throughput_c16_and_c64_measured_text(replayed):
    _, cases = replayed
    assert cases["throughput-c16"].props["measured_tok_per_s"] == "1139.6"  # a number, its unit in the name
    assert cases["throughput-c64"].props["measured_tok_per_s"] == "2504.6"


def test_replay_ttft_knee_measured_at_2_not_4(replayed):
    _, cases = replayed
    c = cases["ttft-knee"]
    assert c.outcome == "xfailed"
    assert c.props["predicted_count"] == "4"
    assert c.props["measured_count"] == "2"


def test_replay_kv_blocks_miss_by_10_5_percent(replayed):
    _, cases = replayed
    for pid, ink, logged in (("kv-blocks", 22_959, 25_640), ("kv-tokens", 367_346, 410_240)):
        c = cases[pid]
        assert c.outcome == "xfailed"
        assert c.props["measured_count"] == str(logged)
        err = float(c.props["error_pct"])
        assert err == pytest.approx((logged - ink) / ink * 100, abs=0.01)
        assert round(err, 1) == 11.7  # the engine logged 11.7% more than the ink (the notebook's "10.5% under")
        assert float(c.props["ratio"]) == pytest.approx(logged / ink, rel=1e-9)


def test_replay_goodput_holds(replayed):
    _, cases = replayed
    assert cases["goodput-p99"].outcome == "passed"
    assert float(cases["goodput-p99"].props["measured_tok_per_s"]) == pytest.approx(639.5)  # C=8
    assert cases["goodput-p50"].outcome == "passed"
    assert float(cases["goodput-p50"].props["measured_tok_per_s"]) == pytest.approx(1763.3)  # C=32


def test_replay_summary_shows_measured_values(shipped, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    result = run_pytest(shipped, "--replay", RECORDED, DAY3)
    c16 = next(line for line in result.outlines if line.startswith("throughput-c16 "))
    kv = next(line for line in result.outlines if line.startswith("kv-blocks "))
    assert "1,139.6 tok/s" in c16 and " meas " in c16 and c16.rstrip().endswith("XFAIL")
    assert "25,640" in kv and "+11.68%" in kv and kv.rstrip().endswith("XFAIL")  # (25,640 − 22,959) ÷ 22,959
    assert all(len(line) <= 100 for line in result.outlines if "tok/s" in line)

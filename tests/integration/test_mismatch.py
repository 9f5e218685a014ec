"""A results file that does not belong to the predictions is refused, with the differences listed, unless
``--roofline-allow-mismatch``; then every verdict and the scorecard say so.

The review's case: the notebook's A100-SXM4 / Qwen3-8B / vLLM 0.26 run replayed against the H100 / Llama-3.1-8B
FP8 / vLLM 0.10 prediction file used to "confirm" its KV block count with a PASS.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.paths import CPU_TINY, DAY3, DAY3_RESULTS, PEERS, PREDICTIONS, RECORDED
from support.pytest_run import NO_HTML

from pytest_roofline.errors import ResultsMismatchError
from pytest_roofline.format.spec import load_spec
from pytest_roofline.measure.results import match as mismatch
from pytest_roofline.measure.results.peers import load_any

DAY3_DIR = PEERS / "day3-vllm-bench"
H100 = PREDICTIONS / "llama-3.1-8b-fp8-h100.yaml"


def test_every_recorded_file_belongs_to_its_predictions():
    for f in sorted(RECORDED.glob("*.results.json")):
        data = load_any(f)
        spec = load_spec(PREDICTIONS / Path(data["setup"]["predictions_file"]).name)
        assert mismatch.compare(data, spec).differences == [], f


def test_differences_listed():
    cmp = mismatch.compare(load_any(DAY3_RESULTS), load_spec(H100))
    text = "\n".join(cmp.differences)
    assert "GPU: the file ran on a100-sxm4-80gb, the predictions are for h100-sxm" in text
    assert "model:" in text and "engine version: the file ran vLLM 0.26.0, the predictions are for 0.10.0" in text
    cmp = mismatch.compare(load_any(DAY3_DIR), load_spec(CPU_TINY))
    text = "\n".join(cmp.differences)
    assert "input length 1024 tokens in the file, 128" in text and "output length 1024" in text
    assert "sweep points" not in text  # C=1..128 holds all of cpu-tiny's C=1..32: a fuller run, not another grid
    text = "\n".join(mismatch.compare(load_any(DAY3_DIR), load_spec(PREDICTIONS / "cpu-open-loop.yaml"))
                      .differences)
    assert "sweep points: the file has C=1, C=2" in text and "and lacks 2 req/s, 4 req/s" in text


def test_peer_file_says_what_it_could_not_check():
    cmp = mismatch.compare(load_any(DAY3_DIR), load_spec(DAY3))
    assert cmp.belongs
    assert any(u.startswith("GPU (vllm bench serve does not record the GPU") for u in cmp.unchecked)
    with pytest.raises(ResultsMismatchError) as info:
        mismatch.check(load_any(DAY3_DIR), load_spec(CPU_TINY), "d", allow=False)
    assert "not checked (the file does not say): GPU" in str(info.value) and info.value.differences


@pytest.mark.slow
def test_replay_refuses_a_mismatched_file(pytester: pytest.Pytester):
    r = pytester.runpytest_subprocess(*NO_HTML, "--replay", str(DAY3_RESULTS), str(H100), timeout=300)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    out = r.stdout.str() + r.stderr.str()
    assert "does not belong to" in out and "GPU: the file ran on a100-sxm4-80gb" in out
    assert "--roofline-allow-mismatch" in out
    assert "PASSED" not in out and " passed" not in out


@pytest.mark.slow
def test_allow_mismatch_says_so_in_every_verdict_and_the_scorecard(pytester: pytest.Pytester):
    card = pytester.path / "card.html"
    r = pytester.runpytest_subprocess(*NO_HTML, "--replay", str(DAY3_RESULTS), str(H100), "--roofline-allow-mismatch",
                                      "--roofline-scorecard", str(card), "-k", "blocks", "-rA", timeout=300)
    out = r.stdout.str()
    assert "MISMATCHED RESULTS, allowed" in out, out[-3000:]
    html = card.read_text()
    assert "Mismatched results, scored anyway" in html and "h100-sxm" in html


def test_allow_mismatch_is_said_under_the_table_without_rA(pytester: pytest.Pytester):
    """Trial s23 L7: a PASS row shows no reason, so without -rA the terminal never said the results were
    mismatched; one line under the table says it for the file."""
    r = pytester.runpytest_subprocess(*NO_HTML, "--replay", str(DAY3_RESULTS), str(H100), "--roofline-allow-mismatch",
                                      "-k", "blocks", timeout=300)
    lines = [ln for ln in r.stdout.lines if ln.startswith("MISMATCHED RESULTS, allowed (--roofline-allow-mismatch): ")]
    assert len(lines) == 1, r.stdout.str()[-3000:]
    assert f"{H100.name} scored on --replay {DAY3_RESULTS}" in lines[0] and "does not belong to it" in lines[0]


def test_report_cli_refuses_then_allows(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from pytest_roofline.cli import main

    out = tmp_path / "s.html"
    assert main(["report", str(H100), str(DAY3_RESULTS), "-o", str(out)]) == 2
    assert "does not belong to" in capsys.readouterr().err and not out.exists()
    assert main(["report", str(H100), str(DAY3_RESULTS), "-o", str(out), "--allow-mismatch"]) == 0
    assert "Mismatched results" in out.read_text()


@pytest.mark.slow
def test_what_a_peer_file_cannot_say_is_on_every_measured_verdict(pytester: pytest.Pytester):
    card = pytester.path / "card.html"
    r = pytester.runpytest_subprocess(*NO_HTML, "--replay", str(DAY3_DIR), str(DAY3), "-k", "kv-blocks",
                                      "--roofline-scorecard", str(card), timeout=300)
    assert r.ret == 0, r.stdout.str()[-3000:]
    html = card.read_text()
    assert "not checked against the predictions (the file does not say): GPU" in html
    assert "Not checked (the file does not say)" in html  # the page header, once per results file


@pytest.mark.slow
def test_xdist_workers_refuse_too(pytester: pytest.Pytester):
    pytest.importorskip("xdist")
    r = pytester.runpytest_subprocess(*NO_HTML, "-n", "2", "--replay", str(DAY3_RESULTS), str(H100), "-rA",
                                      timeout=300)
    out = r.stdout.str()
    assert r.ret != 0
    assert "does not belong to" in out
    measured_passed = [ln for ln in out.splitlines() if ln.startswith("PASSED") and "gpu-blocks" in ln]
    assert not measured_passed, out[-3000:]


def test_a_replay_with_no_prediction_file_names_the_one_the_results_were_made_with(pytester: pytest.Pytester):
    # a trial ran `pytest --replay results.json` alone: 0 items, exit 5, and nothing said why
    (pytester.path / "predictions" / "recorded").mkdir(parents=True)
    results = pytester.path / "predictions" / "recorded" / DAY3_RESULTS.name
    results.write_text(DAY3_RESULTS.read_text())
    (pytester.path / "predictions" / DAY3.name).write_text(DAY3.read_text())
    (pytester.path / "elsewhere").mkdir()
    pytester.chdir()
    r = pytester.runpytest_subprocess(*NO_HTML, "--rootdir", str(pytester.path / "elsewhere"),
                                      "--replay", str(results), str(pytester.path / "elsewhere"))
    assert r.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    r.stdout.fnmatch_lines([f"roofline: --replay {results}: no prediction file was collected, so nothing is scored; "
                            "it was made with predictions/day3.yaml: pytest --replay * predictions/day3.yaml"])

